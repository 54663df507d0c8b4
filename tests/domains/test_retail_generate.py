"""The retail data generator: determinism, the shipped data, and the tau-bench file shape."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from domains.retail import generate as gen
from tests._support.json_folder import file_bytes

DATA_DIR = Path(gen.__file__).parent / "data"
PEER_DATA = Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau-bench" / "retail" / "data"

USER_KEYS = ["name", "address", "email", "payment_methods", "orders"]
ORDER_KEYS = ["order_id", "user_id", "address", "items", "fulfillments", "status", "payment_history"]
PRODUCT_KEYS = ["name", "product_id", "variants"]
ADDRESS_KEYS = ["address1", "address2", "city", "country", "state", "zip"]
ITEM_KEYS = ["name", "product_id", "item_id", "price", "options"]
VARIANT_KEYS = ["item_id", "options", "available", "price"]
METHOD_KEYS = {
    "credit_card": ["source", "brand", "last_four", "id"],
    "paypal": ["source", "id"],
    "gift_card": ["source", "balance", "id"],
}


def _has_cents(x: float) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and abs(round(x, 2) - x) < 1e-9


@pytest.fixture(scope="module")
def data() -> gen.RetailData:
    return gen.generate(gen.DEFAULT_SEED)


def _bytes(folder: Path) -> dict[str, bytes]:
    return file_bytes(folder, gen.DATA_FILES)


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    assert gen.main(["--seed", "11", "--out", str(tmp_path / "a")]) == 0
    assert gen.main(["--seed", "11", "--out", str(tmp_path / "b")]) == 0
    a, b = _bytes(tmp_path / "a"), _bytes(tmp_path / "b")
    assert a == b
    assert (tmp_path / "a" / "README.md").read_bytes() == (tmp_path / "b" / "README.md").read_bytes()


def test_different_seed_gives_different_data(tmp_path: Path) -> None:
    gen.write_data(gen.generate(1), tmp_path / "s1")
    gen.write_data(gen.generate(2), tmp_path / "s2")
    a, b = _bytes(tmp_path / "s1"), _bytes(tmp_path / "s2")
    assert all(a[name] != b[name] for name in gen.DATA_FILES)


def test_shipped_data_equals_a_fresh_generation(tmp_path: Path) -> None:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    m = re.search(r"--seed (\d+) --users (\d+) --orders (\d+)", readme)
    assert m, "data/README.md must record the generation command"
    seed, users, orders = (int(g) for g in m.groups())
    assert (seed, users, orders) == (gen.DEFAULT_SEED, gen.DEFAULT_USERS, gen.DEFAULT_ORDERS)
    gen.write_data(gen.generate(seed, n_users=users, n_orders=orders), tmp_path, seed=seed, n_users=users,
                   n_orders=orders)
    assert _bytes(tmp_path) == _bytes(DATA_DIR), "shipped data is stale: run scripts/generate-data"
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme


def test_sizes(data: gen.RetailData) -> None:
    assert len(data["users"]) == gen.DEFAULT_USERS
    assert len(data["orders"]) == gen.DEFAULT_ORDERS
    assert len(data["products"]) == len(gen.CATALOG) == 20
    for product in data["products"].values():
        assert 5 <= len(product["variants"]) <= 15
        assert sum(v["available"] for v in product["variants"].values()) >= 3
    flags = Counter(v["available"] for p in data["products"].values() for v in p["variants"].values())
    assert flags[False] > 0 and flags[True] > flags[False]
    statuses = Counter(o["status"] for o in data["orders"].values())
    assert set(statuses) == {"pending", "processed", "delivered", "cancelled"}


def test_id_formats_and_uniqueness(data: gen.RetailData) -> None:
    for uid, user in data["users"].items():
        first, last = user["name"]["first_name"].lower(), user["name"]["last_name"].lower()
        assert re.fullmatch(rf"{first}_{last}_\d{{4}}", uid)
        assert re.fullmatch(r"[a-z]+\.[a-z]+\d+@example\.com", user["email"])
        for mid, method in user["payment_methods"].items():
            assert mid == method["id"]
            assert re.fullmatch(rf"{method['source']}_\d{{7}}", mid)
    for oid, order in data["orders"].items():
        assert oid == order["order_id"] and re.fullmatch(r"#W\d{7}", oid)
    catalog_ids = list(data["products"])
    for pid, product in data["products"].items():
        assert pid == product["product_id"] and re.fullmatch(r"\d{10}", pid)
        for iid, variant in product["variants"].items():
            assert iid == variant["item_id"] and re.fullmatch(r"\d{10}", iid)
            catalog_ids.append(iid)
    assert len(catalog_ids) == len(set(catalog_ids)), "product and item ids share one namespace"
    method_ids = [m for u in data["users"].values() for m in u["payment_methods"]]
    assert len(method_ids) == len(set(method_ids))
    names = [(u["name"]["first_name"], u["name"]["last_name"]) for u in data["users"].values()]
    assert len(names) == len(set(names)), "name + zip look-ups must be unambiguous"
    emails = [u["email"] for u in data["users"].values()]
    assert len(emails) == len(set(emails))
    tracking = [t for o in data["orders"].values() for f in o["fulfillments"] for t in f["tracking_id"]]
    assert len(tracking) == len(set(tracking)) and all(re.fullmatch(r"\d{12}", t) for t in tracking)


def test_record_shapes_match_tau_bench(data: gen.RetailData) -> None:
    for user in data["users"].values():
        assert list(user) == USER_KEYS
        assert list(user["name"]) == ["first_name", "last_name"]
        assert list(user["address"]) == ADDRESS_KEYS and user["address"]["country"] == "USA"
        assert re.fullmatch(r"\d{5}", user["address"]["zip"])
        assert user["payment_methods"]
        for method in user["payment_methods"].values():
            assert list(method) == METHOD_KEYS[method["source"]]
            if method["source"] == "gift_card":
                assert _has_cents(method["balance"]) and method["balance"] >= 0
            if method["source"] == "credit_card":
                assert re.fullmatch(r"\d{4}", method["last_four"])
    for order in data["orders"].values():
        assert list(order) == ORDER_KEYS and list(order["address"]) == ADDRESS_KEYS
        for item in order["items"]:
            assert list(item) == ITEM_KEYS
    for product in data["products"].values():
        assert list(product) == PRODUCT_KEYS
        for variant in product["variants"].values():
            assert list(variant) == VARIANT_KEYS and _has_cents(variant["price"]) and variant["price"] > 0


def test_orders_are_consistent(data: gen.RetailData) -> None:
    users, products = data["users"], data["products"]
    owners: dict[str, str] = {}
    for uid, user in users.items():
        for oid in user["orders"]:
            owners[oid] = uid
    assert sorted(owners) == sorted(data["orders"]), "every order is listed by exactly its user"
    for oid, order in data["orders"].items():
        assert owners[oid] == order["user_id"]
        user = users[order["user_id"]]
        item_ids = [it["item_id"] for it in order["items"]]
        assert 1 <= len(item_ids) <= 5 and len(set(item_ids)) == len(item_ids)
        for item in order["items"]:
            variant: dict[str, Any] = products[item["product_id"]]["variants"][item["item_id"]]
            assert item["name"] == products[item["product_id"]]["name"]
            assert (item["price"], item["options"]) == (variant["price"], variant["options"])
        total = round(sum(it["price"] for it in order["items"]), 2)
        history = order["payment_history"]
        method = history[0]["payment_method_id"]
        assert method in user["payment_methods"]
        assert history[0] == {"transaction_type": "payment", "amount": total, "payment_method_id": method}
        shipped = [i for f in order["fulfillments"] for i in f["item_ids"]]
        if order["status"] in ("processed", "delivered"):
            assert sorted(shipped) == sorted(item_ids) and len(history) == 1
        elif order["status"] == "pending":
            assert shipped == [] and len(history) == 1
        else:
            assert order["status"] == "cancelled" and shipped == []
            assert history[1] == {"transaction_type": "refund", "amount": total, "payment_method_id": method}


def test_cli_defaults_and_bad_sizes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert gen.main(["--out", str(tmp_path), "--users", "4", "--orders", "6"]) == 0
    assert "4 users, 6 orders" in capsys.readouterr().out
    assert "--seed 7 --users 4 --orders 6" in (tmp_path / "README.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        gen.main(["--out", str(tmp_path), "--users", "0"])


@pytest.mark.skipif(not PEER_DATA.is_dir(), reason="peer tau-bench data not available")
def test_vocabulary_is_our_own() -> None:
    peer_products = json.loads((PEER_DATA / "products.json").read_text(encoding="utf-8"))
    peer_users = json.loads((PEER_DATA / "users.json").read_text(encoding="utf-8"))
    assert not {p["name"] for p in peer_products.values()} & {p.name for p in gen.CATALOG}
    assert not {u["name"]["first_name"] for u in peer_users.values()} & set(gen.FIRST_NAMES)
    assert not {u["name"]["last_name"] for u in peer_users.values()} & set(gen.LAST_NAMES)
    assert not {u["address"]["city"] for u in peer_users.values()} & {c for c, _, _ in gen.CITIES}

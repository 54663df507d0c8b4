"""Retail data: lossless load/dump round trip, and clear errors on malformed data files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domains.retail import RetailDomain
from simulator.world.domain import get_domain
from simulator.world.tools import ToolContext
from tests._support.json_folder import (
    assert_bad_file_refused,
    assert_load_fails,
    assert_same_shape,
    read_files,
    write_files,
)

FILES = ("users", "orders", "products")


def _files(folder: Path) -> dict[str, Any]:
    return read_files(folder, FILES)


def _dump_folder(domain: RetailDomain, folder: Path) -> dict[str, Any]:
    with domain.template(folder).trial() as trial:
        return domain.dump(trial)


def _write(folder: Path, data: dict[str, Any]) -> Path:
    return write_files(folder, data, FILES)


@pytest.fixture(scope="module")
def peer_data(retail_peer_dir: Path) -> Path:
    return retail_peer_dir / "data"


def test_registered_under_entry_point() -> None:
    domain = get_domain("retail")
    assert isinstance(domain, RetailDomain)
    assert domain.default_options(None) == {"mode": "tau-bench"}
    assert isinstance(domain.policy(), str) and domain.policy().strip()


def test_numbers_keep_their_json_type(peer_data: Path) -> None:
    files = _files(peer_data)
    dump = _dump_folder(RetailDomain(), peer_data)
    balances = [
        (uid, mid, m["balance"]) for uid, u in files["users"].items() for mid, m in u["payment_methods"].items()
        if "balance" in m
    ]
    assert balances and all(type(b) is int for _, _, b in balances)  # the peer file has integer balances
    for uid, mid, balance in balances:
        got = dump["users"][uid]["payment_methods"][mid]["balance"]
        assert got == balance and type(got) is int
    integral_prices = [
        (pid, iid, v["price"]) for pid, p in files["products"].items() for iid, v in p["variants"].items()
        if v["price"] == int(v["price"])
    ]
    assert integral_prices  # e.g. 100.0: must stay a float
    for pid, iid, price in integral_prices:
        got = dump["products"][pid]["variants"][iid]["price"]
        assert type(got) is float and got == price


def test_changed_state_round_trips(peer_data: Path, tmp_path: Path) -> None:
    """Optional fields, unrounded amounts and tool-written key orders survive a dump and reload."""
    domain = RetailDomain()
    toolbox = domain.toolbox()
    with domain.template(peer_data).trial() as trial:
        ctx = ToolContext(trial.session, trial.options)
        calls = [
            ("modify_pending_order_address", {"order_id": "#W9093821", "address1": "1 Elm St", "address2": "",
                                              "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}),
            ("cancel_pending_order", {"order_id": "#W9093821", "reason": "ordered by mistake"}),
            ("modify_user_address", {"user_id": "ethan_lopez_6291", "address1": "2 Oak St", "address2": "Apt 3",
                                     "city": "Boston", "state": "MA", "country": "USA", "zip": "02101"}),
            ("modify_pending_order_items", {"order_id": "#W5065081", "item_ids": ["4579334072"],
                                            "new_item_ids": ["7533802601"],
                                            "payment_method_id": "credit_card_3627996"}),
            ("return_delivered_order_items", {"order_id": "#W3113816", "item_ids": ["4422467033", "2206116040"],
                                              "payment_method_id": "gift_card_6023546"}),
            ("exchange_delivered_order_items", {"order_id": "#W4817420", "item_ids": ["6777246137"],
                                                "new_item_ids": ["6777246137"],
                                                "payment_method_id": "gift_card_8168843"}),
        ]
        for name, args in calls:
            out = toolbox.dispatch(ctx, name, args)
            assert out.status == "ok", (name, out.content)
        changed = domain.dump(trial)
    order = changed["orders"]["#W9093821"]
    assert list(order)[-1] == "cancel_reason"
    assert list(order["address"]) == ["address1", "address2", "city", "state", "country", "zip"]
    assert changed["orders"]["#W5065081"]["payment_history"][-1]["amount"] == 6.259999999999998
    reloaded = _dump_folder(RetailDomain(), _write(tmp_path / "changed", changed))
    assert_same_shape(reloaded, changed)
    assert all(json.dumps(reloaded[n]) == json.dumps(changed[n]) for n in FILES)


def _tiny() -> dict[str, Any]:
    return {
        "users": {
            "ann_lee_1": {
                "name": {"first_name": "Ann", "last_name": "Lee"},
                "address": {"address1": "1 A St", "address2": "", "city": "X", "country": "USA", "state": "CA",
                            "zip": "01234"},
                "email": "ann@example.com",
                "payment_methods": {
                    "gift_card_1": {"source": "gift_card", "balance": 56, "id": "gift_card_1"},
                    "paypal_1": {"source": "paypal", "id": "paypal_1"},
                },
                "orders": ["#W0000001"],
            }
        },
        "orders": {
            "#W0000001": {
                "order_id": "#W0000001", "user_id": "ann_lee_1",
                "address": {"address1": "1 A St", "address2": "", "city": "X", "country": "USA", "state": "CA",
                            "zip": "01234"},
                "items": [{"name": "Lamp", "product_id": "p1", "item_id": "i1", "price": 100.0,
                           "options": {"color": "red", "bulbs": 2}}],
                "fulfillments": [{"tracking_id": ["t1", "t2"], "item_ids": ["i1"]}],
                "status": "delivered",
                "payment_history": [{"transaction_type": "payment", "amount": 18.77000000000001,
                                     "payment_method_id": "gift_card_1"}],
            }
        },
        "products": {
            "p1": {"name": "Lamp", "product_id": "p1", "variants": {
                "i1": {"item_id": "i1", "options": {"color": "red", "bulbs": 2}, "available": True, "price": 100.0},
                "i2": {"item_id": "i2", "options": {"color": "blue", "bulbs": 2}, "available": False, "price": 99},
            }},
        },
    }


def test_unusual_key_orders_nulls_and_optional_fields_round_trip(tmp_path: Path) -> None:
    data = _tiny()
    user = data["users"]["ann_lee_1"]
    data["users"]["ann_lee_1"] = {k: user[k] for k in reversed(list(user))}  # reversed record keys
    user["name"] = {"last_name": "Lee", "first_name": "Ann"}
    data["users"]["ann_lee_1"]["payment_methods"]["paypal_1"] = {"id": "paypal_1", "source": "paypal", "brand": None}
    order = data["orders"]["#W0000001"]
    order["exchange_price_difference"] = -3.0
    order["return_items"] = ["i1"]  # optional fields in a non-canonical order
    order["payment_history"][0] = {"amount": 5, "transaction_type": "refund", "payment_method_id": "paypal_1"}
    order["fulfillments"].append({"item_ids": [], "tracking_id": []})
    data["products"]["p1"]["variants"]["i2"] = {"price": 99, "available": False, "item_id": "i2", "options": {}}
    dumped = _dump_folder(RetailDomain(), _write(tmp_path / "tiny", data))
    assert_same_shape(dumped, data)
    assert json.dumps(dumped) == json.dumps(data)


@pytest.mark.parametrize(
    ("mutate", "file", "fragments"),
    [
        (lambda d: d["users"]["ann_lee_1"].pop("email"), "users.json", ["'ann_lee_1'", "email", "missing"]),
        (lambda d: d["users"]["ann_lee_1"]["payment_methods"]["gift_card_1"].update(balance="56"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.balance", "number"]),
        (lambda d: d["users"]["ann_lee_1"]["payment_methods"]["gift_card_1"].update(id="gift_card_9"), "users.json",
         ["'ann_lee_1'", "payment_methods.gift_card_1.id", "gift_card_9"]),
        (lambda d: d["users"]["ann_lee_1"].update(nickname="Annie"), "users.json",
         ["'ann_lee_1'", "nickname", "unexpected"]),
        (lambda d: d["orders"]["#W0000001"]["items"][0].update(price=True), "orders.json",
         ["'#W0000001'", "items[0].price", "number"]),
        (lambda d: d["orders"]["#W0000001"].update(user_id="nobody"), "orders.json",
         ["'#W0000001'", "user_id", "nobody"]),
        (lambda d: d["orders"]["#W0000001"]["fulfillments"][0].update(tracking_id=[7]), "orders.json",
         ["'#W0000001'", "fulfillments[0].tracking_id[0]", "string"]),
        (lambda d: d["orders"]["#W0000001"].update(payment_history={}), "orders.json",
         ["'#W0000001'", "payment_history", "list"]),
        (lambda d: d["products"]["p1"]["variants"]["i1"].update(available="yes"), "products.json",
         ["'p1'", "variants.i1.available", "true or false"]),
        (lambda d: d["products"]["p1"].update(variants=[]), "products.json", ["'p1'", "variants", "object"]),
    ],
)
def test_malformed_records_name_file_key_and_field(
    tmp_path: Path, mutate: Any, file: str, fragments: list[str]
) -> None:
    data = _tiny()
    mutate(data)
    assert_load_fails(RetailDomain(), _write(tmp_path / "bad", data), file, fragments)


def test_missing_and_invalid_files(tmp_path: Path) -> None:
    folder = _write(tmp_path / "bad", _tiny())
    assert_bad_file_refused(RetailDomain, folder, "orders.json", '{"#W1": ', "cannot read")


def test_non_finite_number_is_refused(tmp_path):
    import json
    import shutil

    from domains.retail import RetailDomain
    from simulator.world.domain import DomainError

    src = RetailDomain().default_data_dir()
    for name in ("users.json", "orders.json", "products.json"):
        shutil.copy(src / name, tmp_path / name)
    products = json.loads((tmp_path / "products.json").read_text())
    pid, product = next(iter(products.items()))
    vid = next(iter(product["variants"]))
    product["variants"][vid]["price"] = float("nan")
    (tmp_path / "products.json").write_text(json.dumps(products))  # json writes NaN, as a careless tool would
    import pytest

    with pytest.raises(DomainError, match=r"products.json.*price.*finite"):
        RetailDomain().template(tmp_path)

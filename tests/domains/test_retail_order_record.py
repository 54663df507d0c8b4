"""``order_record`` (one order in two statements) gives the record of the data file and of the full dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from domains.retail import RetailDomain
from domains.retail._data import dump_all, order_record
from tests._support.json_folder import read_files, write_files

FILES = ("users", "orders", "products")


def test_every_peer_order_is_its_file_record(retail_peer_dir: Path) -> None:
    orders = read_files(retail_peer_dir / "data", FILES)["orders"]
    with RetailDomain().template(retail_peer_dir / "data").trial() as trial:
        for order_id, record in orders.items():  # key order too: the JSON texts are compared
            assert json.dumps(order_record(trial.raw, order_id)) == json.dumps(record), order_id
        assert order_record(trial.raw, "#W0000000-absent") is None


def _busy_order(files: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A delivered order given three fulfillments of several tracking and item ids, keys in an unusual order."""
    order_id, order = next((k, v) for k, v in files["orders"].items() if v["fulfillments"] and v["items"])
    items = [i["item_id"] for i in order["items"]]
    order["fulfillments"] = [
        {"item_ids": items[::-1], "tracking_id": ["111", "222", "333"]},  # keys reversed: a stored layout
        {"tracking_id": ["444"], "item_ids": items[:1]},
        {"tracking_id": [], "item_ids": []},
    ]
    order["payment_history"] = [*order["payment_history"],
                                {"amount": 12.5, "transaction_type": "refund",
                                 "payment_method_id": order["payment_history"][0]["payment_method_id"]}]
    order["items"][0] = dict(reversed(list(order["items"][0].items())))
    return order_id, order


def test_many_fulfillments_and_stored_key_orders(retail_peer_dir: Path, tmp_path: Path) -> None:
    files = read_files(retail_peer_dir / "data", FILES)
    files = {**files, "orders": dict(list(files["orders"].items())[:60])}
    order_id, order = _busy_order(files)
    folder = write_files(tmp_path / "data", files, FILES)
    with RetailDomain().template(folder).trial() as trial:
        got = order_record(trial.raw, order_id)
        assert json.dumps(got) == json.dumps(order)
        assert [f["tracking_id"] for f in got["fulfillments"]] == [["111", "222", "333"], ["444"], []]


def test_after_writes_the_record_is_the_dumps(retail_peer_dir: Path) -> None:
    with RetailDomain().template(retail_peer_dir / "data").trial() as trial:
        raw = trial.raw
        pending, delivered = (raw.execute("SELECT id FROM orders WHERE status = ? ORDER BY position LIMIT 1",
                                          (s,)).fetchone()[0] for s in ("pending", "delivered"))
        raw.execute("UPDATE orders SET status = 'cancelled', cancel_reason = 'no longer needed' WHERE id = ?",
                    (pending,))
        raw.execute("INSERT INTO payments (order_id, position, transaction_type, amount, payment_method_id) "
                    "VALUES (?, 99, 'refund', 3, 'x')", (pending,))
        raw.execute("UPDATE orders SET status = 'return requested', return_items = '[\"1\", \"2\"]' WHERE id = ?",
                    (delivered,))
        raw.execute("DELETE FROM order_items WHERE order_id = ? AND position = 0", (delivered,))
        dump = dump_all(raw)["orders"]
        for order_id in (pending, delivered):
            assert json.dumps(order_record(raw, order_id)) == json.dumps(dump[order_id])
        assert order_record(raw, pending)["payment_history"][-1] == {
            "transaction_type": "refund", "amount": 3, "payment_method_id": "x"}
        raw.rollback()

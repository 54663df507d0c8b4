"""A write tool's answer is the record a fresh read gives: built from the rows the tool holds (retail orders) or
read in two statements (airline reservations), it must equal what the full record builders read back."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from domains.airline import AirlineDomain
from domains.airline._data import dump_all as airline_dump
from domains.airline._data import reservation_record
from domains.retail import RetailDomain
from domains.retail._data import order_record, order_record_from
from domains.retail.tools import _DB
from simulator.types.tasks import Task, load_tasks
from simulator.world.domain import Domain
from simulator.world.replay import prepare_trial
from simulator.world.tools import ToolContext

ORDER_WRITES = {"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
                "modify_pending_order_items", "return_delivered_order_items", "exchange_delivered_order_items"}


def _replay_writes(domain: Domain, template: Any, tasks: list[Task], check: Any) -> int:
    """Replay every task's gold actions; call ``check(conn, action, content)`` after each successful write."""
    toolbox = domain.toolbox_for(template.options)
    checked = 0
    for task in tasks:
        with template.trial() as db:
            prepare_trial(domain, db, task)
            ctx = ToolContext(db.session, db.options)
            for action in task.gold_actions:
                out = toolbox.dispatch(ctx, action.name, action.arguments)
                if out.status == "ok" and out.kind == "write":
                    checked += check(db.raw, action, out.content)
    return checked


def _order_answer_is_reread(conn: Any, action: Any, content: str) -> int:
    if action.name not in ORDER_WRITES:
        return 0
    assert content == json.dumps(order_record(conn, action.arguments["order_id"])), action
    return 1


@pytest.mark.parametrize("mode", ["tau-bench", "tau2"])
def test_retail_order_answers_equal_a_fresh_read_builtin(mode: str) -> None:
    domain = RetailDomain()
    template = domain.template(None, {"mode": mode})
    tasks = domain.load_tasks(None)

    def check(conn: Any, action: Any, content: str) -> int:
        if action.name not in ORDER_WRITES:
            return 0
        record = order_record(conn, action.arguments["order_id"])
        if mode == "tau2":
            from domains.retail.tools import tau2_order

            record = tau2_order(record)
        assert content == json.dumps(record), action
        return 1

    assert _replay_writes(domain, template, tasks, check) >= 20


def test_retail_order_answers_equal_a_fresh_read_peer(retail_peer_dir: Path) -> None:
    domain = RetailDomain()
    template = domain.template(retail_peer_dir / "data")
    tasks = load_tasks(retail_peer_dir / "tasks_train.json")[:200]
    assert _replay_writes(domain, template, tasks, _order_answer_is_reread) >= 150


def _first_order(conn: Any, status: str) -> str:
    found = conn.execute("SELECT id FROM orders WHERE status = ? ORDER BY position LIMIT 1", (status,)).fetchone()
    return str(found[0])


def test_order_record_from_reads_back_what_sqlite_would_not_keep() -> None:
    """A NaN price difference is stored as NULL: the record leaves the key out, as a read gives it."""
    with RetailDomain().template(None).trial() as trial:
        conn = trial.raw
        order_id = _first_order(conn, "delivered")
        order = _DB.get(conn, "orders", order_id)
        _DB.update(conn, "orders", order, exchange_price_difference=math.nan)
        assert order["exchange_price_difference"] != order["exchange_price_difference"]
        record = order_record_from(conn, order)
        assert "exchange_price_difference" not in record
        assert json.dumps(record) == json.dumps(order_record(conn, order_id))


def test_order_record_from_keeps_the_stored_payment_order() -> None:
    """Payments given out of position order (an entry appended after a gap) come in the order a read gives."""
    with RetailDomain().template(None).trial() as trial:
        conn = trial.raw
        order_id = _first_order(conn, "pending")
        history = _DB.select(conn, "payments", "order_id = ? ORDER BY position", (order_id,))
        last = history[-1]["position"]
        far = {**history[-1], "position": last + 5, "amount": 1}
        near = {**history[-1], "position": last + 1, "amount": 2}
        _DB.insert(conn, "payments", far)
        _DB.insert(conn, "payments", near)
        given = [*history, far, near]  # far before near: not the stored order
        order = _DB.get(conn, "orders", order_id)
        record = order_record_from(conn, order, payments=given)
        assert [p["amount"] for p in record["payment_history"][-2:]] == [2, 1]
        assert json.dumps(record) == json.dumps(order_record(conn, order_id))


def test_order_record_from_uses_the_rows_given() -> None:
    """Rows given are not read again: a change only the given row holds shows (what the tools rely on)."""
    with RetailDomain().template(None).trial() as trial:
        conn = trial.raw
        order_id = _first_order(conn, "delivered")
        order = _DB.get(conn, "orders", order_id)
        items = _DB.select(conn, "order_items", "order_id = ? ORDER BY position", (order_id,))
        stored = json.dumps(order_record(conn, order_id))
        assert json.dumps(order_record_from(conn, dict(order), [dict(i) for i in items])) == stored
        items[0]["price"] = -1
        assert order_record_from(conn, order, items)["items"][0]["price"] == -1
        assert order_record_from(conn, order)["items"][0]["price"] != -1


def test_every_peer_reservation_is_its_dump_record(airline_peer_dir: Path) -> None:
    with AirlineDomain().template(airline_peer_dir / "data").trial() as trial:
        dump = airline_dump(trial.raw)["reservations"]
        for reservation_id, record in dump.items():
            assert json.dumps(reservation_record(trial.raw, reservation_id)) == json.dumps(record), reservation_id
        assert reservation_record(trial.raw, "NOPE00") is None


def test_airline_answers_equal_the_dump_after_writes() -> None:
    domain = AirlineDomain()
    template = domain.template(None)

    def check(conn: Any, action: Any, content: str) -> int:
        if not content.startswith("{"):  # send_certificate answers in words
            return 0
        reservation_id = json.loads(content)["reservation_id"]
        assert json.loads(content) == airline_dump(conn)["reservations"][reservation_id]
        assert json.dumps(reservation_record(conn, reservation_id)) == json.dumps(
            airline_dump(conn)["reservations"][reservation_id])
        return 1

    assert _replay_writes(domain, template, domain.load_tasks(None), check) >= 10


def test_order_record_from_applies_stored_key_orders(tmp_path: Path) -> None:
    """An order whose record, address, items and payments have stored (non-canonical) key orders."""
    from tests._support.json_folder import read_files, write_files

    files = read_files(Path(__file__).resolve().parents[2] / "domains" / "retail" / "data",
                       ("users", "orders", "products"))
    order_id, order = next((k, v) for k, v in files["orders"].items() if v["items"] and v["payment_history"])
    order = dict(reversed(list(order.items())))
    order["address"] = dict(reversed(list(order["address"].items())))
    order["items"] = [dict(reversed(list(i.items()))) for i in order["items"]]
    order["payment_history"] = [dict(reversed(list(p.items()))) for p in order["payment_history"]]
    files["orders"][order_id] = order
    folder = write_files(tmp_path / "data", files, ("users", "orders", "products"))
    with RetailDomain().template(folder).trial() as trial:
        conn = trial.raw
        row = _DB.get(conn, "orders", order_id)
        items = _DB.select(conn, "order_items", "order_id = ? ORDER BY position", (order_id,))
        payments = _DB.select(conn, "payments", "order_id = ? ORDER BY position", (order_id,))
        assert row["layout"] and all(i["layout"] for i in items) and all(p["layout"] for p in payments)
        expected = json.dumps(order)
        assert json.dumps(order_record(conn, order_id)) == expected
        for given in ((None, None), (items, None), (None, payments), (items, payments)):
            assert json.dumps(order_record_from(conn, row, *given)) == expected


def test_order_children_are_the_rows_a_select_reads() -> None:
    """One statement for items, payments and fulfillments gives what the per-table reads give, for every order."""
    from domains.retail._data import order_children

    with RetailDomain().template(None).trial() as trial:
        conn = trial.raw
        order_ids = [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY position")]
        shipped = 0
        for order_id in order_ids:
            items, payments, fulfillments = order_children(conn, order_id)
            items_rows = _DB.rows("order_items", items)
            payment_rows = _DB.rows("payments", payments)
            assert items_rows == _DB.select(conn, "order_items", "order_id = ? ORDER BY position", (order_id,))
            assert payment_rows == _DB.select(conn, "payments", "order_id = ? ORDER BY position", (order_id,))
            record = order_record(conn, order_id)
            assert fulfillments == record["fulfillments"]
            shipped += bool(fulfillments)
            order = _DB.get(conn, "orders", order_id)
            assert json.dumps(order_record_from(conn, order, items_rows, payment_rows, fulfillments)) == json.dumps(
                record)
        assert len(order_ids) > 20 and shipped > 5

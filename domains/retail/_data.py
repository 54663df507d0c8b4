"""Load the retail JSON files into the relational schema, and dump the schema back to that JSON.

The native format is a folder with ``users.json``, ``orders.json`` and ``products.json``, each an object
``{key: record}`` (tau-bench layout; see :mod:`domains.retail.models` for what is kept for a lossless round
trip). Loading validates every field and names file, record key and field on malformed input. Dumping
reads the tables through the raw sqlite3 connection (it runs once per replayed task, so it avoids the ORM)
and rebuilds exactly the nested JSON that was loaded, plus whatever the tools changed.

The same record builders serve the full dump and the look-up tools, so a tool's JSON answer is always the
record as it appears in the dump.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import JSON
from sqlalchemy.orm import Session

from domains._common import strip_user_id
from domains.retail.models import (
    Fulfillment,
    FulfillmentItem,
    FulfillmentTracking,
    Order,
    OrderItem,
    Payment,
    PaymentMethod,
    Product,
    User,
    UserOrder,
    Variant,
)
from simulator.world.kit import Reads, RecordChecker, dump_tables, insert_rows, read_tables, select_rows
from simulator.world.kit import group_rows as _lists
from simulator.world.kit import key_layout as _layout
from simulator.world.kit import kind as _kind
from simulator.world.kit import shape as _shape

__all__ = [
    "ADDRESS_KEYS",
    "FILES",
    "ORDER_KEYS",
    "dump_all",
    "TABLES",
    "load_folder",
    "load_tables",
    "order_children",
    "order_record",
    "order_record_from",
    "order_row",
    "product_record",
    "user_record",
]

FILES = ("users.json", "orders.json", "products.json")
"""The data files of a retail data set; the dump has one top-level table per file (without ``.json``)."""

# Canonical key orders (the order of the peer files; optional keys last, in the order tools set them).
USER_KEYS = ("name", "address", "email", "payment_methods", "orders")
NAME_KEYS = ("first_name", "last_name")
ADDRESS_KEYS = ("address1", "address2", "city", "country", "state", "zip")
"""Key order of addresses in the data files."""
METHOD_KEYS = ("source", "brand", "last_four", "balance", "id")
ORDER_REQUIRED = ("order_id", "user_id", "address", "items", "fulfillments", "status", "payment_history")
ORDER_OPTIONAL = (
    "cancel_reason",
    "return_items",
    "return_payment_method_id",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
)
ORDER_KEYS = ORDER_REQUIRED + ORDER_OPTIONAL
"""Canonical key order of an order record."""
ITEM_KEYS = ("name", "product_id", "item_id", "price", "options")
FULFILLMENT_KEYS = ("tracking_id", "item_ids")
PAYMENT_KEYS = ("transaction_type", "amount", "payment_method_id")
PRODUCT_KEYS = ("name", "product_id", "variants")
VARIANT_KEYS = ("item_id", "options", "available", "price")


# ------------------------------------------------------------------------------------------------ loading
TABLES = ("users", "orders", "products")
"""The tables of a retail data set (one file each, or one key each of a tau2 ``db.json``)."""


def load_folder(session: Session, folder: Path) -> None:
    """Insert a data set into an empty database.

    Args:
        session: a Session on a database with the retail schema and no rows.
        folder: the data directory (users.json, orders.json, products.json), or a tau2 ``db.json`` (the file
            or its folder), whose users may carry their ``user_id``.

    Raises:
        DomainError: a file is missing, not JSON, or a record is malformed (names file, key and field).
    """
    load_tables(session, read_tables(Path(folder), TABLES, "retail"))


def load_tables(session: Session, tables: Mapping[str, tuple[Path, dict[str, Any]]]) -> None:
    """Insert already read tables (``{table: (source, records)}``, see :func:`read_tables`) into an empty database.

    Raises:
        DomainError: a record is malformed (names the source, key and field).
    """
    users = tables["users"][1]
    orders = tables["orders"][1]
    products = tables["products"][1]
    rows: dict[type, list[dict[str, Any]]] = {
        m: []
        for m in (
            User, PaymentMethod, UserOrder, Order, OrderItem, Payment, Fulfillment, FulfillmentTracking,
            FulfillmentItem, Product, Variant,
        )
    }
    _load_users(tables["users"][0], users, rows)
    _load_orders(tables["orders"][0], orders, users, rows)
    _load_products(tables["products"][0], products, rows)
    insert_rows(session, rows)


def _load_users(path: Path, users: dict[str, Any], rows: dict[type, list[dict[str, Any]]]) -> None:
    for pos, (uid, raw) in enumerate(users.items()):
        r = RecordChecker(path, uid)
        rec = r.obj(strip_user_id(r, raw), "", USER_KEYS)
        name = r.obj(rec["name"], "name", NAME_KEYS)
        addr = r.obj(rec["address"], "address", ADDRESS_KEYS)
        methods = r.mapping(rec["payment_methods"], "payment_methods")
        rows[User].append({
            "id": uid, "position": pos,
            "first_name": r.req_string(name, "first_name", "name"),
            "last_name": r.req_string(name, "last_name", "name"),
            **{k: r.req_string(addr, k, "address") for k in ADDRESS_KEYS},
            "email": r.req_string(rec, "email", ""),
            "layout": _layout([("", rec, USER_KEYS), ("name", name, NAME_KEYS), ("address", addr, ADDRESS_KEYS)]),
        })
        for mpos, (mid, mraw) in enumerate(methods.items()):
            field = f"payment_methods.{mid}"
            m = r.obj(mraw, field, ("source", "id"), METHOD_KEYS)
            r.same_id(r.req_string(m, "id", field), f"{field}.id", mid)
            rows[PaymentMethod].append({
                "user_id": uid, "id": mid, "position": mpos,
                "source": r.req_string(m, "source", field),
                "brand": r.string(m, "brand", field, optional=True),
                "last_four": r.string(m, "last_four", field, optional=True),
                "balance": r.number(m, "balance", field, optional=True),
                "layout": _layout([("", m, METHOD_KEYS)]),
            })
        for opos, oid in enumerate(r.strings(rec, "orders", "") or []):
            rows[UserOrder].append({"user_id": uid, "position": opos, "order_id": oid})


def _load_orders(
    path: Path, orders: dict[str, Any], users: Mapping[str, Any], rows: dict[type, list[dict[str, Any]]]
) -> None:
    for pos, (oid, raw) in enumerate(orders.items()):
        r = RecordChecker(path, oid)
        rec = r.obj(raw, "", ORDER_REQUIRED, ORDER_OPTIONAL)
        r.same_id(r.req_string(rec, "order_id", ""), "order_id", oid)
        uid = r.req_string(rec, "user_id", "")
        if uid not in users:
            r.fail("user_id", f"unknown user {uid!r} (not in users.json)")
        addr = r.obj(rec["address"], "address", ADDRESS_KEYS)
        rows[Order].append({
            "id": oid, "position": pos, "user_id": uid,
            **{k: r.req_string(addr, k, "address") for k in ADDRESS_KEYS},
            "status": r.req_string(rec, "status", ""),
            "cancel_reason": r.string(rec, "cancel_reason", "", optional=True),
            "return_items": r.strings(rec, "return_items", "", optional=True),
            "return_payment_method_id": r.string(rec, "return_payment_method_id", "", optional=True),
            "exchange_items": r.strings(rec, "exchange_items", "", optional=True),
            "exchange_new_items": r.strings(rec, "exchange_new_items", "", optional=True),
            "exchange_payment_method_id": r.string(rec, "exchange_payment_method_id", "", optional=True),
            "exchange_price_difference": r.number(rec, "exchange_price_difference", "", optional=True),
            "layout": _layout([("", rec, ORDER_KEYS), ("address", addr, ADDRESS_KEYS)]),
        })
        items = rec["items"]
        if not isinstance(items, list):
            r.fail("items", f"expected a list, got {_kind(items)}")
        for ipos, iraw in enumerate(items):
            field = f"items[{ipos}]"
            it = r.obj(iraw, field, ITEM_KEYS)
            rows[OrderItem].append({
                "order_id": oid, "position": ipos,
                "name": r.req_string(it, "name", field),
                "product_id": r.req_string(it, "product_id", field),
                "item_id": r.req_string(it, "item_id", field),
                "price": r.number(it, "price", field),
                "options": r.free_object(it, "options", field),
                "layout": _layout([("", it, ITEM_KEYS)]),
            })
        fulfillments = rec["fulfillments"]
        if not isinstance(fulfillments, list):
            r.fail("fulfillments", f"expected a list, got {_kind(fulfillments)}")
        for fpos, fraw in enumerate(fulfillments):
            field = f"fulfillments[{fpos}]"
            f = r.obj(fraw, field, FULFILLMENT_KEYS)
            rows[Fulfillment].append(
                {"order_id": oid, "position": fpos, "layout": _layout([("", f, FULFILLMENT_KEYS)])}
            )
            for tpos, tid in enumerate(r.strings(f, "tracking_id", field) or []):
                rows[FulfillmentTracking].append(
                    {"order_id": oid, "fulfillment_position": fpos, "position": tpos, "tracking_id": tid}
                )
            for ipos, iid in enumerate(r.strings(f, "item_ids", field) or []):
                rows[FulfillmentItem].append(
                    {"order_id": oid, "fulfillment_position": fpos, "position": ipos, "item_id": iid}
                )
        history = rec["payment_history"]
        if not isinstance(history, list):
            r.fail("payment_history", f"expected a list, got {_kind(history)}")
        for ppos, praw in enumerate(history):
            field = f"payment_history[{ppos}]"
            p = r.obj(praw, field, PAYMENT_KEYS)
            rows[Payment].append({
                "order_id": oid, "position": ppos,
                "transaction_type": r.req_string(p, "transaction_type", field),
                "amount": r.number(p, "amount", field),
                "payment_method_id": r.req_string(p, "payment_method_id", field),
                "layout": _layout([("", p, PAYMENT_KEYS)]),
            })


def _load_products(path: Path, products: dict[str, Any], rows: dict[type, list[dict[str, Any]]]) -> None:
    seen_items: dict[str, str] = {}
    for pos, (pid, raw) in enumerate(products.items()):
        r = RecordChecker(path, pid)
        rec = r.obj(raw, "", PRODUCT_KEYS)
        r.same_id(r.req_string(rec, "product_id", ""), "product_id", pid)
        rows[Product].append({
            "id": pid, "position": pos, "name": r.req_string(rec, "name", ""),
            "layout": _layout([("", rec, PRODUCT_KEYS)]),
        })
        variants = r.mapping(rec["variants"], "variants")
        for vpos, (iid, vraw) in enumerate(variants.items()):
            field = f"variants.{iid}"
            v = r.obj(vraw, field, VARIANT_KEYS)
            r.same_id(r.req_string(v, "item_id", field), f"{field}.item_id", iid)
            if iid in seen_items:
                r.fail(field, f"item id {iid!r} is also a variant of product {seen_items[iid]!r}")
            seen_items[iid] = pid
            available = v["available"]
            if not isinstance(available, bool):
                r.fail(f"{field}.available", f"expected true or false, got {_kind(available)}")
            rows[Variant].append({
                "product_id": pid, "item_id": iid, "position": vpos,
                "options": r.free_object(v, "options", field),
                "available": available,
                "price": r.number(v, "price", field),
                "layout": _layout([("", v, VARIANT_KEYS)]),
            })


# ------------------------------------------------------------------------------------------------ dumping
_OPTIONS_CACHE: dict[str, dict[str, Any]] = {}
_OPTIONS_CACHE_MAX = 50_000


def _options(text: str) -> dict[str, Any]:
    """Decode an ``options`` JSON text into a new dict.

    Memoised: the same few hundred option sets recur in every dump, and copying a flat dict is ten times
    cheaper than decoding it. Sets with nested values are decoded every time (a shallow copy would share).
    """
    cached = _OPTIONS_CACHE.get(text)
    if cached is not None:
        return cached.copy()
    value: dict[str, Any] = json.loads(text)
    if len(_OPTIONS_CACHE) < _OPTIONS_CACHE_MAX and all(
        v is None or isinstance(v, str | int | float | bool) for v in value.values()
    ):
        _OPTIONS_CACHE[text] = value.copy()
    return value


_LAST = itemgetter(-1)


def _by_position(conn: sqlite3.Connection, sql: str, column: str, key: str | None) -> list[Any]:
    """The rows of ``sql`` (its last column ``position``) of every parent, or of the parent ``key``, in file order.

    All rows: ordered by parent and position in SQL. One parent's: sorted here by position, a sort of a few rows
    where sqlite would build a temporary b-tree (its primary key orders the rows by another column).
    """
    if key is None:
        return select_rows(conn, sql, column, None, f"{column}, position")
    rows = conn.execute(f"{sql} WHERE {column} = ?", (key,)).fetchall()
    rows.sort(key=_LAST)
    return rows


def _users(conn: sqlite3.Connection, user_id: str | None) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}
    key: Any = None
    for uid, mid, source, brand, last_four, balance, layout, _ in _by_position(
        conn, "SELECT user_id, id, source, brand, last_four, balance, layout, position FROM payment_methods", "user_id",
        user_id,
    ):
        if uid != key:
            key = uid
            bucket = methods[uid] = {}
        m: dict[str, Any] = {"source": source}
        if brand is not None:
            m["brand"] = brand
        if last_four is not None:
            m["last_four"] = last_four
        if balance is not None:
            m["balance"] = balance
        m["id"] = mid
        bucket[mid] = m if layout is None else _shape(m, layout)
    links = _lists(
        select_rows(conn, "SELECT user_id, order_id FROM user_orders", "user_id", user_id, "user_id, position")
    )
    out: dict[str, dict[str, Any]] = {}
    for uid, first, last, a1, a2, city, country, state, zip_, email, layout in select_rows(
        conn, "SELECT id, first_name, last_name, address1, address2, city, country, state, zip, email, layout "
        "FROM users", "id", user_id, "position",
    ):
        rec = {
            "name": {"first_name": first, "last_name": last},
            "address": {"address1": a1, "address2": a2, "city": city, "country": country, "state": state,
                        "zip": zip_},
            "email": email,
            "payment_methods": methods.get(uid, {}),
            "orders": links.get(uid, []),
        }
        out[uid] = rec if layout is None else _shape(rec, layout)
    return out


def _orders(conn: sqlite3.Connection, order_id: str | None) -> dict[str, dict[str, Any]]:
    order_rows = select_rows(conn, _ORDER_SQL, "id", order_id, "position")
    if not order_rows:  # one order looked up that does not exist: its children are not looked for
        return {}
    items = _children(select_rows(
        conn, "SELECT order_id, name, product_id, item_id, price, options, layout FROM order_items", "order_id",
        order_id, "order_id, position",
    ), _item_entry)
    payments = _children(select_rows(
        conn, "SELECT order_id, transaction_type, amount, payment_method_id, layout FROM payments", "order_id",
        order_id, "order_id, position",
    ), _payment_entry)
    shipments = select_rows(
        conn, "SELECT order_id, position, layout FROM fulfillments", "order_id", order_id, "order_id, position"
    )
    tracking: dict[Any, list[Any]] = {}
    shipped: dict[Any, list[Any]] = {}
    if shipments:  # (a pending order has none: its tracking ids and shipped items are not looked for)
        tracking = _lists(select_rows(
            conn, "SELECT order_id || ' ' || fulfillment_position, tracking_id FROM fulfillment_tracking_ids",
            "order_id", order_id, "order_id, fulfillment_position, position"))
        shipped = _lists(select_rows(
            conn, "SELECT order_id || ' ' || fulfillment_position, item_id FROM fulfillment_item_ids", "order_id",
            order_id, "order_id, fulfillment_position, position"))
    fulfillments = _children([(oid, f"{oid} {fpos}", layout) for oid, fpos, layout in shipments],
                             lambda ref: {"tracking_id": tracking.get(ref, []), "item_ids": shipped.get(ref, [])})
    return {row[0]: _order(row, items.get(row[0], []), fulfillments.get(row[0], []), payments.get(row[0], []))
            for row in order_rows}


def _item_entry(name: Any, product_id: Any, item_id: Any, price: Any, options: Any) -> dict[str, Any]:
    """An order item's entry from its ``order_items`` fields (options stored as JSON)."""
    return {"name": name, "product_id": product_id, "item_id": item_id, "price": price, "options": _options(options)}


def _payment_entry(kind: Any, amount: Any, payment_method_id: Any) -> dict[str, Any]:
    """A payment-history entry from its ``payments`` fields."""
    return {"transaction_type": kind, "amount": amount, "payment_method_id": payment_method_id}


def _order(row: Sequence[Any], items: list[dict[str, Any]], fulfillments: list[dict[str, Any]],
           payments: list[dict[str, Any]]) -> dict[str, Any]:
    """One order's record from its ``orders`` row (the columns of :data:`_ORDER_SQL`) and its built children."""
    (oid, uid, a1, a2, city, country, state, zip_, status, cancel_reason, return_items, return_pm,
     exchange_items, exchange_new, exchange_pm, exchange_diff, layout) = row
    rec: dict[str, Any] = {
        "order_id": oid,
        "user_id": uid,
        "address": {"address1": a1, "address2": a2, "city": city, "country": country, "state": state,
                    "zip": zip_},
        "items": items,
        "fulfillments": fulfillments,
        "status": status,
        "payment_history": payments,
    }
    for name, value in (("cancel_reason", cancel_reason), ("return_items", return_items),
                        ("return_payment_method_id", return_pm), ("exchange_items", exchange_items),
                        ("exchange_new_items", exchange_new), ("exchange_payment_method_id", exchange_pm),
                        ("exchange_price_difference", exchange_diff)):
        if value is not None:
            rec[name] = json.loads(value) if name in _JSON_LISTS else value
    return rec if layout is None else _shape(rec, layout)


_ORDER_SQL = ("SELECT id, user_id, address1, address2, city, country, state, zip, status, cancel_reason, "
              "return_items, return_payment_method_id, exchange_items, exchange_new_items, "
              "exchange_payment_method_id, exchange_price_difference, layout FROM orders")
"""The ``orders`` columns a record is built from (:func:`_order`), without WHERE or ORDER BY."""

_PART_SQL = {
    "items": "SELECT 0, 0, position, name, product_id, item_id, price, options, layout FROM order_items "
             "WHERE order_id = ?1",
    "payments": "SELECT 1, 0, position, transaction_type, amount, payment_method_id, NULL, NULL, layout "
                "FROM payments WHERE order_id = ?1",
    "fulfillments": "SELECT 2, position, 0, NULL, NULL, NULL, NULL, NULL, layout FROM fulfillments WHERE order_id = ?1",
    "tracking": "SELECT 3, fulfillment_position, position, tracking_id, NULL, NULL, NULL, NULL, NULL "
                "FROM fulfillment_tracking_ids WHERE order_id = ?1",
    "shipped": "SELECT 4, fulfillment_position, position, item_id, NULL, NULL, NULL, NULL, NULL "
               "FROM fulfillment_item_ids WHERE order_id = ?1",
}
"""One select per kind of child row of one order: ``(part, fulfillment position, position, fields..., layout)``."""

_ORDER_PARTS_SQL = " UNION ALL ".join(_PART_SQL.values())
"""Every child row of one order in one statement: ``(part, fulfillment position, position, fields..., layout)``.

Parts: 0 items, 1 payments, 2 fulfillments, 3 tracking ids, 4 shipped item ids; ``UNION ALL`` returns the stored
values unconverted, as the per-table queries of :func:`_orders` do. Sorted in Python by the first three columns
(unique: each part's primary key), the order of those queries; an ``ORDER BY`` would cost a sorter a third of
the statement."""

_PARTS_WITHOUT = {
    (False, False): _ORDER_PARTS_SQL,
    (True, False): " UNION ALL ".join(v for k, v in _PART_SQL.items() if k != "items"),
    (False, True): " UNION ALL ".join(v for k, v in _PART_SQL.items() if k != "payments"),
    (True, True): " UNION ALL ".join(v for k, v in _PART_SQL.items() if k not in ("items", "payments")),
}
""":data:`_ORDER_PARTS_SQL` without the items, the payments or both, by ``(items left out, payments left out)``:
:func:`order_record_from` reads the child rows it has not been given."""


_PART_KEY = itemgetter(0, 1, 2)
"""The sort key of :data:`_ORDER_PARTS_SQL`'s rows: part, fulfillment position, position."""


_ONE_ORDER_SQL = _ORDER_SQL + " WHERE id = ?"
"""One order's ``orders`` row (the columns of :data:`_ORDER_SQL`): read by ``get_order_details`` and by the write
tools (:func:`order_row`) with the same text (one statement in the connection's cache; a row memo would serve both)."""

_ORDER_COLUMNS = tuple(c.strip() for c in _ORDER_SQL[len("SELECT "):_ORDER_SQL.index(" FROM ")].split(","))
"""The column names of :data:`_ORDER_SQL`, in its order."""

_ORDER_JSON = tuple((i, c) for i, c in enumerate(_ORDER_COLUMNS) if isinstance(Order.__table__.columns[c].type, JSON))
"""The JSON columns of :data:`_ORDER_SQL` with their positions (their stored texts are decoded in a row)."""


def _one_order(conn: Reads, order_id: str) -> dict[str, Any] | None:
    """One order's record in two statements; the same record as ``_orders(conn, order_id)[order_id]``."""
    row = conn.execute(_ONE_ORDER_SQL, (order_id,)).fetchone()
    if row is None:
        return None
    items, payments, fulfillments = _parts(conn, _ORDER_PARTS_SQL, order_id)
    return _order(row, items, fulfillments, payments)


def order_row(conn: Reads, order_id: str) -> dict[str, Any] | None:
    """Return an order's ``orders`` row as a write tool holds it (``{column: value}``), or None.

    The columns are those of the record (every column but ``position``, which no tool reads or changes); JSON columns
    decoded, as :meth:`~simulator.world.kit.TableAccess.get` gives them. Read with the statement
    ``get_order_details`` reads with (:data:`_ONE_ORDER_SQL`).

    Args:
        conn: the trial's connection, or ``ctx.reads``.
        order_id: the order.
    """
    values = conn.execute(_ONE_ORDER_SQL, (order_id,)).fetchone()
    if values is None:
        return None
    row = dict(zip(_ORDER_COLUMNS, values, strict=True))
    for i, c in _ORDER_JSON:
        if values[i] is not None:
            row[c] = json.loads(values[i])
    return row


def _parts(conn: Reads, sql: str, order_id: str
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The item, payment and fulfillment entries of one order, from the child rows ``sql`` selects.

    ``sql``: :data:`_ORDER_PARTS_SQL` or one of :data:`_PARTS_WITHOUT`; a part it leaves out is returned empty.
    """
    items: list[dict[str, Any]] = []
    payments: list[dict[str, Any]] = []
    shipments: list[tuple[int, Any]] = []
    tracking: dict[int, list[Any]] = {}
    shipped: dict[int, list[Any]] = {}
    for part, fpos, _, a, b, c, d, e, layout in sorted(conn.execute(sql, (order_id,)), key=_PART_KEY):
        if part == 0:
            entry = _item_entry(a, b, c, d, e)
            items.append(entry if layout is None else _shape(entry, layout))
        elif part == 1:
            entry = _payment_entry(a, b, c)
            payments.append(entry if layout is None else _shape(entry, layout))
        elif part == 2:
            shipments.append((fpos, layout))
        else:
            (tracking if part == 3 else shipped).setdefault(fpos, []).append(a)
    return items, payments, _fulfillments(shipments, tracking, shipped)


def _fulfillments(shipments: list[tuple[int, Any]], tracking: dict[int, list[Any]], shipped: dict[int, list[Any]]
                  ) -> list[dict[str, Any]]:
    """The fulfillment entries from the ``(position, layout)`` of each and its tracking and item ids by position."""
    fulfillments = []
    for fpos, layout in shipments:
        entry = {"tracking_id": tracking.get(fpos, []), "item_ids": shipped.get(fpos, [])}
        fulfillments.append(entry if layout is None else _shape(entry, layout))
    return fulfillments


_ITEM_COLUMNS = tuple(c.name for c in OrderItem.__table__.columns)
_PAYMENT_COLUMNS = tuple(c.name for c in Payment.__table__.columns)
assert _ITEM_COLUMNS == ("order_id", "position", "name", "product_id", "item_id", "price", "options", "layout")
assert _PAYMENT_COLUMNS == ("order_id", "position", "transaction_type", "amount", "payment_method_id", "layout")
# (:func:`order_children` rebuilds these rows from :data:`_ORDER_PARTS_SQL`'s, whose columns follow them)


def order_children(conn: Reads, order_id: str
                   ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[dict[str, Any]]]:
    """Read an order's item and payment rows and build its fulfillment entries, in one statement.

    The statement is the one ``get_order_details`` reads the order's children with (:data:`_ORDER_PARTS_SQL`): the
    columns of the record only (no padding, no repeated key), one statement in the connection's cache for both.

    Args:
        conn: the trial's connection, or ``ctx.reads`` (see :attr:`~simulator.world.kit.ToolContext.reads`).
        order_id: the order.

    Returns:
        ``(items, payments, fulfillments)``: the ``order_items`` and ``payments`` rows in position order, each a
        tuple of all the table's columns in table order, as stored; the fulfillment entries of the record.
    """
    items: list[tuple[Any, ...]] = []
    payments: list[tuple[Any, ...]] = []
    shipments: list[tuple[int, Any]] = []
    tracking: dict[int, list[Any]] = {}
    shipped: dict[int, list[Any]] = {}
    for part, fpos, position, a, b, c, d, e, layout in sorted(conn.execute(_ORDER_PARTS_SQL, (order_id,)),
                                                               key=_PART_KEY):
        if part == 0:
            items.append((order_id, position, a, b, c, d, e, layout))
        elif part == 1:
            payments.append((order_id, position, a, b, c, layout))
        elif part == 2:
            shipments.append((fpos, layout))
        else:
            (tracking if part == 3 else shipped).setdefault(fpos, []).append(a)
    return items, payments, _fulfillments(shipments, tracking, shipped)


def order_record_from(conn: sqlite3.Connection, order: Mapping[str, Any],
                      items: Sequence[Mapping[str, Any]] | None = None,
                      payments: Sequence[Mapping[str, Any]] | None = None,
                      fulfillments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Return an order's record from its rows as a tool holds them, reading only the child rows it was not given.

    The record is the one :func:`order_record` returns (the same JSON text), without reading again what the tool
    read and wrote through :class:`~simulator.world.kit.TableAccess`: the row's decoded JSON columns are what
    decoding the stored text gives, and a value a tool wrote is stored as it is (strings in text columns, numbers
    in :class:`~simulator.world.kit.JsonNumber` ones, JSON data in JSON columns). The one value sqlite would not
    give back (a NaN price difference, stored as NULL), and payments not in position order (an entry appended
    after a gap), fall back to reading the whole record.

    Args:
        conn: the trial's connection (the tool's writes made on it).
        order: the order's ``orders`` row, with the tool's changes (as :meth:`TableAccess.update` leaves it).
        items: the order's ``order_items`` rows in position order, with the tool's changes; None: read here.
        payments: the order's ``payments`` rows in position order, with the entries the tool appended; None: read
            here.
        fulfillments: the order's fulfillment entries (:func:`order_children`; with ``items`` and ``payments``, then
            nothing is read); None: read here.

    Returns:
        The record as in orders.json (it shares nested values with the rows given).
    """
    difference = order["exchange_price_difference"]
    if difference != difference or (payments is not None and not _in_order(payments)):  # NaN: stored as NULL
        record = _one_order(conn, order["id"])
        assert record is not None, order["id"]
        return record
    got_items: list[dict[str, Any]] = []
    got_payments: list[dict[str, Any]] = []
    if fulfillments is None or items is None or payments is None:
        got_items, got_payments, fulfillments = _parts(conn, _PARTS_WITHOUT[items is not None, payments is not None],
                                                       order["id"])
    if items is not None:
        got_items = [_row_entry(_item_entry_of(r), r["layout"]) for r in items]
    if payments is not None:
        got_payments = [_row_entry(_payment_entry(r["transaction_type"], r["amount"], r["payment_method_id"]),
                                   r["layout"]) for r in payments]
    rec: dict[str, Any] = {
        "order_id": order["id"],
        "user_id": order["user_id"],
        "address": {k: order[k] for k in ADDRESS_KEYS},
        "items": got_items,
        "fulfillments": fulfillments,
        "status": order["status"],
        "payment_history": got_payments,
    }
    for name in ORDER_OPTIONAL:
        value = order[name]
        if value is not None:
            rec[name] = value
    return _row_entry(rec, order["layout"])


def _in_order(rows: Sequence[Mapping[str, Any]]) -> bool:
    """True when the rows' positions increase along the list (the order a read by position gives)."""
    return all(a["position"] < b["position"] for a, b in zip(rows, rows[1:], strict=False))


def _item_entry_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """An order item's entry from its decoded ``order_items`` row."""
    return {"name": row["name"], "product_id": row["product_id"], "item_id": row["item_id"], "price": row["price"],
            "options": row["options"]}


def _row_entry(entry: dict[str, Any], layout: Mapping[str, list[str]] | None) -> dict[str, Any]:
    """An entry given a decoded row's stored key order (``layout`` decoded; None: canonical)."""
    return entry if layout is None else _shape(entry, layout)


_JSON_LISTS = frozenset({"return_items", "exchange_items", "exchange_new_items"})
"""Order fields stored as JSON text (lists of item ids)."""


def _children(rows: Iterable[Sequence[Any]], make: Callable[..., dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Group child rows by parent id (their first column), in row order.

    Each row is ``(parent id, *fields, layout)``: ``make(*fields)`` builds the record, given the stored key
    order ``layout`` when there is one.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for parent, *fields, layout in rows:
        entry = make(*fields)
        out.setdefault(parent, []).append(entry if layout is None else _shape(entry, layout))
    return out


def _products(conn: sqlite3.Connection, product_id: str | None) -> dict[str, dict[str, Any]]:
    variants: dict[str, dict[str, Any]] = {}
    key: Any = None
    bucket: dict[str, Any] = {}
    for pid, iid, opts, available, price, layout, _ in _by_position(
        conn, "SELECT product_id, item_id, options, available, price, layout, position FROM variants", "product_id",
        product_id,
    ):
        if pid != key:
            key = pid
            bucket = variants[pid] = {}
        variant = {"item_id": iid, "options": _options(opts), "available": bool(available), "price": price}
        bucket[iid] = variant if layout is None else _shape(variant, layout)
    out: dict[str, dict[str, Any]] = {}
    for pid, name, layout in select_rows(conn, "SELECT id, name, layout FROM products", "id", product_id, "position"):
        rec = {"name": name, "product_id": pid, "variants": variants.get(pid, {})}
        out[pid] = rec if layout is None else _shape(rec, layout)
    return out


def dump_all(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Return the whole database as ``{"users": {...}, "orders": {...}, "products": {...}}``.

    Args:
        conn: a sqlite3 connection holding the retail schema.

    Returns:
        The nested JSON of the three data files, records in file order.
    """
    return dump_tables(conn, {"users": _users, "orders": _orders, "products": _products})


def user_record(conn: sqlite3.Connection, user_id: str) -> dict[str, Any] | None:
    """Return one user's record as in users.json, or None when there is no such user."""
    return _users(conn, user_id).get(user_id)


def order_record(conn: Reads, order_id: str) -> dict[str, Any] | None:
    """Return one order's record as in orders.json, or None when there is no such order.

    ``conn``: the trial's connection, or ``ctx.reads``. Two statements (the order's row, then all its child rows in
    one), where the dump's builder takes four to six.
    """
    return _one_order(conn, order_id)


def product_record(conn: sqlite3.Connection, product_id: str) -> dict[str, Any] | None:
    """Return one product's record as in products.json, or None when there is no such product."""
    return _products(conn, product_id).get(product_id)

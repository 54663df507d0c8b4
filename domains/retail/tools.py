"""The retail tools (tau-bench compatible semantics; see ``../shared/spec/tau-bench-semantics.md``).

Every tool takes the trial's :class:`~simulator.world.tools.ToolContext` first. Look-ups return the record as JSON,
exactly as it appears in the data dump. Write tools check everything before they change anything and
raise :class:`~simulator.world.tools.ToolError` (shown to the agent as ``Error: ...``) when they refuse; the
dispatcher also rolls the call's transaction back, so a refused call never changes the state. Successful
writes return the changed record as JSON. The write tools read and write only the database, through ``ctx.conn`` and
``ctx.reads``, and depend on nothing else (no clock): they are declared ``memo=True``, so the same call on an
unchanged trial copy replays the first one's writes (:mod:`simulator.world.memo`).

Compatibility notes (the peer's behaviour, reproduced on purpose):
- gift-card balances are rounded to cents after every change, while the payment-history amount of an item
  modification is the unrounded sum of the per-item differences (e.g. ``6.259999999999998``);
- cancelling appends one refund per existing payment-history entry, whatever its type;
- when the same item id is listed twice, successive occurrences in the order are changed; the price
  difference uses the price of the first occurrence of each listed id;
- an address written by a tool has its keys in the order ``address1, address2, city, state, country, zip``.

Mode ``tau2`` (option ``mode``, the default for a tau2-bench ``db.json``) reproduces tau2-bench's retail tools
(``../shared/spec/tau2-semantics.md``): the toolbox has ``get_item_details`` and no ``think`` (16 tools, as
tau2's source has; the spec's "15" counts one short);
``modify_pending_order_address`` and ``modify_pending_order_payment`` accept any status containing "pending";
``modify_pending_order_items`` refuses a new item id equal to the old one and gives every modified item the
price and options of the *last* new variant (tau2's quirk, kept so its gold states replay); and responses are
rendered as tau2's models dump them: users carry ``user_id`` first, payment methods and orders have their
model's key order, and an order's optional fields are present as ``null``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from domains.retail._data import (
    order_children,
    order_record,
    order_record_from,
    order_row,
    product_record,
    user_record,
)
from domains.retail.models import NON_ASCII_EMAIL, Base
from simulator.world.kit import (
    Reads,
    Row,
    TableAccess,
    Toolbox,
    ToolContext,
    ToolError,
    calculate,
    json_text,
    think,
    tool,
    transfer_to_human_agents,
    with_new_keys,
)

__all__ = [
    "CANCEL_REASONS",
    "MODES",
    "TAU2_TOOLS",
    "TOOLS",
    "calculate",
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_order_details",
    "get_product_details",
    "get_item_details",
    "get_user_details",
    "list_all_product_types",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "retail_toolbox",
    "return_delivered_order_items",
    "think",
    "transfer_to_human_agents",
]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
"""The only accepted cancellation reasons."""

WRITTEN_ADDRESS_KEYS = ["address1", "address2", "city", "state", "country", "zip"]
"""Key order of an address replaced by a tool (the peer's order, which differs from the data files')."""

MODES = ("tau-bench", "tau2")
"""Tool modes: tau-bench's semantics, or tau2-bench's (see the module docstring)."""

# tau2's model key orders (a pydantic dump lists every field, optional ones as null)
_T2_USER = ("user_id", "name", "address", "email", "payment_methods", "orders")
_T2_ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
_T2_METHOD = {"credit_card": ("source", "id", "brand", "last_four"), "paypal": ("source", "id"),
              "gift_card": ("source", "id", "balance")}
_T2_ORDER = ("order_id", "user_id", "address", "items", "status", "fulfillments", "payment_history", "cancel_reason",
             "exchange_items", "exchange_new_items", "exchange_payment_method_id", "exchange_price_difference",
             "return_items", "return_payment_method_id")
_T2_ITEM = ("name", "product_id", "item_id", "price", "options")
_T2_PAYMENT = ("transaction_type", "amount", "payment_method_id")
_T2_VARIANT = ("item_id", "options", "available", "price")


def _tau2(ctx: ToolContext) -> bool:
    """True in mode ``tau2``."""
    return bool(ctx.options.get("mode") == "tau2")


def _keys(obj: dict, keys: Sequence[str]) -> dict:  # type: ignore[type-arg]
    return {k: obj.get(k) for k in keys}


def tau2_user(user_id: str, rec: dict) -> dict:  # type: ignore[type-arg]
    """Render a user record as tau2's ``User`` model dumps it (``user_id`` first, methods in model order)."""
    out = _keys({**rec, "user_id": user_id}, _T2_USER)
    out["address"] = _keys(rec["address"], _T2_ADDRESS)
    out["payment_methods"] = {k: _keys(m, _T2_METHOD.get(m.get("source"), tuple(m)))
                              for k, m in rec["payment_methods"].items()}
    return out


def tau2_order(rec: dict) -> dict:  # type: ignore[type-arg]
    """Render an order record as tau2's ``Order`` model dumps it (optional fields present as null)."""
    out = _keys(rec, _T2_ORDER)
    out["address"] = _keys(rec["address"], _T2_ADDRESS)
    out["items"] = [_keys(i, _T2_ITEM) for i in rec["items"]]
    out["payment_history"] = [_keys(p, _T2_PAYMENT) for p in rec["payment_history"]]
    return out


# ------------------------------------------------------------------------------------------------ helpers
_DB = TableAccess(Base.metadata)
"""Every read by key and every write of these tools (through the trial's sqlite3 connection)."""


def _order_json(conn: sqlite3.Connection, order: Row, tau2: bool = False, items: list[Row] | None = None,
                payments: list[Row] | None = None, fulfillments: list[dict[str, Any]] | None = None) -> str:
    """An order's record as JSON after a write (``tau2``: rendered as tau2's model dumps it).

    Built from the rows the tool holds (``order`` and, when given, its ``items``, ``payments`` and fulfillment
    entries, all with the tool's changes); the rest is read (:func:`~domains.retail._data.order_record_from`).
    """
    record = order_record_from(conn, order, items, payments, fulfillments)
    return json_text(tau2_order(record) if tau2 else record)  # json.dumps' text


def _user_json(conn: sqlite3.Connection, ctx: ToolContext, user_id: str) -> str:
    """A user's record as JSON (mode tau2: rendered as tau2's model dumps it)."""
    record = user_record(conn, user_id)
    if record is None:
        raise _refuse(_tau2(ctx), f"no user with id {user_id!r}", "User not found")
    return json_text(tau2_user(user_id, record) if _tau2(ctx) else record)  # json.dumps' text


def _refuse(tau2: bool, ours: str, theirs: str) -> ToolError:
    """The refusal of a call: tausim's own text, or in mode ``tau2`` the text τ³'s tool answers (after ``Error: ``)."""
    return ToolError(theirs if tau2 else ours)


def _get_order(conn: Reads, order_id: str, tau2: bool = False) -> Row:
    """The order's row (without ``position``: :func:`~domains.retail._data.order_row`)."""
    order = order_row(conn, order_id)
    if order is None:
        raise _refuse(tau2, f"no order with id {order_id!r}", "Order not found")
    return order


def _get_user(conn: Reads, user_id: str, tau2: bool = False) -> Row:
    user = _DB.get(conn, "users", user_id)
    if user is None:
        raise _refuse(tau2, f"no user with id {user_id!r}", "User not found")
    return user


def _children(conn: Reads, order_id: str) -> tuple[list[Row], list[Row], list[dict[str, Any]]]:
    """An order's items and payment history (rows, in list order) and its fulfillment entries, in one statement."""
    items, payments, fulfillments = order_children(conn, order_id)
    return _DB.rows("order_items", items), _DB.rows("payments", payments), fulfillments


def _require_status(order: Row, status: str, action: str, contains: bool = False, tau2: bool = False) -> None:
    """Refuse an order whose status is not ``status`` (with ``contains``: does not contain it).

    Mode ``tau2`` answers as τ³ does: ``Non-pending order cannot be modified`` (``Non-delivered``, ``cancelled``...).
    """
    if (status not in order["status"]) if contains else (order["status"] != status):
        raise _refuse(tau2, f"order {order['id']} has status {order['status']!r}; only {status} orders can be {action}",
                      f"Non-{status} order cannot be {action}")


def _user_method(conn: Reads, order: Row, payment_method_id: str, tau2: bool = False) -> Row:
    method = _DB.get(conn, "payment_methods", order["user_id"], payment_method_id)
    if method is None:
        raise _refuse(tau2, f"payment method {payment_method_id!r} does not belong to user {order['user_id']}",
                      "Payment method not found")
    return method


def _is_gift_card(method: Row | None) -> bool:
    return method is not None and method["source"] == "gift_card"


def _add_to_balance(conn: sqlite3.Connection, method: Row | None, amount: float) -> None:
    """Change a gift card's balance by ``amount`` (rounded to cents); other methods are left alone."""
    if method is not None and _is_gift_card(method):
        _DB.update(conn, "payment_methods", method, balance=round((method["balance"] or 0) + amount, 2))


def _append_payment(
    conn: sqlite3.Connection, order_id: str, history: list[Row], kind: str, amount: float, payment_method_id: str
) -> None:
    """Append an entry to an order's payment history (``history``, its current rows, grows by it)."""
    row: dict[str, Any] = {"order_id": order_id, "position": len(history), "transaction_type": kind, "amount": amount,
                           "payment_method_id": payment_method_id, "layout": None}
    _DB.insert(conn, "payments", row)
    history.append(row)


def _set_address(conn: sqlite3.Connection, table: str, row: Row, address1: str, address2: str, city: str,
                 state: str, country: str, zip: str) -> None:
    _DB.update(conn, table, row, address1=address1, address2=address2, city=city, state=state, country=country,
               zip=zip, layout={**(row["layout"] or {}), "address": list(WRITTEN_ADDRESS_KEYS)})


def _check_items_present(order: Row, items: Sequence[Row], item_ids: Sequence[str],
                         tau2_text: str | None = None) -> None:
    """Refuse item ids the order does not hold as often as asked (``tau2_text``: τ³'s answer, ``{}`` the id)."""
    have = [item["item_id"] for item in items]
    for item_id in dict.fromkeys(item_ids):  # each id once, in the order first asked for
        wanted, held = item_ids.count(item_id), have.count(item_id)
        if wanted > held:
            where = "is not" if not held else f"appears only {held} time(s)"
            raise _refuse(tau2_text is not None, f"item {item_id} {where} in order {order['id']} (asked for {wanted})",
                          (tau2_text or "").format(item_id))


def _check_swaps(
    conn: Reads, order: Row, items: Sequence[Row], item_ids: Sequence[str], new_item_ids: Sequence[str],
    tau2: tuple[str, str] | None = None,
) -> tuple[list[Row], float]:
    """Validate an item change; return the new variants (per position) and the price difference.

    The difference is the sum over positions of ``new price - old price``, accumulated in list order and
    not rounded. ``tau2``: answer as τ³ does, with its (missing item, count mismatch) texts for this tool.
    """
    _check_items_present(order, items, item_ids, tau2[0] if tau2 else None)
    if len(item_ids) != len(new_item_ids):
        raise _refuse(tau2 is not None,
                      f"item_ids has {len(item_ids)} entries but new_item_ids has {len(new_item_ids)}; they must "
                      "pair up",
                      tau2[1] if tau2 else "")
    first: dict[str, Row] = {}
    for item in items:
        first.setdefault(item["item_id"], item)
    variants: list[Row] = []
    difference = 0.0
    for old_id, new_id in zip(item_ids, new_item_ids, strict=True):
        old = first[old_id]
        variant = _DB.get(conn, "variants", old["product_id"], new_id)
        if variant is None:
            raise _refuse(tau2 is not None,
                          f"item {new_id} is not a variant of product {old['product_id']} ({old['name']})",
                          "Variant not found")
        if not variant["available"]:
            raise _refuse(tau2 is not None, f"item {new_id} ({old['name']}) is not available",
                          f"New item {new_id} not found or available")
        variants.append(variant)
        difference += variant["price"] - old["price"]
    return variants, difference


# ------------------------------------------------------------------------------------------------ look-ups
_EMAIL_SQL = ("SELECT position, id, email FROM users WHERE lower(email) = ?1 UNION ALL "
              f"SELECT position, id, email FROM users WHERE {NON_ASCII_EMAIL}")
"""The candidates of :func:`find_user_id_by_email` (a user in both halves comes twice: the first wins anyway)."""


@tool("read", memo=True)
def find_user_id_by_email(ctx: ToolContext, email: str) -> str:
    """Find a user id by email address.

    Args:
        ctx: the trial's tool context.
        email: The user's email, such as 'something@example.com' (case does not matter).
    """
    wanted = email.lower()
    # Candidates: the ASCII emails equal to it in SQL lower case (sqlite folds ASCII letters only, as Python
    # does for ASCII text) and every email with another character (more bytes than characters), compared as
    # Python compares them; the first in file order wins. Each half is read from its index (models.User).
    candidates = sorted(ctx.conn.execute(_EMAIL_SQL, (wanted,)).fetchall())
    for _, user_id, user_email in candidates:
        if user_email.lower() == wanted:
            return str(user_id)
    raise _refuse(_tau2(ctx), "no user has that email address", "User not found")


@tool("read", memo=True)
def find_user_id_by_name_zip(ctx: ToolContext, first_name: str, last_name: str, zip: str) -> str:
    """Find a user id by first name, last name and zip code.

    Use this only when the user cannot be found by email.

    Args:
        ctx: the trial's tool context.
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    first, last = first_name.lower(), last_name.lower()
    rows = ctx.conn.execute("SELECT id, first_name, last_name FROM users WHERE zip = ? ORDER BY position", (zip,))
    for user_id, user_first, user_last in rows:
        if user_first.lower() == first and user_last.lower() == last:
            return str(user_id)
    raise _refuse(_tau2(ctx), "no user matches that name and zip code", "User not found")


@tool("read", memo=True)
def get_user_details(ctx: ToolContext, user_id: str) -> str:
    """Get a user's details: name, address, email, payment methods and order ids.

    Args:
        ctx: the trial's tool context.
        user_id: The user id, such as 'sara_doe_496'.
    """
    return _user_json(ctx.conn, ctx, user_id)


@tool("read", memo=True)
def get_order_details(ctx: ToolContext, order_id: str) -> str:
    """Get an order's details: address, items, fulfillments, status and payment history.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
    """
    record = order_record(ctx.conn, order_id)
    if record is None:
        raise _refuse(_tau2(ctx), f"no order with id {order_id!r}", "Order not found")
    return json.dumps(tau2_order(record) if _tau2(ctx) else record)


@tool("read", memo=True)
def get_product_details(ctx: ToolContext, product_id: str) -> str:
    """Get a product's details and all its variants (item ids, options, availability, prices).

    Args:
        ctx: the trial's tool context.
        product_id: The product id, such as '6086499569'. A product id differs from an item id.
    """
    record = product_record(ctx.conn, product_id)
    if record is None:
        raise _refuse(_tau2(ctx), f"no product with id {product_id!r}", "Product not found")
    return json.dumps(record)


@tool("read", memo=True)
def get_item_details(ctx: ToolContext, item_id: str) -> str:
    """Get an item's details: its options, availability and price (mode tau2 only).

    Args:
        ctx: the trial's tool context.
        item_id: The item id, such as '6086499569'. An item id differs from a product id.
    """
    found = _DB.select(ctx.conn, "variants", "item_id = ?", (item_id,))
    if not found:
        raise ToolError("Item not found")
    variant = found[0]
    return json.dumps(_keys({"item_id": variant["item_id"], "options": dict(variant["options"]),
                             "available": bool(variant["available"]), "price": variant["price"]}, _T2_VARIANT))


@tool("read", memo=True)
def list_all_product_types(ctx: ToolContext) -> str:
    """List every product type: a JSON object mapping product name to product id, sorted by name.

    Args:
        ctx: the trial's tool context.
    """
    by_name: dict[str, str] = {}
    for name, product_id in ctx.conn.execute("SELECT name, id FROM products ORDER BY position"):
        by_name[name] = product_id
    return json.dumps(dict(sorted(by_name.items())))


# ------------------------------------------------------------------------------------------------ writes
@tool("write", memo=True)
def cancel_pending_order(ctx: ToolContext, order_id: str, reason: str) -> str:
    """Cancel a pending order and refund its payments.

    Refunds go back to the original payment methods; a gift card is credited at once, other methods within
    5 to 7 business days. The agent must list the order details and get the user's explicit confirmation
    (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        reason: Why the order is cancelled: either 'no longer needed' or 'ordered by mistake'.
    """
    conn, reads, tau2 = ctx.conn, ctx.reads, _tau2(ctx)
    order = _get_order(reads, order_id, tau2)
    _require_status(order, "pending", "cancelled", tau2=tau2)
    if reason not in CANCEL_REASONS:
        raise _refuse(tau2, f"reason must be one of {', '.join(repr(r) for r in CANCEL_REASONS)}, not {reason!r}",
                      "Invalid reason")
    items, history, fulfillments = _children(reads, order_id)
    for entry in list(history):
        _append_payment(conn, order_id, history, "refund", entry["amount"], entry["payment_method_id"])
        method = _DB.get(conn, "payment_methods", order["user_id"], entry["payment_method_id"])
        _add_to_balance(conn, method, entry["amount"])
    _DB.update(conn, "orders", order, status="cancelled", cancel_reason=reason,
               layout=with_new_keys(order["layout"], "cancel_reason"))
    return _order_json(conn, order, tau2, items, history, fulfillments)


@tool("write", memo=True)
def modify_pending_order_address(
    ctx: ToolContext, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> str:
    """Change the shipping address of a pending order.

    The agent must list the new address and get the user's explicit confirmation (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    conn, reads = ctx.conn, ctx.reads
    order = _get_order(reads, order_id, _tau2(ctx))
    _require_status(order, "pending", "modified", contains=_tau2(ctx), tau2=_tau2(ctx))
    _set_address(conn, "orders", order, address1, address2, city, state, country, zip)
    return _order_json(conn, order, _tau2(ctx))


@tool("write", memo=True)
def modify_pending_order_payment(ctx: ToolContext, order_id: str, payment_method_id: str) -> str:
    """Pay for a pending order with another payment method of the same user.

    The order must have been paid with a single payment. The new method is charged and the old one refunded
    the same amount (a gift card at once). The agent must get the user's explicit confirmation (yes) first.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        payment_method_id: The new payment method id, such as 'gift_card_0000000' or 'credit_card_0000000'
            (from the user's details).
    """
    conn, reads = ctx.conn, ctx.reads
    order = _get_order(reads, order_id, _tau2(ctx))
    _require_status(order, "pending", "modified", contains=_tau2(ctx), tau2=_tau2(ctx))
    tau2 = _tau2(ctx)
    new_method = _user_method(reads, order, payment_method_id, tau2)
    items, history, fulfillments = _children(reads, order_id)
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise _refuse(tau2, f"order {order['id']} does not have exactly one payment, so its payment method cannot "
                            "change", "There should be exactly one payment for a pending order")
    current = history[0]
    if current["payment_method_id"] == payment_method_id:
        raise _refuse(tau2, f"order {order['id']} is already paid with {payment_method_id}; choose another method",
                      "The new payment method should be different from the current one")
    amount = current["amount"]
    if _is_gift_card(new_method) and (new_method["balance"] or 0) < amount:
        raise _refuse(tau2, f"gift card {payment_method_id} has a balance of {new_method['balance']}, less than the "
                            f"{amount} to pay", "Insufficient gift card balance to pay for the order")
    old_method_id = current["payment_method_id"]
    _append_payment(conn, order_id, history, "payment", amount, payment_method_id)
    _append_payment(conn, order_id, history, "refund", amount, old_method_id)
    _add_to_balance(conn, new_method, -amount)
    _add_to_balance(conn, _DB.get(conn, "payment_methods", order["user_id"], old_method_id), amount)
    return _order_json(conn, order, tau2, items, history, fulfillments)


@tool("write", memo=True)
def modify_pending_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Swap items of a pending order for other variants of the same products.

    This can be done only once per order: afterwards the order can be neither modified nor cancelled. The
    price difference is charged to, or refunded to, the given payment method. The agent must collect every
    item to change and get the user's explicit confirmation (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        item_ids: The item ids to change, such as ['1008292230']. An id may repeat when the order holds that
            item several times.
        new_item_ids: The new item ids, position by position: each must be an available variant of the same
            product as the item it replaces, such as ['1008292230'].
        payment_method_id: The payment method that pays or receives the price difference, such as
            'gift_card_0000000' or 'credit_card_0000000' (from the user's details).
    """
    conn, reads, tau2 = ctx.conn, ctx.reads, _tau2(ctx)
    order = _get_order(reads, order_id, tau2)
    _require_status(order, "pending", "modified", tau2=tau2)
    items, history, fulfillments = _children(reads, order_id)
    if tau2:  # τ³'s order of checks: counts, pairing, then per pair (same id first)
        _check_items_present(order, items, item_ids, "{} not found")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match")
        if any(old == new for old, new in zip(item_ids, new_item_ids, strict=False)):
            raise ToolError("The new item id should be different from the old item id")
    variants, difference = _check_swaps(reads, order, items, item_ids, new_item_ids,
                                        ("{} not found", "The number of items to be exchanged should match")
                                        if tau2 else None)
    method = _user_method(reads, order, payment_method_id, tau2)
    if _is_gift_card(method) and (method["balance"] or 0) < difference:
        raise _refuse(tau2, f"gift card {payment_method_id} has a balance of {method['balance']}, less than the price "
                            f"difference {round(difference, 2)}",
                      "Insufficient gift card balance to pay for the new item")
    _append_payment(conn, order_id, history, "payment" if difference > 0 else "refund", abs(difference),
                    payment_method_id)
    _add_to_balance(conn, method, -difference)
    last = variants[-1] if variants else None
    for old_id, variant in zip(item_ids, variants, strict=True):
        item = next(i for i in items if i["item_id"] == old_id)
        source = last if tau2 and last is not None else variant  # tau2: the last variant's price and options
        _DB.update(conn, "order_items", item, item_id=variant["item_id"], price=source["price"],
                   options=dict(source["options"]))
    _DB.update(conn, "orders", order, status="pending (item modified)")
    return _order_json(conn, order, tau2, items, history, fulfillments)


@tool("write", memo=True)
def modify_user_address(
    ctx: ToolContext, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> str:
    """Change a user's default address.

    The agent must list the new address and get the user's explicit confirmation (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    conn, reads = ctx.conn, ctx.reads
    user = _get_user(reads, user_id, _tau2(ctx))
    _set_address(conn, "users", user, address1, address2, city, state, country, zip)
    return _user_json(conn, ctx, user_id)


@tool("write", memo=True)
def return_delivered_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], payment_method_id: str
) -> str:
    """Request the return of items of a delivered order.

    The order's status becomes 'return requested' and the user receives an email with return instructions.
    The refund goes to the original payment method or to a gift card of the user. The agent must list the
    items and get the user's explicit confirmation (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        item_ids: The item ids to return, such as ['1008292230']. An id may repeat when the order holds that
            item several times.
        payment_method_id: Where the refund goes: the order's original payment method or a gift card of the
            user, such as 'gift_card_0000000' or 'credit_card_0000000'.
    """
    conn, reads, tau2 = ctx.conn, ctx.reads, _tau2(ctx)
    order = _get_order(reads, order_id, tau2)
    _require_status(order, "delivered", "returned", tau2=tau2)
    method = _user_method(reads, order, payment_method_id, tau2)
    items, history, fulfillments = _children(reads, order_id)
    original = history[0]["payment_method_id"] if history else None
    if payment_method_id != original and not _is_gift_card(method):
        raise _refuse(tau2, f"a refund can go only to the original payment method ({original}) or to a gift card, "
                            f"not to {payment_method_id}", "Payment method should be the original payment method")
    _check_items_present(order, items, item_ids, "Some item not found" if tau2 else None)
    _DB.update(conn, "orders", order, status="return requested", return_items=sorted(item_ids),
               return_payment_method_id=payment_method_id,
               layout=with_new_keys(order["layout"], "return_items", "return_payment_method_id"))
    return _order_json(conn, order, tau2, items, history, fulfillments)


@tool("write", memo=True)
def exchange_delivered_order_items(
    ctx: ToolContext, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Request the exchange of items of a delivered order for other variants of the same products.

    The order's status becomes 'exchange requested' and the user receives an email with return instructions.
    The price difference will be charged to, or refunded to, the given payment method. This can be done only
    once per order, so the agent must collect every item to exchange and get the user's explicit
    confirmation (yes) before calling this.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '#W0000000'. Be careful: the '#' is part of the id.
        item_ids: The item ids to exchange, such as ['1008292230']. An id may repeat when the order holds
            that item several times.
        new_item_ids: The new item ids, position by position: each must be an available variant of the same
            product as the item it replaces, such as ['1008292230'].
        payment_method_id: The payment method that pays or receives the price difference, such as
            'gift_card_0000000' or 'credit_card_0000000' (from the user's details).
    """
    conn, reads, tau2 = ctx.conn, ctx.reads, _tau2(ctx)
    order = _get_order(reads, order_id, tau2)
    _require_status(order, "delivered", "exchanged", tau2=tau2)
    items, history, fulfillments = _children(reads, order_id)
    _, difference = _check_swaps(reads, order, items, item_ids, new_item_ids,
                                 ("Number of {} not found.", "The number of items to be exchanged should match.")
                                 if tau2 else None)
    method = _user_method(reads, order, payment_method_id, tau2)
    difference = round(difference, 2)
    if _is_gift_card(method) and (method["balance"] or 0) < difference:
        raise _refuse(tau2, f"gift card {payment_method_id} has a balance of {method['balance']}, less than the price "
                            f"difference {difference}",
                      "Insufficient gift card balance to pay for the price difference")
    _DB.update(
        conn, "orders", order, status="exchange requested", exchange_items=sorted(item_ids),
        exchange_new_items=sorted(new_item_ids), exchange_payment_method_id=payment_method_id,
        exchange_price_difference=difference,
        layout=with_new_keys(order["layout"], "exchange_items", "exchange_new_items", "exchange_payment_method_id",
                             "exchange_price_difference"),
    )
    return _order_json(conn, order, tau2, items, history, fulfillments)


TOOLS = (
    calculate,
    cancel_pending_order,
    exchange_delivered_order_items,
    find_user_id_by_email,
    find_user_id_by_name_zip,
    get_order_details,
    get_product_details,
    get_user_details,
    list_all_product_types,
    modify_pending_order_address,
    modify_pending_order_items,
    modify_pending_order_payment,
    modify_user_address,
    return_delivered_order_items,
    think,
    transfer_to_human_agents,
)
"""The 16 retail tools, in the order their schemas are offered to the agent."""

TAU2_TOOLS = tuple(sorted((*(t for t in TOOLS if t is not think), get_item_details), key=lambda t: t.__name__))
"""The 16 tools of mode ``tau2``: tau2-bench's set (``get_item_details`` added, no ``think``)."""

def retail_toolbox(mode: str = "tau-bench") -> Toolbox:
    """Return a :class:`~simulator.world.tools.Toolbox` of the retail tools of a mode (``tau2``: :data:`TAU2_TOOLS`)."""
    return Toolbox(TAU2_TOOLS if mode == "tau2" else TOOLS, uses_session=False)

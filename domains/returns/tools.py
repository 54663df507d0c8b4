"""The returns desk's tools. Tools enforce what the systems enforce; the policy (policy.md) asks for more.

Every write emits a domain event (``return_opened``, ``return_received``, ``refund_approved``,
``refund_committed``, ``email_sent``, ``order_cancelled``); money goes through the ledger and emails through the
outbox; "now" comes from the clock.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import func, select

from domains.returns.models import Approval, Customer, Order, Refund, Return
from simulator.world.kit import Clock, Ledger, Outbox, Toolbox, ToolContext, ToolError, tool

__all__ = ["APPROVAL_THRESHOLD", "EVENTS", "RETURN_WINDOW_DAYS", "STORE_ACCOUNT", "TEMPLATES", "returns_toolbox"]

APPROVAL_THRESHOLD = 200.0
"""Refunds above this amount (USD) need a supervisor approval first (policy)."""
RETURN_WINDOW_DAYS = 30
"""Returns are accepted up to this many days after delivery (policy)."""
STORE_ACCOUNT = "store"
"""The store's own ledger account: refunds move money from it to the customer's payment account."""
TEMPLATES = {
    "refund_confirmation": "Your refund of ${amount:.2f} for order {order_id} has been issued to your original "
                           "payment method.",
    "return_instructions": "Your return for order {order_id} is open. Print the label attached and drop the "
                           "parcel at any post office within 14 days.",
    "order_cancelled": "Your order {order_id} has been cancelled; ${amount:.2f} will be returned to your "
                       "original payment method.",
}
"""Email templates by name."""
EVENTS = ("return_opened", "return_received", "refund_approved", "refund_committed", "email_sent",
          "order_cancelled")
"""Domain events the tools emit."""


def _order(ctx: ToolContext, order_id: str) -> Order:
    order = ctx.session.get(Order, order_id)
    if order is None:
        raise ToolError(f"order {order_id} not found")
    return order


def _now(ctx: ToolContext) -> str:
    return Clock.now(ctx).isoformat()


def _refunded(ctx: ToolContext, order_id: str) -> float:
    total = ctx.session.scalar(select(func.coalesce(func.sum(Refund.amount), 0.0)).where(Refund.order_id == order_id))
    return round(float(total or 0.0), 2)


@tool("read", memo=True)
def find_customer_by_email(ctx: ToolContext, email: str) -> str:
    """Find a customer's id by email address.

    Args:
        ctx: the trial's tool context.
        email: The customer's email, such as 'ana.lopez@example.com'.
    """
    cid = ctx.session.scalar(select(Customer.customer_id).where(func.lower(Customer.email) == email.lower()))
    if cid is None:
        raise ToolError("no customer with that email")
    return cid


@tool("read", memo=True)
def find_customer_by_name_zip(ctx: ToolContext, name: str, zip: str) -> str:
    """Find a customer's id by full name and zip code.

    Args:
        ctx: the trial's tool context.
        name: The customer's full name, such as 'Ana Lopez'.
        zip: The customer's zip code, such as '94107'.
    """
    cid = ctx.session.scalar(select(Customer.customer_id).where(
        func.lower(Customer.name) == " ".join(name.lower().split()), Customer.zip == zip.strip()))
    if cid is None:
        raise ToolError("no customer with that name and zip code")
    return cid


@tool("read", memo=True)
def get_customer(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """Get a customer's details and the ids of their orders.

    Args:
        ctx: the trial's tool context.
        customer_id: The customer id, such as 'cus_0012'.
    """
    c = ctx.session.get(Customer, customer_id)
    if c is None:
        raise ToolError(f"customer {customer_id} not found")
    orders = ctx.session.scalars(select(Order.order_id).where(Order.customer_id == customer_id)
                                 .order_by(Order.order_id)).all()
    return {"customer_id": c.customer_id, "name": c.name, "email": c.email, "zip": c.zip, "orders": list(orders)}


@tool("read")
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Get an order: its item, total, status, return, refunds so far and whether the return window is open.

    Args:
        ctx: the trial's tool context.
        order_id: The order id, such as '4812'.
    """
    o = _order(ctx, order_id)
    ret = ctx.session.scalar(select(Return).where(Return.order_id == order_id))
    refunds = ctx.session.scalars(select(Refund).where(Refund.order_id == order_id).order_by(Refund.refund_id)).all()
    window = None
    if o.delivered_at is not None:
        days = (Clock.now(ctx).date() - date.fromisoformat(o.delivered_at[:10])).days
        window = days <= RETURN_WINDOW_DAYS
    return {
        "order_id": o.order_id, "customer_id": o.customer_id, "item": o.item, "total": o.total,
        "status": o.status, "delivered_at": o.delivered_at, "return_window_open": window,
        "return": None if ret is None else {"return_id": ret.return_id, "status": ret.status,
                                            "received_at": ret.received_at},
        "refunds": [{"refund_id": r.refund_id, "amount": r.amount} for r in refunds],
        "refundable": round(o.total - _refunded(ctx, order_id), 2),
    }


@tool("write")
def open_return(ctx: ToolContext, order_id: str, reason: str) -> str:
    """Open a return for a delivered order; the customer then ships the item back with the label.

    Args:
        ctx: the trial's tool context.
        order_id: The order id.
        reason: Why the customer returns it, such as 'wrong size'.
    """
    o = _order(ctx, order_id)
    if o.status != "delivered":
        raise ToolError(f"order {order_id} is {o.status}; only delivered orders can be returned")
    if ctx.session.scalar(select(Return.return_id).where(Return.order_id == order_id)) is not None:
        raise ToolError(f"order {order_id} already has a return")
    rid = f"R{order_id}"
    ctx.session.add(Return(return_id=rid, order_id=order_id, reason=reason, status="requested",
                           opened_at=_now(ctx), received_at=None))
    ctx.emit("return_opened", order_id=order_id, return_id=rid)
    return f"return {rid} opened for order {order_id}"


@tool("write")
def receive_return(ctx: ToolContext, order_id: str) -> str:
    """Warehouse only: record that the returned parcel of an order arrived.

    Args:
        ctx: the trial's tool context.
        order_id: The order id.
    """
    ret = ctx.session.scalar(select(Return).where(Return.order_id == order_id))
    if ret is None:
        raise ToolError(f"order {order_id} has no return")
    ret.status = "received"
    ret.received_at = _now(ctx)
    ctx.emit("return_received", order_id=order_id, return_id=ret.return_id)
    return f"return {ret.return_id} received"


@tool("write")
def request_refund_approval(ctx: ToolContext, order_id: str, amount: float) -> dict[str, Any]:
    """Ask a supervisor to approve a refund amount for an order; returns the approval id.

    Args:
        ctx: the trial's tool context.
        order_id: The order id.
        amount: The refund amount in USD.
    """
    o = _order(ctx, order_id)
    if amount <= 0 or amount > o.total + 1e-9:
        raise ToolError(f"amount must be positive and at most the order total {o.total}")
    n = ctx.session.scalar(select(func.count()).select_from(Approval).where(Approval.order_id == order_id)) or 0
    aid = f"AP{order_id}-{n + 1}"
    ctx.session.add(Approval(approval_id=aid, order_id=order_id, amount=round(amount, 2), created_at=_now(ctx)))
    ctx.emit("refund_approved", order_id=order_id, amount=round(amount, 2), approval_id=aid)
    return {"approval_id": aid, "order_id": order_id, "amount": round(amount, 2), "status": "approved"}


@tool("write")
def issue_refund(ctx: ToolContext, order_id: str, amount: float, approval_id: str | None = None) -> dict[str, Any]:
    """Refund an amount of an order to its original payment method.

    Args:
        ctx: the trial's tool context.
        order_id: The order id.
        amount: The refund amount in USD.
        approval_id: The supervisor approval id, when the policy requires one.
    """
    o = _order(ctx, order_id)
    amount = round(amount, 2)
    if amount <= 0 or amount > o.total + 1e-9:
        raise ToolError(f"amount must be positive and at most the order total {o.total}")
    if approval_id is not None:
        ap = ctx.session.get(Approval, approval_id)
        if ap is None or ap.order_id != order_id:
            raise ToolError(f"approval {approval_id} not found for order {order_id}")
        if amount > ap.amount + 1e-9:
            raise ToolError(f"approval {approval_id} covers at most {ap.amount}")
    n = ctx.session.scalar(select(func.count()).select_from(Refund).where(Refund.order_id == order_id)) or 0
    rid = f"RF{order_id}-{n + 1}"
    ctx.session.add(Refund(refund_id=rid, order_id=order_id, amount=amount, approval_id=approval_id,
                           created_at=_now(ctx)))
    ctx.session.flush()
    Ledger.post(ctx, STORE_ACCOUNT, -amount, f"refund {rid}")
    Ledger.post(ctx, o.payment_account, amount, f"refund {rid}")
    if _refunded(ctx, order_id) >= o.total - 0.005:
        o.status = "refunded"
    ctx.emit("refund_committed", order_id=order_id, amount=amount, refund_id=rid)
    return {"refund_id": rid, "order_id": order_id, "amount": amount, "order_status": o.status}


@tool("write")
def cancel_order(ctx: ToolContext, order_id: str) -> str:
    """Cancel an order that has not shipped yet; its total goes back to the payment method.

    Args:
        ctx: the trial's tool context.
        order_id: The order id.
    """
    o = _order(ctx, order_id)
    if o.status != "processing":
        raise ToolError(f"order {order_id} is {o.status}; only processing orders can be cancelled")
    o.status = "cancelled"
    Ledger.post(ctx, STORE_ACCOUNT, -o.total, f"cancel {order_id}")
    Ledger.post(ctx, o.payment_account, o.total, f"cancel {order_id}")
    ctx.emit("order_cancelled", order_id=order_id, amount=o.total)
    return f"order {order_id} cancelled"


@tool("write")
def send_email(ctx: ToolContext, order_id: str, template: str) -> str:
    """Email the order's customer one of the templates.

    Args:
        ctx: the trial's tool context.
        order_id: The order id the email is about.
        template: One of 'refund_confirmation', 'return_instructions', 'order_cancelled'.
    """
    o = _order(ctx, order_id)
    if template not in TEMPLATES:
        raise ToolError(f"unknown template {template!r}; templates: {', '.join(TEMPLATES)}")
    customer = ctx.session.get(Customer, o.customer_id)
    assert customer is not None
    amount = _refunded(ctx, order_id) if template == "refund_confirmation" else o.total
    body = TEMPLATES[template].format(order_id=order_id, amount=amount)
    mid = Outbox.send(ctx, channel="email", recipient=customer.email, template=template, body=body)
    ctx.emit("email_sent", order_id=order_id, template=template, recipient=customer.email, message_id=mid)
    return f"email {template} sent to {customer.email}"


@tool("read", ends_conversation=True)
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the customer to a human agent, with a summary; this ends the conversation.

    Args:
        ctx: the trial's tool context.
        summary: A summary of the customer's issue.
    """
    return "Transfer successful"


TOOLS = [find_customer_by_email, find_customer_by_name_zip, get_customer, get_order, open_return, receive_return,
         request_refund_approval, issue_refund, cancel_order, send_email, transfer_to_human_agents]


def returns_toolbox() -> Toolbox:
    """Return the returns desk's tools."""
    return Toolbox(TOOLS)

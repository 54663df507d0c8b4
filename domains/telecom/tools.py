"""The agent's side of the telecom world: customers, lines, plans, bills, devices and the agent's 13 tools.

Records are JSON documents (see ``Docs`` in the kit) in the tables ``plans``, ``customers``, ``lines``, ``bills``
and ``devices``, keyed by their ids. Today is 2025-02-25 (tau2-bench's fixed date). Also here: the agent-side
environment functions of task setups (``set_data_usage``, ``suspend_line_for_overdue_bill``), the four agent-side
assertion functions, and the sync between the agent's records and the user's surroundings.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from simulator.world.kit import SINGLE, Docs, ToolContext, ToolError, dumps, tool

__all__ = ["AGENT_ASSERTIONS", "AGENT_ENV_FUNCTIONS", "AGENT_TOOLS", "TODAY", "sync"]

TODAY = dt.date(2025, 2, 25)
"""The world's date."""


LINE_FIELDS = ("line_id", "phone_number", "status", "plan_id", "device_id", "data_used_gb", "data_refueling_gb",
               "roaming_enabled", "contract_end_date", "last_plan_change_date", "last_sim_replacement_date",
               "suspension_start_date")
"""A line's fields in the order τ³'s answers list them (its record model's order)."""


def in_record_order(doc: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Return ``doc`` with ``fields`` first, in that order, then any other keys (documents are stored sorted)."""
    return {**{f: doc[f] for f in fields if f in doc}, **{k: v for k, v in doc.items() if k not in fields}}


class _Db:
    def __init__(self, conn: Any):
        self.docs = Docs(conn)

    def one(self, table: str, key: str, what: str) -> dict[str, Any]:
        doc = self.docs.get(table, key)
        if doc is None:
            raise ToolError(f"{what} with ID {key} not found")
        return doc

    def customer(self, customer_id: str) -> dict[str, Any]:
        return self.one("customers", customer_id, "Customer")

    def line(self, line_id: str) -> dict[str, Any]:
        return self.one("lines", line_id, "Line")

    def plan(self, plan_id: str) -> dict[str, Any]:
        return self.one("plans", plan_id, "Plan")

    def bill(self, bill_id: str) -> dict[str, Any]:
        return self.one("bills", bill_id, "Bill")

    def target_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        customer = self.customer(customer_id)
        if line_id not in customer["line_ids"]:
            raise ToolError(f"Line {line_id} not found for customer {customer_id}")
        return self.line(line_id)

    def line_by_phone(self, phone: str) -> dict[str, Any] | None:
        row = self.docs.conn.execute(
            "SELECT id FROM lines WHERE json_extract(doc, '$.phone_number') = ?", (phone,)).fetchone()
        return None if row is None else self.line(row[0])

    def awaiting(self, customer: dict[str, Any]) -> list[dict[str, Any]]:
        bills = [self.docs.get("bills", b) for b in customer["bill_ids"]]
        return [b for b in bills if b is not None and b["status"] == "Awaiting Payment"]

    def put(self, table: str, key: str, doc: dict[str, Any]) -> None:
        self.docs.put(table, key, doc)


@tool("read", memo=True)
def get_customer_by_phone(ctx: ToolContext, phone_number: str) -> dict[str, Any]:
    """Finds a customer by their primary contact or line phone number.

    Args:
        ctx: the trial's tool context.
        phone_number: The phone number to search for.
    """
    db = _Db(ctx.conn)
    for c in db.docs.all("customers"):
        if c.get("phone_number") == phone_number:
            return c
    line = db.line_by_phone(phone_number)
    if line is not None:
        for c in db.docs.all("customers"):
            if line["line_id"] in c["line_ids"]:
                return c
    raise ToolError(f"Customer with phone number {phone_number} not found")


@tool("read", memo=True)
def get_customer_by_id(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """Retrieves a customer directly by their unique ID.

    Args:
        ctx: the trial's tool context.
        customer_id: The unique identifier of the customer.
    """
    return _Db(ctx.conn).customer(customer_id)


@tool("read", memo=True)
def get_customer_by_name(ctx: ToolContext, full_name: str, dob: str) -> list[dict[str, Any]]:
    """Searches for customers by name and date of birth; may return several matches.

    Args:
        ctx: the trial's tool context.
        full_name: The full name of the customer.
        dob: Date of birth for verification, in the format YYYY-MM-DD.
    """
    return [c for c in _Db(ctx.conn).docs.all("customers")
            if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]


@tool("read", memo=True)
def get_details_by_id(ctx: ToolContext, id: str) -> dict[str, Any]:  # noqa: A002 - tau2's argument name
    """Retrieves the details for an ID of a customer (C...), line (L...), device (D...), bill (B...) or plan (P...).

    Args:
        ctx: the trial's tool context.
        id: The ID of the object to retrieve.
    """
    tables = {"L": ("lines", "Line"), "D": ("devices", "Device"), "B": ("bills", "Bill"),
              "C": ("customers", "Customer"), "P": ("plans", "Plan")}
    found = tables.get(id[:1])
    if found is None:
        raise ToolError(f"Unknown ID format or type: {id}")
    return _Db(ctx.conn).one(found[0], id, found[1])


@tool("write")
def suspend_line(ctx: ToolContext, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
    """Suspends an active line (max 6 months); a $5/month holding fee applies.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to suspend.
        reason: Reason for suspension.
    """
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend")
    line.update(status="Suspended", suspension_start_date=TODAY.isoformat())
    db.put("lines", line_id, line)
    return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}


@tool("write")
def resume_line(ctx: ToolContext, customer_id: str, line_id: str) -> dict[str, Any]:
    """Resumes a suspended (or pending activation) line.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to resume.
    """
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        raise ToolError("Line must be suspended to resume")
    line.update(status="Active", suspension_start_date=None)
    db.put("lines", line_id, line)
    return {"message": "Line resumed successfully", "line": in_record_order(line, LINE_FIELDS)}


@tool("read", memo=True)
def get_bills_for_customer(ctx: ToolContext, customer_id: str, limit: int = 12) -> list[dict[str, Any]]:
    """Retrieves the customer's bills, most recent first.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer.
        limit: Maximum number of bills to return.
    """
    db = _Db(ctx.conn)
    bills = [db.bill(b) for b in db.customer(customer_id)["bill_ids"]]
    return sorted(bills, key=lambda b: b["issue_date"], reverse=True)[:limit]


@tool("write")
def send_payment_request(ctx: ToolContext, customer_id: str, bill_id: str) -> str:
    """Sends the customer a payment request for a bill (the bill then awaits payment).

    Does not check whether the bill is already paid: check its status first.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the bill.
        bill_id: ID of the bill to send payment request for.
    """
    db = _Db(ctx.conn)
    customer = db.customer(customer_id)
    if db.awaiting(customer):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    bill = db.bill(bill_id)
    bill["status"] = "Awaiting Payment"
    db.put("bills", bill_id, bill)
    return f"Payment request sent to the customer for bill {bill_id}"


@tool("read")
def get_data_usage(ctx: ToolContext, customer_id: str, line_id: str) -> dict[str, Any]:
    """Retrieves the line's data usage this billing cycle, data refueled, data limit and the cycle's end date.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to check usage for.
    """
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    plan = db.plan(line["plan_id"])
    first_next = dt.date(TODAY.year + (TODAY.month == 12), TODAY.month % 12 + 1, 1)
    return {"line_id": line_id, "data_used_gb": line["data_used_gb"], "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"],
            "cycle_end_date": (first_next - dt.timedelta(days=1)).isoformat()}


def _roaming(ctx: ToolContext, customer_id: str, line_id: str, on: bool) -> str:
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    word = "enabled" if on else "disabled"
    if bool(line["roaming_enabled"]) == on:
        return f"Roaming was already {word}"
    line["roaming_enabled"] = on
    db.put("lines", line_id, line)
    return f"Roaming {word} successfully"


@tool("write")
def enable_roaming(ctx: ToolContext, customer_id: str, line_id: str) -> str:
    """Enables international roaming on a line.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to enable roaming for.
    """
    return _roaming(ctx, customer_id, line_id, True)


@tool("write")
def disable_roaming(ctx: ToolContext, customer_id: str, line_id: str) -> str:
    """Disables international roaming on a line.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to disable roaming for.
    """
    return _roaming(ctx, customer_id, line_id, False)


@tool("read", ends_conversation=True)
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfers the user to a human agent with a summary of the issue.

    Only when the user explicitly asks for a human agent, or the policy and tools cannot solve the issue.

    Args:
        ctx: the trial's tool context.
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


def _charge(db: _Db, customer_id: str, amount: float, description: str) -> None:
    """Add a charge to the customer's draft bill (a new draft bill for next month when there is none)."""
    customer = db.customer(customer_id)
    draft = next((b for b in (db.docs.get("bills", i) for i in customer["bill_ids"])
                  if b is not None and b["status"] == "Draft"), None)
    if draft is None:
        start = dt.date(TODAY.year + (TODAY.month == 12), TODAY.month % 12 + 1, 1)
        end = dt.date(start.year + (start.month == 12), start.month % 12 + 1, 1) - dt.timedelta(days=1)
        bill_id = f"B{customer_id}-{len(customer['bill_ids']) + 1}"  # deterministic (tau2 draws a uuid)
        draft = {"bill_id": bill_id, "customer_id": customer_id, "period_start": start.isoformat(),
                 "period_end": end.isoformat(), "issue_date": start.isoformat(), "total_due": 0.0,
                 "due_date": (start + dt.timedelta(days=14)).isoformat(), "line_items": [], "status": "Draft"}
        customer["bill_ids"].append(bill_id)
        db.put("customers", customer_id, customer)
    draft["line_items"].append({"description": description, "amount": amount, "date": TODAY.isoformat(),
                                "item_type": "Credit" if amount < 0 else "Charge"})
    draft["total_due"] = round(draft["total_due"] + amount, 10)
    db.put("bills", draft["bill_id"], draft)


@tool("write")
def refuel_data(ctx: ToolContext, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
    """Adds data to a line for the current cycle, charged on the customer's bill at the plan's refueling rate.

    Args:
        ctx: the trial's tool context.
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to refuel data for.
        gb_amount: Amount of data to add in gigabytes.
    """
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    plan = db.plan(line["plan_id"])
    rate = plan["data_refueling_price_per_gb"]
    charge = gb_amount * rate
    line["data_refueling_gb"] = line["data_refueling_gb"] + gb_amount
    db.put("lines", line_id, line)
    _charge(db, customer_id, charge, f"Data refueling: {gb_amount} GB at ${rate}/GB")
    # τ³ answers a plain dict's numbers as their Python text ("2.0"), unlike a record's
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": str(line["data_refueling_gb"]), "charge": str(charge)}


AGENT_TOOLS = [get_customer_by_phone, get_customer_by_id, get_customer_by_name, get_details_by_id, suspend_line,
               resume_line, get_bills_for_customer, send_payment_request, get_data_usage, enable_roaming,
               disable_roaming, transfer_to_human_agents, refuel_data]
"""The agent's 13 tools."""


# --- agent-side environment functions ------------------------------------------------------------------------
def set_data_usage(ctx: ToolContext, customer_id: str, line_id: str, data_used_gb: float) -> str:
    """Set a line's data used this cycle (setup only)."""
    db = _Db(ctx.conn)
    line = db.target_line(customer_id, line_id)
    line["data_used_gb"] = data_used_gb
    db.put("lines", line_id, line)
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def suspend_line_for_overdue_bill(ctx: ToolContext, customer_id: str, line_id: str, new_bill_id: str,
                                  contract_ended: bool) -> str:
    """Add an overdue bill of last month's plan price and suspend the line (setup only)."""
    db = _Db(ctx.conn)
    line = db.line(line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = db.plan(line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("Amount must be positive for overdue bill")
    customer = db.customer(customer_id)
    if any(db.bill(b)["status"] == "Overdue" for b in customer["bill_ids"]):
        raise ToolError("Customer already has an overdue bill")
    last_day = TODAY.replace(day=1) - dt.timedelta(days=1)
    first_day = last_day.replace(day=1)
    db.put("bills", new_bill_id, {
        "bill_id": new_bill_id, "customer_id": customer_id, "period_start": first_day.isoformat(),
        "period_end": last_day.isoformat(), "issue_date": first_day.isoformat(), "total_due": amount,
        "due_date": (first_day + dt.timedelta(days=14)).isoformat(), "status": "Overdue",
        "line_items": [{"description": f"Charge for line {line_id}", "amount": amount, "date": TODAY.isoformat(),
                        "item_type": "Charge"}]})
    customer["bill_ids"].append(new_bill_id)
    db.put("customers", customer_id, customer)
    line.update(status="Suspended", suspension_start_date=TODAY.isoformat())
    if contract_ended:
        line["contract_end_date"] = last_day.isoformat()
    db.put("lines", line_id, line)
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


AGENT_ENV_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "set_data_usage": set_data_usage, "suspend_line_for_overdue_bill": suspend_line_for_overdue_bill}
"""Non-tool functions a task's setup may call on the agent's side."""


# --- agent-side assertion functions --------------------------------------------------------------------------
def _refuel_amount(ctx: ToolContext, customer_id: str, line_id: str, expected_amount: float) -> bool:
    return abs(_Db(ctx.conn).target_line(customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6


def _line_status(ctx: ToolContext, customer_id: str, line_id: str, expected_status: str) -> bool:
    return bool(_Db(ctx.conn).target_line(customer_id, line_id)["status"] == expected_status)


def _overdue_exists(ctx: ToolContext, customer_id: str, overdue_bill_id: str) -> bool:
    db = _Db(ctx.conn)
    return overdue_bill_id in db.customer(customer_id)["bill_ids"] and db.bill(overdue_bill_id)["status"] == "Overdue"


def _no_overdue(ctx: ToolContext, overdue_bill_id: str) -> bool:
    bill = Docs(ctx.conn).get("bills", overdue_bill_id)
    return bill is None or bill["status"] == "Paid"


AGENT_ASSERTIONS: dict[str, Callable[..., bool]] = {
    "assert_data_refueling_amount": _refuel_amount, "assert_line_status": _line_status,
    "assert_overdue_bill_exists": _overdue_exists, "assert_no_overdue_bill": _no_overdue}
"""The agent-side assertion functions (4)."""


def sync(ctx: ToolContext) -> None:
    """Bring the user's surroundings in line with the agent's records.

    The phone's connection is derived again by the phone's own actions (a network search: reboot, airplane mode,
    SIM, data, roaming), not here, as in tau2: a resumed line shows service after the user restarts the phone.

    From the line of the user's phone number: line active, roaming allowed, data allowance used up; a paid
    payment request marks its bill paid and is cleared; a bill awaiting payment becomes the user's payment
    request. Nothing happens before the user's phone number is set.

    Args:
        ctx: a tool context on the trial's database.

    Raises:
        ToolError: the phone number matches no line, or the line's plan does not exist.
    """
    text = ctx.conn.execute("SELECT doc FROM surroundings WHERE id = ?", (SINGLE,)).fetchone()
    if text is None:  # no phone yet: nothing to sync
        return
    s = json.loads(text[0])
    number = s.get("phone_number")
    if number is None:
        return
    db = _Db(ctx.conn)
    row = ctx.conn.execute(_LINE_AND_PLAN, (number,)).fetchone()  # one query: the line and its plan
    if row is None:
        raise ToolError(f"no line has the user's phone number {number}")
    line = json.loads(row[0])
    if row[1] is None:
        raise ToolError(f"Plan with ID {line['plan_id']} not found")
    plan = json.loads(row[1])
    s["line_active"] = line["status"] == "Active"
    s["roaming_allowed"] = bool(line["roaming_enabled"])
    s["mobile_data_usage_exceeded"] = line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    req = s.get("payment_request")
    if req is not None and req.get("paid"):
        bill = db.bill(req["bill_id"])
        bill["status"] = "Paid"
        db.put("bills", req["bill_id"], bill)
        s["payment_request"] = None
    if s.get("payment_request") is None:
        # the first bill awaiting payment of the line's owner (the first customer, by id, holding the line)
        bill_row = ctx.conn.execute(_FIRST_AWAITING, (line["line_id"],)).fetchone()
        if bill_row is not None:
            first = json.loads(bill_row[0])
            s["payment_request"] = {"bill_id": first["bill_id"], "amount_due": first["total_due"], "paid": False}
    new = dumps(s)
    if new != text[0]:  # only the surroundings change here; the device is the phone's own business
        ctx.conn.execute("UPDATE surroundings SET doc = ? WHERE id = ?", (new, SINGLE))


_LINE_AND_PLAN = ("SELECT l.doc, p.doc FROM lines l LEFT JOIN plans p ON p.id = json_extract(l.doc, '$.plan_id') "
                  "WHERE json_extract(l.doc, '$.phone_number') = ? ORDER BY l.id LIMIT 1")
_FIRST_AWAITING = (
    "WITH owner AS (SELECT doc FROM customers c WHERE EXISTS (SELECT 1 FROM json_each(c.doc, '$.line_ids') "
    "WHERE value = ?) ORDER BY c.id LIMIT 1) "
    "SELECT b.doc FROM owner, json_each(owner.doc, '$.bill_ids') j JOIN bills b ON b.id = j.value "
    "WHERE json_extract(b.doc, '$.status') = 'Awaiting Payment' ORDER BY j.key LIMIT 1")

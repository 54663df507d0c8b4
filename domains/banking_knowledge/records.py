"""Record helpers of banking_knowledge: the tables, deterministic ids, money fields, τ³-style record listings.

Facts of τ³'s banking_knowledge (not its code): the scenario's clock is fixed at 2025-11-14 03:40:00 EST (dates
``MM/DD/YYYY``); ids are the first hex digits of the SHA-256 of a seed string (``user_discoverable_tool:NAME``,
``agent_discoverable_tool:NAME``, ``dispute:USER:TXN``, ``referral_link:USER:CARD``, ``account:USER:TYPE:CLASS``);
a verification record's id is ``USER_YYYYMMDD`` of its time; a listing reads ``Found N record(s) in 'TABLE':`` then
``i. Record ID: ID`` and ``   field: value`` lines.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from simulator.world.kit import Docs, ToolContext, ToolError

__all__ = ["AGENT_TABLES", "BOOKKEEPING", "NOW", "TODAY", "add", "find", "listing", "money", "new_id", "put", "record"]

TODAY = "11/14/2025"
"""The scenario's date (τ³'s fixed clock)."""
NOW = "2025-11-14 03:40:00 EST"
"""The scenario's time."""

AGENT_TABLES = (
    "users", "accounts", "debit_cards", "referrals", "credit_card_applications", "verification_history",
    "credit_card_transaction_history", "cash_back_disputes", "bank_account_transaction_history",
    "credit_card_accounts", "transaction_disputes", "credit_card_orders", "debit_card_orders",
    "credit_card_closure_reasons", "credit_card_account_flags", "credit_limit_increase_requests", "payment_history",
    # written by tools (empty in db.json)
    "agent_discoverable_tools", "user_discoverable_tools", "user_discoverable_tool_calls",
    "interest_discrepancy_reports", "human_transfer_requests", "debit_card_disputes", "task_config",
)
"""Every compared table."""
BOOKKEEPING = ("unlocked_agent_tools", "read_log_allowlist", "knowledge")
"""Trial state that τ³ keeps in memory, not in its database: never compared."""


def new_id(seed: str, length: int = 16) -> str:
    """Return the first ``length`` hex digits of SHA-256(``seed``)."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def money(value: Any) -> float:
    """Parse a money field (``129.02``, ``"$1,234.50"``, ``"-$5"``) in USD; a non-number is 0.0."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value or "").replace("$", "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def record(ctx: ToolContext, table: str, key: str, what: str) -> dict[str, Any]:
    """Return a record, or raise the tool error ``WHAT 'KEY' not found.``."""
    doc = Docs(ctx.conn, ordered=True).get(table, key)
    if doc is None:
        raise ToolError(f"{what} '{key}' not found.")
    return doc


def put(ctx: ToolContext, table: str, key: str, doc: Mapping[str, Any]) -> None:
    """Write a record."""
    Docs(ctx.conn, ordered=True).put(table, key, dict(doc))


def add(ctx: ToolContext, table: str, key: str, doc: Mapping[str, Any]) -> bool:
    """Write a new record; return False (and leave the table as it is) when ``key`` is taken (τ³'s insert rule)."""
    docs = Docs(ctx.conn, ordered=True)
    if docs.get(table, key) is not None:
        return False
    docs.put(table, key, dict(doc))
    return True


def find(ctx: ToolContext, table: str, **match: Any) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(id, record)`` of the records of ``table`` whose fields equal ``match``, in id order.

    A record's stored text holds each of its string values as ``json.dumps`` writes it (``Docs``), so only the
    rows whose text contains every string value matched are read and decoded (SQLite's ``instr``); the fields are
    then compared as before.
    """
    texts = [json.dumps(v) for v in match.values() if isinstance(v, str)]  # ASCII: non-ASCII as \u escapes
    where = " AND ".join("instr(doc, ?) > 0" for _ in texts)
    rows = ctx.conn.execute(f"SELECT id, doc FROM {table}{' WHERE ' + where if where else ''} ORDER BY rowid",  # noqa: S608 - fixed names
                            texts).fetchall()
    out = []
    for key, doc in rows:
        rec = json.loads(doc)
        if all(rec.get(k) == v for k, v in match.items()):
            out.append((key, rec))
    return out


def listing(ctx: ToolContext, table: str, **match: Any) -> str:
    """List the matching records as τ³ does (``No records found in 'TABLE'.`` when none)."""
    found = find(ctx, table, **match)
    if not found:
        return f"No records found in '{table}'."
    lines = [f"Found {len(found)} record(s) in '{table}':\n"]
    for i, (key, rec) in enumerate(found, 1):
        lines.append(f"{i}. Record ID: {key}")
        lines.extend(f"   {k}: {v}" for k, v in rec.items())
        lines.append("")
    return "\n".join(lines)

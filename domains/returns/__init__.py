"""The returns desk: customer support for an online store's returns and refunds (a tausim domain).

Written the way a user writes a domain, from names the top-level ``simulator`` package exports only. Orders,
returns, refund approvals and refunds are the domain's own tables; the payment ledger, the email outbox and the
clock are the engine's sinks. Tasks are graded mostly by declarative assertions (``tasks/builtin.json``).
Registered under the entry point group ``tausim.domains`` as ``returns``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from domains.returns.models import Approval, Base, Customer, Order, Refund, Return
from domains.returns.tools import EVENTS, returns_toolbox
from simulator.agents.kit import Agent, TrialContext
from simulator.world.kit import (
    Clock,
    Domain,
    DomainError,
    Ledger,
    Outbox,
    StateSpec,
    Toolbox,
    TrialDatabase,
    decode_data_file,
)

__all__ = ["ReturnsDomain"]

TABLES: dict[str, tuple[type[Base], tuple[str, ...]]] = {
    "customers": (Customer, ("customer_id", "name", "email", "zip")),
    "orders": (Order, ("order_id", "customer_id", "item", "total", "status", "payment_account", "delivered_at")),
    "returns": (Return, ("return_id", "order_id", "reason", "status", "opened_at", "received_at")),
    "approvals": (Approval, ("approval_id", "order_id", "amount", "created_at")),
    "refunds": (Refund, ("refund_id", "order_id", "amount", "approval_id", "created_at")),
}
"""Data file stem -> (model, fields in file order); files are loaded in this order (foreign keys)."""


class ReturnsDomain(Domain):
    """An online store's returns desk: identify the customer, open returns, approve and issue refunds, notify.

    State: the tables of :mod:`domains.returns.models` plus the sinks ``outbox``, ``ledger`` and ``clock``;
    money compares at cent precision. The native dump is ``{file stem: {key: record}}`` as in ``data/``.
    """

    name = "returns"
    sinks = (Outbox(), Ledger(), Clock("2024-06-01T09:00:00"))
    events = EVENTS
    entities = {"customer_id": ("customers", "customer_id"), "order_id": ("orders", "order_id"),  # noqa: RUF012
                "approval_id": ("approvals", "approval_id")}
    user_entity = ("customers", "customer_id")

    def __init__(self) -> None:
        super().__init__()
        self._spec = StateSpec(Base.metadata, float_decimals=2)
        self._toolbox = returns_toolbox()

    def state_spec(self) -> StateSpec:
        """Return the schema (with the sinks' tables once installed), money at cent precision."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the returns desk's tools."""
        return self._toolbox

    def policy(self) -> str:
        """Return ``policy.md``."""
        return (self.package_dir() / "policy.md").read_text(encoding="utf-8")

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load ``<table>.json`` files (objects keyed by id) into an empty database.

        Raises:
            DomainError: a file is missing, not JSON, or a record has missing or unexpected fields.
        """
        for stem, (model, fields) in TABLES.items():
            path = Path(data_dir) / f"{stem}.json"
            try:
                records = decode_data_file(path, path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as e:
                raise DomainError(f"{path}: cannot read returns data: {e}") from e
            if not isinstance(records, dict):
                raise DomainError(f"{path}: expected an object of records keyed by id")
            for key, rec in records.items():
                if not isinstance(rec, dict) or list(rec) != list(fields):
                    got = list(rec) if isinstance(rec, dict) else type(rec).__name__
                    raise DomainError(f"{path}: record {key!r}: expected fields {', '.join(fields)}, got {got}")
                if rec[fields[0]] != key:
                    raise DomainError(f"{path}: record {key!r}: field {fields[0]}: differs from its key")
                session.add(model(**rec))
            session.flush()

    def reference_agent(self, ctx: TrialContext, faults: Mapping[str, float]) -> Agent:
        """Return the rule-based returns desk agent (:mod:`domains.returns.reference_agent`) for one trial.

        Args:
            ctx: the trial context (the agent reads only its seed).
            faults: fault knob -> rate in [0, 1]; knobs: ``skip_confirmation``, ``wrong_item``, ``repeat_call``,
                ``early_transfer``, ``forget_constraint``, ``repeat_question``.

        Returns:
            A :class:`~domains.returns.reference_agent.ReturnsReferenceAgent`.

        Raises:
            DomainError: an unknown knob or a rate outside [0, 1] (the message names it).
        """
        from domains.returns.reference_agent import ReturnsReferenceAgent

        try:
            return ReturnsReferenceAgent(ctx, faults)
        except ValueError as e:
            raise DomainError(str(e)) from e

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{file stem: {key: record}}``, in the data files' layout."""
        out: dict[str, dict[str, Any]] = {}
        for stem, (_, fields) in TABLES.items():
            cols = ", ".join(f'"{f}"' for f in fields)
            rows = trial.raw.execute(f'SELECT {cols} FROM "{stem}" ORDER BY "{fields[0]}"').fetchall()
            out[stem] = {r[0]: dict(zip(fields, r, strict=True)) for r in rows}
        return out

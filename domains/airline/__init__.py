"""The airline domain: an airline's customers, reservations and flight schedule (tau-bench compatible).

Registered under the entry point group ``tausim.domains`` as ``airline``. Its data set is a folder holding
``users.json``, ``reservations.json`` and ``flights.json`` in the tau-bench layout. The tools have two modes
(option ``mode``): ``tau-bench`` follows the peer's semantics (``../shared/spec/tau-bench-semantics.md``), so
tau-bench airline tasks replay and grade the same; ``tausim`` corrects the peer's bookkeeping of seats, cabin
and refunds (see :mod:`domains.airline.tools`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from domains.airline import _rules
from domains.airline._data import TABLES, dump_all, load_folder, load_tables
from domains.airline.models import Base
from domains.airline.tools import MODES, TOOLS, airline_toolbox
from simulator.agents.kit import Agent, TrialContext
from simulator.world.kit import Action, DomainError, JsonFolderDomain, ToolContext, TrialDatabase

__all__ = ["TOOLS", "AirlineDomain"]

_POLICY_PLACEHOLDER = """# Airline agent policy

(The airline policy document, domains/airline/policy.md, is not written yet.)

The current time is 2024-05-15 15:00:00 EST. Get the user id before acting; act only for that user; list the
details of every booking or change and get an explicit "yes" before any write; make at most one tool call at a
time; transfer to a human agent only when the request is outside what the tools and this policy allow.
"""


class AirlineDomain(JsonFolderDomain):
    """Users, reservations and flights of an airline, with tau-bench's 14 airline tools.

    State: the tables of :mod:`domains.airline.models`; money compares at cent precision; the ``layout``
    columns (key order only) are not compared. The native dump is
    ``{"users": {...}, "reservations": {...}, "flights": {...}}``, identical to the data files that were loaded
    (plus the tools' changes).

    Option ``mode``:

    - ``tau-bench`` (default for any ``--data`` folder, e.g. the peer's): the peer's semantics, including its
      bookkeeping gaps: seats never change, a flight change leaves the reservation's ``cabin`` as it was, and a
      cancellation restores no gift-card or certificate balance (the refund entries are only recorded).
    - ``tausim`` (default for the built-in data set): the same tools with corrected bookkeeping: a booking
      takes seats and a cancellation gives them back, a flight change moves seats and sets ``cabin``, a
      cancellation gives each gift card the net amount it paid and re-creates a spent certificate with the
      amount it paid; a cancelled reservation cannot be changed or cancelled again; amounts must be positive,
      payments add up at cent precision, a payment method used twice in one booking is checked for the sum,
      and bag counts satisfy ``0 <= nonfree_baggages <= total_baggages``. The full list is in the docstring
      of :mod:`domains.airline.tools`.
    """

    name = "airline"
    option_values = {"mode": MODES}  # noqa: RUF012 - read-only declaration

    metadata = Base.metadata
    policy_placeholder = _POLICY_PLACEHOLDER
    tables = TABLES
    load_folder = staticmethod(load_folder)
    load_tables = staticmethod(load_tables)
    dump_all = staticmethod(dump_all)
    make_toolbox = staticmethod(airline_toolbox)
    entities = {"user_id": ("users", "id"), "reservation_id": ("reservations", "id"),  # noqa: RUF012
                "flight_number": ("flights", "id"), "payment_id": ("payment_methods", "id")}
    user_entity = ("users", "id")

    def current_time(self, trial: TrialDatabase) -> datetime | None:
        """Return the policy's "now", 2024-05-15 15:00:00 (US Eastern), for every task."""
        return _rules.NOW

    def forbidden_write(self, ctx: ToolContext, action: Action, now: datetime | None) -> str | None:
        """Return why the policy forbids a gold write at ``now`` (cancelling a trip with a flown segment)."""
        return _rules.forbidden_write(ctx, action, now)

    def legacy_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return ``{"mode": "tausim"}`` for the built-in data set (None), ``{"mode": "tau-bench"}`` otherwise."""
        return {"mode": "tausim" if data_dir is None else "tau-bench"}

    def reference_agent(self, ctx: TrialContext, faults: Mapping[str, float]) -> Agent:
        """Return the rule-based airline agent (:mod:`domains.airline.reference_agent`) for one trial.

        Args:
            ctx: the trial context (the agent reads only its seed).
            faults: fault knob -> rate in [0, 1]; knobs: ``skip_confirmation``, ``wrong_item``, ``repeat_call``,
                ``early_transfer``, ``forget_constraint``, ``repeat_question``.

        Returns:
            An :class:`~domains.airline.reference_agent.AirlineReferenceAgent`.

        Raises:
            DomainError: an unknown knob or a rate outside [0, 1].
        """
        from domains.airline.reference_agent import AirlineReferenceAgent

        try:
            return AirlineReferenceAgent(ctx, faults)
        except ValueError as e:
            raise DomainError(str(e)) from e

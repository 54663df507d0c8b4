"""The airline domain: an airline's customers, reservations and flight schedule (tau-bench compatible).

Registered under the entry point group ``tausim.domains`` as ``airline``. Its data set is a folder holding
``users.json``, ``reservations.json`` and ``flights.json`` in the tau-bench layout. The tools have two modes
(option ``mode``): ``tau-bench`` follows the peer's semantics (``../shared/spec/tau-bench-semantics.md``), so
tau-bench airline tasks replay and grade the same; ``tausim`` corrects the peer's bookkeeping of seats, cabin
and refunds (see :mod:`domains.airline.tools`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from domains.airline._data import dump_all, load_folder
from domains.airline.models import Base
from domains.airline.tools import MODES, TOOLS, airline_toolbox
from simulator.database import StateSpec, TrialDatabase
from simulator.domain import Domain
from simulator.tools import Toolbox

__all__ = ["TOOLS", "AirlineDomain"]

_POLICY_PLACEHOLDER = """# Airline agent policy

(The airline policy document, domains/airline/policy.md, is not written yet.)

The current time is 2024-05-15 15:00:00 EST. Get the user id before acting; act only for that user; list the
details of every booking or change and get an explicit "yes" before any write; make at most one tool call at a
time; transfer to a human agent only when the request is outside what the tools and this policy allow.
"""


class AirlineDomain(Domain):
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

    def __init__(self) -> None:
        super().__init__()
        # ``layout`` only records key order, which JSON equality (and the peer's grader) ignores.
        self._spec = StateSpec(
            Base.metadata,
            volatile_columns={t.name: frozenset({"layout"}) for t in Base.metadata.sorted_tables if "layout" in t.c},
            float_decimals=2,
        )
        self._toolbox = airline_toolbox()

    def state_spec(self) -> StateSpec:
        """Return the schema and comparison rules (money at cent precision, key order ignored)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the 14 airline tools."""
        return self._toolbox

    def policy(self) -> str:
        """Return the airline policy (domains/airline/policy.md), or a short placeholder while it is absent."""
        path = self.package_dir() / "policy.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
        return _POLICY_PLACEHOLDER

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load users.json, reservations.json and flights.json from ``data_dir``.

        Args:
            session: a Session on an empty database with the airline schema.
            data_dir: the data folder.
            options: tool options (unused: loading is the same in every mode).

        Raises:
            DomainError: a file is missing or malformed (the message names file, record and field).
        """
        load_folder(session, Path(data_dir))

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{"users": ..., "reservations": ..., "flights": ...}`` as in the data files."""
        return dump_all(trial.raw)

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return ``{"mode": "tausim"}`` for the built-in data set (None), ``{"mode": "tau-bench"}`` otherwise."""
        return {"mode": "tausim" if data_dir is None else "tau-bench"}

"""The retail domain: an online shop's customers, orders and products (tau-bench compatible).

Registered under the entry point group ``tausim.domains`` as ``retail``. Its data set is a folder holding
``users.json``, ``orders.json`` and ``products.json`` in the tau-bench layout; the tools follow the peer's
semantics (``../shared/spec/tau-bench-semantics.md``), so tau-bench retail tasks replay and grade the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from domains.retail._data import dump_all, load_folder
from domains.retail.models import Base
from domains.retail.tools import TOOLS, retail_toolbox
from simulator.database import StateSpec, TrialDatabase
from simulator.domain import Domain
from simulator.tools import Toolbox

__all__ = ["TOOLS", "RetailDomain"]

_POLICY_PLACEHOLDER = """# Retail agent policy

(The retail policy document, domains/retail/policy.md, is not written yet.)

Authenticate the user (email, or name and zip code) before acting; act only for that user; list the details
of every change and get an explicit "yes" before any write; make at most one tool call at a time; transfer
to a human agent only when the request is outside what the tools and this policy allow.
"""


class RetailDomain(Domain):
    """Customers, orders and products of an online shop, with tau-bench's 16 retail tools.

    State: the tables of :mod:`domains.retail.models`; money compares at cent precision; the ``layout``
    columns (key order only) are not compared. The native dump is
    ``{"users": {...}, "orders": {...}, "products": {...}}``, identical to the data files that were loaded
    (plus the tools' changes). Retail has one tool mode, ``tau-bench``.
    """

    name = "retail"
    option_values = {"mode": ("tau-bench",)}  # noqa: RUF012 - read-only declaration

    def __init__(self) -> None:
        super().__init__()
        # ``layout`` only records key order, which JSON equality (and the peer's grader) ignores: an agent
        # that rewrites an address with its current value must not fail the state check.
        self._spec = StateSpec(
            Base.metadata,
            volatile_columns={t.name: frozenset({"layout"}) for t in Base.metadata.sorted_tables if "layout" in t.c},
            float_decimals=2,
        )
        self._toolbox = retail_toolbox()

    def state_spec(self) -> StateSpec:
        """Return the schema and comparison rules (money at cent precision)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the 16 retail tools."""
        return self._toolbox

    def policy(self) -> str:
        """Return the retail policy (domains/retail/policy.md), or a short placeholder while it is absent."""
        path = self.package_dir() / "policy.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
        return _POLICY_PLACEHOLDER

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load users.json, orders.json and products.json from ``data_dir``.

        Args:
            session: a Session on an empty database with the retail schema.
            data_dir: the data folder.
            options: tool options (unused: loading is the same in every mode).

        Raises:
            DomainError: a file is missing or malformed (the message names file, record and field).
        """
        load_folder(session, Path(data_dir))

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{"users": ..., "orders": ..., "products": ...}`` as in the data files."""
        return dump_all(trial.raw)

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return ``{"mode": "tau-bench"}`` (retail's only mode)."""
        return {"mode": "tau-bench"}

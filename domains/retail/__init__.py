"""The retail domain: an online shop's customers, orders and products (tau-bench compatible).

Registered under the entry point group ``tausim.domains`` as ``retail``. Its data set is a folder holding
``users.json``, ``orders.json`` and ``products.json`` in the tau-bench layout; the tools follow the peer's
semantics (``../shared/spec/tau-bench-semantics.md``), so tau-bench retail tasks replay and grade the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from domains.retail._data import TABLES, dump_all, load_folder, load_tables
from domains.retail.models import Base
from domains.retail.scenarios import derive_retail_scenario
from domains.retail.tools import MODES, TOOLS, retail_toolbox
from simulator.agents.kit import Agent, TrialContext
from simulator.world.kit import DomainError, JsonFolderDomain, Task, TemplateDatabase, TrialDatabase, UserScenario

__all__ = ["TOOLS", "RetailDomain"]

_POLICY_PLACEHOLDER = """# Retail agent policy

(The retail policy document, domains/retail/policy.md, is not written yet.)

Authenticate the user (email, or name and zip code) before acting; act only for that user; list the details
of every change and get an explicit "yes" before any write; make at most one tool call at a time; transfer
to a human agent only when the request is outside what the tools and this policy allow.
"""


class RetailDomain(JsonFolderDomain):
    """Customers, orders and products of an online shop, with tau-bench's 16 retail tools.

    State: the tables of :mod:`domains.retail.models`; money compares at cent precision; the ``layout``
    columns (key order only) are not compared. The native dump is
    ``{"users": {...}, "orders": {...}, "products": {...}}``, identical to the data files that were loaded
    (plus the tools' changes). Tool modes (option ``mode``): ``tau-bench`` (default) and ``tau2`` (the default for
    a tau2-bench ``db.json``; see :mod:`domains.retail.tools`).
    """

    name = "retail"
    option_values = {"mode": MODES}  # noqa: RUF012 - read-only declaration

    metadata = Base.metadata
    policy_placeholder = _POLICY_PLACEHOLDER
    tables = TABLES
    load_folder = staticmethod(load_folder)
    load_tables = staticmethod(load_tables)
    dump_all = staticmethod(dump_all)
    make_toolbox = staticmethod(retail_toolbox)
    entities = {"user_id": ("users", "id"), "order_id": ("orders", "id"),  # noqa: RUF012 - read-only declaration
                "item_ids": ("order_items", "item_id"), "new_item_ids": ("variants", "item_id"),
                "product_id": ("products", "id"), "payment_method_id": ("payment_methods", "id")}
    user_entity = ("users", "id")

    def legacy_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return ``{"mode": "tau-bench"}`` (the mode of every data set but tau2-bench's)."""
        return {"mode": "tau-bench"}

    def reference_agent(self, ctx: TrialContext, faults: Mapping[str, float]) -> Agent:
        """Return the rule-based retail reference agent for one trial (``--agent reference``).

        Args:
            ctx: the trial context (the agent reads only the seed and the tool schemas, never the task).
            faults: fault knob -> rate in [0, 1]; knobs: see :data:`domains.retail.reference_agent.FAULT_KNOBS`.

        Returns:
            A :class:`~domains.retail.reference_agent.RetailReferenceAgent`.

        Raises:
            DomainError: an unknown knob or a rate outside [0, 1] (the message names it).
        """
        from domains.retail.reference_agent import RetailReferenceAgent

        try:
            return RetailReferenceAgent(ctx, faults)
        except ValueError as e:
            raise DomainError(str(e)) from e

    def derive_scenario(self, task: Task, template: TemplateDatabase) -> UserScenario:
        """Return the task's scenario, deriving identity and agenda when it has none (tau-bench tasks).

        See :func:`domains.retail.scenarios.derive_retail_scenario`: identity from the instruction, one intent
        per write gold action, item descriptions from the user's orders, never an id the instruction does not
        give.

        Args:
            task: the task.
            template: the run's template database (read-only use).

        Returns:
            ``task.scenario`` when it has an agenda, else the derived scenario.
        """
        if task.scenario.agenda:
            return task.scenario
        return derive_retail_scenario(task, template).scenario

    def record_owner(self, tool: str, arguments: Mapping[str, Any], db: TrialDatabase) -> str | None:
        """Return the owner of the records a write acted on: the order's customer, else the ``user_id`` argument.

        Args:
            tool: the tool name.
            arguments: the call's arguments (``order_id`` for order tools, ``user_id`` for profile tools).
            db: the trial's database.

        Returns:
            The owning user id, or None when the call names neither a known order nor a user.
        """
        order_id = arguments.get("order_id")
        if isinstance(order_id, str):  # read on the trial's connection, not through the ORM: its first query
            # configures every mapper of the schema (about 20 ms of a one-task run)
            row = db.raw.execute('SELECT "user_id" FROM "orders" WHERE "id" = ?', (order_id,)).fetchone()
            if row is not None:
                return str(row[0])
        user_id = arguments.get("user_id")
        return user_id if isinstance(user_id, str) else None

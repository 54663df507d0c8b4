"""Telecom technical support with dual control (tau2-bench's telecom world, our own implementation).

The agent works on the carrier's records (customers, lines, plans, bills, devices; 13 tools); the user works on
their own phone (30 tools: status bar, speed test, airplane mode, SIM, data, roaming, APN, Wi-Fi calling, VPN, app
permissions, reboot, payment). Both sides live in the trial's database: the agent's document tables and the user's
single-object tables ``device`` and ``surroundings``. After every step the domain syncs the user's surroundings
from the agent's records (line active, roaming allowed, data allowance, payment requests; paid requests mark
bills paid). Data: tau2's ``db.toml`` and ``user_db.toml`` (``--data`` their folder); tasks: tau2's
``tasks.json`` (read by the engine's tau2 loader, :meth:`simulator.Domain.load_tasks`; tau2's default split
``base``, ``--split full`` for all 2,285). Registered as ``telecom``.
"""

from __future__ import annotations

import datetime as dt
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import MetaData
from sqlalchemy.orm import Session

from domains.telecom import phone as _phone
from domains.telecom import tools as _tools
from simulator.world.kit import (
    SINGLE,
    Docs,
    DocShape,
    Domain,
    DomainError,
    Intent,
    StateSpec,
    Task,
    TemplateDatabase,
    Toolbox,
    ToolContext,
    TrialDatabase,
    UserScenario,
    deep_merge,
    doc_table,
    insert_docs,
    merge_docs,
)

__all__ = ["TelecomDomain"]

AGENT_TABLES = {"plans": "plan_id", "customers": "customer_id", "lines": "line_id", "bills": "bill_id",
                "devices": "device_id"}
"""Agent-side table -> the id field of its records."""
USER_TABLES = ("device", "surroundings")
_PROBLEMS = (("mms", "get my phone to send MMS picture messages again"),
             ("mobile data", "get my mobile data working properly again"),
             ("", "get my phone service working again"))
"""(word in the instructions, the rule-based user's request), first match wins."""


def _plain(value: Any) -> Any:
    """TOML dates and times as ISO text (tau2's JSON form), recursively."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return dict(_plain(tomllib.load(f)))
    except FileNotFoundError as e:
        raise DomainError(f"--data {path.parent}: missing {path.name}") from e
    except tomllib.TOMLDecodeError as e:
        raise DomainError(f"{path}: not valid TOML: {e}") from e
    except UnicodeDecodeError as e:
        raise DomainError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except ValueError:  # int(): Python's digit limit (tomllib names no position)
        raise DomainError(f"{path}: not valid TOML: an integer of more than {sys.get_int_max_str_digits()} "
                          "digits") from None


class TelecomDomain(Domain):
    """Telecom technical support: the agent fixes the account, the user fixes the phone."""

    name = "telecom"
    tau2_options: ClassVar[dict[str, Any] | None] = {}  # type: ignore[misc]
    """tau2-bench task files run with the domain's only tool set."""

    def __init__(self) -> None:
        super().__init__()
        md = MetaData()
        self._tables = {n: doc_table(md, n) for n in [*AGENT_TABLES, *USER_TABLES]}
        self._spec = StateSpec(md, float_decimals=6)
        self._toolbox = Toolbox(_tools.AGENT_TOOLS, uses_session=False)
        self._user_toolbox = Toolbox(_phone.USER_TOOLS, uses_session=False)

    def state_spec(self) -> StateSpec:
        """Return both sides' tables (documents compared whole)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the agent's 13 tools."""
        return self._toolbox

    def user_toolbox(self) -> Toolbox:
        """Return the user's 30 phone tools."""
        return self._user_toolbox

    def user_tables(self) -> frozenset[str]:
        """Return ``device`` and ``surroundings``."""
        return frozenset(USER_TABLES)

    def sync(self, ctx: ToolContext) -> None:
        """Sync the user's surroundings from the agent's records (see :func:`domains.telecom.tools.sync`)."""
        _tools.sync(ctx)

    def sync_ignores(self) -> frozenset[str]:
        """Return ``device``: the sync reads the agent's records and the surroundings, never the phone itself."""
        return frozenset({"device"})

    def environment_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return the setup functions of a side (user: break APN, unseat SIM, ...; agent: data usage, overdue bill)."""
        return _phone.ENV_FUNCTIONS if side == "user" else _tools.AGENT_ENV_FUNCTIONS

    def assertion_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return the assertion functions of a side (9 user-side, 4 agent-side)."""
        return _phone.ASSERTIONS if side == "user" else _tools.AGENT_ASSERTIONS

    def derive_scenario(self, task: Task, template: TemplateDatabase) -> UserScenario:
        """Return the rule-based user's scenario of a telecom task: who the user is and what is wrong.

        The identity (name, phone number) is what the task's setup tells the user's own phone
        (``set_user_info``); the one intent asks to fix the problem the instructions describe (MMS, mobile data,
        or no service, by the instructions' words). What to do on the phone comes from the agent at run time
        (see :class:`simulator.users.RuleUser`'s ``tools``).

        Args:
            task: the task.
            template: the run's template database (unused).

        Returns:
            The scenario with ``identity`` and a one-intent ``agenda``; a task with its own agenda as it is.
        """
        del template
        if task.scenario.agenda:
            return task.scenario
        identity: dict[str, str] = {}
        for a in task.initial_state.setup if task.initial_state is not None else []:
            if a.name == "set_user_info" and a.requestor == "user":
                name = str(a.arguments.get("name", "")).strip()
                if name:
                    identity["name"] = name
                    first, _, last = name.partition(" ")
                    identity.update(first_name=first, last_name=last or first)
        text = task.scenario.instructions.lower()
        if "reason for call:" in text:  # tau2's structured instructions: the reason only (the rest names tools)
            text = text.split("reason for call:", 1)[1].split("\n\n", 1)[0]
        problem = next((p for key, p in _PROBLEMS if key in text), _PROBLEMS[-1][1])
        slots = {k: str(a.arguments[k]) for a in (task.initial_state.setup if task.initial_state else [])
                 if a.name == "set_user_info" for k in ("phone_number",) if a.arguments.get(k)}
        intent = Intent(kind="fix_phone", request=[problem], slots=slots)
        return task.scenario.model_copy(update={"identity": identity, "agenda": [intent]})

    def default_data_dir(self) -> Path:
        """Return the tau2-bench telecom folder beside the repository (``../shared/peers/tau2-bench/telecom``)."""
        return Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau2-bench" / "telecom"

    def policy(self) -> str:
        """Return tau2's main policy and tech support manual, as tau2 gives them to the agent."""
        folder = self.default_data_dir()
        try:
            main = (folder / "main_policy.md").read_text(encoding="utf-8")
            manual = (folder / "tech_support_manual.md").read_text(encoding="utf-8")
        except OSError as e:
            raise DomainError(f"telecom policy not found in {folder}: {e}") from e
        return (f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n"
                "</tech_support_policy>")

    def task_splits(self) -> dict[str, Path]:
        """Return no built-in split: tasks come from tau2's ``tasks.json`` (``--tasks``)."""
        return {}

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load ``db.toml`` (agent) and ``user_db.toml`` (user, over the phone's defaults).

        Raises:
            DomainError: a file is missing or malformed, or a record lacks its id.
        """
        data = _read_toml(Path(data_dir) / "db.toml")
        for table, key in AGENT_TABLES.items():
            records = data.get(table, [])
            for i, r in enumerate(records):
                if key not in r:
                    raise DomainError(f"{data_dir}/db.toml: {table}[{i}]: missing {key}")
            insert_docs(session, self._tables[table], ((r[key], r) for r in records))
        user = _read_toml(Path(data_dir) / "user_db.toml") if (Path(data_dir) / "user_db.toml").exists() else {}
        insert_docs(session, self._tables["device"],
                    [(SINGLE, deep_merge(_phone.default_device(), user.get("device", {})))])
        insert_docs(session, self._tables["surroundings"],
                    [(SINGLE, deep_merge(_phone.default_surroundings(), user.get("surroundings", {})))])

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{table: {id: record}}``; the single objects under id ``"1"``."""
        return Docs(trial.raw).dump(self._tables)

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge tau2 ``agent_data`` into the agent's records: a table given (a list, as in tau2) is replaced whole.

        Raises:
            DomainError: an unknown table, or a record without its id field (names the field).
        """
        try:
            merge_docs(trial.raw, {t: DocShape("list", key) for t, key in AGENT_TABLES.items()}, data,
                       "initialization_data.agent_data")
        except ValueError as e:
            raise DomainError(str(e)) from e

    def merge_user_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge tau2 ``user_data`` (``{"device": {...}, "surroundings": {...}}``) into the phone and surroundings.

        Raises:
            DomainError: an unknown table or a value that is not an object (names the field).
        """
        try:
            merge_docs(trial.raw, {t: DocShape("single") for t in USER_TABLES}, data, "initialization_data.user_data")
        except ValueError as e:
            raise DomainError(str(e)) from e

    def load_tasks(self, source: str | None = None, split: str | None = None) -> list[Task]:
        """Load a task file (None: tau2's telecom ``tasks.json`` in the default data folder), optionally one split.

        A tau2 file without ``split`` gives tau2's default split ``base`` (114 tasks); ``split="full"`` all 2,285.
        """
        return super().load_tasks(str(self.default_data_dir() / "tasks.json") if source is None else source, split)

"""tau2-bench's (τ³) banking_knowledge suite (our own implementation): a bank's customer service with a knowledge base.

The agent serves Rho-Bank's customers with 14 tools (users, identity verification, credit cards, referrals, a
transfer) plus the internal tools the knowledge base names, which it must unlock before calling them
(:mod:`domains.banking_knowledge.discoverable`); the user has tools of its own (applications, referrals, purchases,
the tools the agent gives it, a request for a human). The 698 policy documents are searched with the tools of the
retrieval configuration chosen by ``--option retrieval=NAME`` (:mod:`domains.banking_knowledge.knowledge`; default
``bm25_grep``). Data: τ³'s ``db.json``, ``documents/``, ``prompts/`` and ``tasks.json`` in
``../shared/peers/tau2-bench/banking_knowledge`` (or ``--data`` that folder); the tasks' reward bases (DB, ACTION)
grade as τ³ grades them (:mod:`simulator.world.tau2_tasks`). Registered as ``banking_knowledge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import MetaData
from sqlalchemy.orm import Session

from domains.banking_knowledge.discoverable import AGENT_TOOLS
from domains.banking_knowledge.knowledge import (
    CONFIGURATIONS,
    DEFAULT_RETRIEVAL,
    OFFLINE_REFUSED,
    SLOT,
    check_retrieval,
    fill_required,
    knowledge_base,
)
from domains.banking_knowledge.records import AGENT_TABLES, BOOKKEEPING
from domains.banking_knowledge.tools import AGENT_BASE, SEARCH, USER_BASE
from simulator.world.kit import (
    Docs,
    DocShape,
    Domain,
    DomainError,
    InitialState,
    StateSpec,
    Task,
    Toolbox,
    TrialDatabase,
    decode_data_file,
    doc_table,
    insert_docs,
    merge_docs,
    parse_tau2_tasks,
)

__all__ = ["BankingKnowledgeDomain"]


def _folder() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau2-bench" / "banking_knowledge"


def _read_json(path: Path) -> Any:
    try:
        return decode_data_file(path, path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise DomainError(f"--data {path.parent}: missing {path.name}") from e
    except UnicodeDecodeError as e:
        raise DomainError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


class BankingKnowledgeDomain(Domain):
    """τ³'s banking_knowledge: bank records, discoverable tools, a searchable knowledge base."""

    name = "banking_knowledge"
    option_values: ClassVar[dict[str, tuple[str, ...]]] = {  # type: ignore[misc]
        "retrieval": (*CONFIGURATIONS, *OFFLINE_REFUSED)}
    """``retrieval``: τ³'s retrieval configurations (those needing a model offline are refused when used)."""
    tau2_options: ClassVar[dict[str, Any] | None] = {"retrieval": DEFAULT_RETRIEVAL}  # type: ignore[misc]
    SHAPES: ClassVar[dict[str, DocShape]] = {t: DocShape("map") for t in (*AGENT_TABLES, "read_log_allowlist")}

    def __init__(self) -> None:
        super().__init__()
        md = MetaData()
        self._tables = {n: doc_table(md, n) for n in (*AGENT_TABLES, *BOOKKEEPING)}
        self._spec = StateSpec(md, excluded_tables=frozenset(BOOKKEEPING))
        self._user_toolbox = Toolbox(USER_BASE, uses_session=False)
        self._required: dict[str, list[str]] = {}

    def state_spec(self) -> StateSpec:
        """Return the bank's tables (the trial-only bookkeeping tables excluded from comparison)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the agent's tools under the default retrieval configuration."""
        return self.toolbox_for({})

    def toolbox_for(self, options: Mapping[str, Any]) -> Toolbox:
        """Return the agent's tools: the base tools and the configuration's search tools.

        Raises:
            DomainError: a configuration that cannot run offline (named, with what it needs).
        """
        config = check_retrieval(str(options.get("retrieval", DEFAULT_RETRIEVAL)))
        return Toolbox([*AGENT_BASE, *(SEARCH[t] for t in config.tools)], uses_session=False)

    def user_toolbox(self) -> Toolbox:
        """Return the user's tools."""
        return self._user_toolbox

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return ``{"retrieval": "bm25_grep"}``."""
        return {"retrieval": DEFAULT_RETRIEVAL}

    def default_data_dir(self) -> Path:
        """Return τ³'s banking_knowledge folder beside the repository."""
        return _folder()

    def policy(self) -> str:
        """Return the default configuration's prompt."""
        return self.policy_for(None, {})

    def policy_for(self, data_dir: Path | None, options: Mapping[str, Any]) -> str:
        """Return the configuration's system prompt (``full_kb``: every document inlined).

        ``golden_retrieval`` keeps the ``{{required_documents}}`` slot: :meth:`task_policy` fills it per task.

        Raises:
            DomainError: no data, or a refused configuration.
        """
        retrieval = str(options.get("retrieval", DEFAULT_RETRIEVAL))
        return self._kb(data_dir).prompt(retrieval, keep_required_slot=True)

    def task_policy(self, policy: str, task: Task, options: Mapping[str, Any]) -> str:
        """Fill the ``golden_retrieval`` prompt's slot with the task's required documents (τ³'s golden prompt)."""
        if SLOT not in policy:
            return policy
        return fill_required(policy, self._kb(None), self._required.get(task.id, []))

    def _kb(self, data_dir: Path | None) -> Any:
        return knowledge_base(str(Path(data_dir) if data_dir is not None else _folder()))

    def task_splits(self) -> dict[str, Path]:
        """Return no built-in split: tasks come from τ³'s ``tasks.json``."""
        return {}

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load ``db.json`` (``{table: {"data": {id: record}}}``) and note the knowledge folder.

        Raises:
            DomainError: a missing or malformed file; a refused retrieval configuration.
        """
        check_retrieval(str(options.get("retrieval", DEFAULT_RETRIEVAL)))
        raw = _read_json(Path(data_dir) / "db.json")
        if not isinstance(raw, dict):
            raise DomainError(f"{Path(data_dir) / 'db.json'}: expected an object of tables")
        for table, value in raw.items():
            if table not in self._tables or table in BOOKKEEPING:
                raise DomainError(f"{Path(data_dir) / 'db.json'}: field {table}: unknown table")
            data = value.get("data") if isinstance(value, dict) else None
            if not isinstance(data, dict):
                raise DomainError(f"{Path(data_dir) / 'db.json'}: field {table}.data: expected an object of records")
            insert_docs(session, self._tables[table], data.items(), ordered=True)
        insert_docs(session, self._tables["knowledge"], [("folder", {"path": str(Path(data_dir).resolve())})],
                    ordered=True)

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{table: {id: record}}`` of the compared tables."""
        return Docs(trial.raw).dump({t: v for t, v in self._tables.items() if t not in BOOKKEEPING})

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge τ³ ``agent_data`` (``{table: {"data": {id: record}}}``) into the trial's records.

        Raises:
            DomainError: an unknown table or a malformed value (names the field).
        """
        flat = {}
        for table, value in data.items():
            if not isinstance(value, dict) or not isinstance(value.get("data", {}), dict):
                raise DomainError(f"initialization_data.agent_data.{table}: expected {{\"data\": {{id: record}}}}")
            flat[table] = value.get("data", {})
        try:
            merge_docs(trial.raw, self.SHAPES, flat, "initialization_data.agent_data", ordered=True)
        except ValueError as e:
            raise DomainError(str(e)) from e

    def load_tasks(self, source: str | None = None, split: str | None = None) -> list[Task]:
        """Load τ³'s ``tasks.json`` (None: the default folder's) and prepare each task's trial state.

        Each task gets, in its initial data, the read discoverable tools its gold calls (the calls τ³ logs; see
        :mod:`domains.banking_knowledge.tools`); its ``required_documents`` are kept for ``golden_retrieval``.

        Raises:
            DomainError, simulator.world.kit.TaskFileError: see :meth:`Domain.load_tasks`.
        """
        source = str(_folder() / "tasks.json") if source is None else source
        if split is not None:
            raise DomainError(f"--split {split}: banking_knowledge's tasks.json has no splits")
        raw = _read_json(Path(source))
        if not isinstance(raw, list):
            raise DomainError(f"{source}: expected a tau2 task list")
        raw = [_without_stray_init(t) for t in raw]
        tasks = self._checked(parse_tau2_tasks(raw, source), source, self.toolbox_for(self.tau2_options or {}))
        required = {str(t.get("id")): list(t.get("required_documents") or []) for t in raw if isinstance(t, dict)}
        out = []
        for task in tasks:
            self._required[task.id] = required.get(task.id, [])
            reads = sorted({str(_tool_name(a.arguments)) for a in task.gold_actions
                            if a.name == "call_discoverable_agent_tool" and _tool_name(a.arguments) in AGENT_TOOLS
                            and not AGENT_TOOLS[str(_tool_name(a.arguments))].writes})
            if reads:
                init = task.initial_state or InitialState()
                data = {**(init.data or {}), "read_log_allowlist": {"data": {n: {"tool_name": n} for n in reads}}}
                task = task.model_copy(update={"initial_state": init.model_copy(update={"data": data})})
            out.append(task)
        return out


def _without_stray_init(task: Any) -> Any:
    """Drop ``initialization_data`` fields other than ``agent_data``/``user_data``, as τ³'s task model ignores them.

    Two tasks (task_058 and another) put tables there directly; τ³ does not apply them, so neither do we.
    """
    if not isinstance(task, dict) or not isinstance(task.get("initial_state"), dict):
        return task
    init = task["initial_state"].get("initialization_data")
    if not isinstance(init, dict) or set(init) <= {"agent_data", "user_data"}:
        return task
    kept = {k: v for k, v in init.items() if k in ("agent_data", "user_data")}
    return {**task, "initial_state": {**task["initial_state"], "initialization_data": kept or None}}


def _tool_name(arguments: Mapping[str, Any]) -> Any:
    return arguments.get("agent_tool_name")

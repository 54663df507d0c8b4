"""tau2-bench's mock world (our own implementation): tasks of users, and a user-side notification inbox.

The agent creates tasks and updates their status (4 tools); the user can read and dismiss notifications in their
inbox (2 tools, dual control). Data: tau2's ``db.json`` and ``user_db.json`` (``--data`` their folder); tasks:
its ``tasks.json`` (read by the engine's tau2 loader, :meth:`simulator.Domain.load_tasks`). Registered as ``mock``.

Two of tau2's ten mock tasks cannot be passed by their gold actions (a gold action the task's own user
instructions and env assertions need is missing); ``gold_amendments.json`` adds it when such a task is loaded,
and tags the task ``tau2-gold-amended`` (see :meth:`MockDomain.load_tasks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from sqlalchemy import MetaData
from sqlalchemy.orm import Session

from simulator.world.kit import (
    Action,
    Docs,
    DocShape,
    Domain,
    DomainError,
    StateSpec,
    Task,
    Toolbox,
    ToolContext,
    ToolError,
    TrialDatabase,
    decode_data_file,
    doc_table,
    insert_docs,
    merge_docs,
    tool,
)

__all__ = ["AMENDED_TAG", "MockDomain"]

AMENDED_TAG = "tau2-gold-amended"
"""The tag of a task whose gold actions :meth:`MockDomain.load_tasks` completed (``gold_amendments.json``)."""


TASK_FIELDS = ("task_id", "title", "description", "status")
USER_FIELDS = ("user_id", "name", "tasks")
NOTIFICATION_FIELDS = ("notification_id", "message", "status", "task_id")
"""Record fields in the order τ³'s answers list them (its models' order; documents are stored with sorted keys)."""


def _ordered(doc: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {**{f: doc[f] for f in fields if f in doc}, **{k: v for k, v in doc.items() if k not in fields}}


def _folder() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau2-bench" / "mock"


@tool("write")
def create_task(ctx: ToolContext, user_id: str, title: str, description: str | None = None) -> dict[str, Any]:
    """Create a new task for a user.

    Args:
        ctx: the trial's tool context.
        user_id: The ID of the user creating the task.
        title: The title of the task.
        description: Optional description of the task.
    """
    docs = Docs(ctx.conn)
    user = docs.get("users", user_id)
    if user is None:
        raise ToolError(f"User {user_id} not found")
    count = ctx.conn.execute("SELECT count(*) FROM tasks").fetchone()[0]
    task_id = f"task_{count + 1}"
    task = {"task_id": task_id, "title": title, "description": description, "status": "pending"}
    docs.put("tasks", task_id, task)
    user["tasks"].append(task_id)
    docs.put("users", user_id, user)
    return task


@tool("read", memo=True)
def get_users(ctx: ToolContext) -> list[dict[str, Any]]:
    """Get all users in the database."""
    return [_ordered(u, USER_FIELDS) for u in Docs(ctx.conn).all("users")]


@tool("write")
def update_task_status(ctx: ToolContext, task_id: str, status: Literal["pending", "completed"]) -> dict[str, Any]:
    """Update the status of a task.

    Args:
        ctx: the trial's tool context.
        task_id: The ID of the task to update.
        status: The new status of the task.
    """
    docs = Docs(ctx.conn)
    task = docs.get("tasks", task_id)
    if task is None:
        raise ToolError(f"Task {task_id} not found")
    task["status"] = status
    docs.put("tasks", task_id, task)
    return _ordered(task, TASK_FIELDS)


@tool("read", ends_conversation=True)
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue.

    Only when the user explicitly asks for one, or the policy and tools cannot solve the issue.

    Args:
        ctx: the trial's tool context.
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


SHARED = "user_acts_on_agent_records"
"""The key of the ``sides`` record that says the user's tools act on the agent's records (see :class:`MockDomain`)."""
_NO_INBOX = "'MockDB' object has no attribute 'notifications'"
"""What τ³'s user tools answer when they act on the agent's records, which hold no inbox."""


def _shared(conn: Any) -> bool:
    return Docs(conn).get("sides", SHARED) is not None


@tool("read")
def check_notifications(ctx: ToolContext) -> list[dict[str, Any]]:
    """Check all notifications in your inbox."""
    if _shared(ctx.conn):
        raise ToolError(_NO_INBOX)
    return [_ordered(n, NOTIFICATION_FIELDS) for n in Docs(ctx.conn).all("notifications")]


@tool("write")
def dismiss_notification(ctx: ToolContext, notification_id: str) -> str:
    """Dismiss (mark as read) a notification.

    Args:
        ctx: the trial's tool context.
        notification_id: The ID of the notification to dismiss.
    """
    if _shared(ctx.conn):
        raise ToolError(_NO_INBOX)
    docs = Docs(ctx.conn)
    note = docs.get("notifications", notification_id)
    if note is None:
        raise ToolError(f"Notification {notification_id} not found")
    note["status"] = "read"
    docs.put("notifications", notification_id, note)
    return f"Notification {notification_id} dismissed"


def _add_notification(ctx: ToolContext, notification_id: str, message: str, task_id: str | None = None) -> str:
    Docs(ctx.conn).put("notifications", notification_id, {"notification_id": notification_id, "message": message,
                                                            "status": "unread", "task_id": task_id})
    return f"notification {notification_id} added"


def _number_of_tasks(ctx: ToolContext, user_id: str, expected_number: int) -> bool:
    user = Docs(ctx.conn).get("users", user_id)
    if user is None:
        raise ValueError(f"User {user_id} not found")
    return len(user["tasks"]) == expected_number


def _task_status(ctx: ToolContext, task_id: str, expected_status: str) -> bool:
    task = Docs(ctx.conn).get("tasks", task_id)
    if task is None:
        raise ValueError(f"Task {task_id} not found")
    return bool(task["status"] == expected_status)


def _notification_status(ctx: ToolContext, notification_id: str, expected_status: str) -> bool:
    note = Docs(ctx.conn).get("notifications", notification_id)
    if note is None:
        raise ValueError(f"Notification {notification_id} not found")
    return bool(note["status"] == expected_status)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = decode_data_file(path, path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise DomainError(f"--data {path.parent}: missing {path.name}") from e
    except UnicodeDecodeError as e:
        raise DomainError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not isinstance(data, dict):
        raise DomainError(f"{path}: expected an object of tables")
    return data


class MockDomain(Domain):
    """tau2's mock world: users and their tasks; a user-side notification inbox.

    As in τ³ 1.0.1, a task's ``initialization_data.agent_data`` makes the user's tools act on the agent's records
    from then on (τ³ points the user's toolkit at the agent's database): the inbox is then out of reach (the user's
    tools answer τ³'s error) and the user's view of the trial (:meth:`user_records`) is the agent's tasks and users.
    The trial records this in the bookkeeping table ``sides``.
    """

    name = "mock"
    tau2_options: ClassVar[dict[str, Any] | None] = {}  # type: ignore[misc]
    """tau2-bench task files run with the domain's only tool set."""
    AGENT_SHAPES: ClassVar[dict[str, DocShape]] = {"tasks": DocShape("map"), "users": DocShape("map")}
    USER_SHAPES: ClassVar[dict[str, DocShape]] = {"notifications": DocShape("map")}

    def __init__(self) -> None:
        super().__init__()
        md = MetaData()
        self._tables = {n: doc_table(md, n) for n in ("tasks", "users", "notifications", "sides")}
        self._spec = StateSpec(md)
        self._toolbox = Toolbox([create_task, get_users, update_task_status, transfer_to_human_agents],
                                uses_session=False)
        self._user_toolbox = Toolbox([check_notifications, dismiss_notification], uses_session=False)

    def state_spec(self) -> StateSpec:
        """Return the tables ``tasks``, ``users`` (agent) and ``notifications`` (user)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the agent's 4 tools."""
        return self._toolbox

    def user_toolbox(self) -> Toolbox:
        """Return the user's inbox tools."""
        return self._user_toolbox

    def user_tables(self) -> frozenset[str]:
        """Return ``notifications``."""
        return frozenset({"notifications"})

    def environment_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return ``add_notification`` on the user's side."""
        return {"add_notification": _add_notification} if side == "user" else {}

    def assertion_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Return the task checks (agent) and the notification check (user)."""
        if side == "user":
            return {"assert_notification_status": _notification_status}
        return {"assert_number_of_tasks": _number_of_tasks, "assert_task_status": _task_status}

    def default_data_dir(self) -> Path:
        """Return the tau2-bench mock folder beside the repository."""
        return _folder()

    def policy(self) -> str:
        """Return tau2's mock ``policy.md``."""
        try:
            return (_folder() / "policy.md").read_text(encoding="utf-8")
        except OSError as e:
            raise DomainError(f"mock policy not found: {e}") from e

    def task_splits(self) -> dict[str, Path]:
        """Return no built-in split: tasks come from tau2's ``tasks.json`` (``--tasks``)."""
        return {}

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load ``db.json`` (tasks, users) and ``user_db.json`` (notifications).

        Raises:
            DomainError: a file is missing or malformed.
        """
        agent = _read_json(Path(data_dir) / "db.json")
        user = _read_json(Path(data_dir) / "user_db.json")
        for table, data in (("tasks", agent.get("tasks", {})), ("users", agent.get("users", {})),
                            ("notifications", user.get("notifications", {}))):
            insert_docs(session, self._tables[table], data.items())

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{table: {id: record}}`` (tasks, users, notifications; not the bookkeeping table ``sides``)."""
        return Docs(trial.raw).dump({n: t for n, t in self._tables.items() if n != "sides"})

    def user_records(self, trial: TrialDatabase, dump: Mapping[str, Any]) -> dict[str, Any]:
        """Return the records the user's tools act on: the inbox, or the agent's records once they are shared."""
        if _shared(trial.raw):
            return {t: v for t, v in dump.items() if t in self.AGENT_SHAPES}
        return super().user_records(trial, dump)

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge tau2 ``agent_data`` (``{"tasks"|"users": {id: record}}``) into the trial's records.

        Raises:
            DomainError: an unknown table or a malformed value (names the field).
        """
        try:
            merge_docs(trial.raw, self.AGENT_SHAPES, data, "initialization_data.agent_data")
        except ValueError as e:
            raise DomainError(str(e)) from e
        Docs(trial.raw).put("sides", SHARED, {"since": "initialization_data.agent_data"})

    def merge_user_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Merge tau2 ``user_data`` (``{"notifications": {id: record}}``) into the user's inbox.

        Raises:
            DomainError: an unknown table or a malformed value (names the field).
        """
        try:
            merge_docs(trial.raw, self.USER_SHAPES, data, "initialization_data.user_data")
        except ValueError as e:
            raise DomainError(str(e)) from e

    def load_tasks(self, source: str | None = None, split: str | None = None) -> list[Task]:
        """Load a task file (None: tau2's mock ``tasks.json`` in the default data folder), optionally one split.

        A task named in the package's ``gold_amendments.json`` gets the gold actions listed there appended
        (each one only when the task's gold does not already have it, so a fixed upstream file is left as it is)
        and the tag :data:`AMENDED_TAG`.

        Raises:
            DomainError: an unknown split, or a malformed amendments file.
            simulator.world.kit.TaskFileError: a malformed task file.
        """
        source = str(_folder() / "tasks.json") if source is None else source
        tasks = super().load_tasks(source, split)
        amendments = _amendments(self.package_dir() / "gold_amendments.json")
        amended = []
        for i, task in enumerate(tasks):
            extra = [a for a in amendments.get(task.id, []) if a not in task.gold_actions]
            if extra:
                tasks[i] = task.model_copy(update={"gold_actions": [*task.gold_actions, *extra],
                                                   "tags": [*task.tags, AMENDED_TAG]})
                amended.append(tasks[i])
        self._checked(amended, source)
        return tasks


def _amendments(path: Path) -> dict[str, list[Action]]:
    """Read ``{task id: {"why": text, "add": [action, ...]}}``.

    Raises:
        DomainError: the file is malformed (names the task id and field).
    """
    raw = _read_json(path)
    out = {}
    for task_id, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("why"), str) or not isinstance(
                entry.get("add"), list):
            raise DomainError(f"{path}: {task_id}: expected {{\"why\": text, \"add\": [action, ...]}}")
        try:
            out[task_id] = [Action.model_validate(a) for a in entry["add"]]
        except ValueError as e:
            raise DomainError(f"{path}: {task_id}: field add: {e}") from e
    return out

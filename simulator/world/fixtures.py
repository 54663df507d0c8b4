"""Per-task fixtures and the load-time checks of a task's fixture and assertions against its domain.

- :func:`check_task_outcomes`: refuses, when a task file is loaded (before any trial), an assertion or fixture
  naming an unknown table, column, event or tool, a filter on a missing column, or a value of the wrong type;
  the message names the file, the task, the assertion index and the field.
- :func:`apply_initial_state`: applies a task's ``initial_state`` to a trial database (rows, clock, setup
  actions); the goal state and the initial state of a task are computed from it (see
  :mod:`simulator.world.replay`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pydantic import ValidationError
from sqlalchemy import Column, Table
from sqlalchemy.exc import SQLAlchemyError

from simulator.errors import FixtureError
from simulator.types.assertions import (
    CountAssertion,
    EnvFunctionAssertion,
    EventCountAssertion,
    EventOrderAssertion,
    FieldAssertion,
    NetChangeAssertion,
    SentAssertion,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
    UnchangedExceptAssertion,
)
from simulator.types.messages import Message, ToolCall
from simulator.types.tasks import Action, InitialState, Task, TaskFileError
from simulator.world.database import StateSpec, TrialDatabase
from simulator.world.sinks import Clock
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["FixtureError", "apply_initial_state", "check_task_outcomes", "history_messages", "replay_history"]


def _type_problem(col: Column[Any], value: Any) -> str | None:
    """Return why ``value`` cannot be stored in ``col`` (None when it fits or the type is unknown)."""
    if value is None:
        return None
    try:
        pt = col.type.python_type
    except NotImplementedError:
        return None
    if pt is bool:
        ok = isinstance(value, bool) or value in (0, 1)
    elif pt in (int, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if pt is int and isinstance(value, float) and not value.is_integer():
            ok = False
    elif pt is str:
        ok = isinstance(value, str)
    else:
        return None
    return None if ok else f"expected a {pt.__name__} for column {col.name!r}, got {json.dumps(value, default=str)}"


class _Checker:
    """Checks bound to one task, raising :class:`TaskFileError` with the file, task and field."""

    def __init__(self, source: str, task: Task, spec: StateSpec, toolbox: Toolbox, events: set[str],
                 domain_name: str):
        self.source = source
        self.task = task
        self.tables = {t.name: t for t in spec.metadata.sorted_tables}
        self.toolbox = toolbox
        self.events = events
        self.domain = domain_name

    def fail(self, field: str, problem: str) -> TaskFileError:
        return TaskFileError(f"{self.source}: task {self.task.id!r}: field {field}: {problem}")

    def table(self, name: str, field: str) -> Table:
        t = self.tables.get(name)
        if t is None:
            raise self.fail(field, f"unknown table {name!r} in domain {self.domain!r} "
                                   f"(tables: {', '.join(sorted(self.tables))})")
        return t

    def column(self, table: Table, name: str, field: str, value: Any = None, check_value: bool = False) -> Column[Any]:
        if name not in table.c:
            raise self.fail(field, f"unknown column {name!r} of table {table.name!r} "
                                   f"(columns: {', '.join(c.name for c in table.columns)})")
        col = table.c[name]
        if check_value:
            problem = _type_problem(col, value)
            if problem:
                raise self.fail(field, problem)
        return col

    def row(self, table: Table, values: Mapping[str, Any], field: str) -> None:
        for k, v in values.items():
            self.column(table, k, f"{field}.{k}", v, check_value=True)

    def key(self, table: Table, key: Mapping[str, Any], field: str) -> None:
        pk = [c.name for c in table.primary_key.columns]
        if sorted(key) != sorted(pk):
            raise self.fail(field, f"a key of table {table.name!r} names exactly its primary key ({', '.join(pk)}), "
                                   f"got {', '.join(key) or 'nothing'}")
        self.row(table, key, field)

    def event(self, name: str, field: str) -> None:
        if name not in self.events:
            raise self.fail(field, f"unknown event {name!r} in domain {self.domain!r} "
                                   f"(events: {', '.join(sorted(self.events))})")

    def tool(self, name: str, arguments: Mapping[str, Any], field: str) -> None:
        spec = self.toolbox.specs.get(name)
        if spec is None:
            raise self.fail(f"{field}.name", f"unknown tool {name!r} in domain {self.domain!r}")
        known = spec.arguments_model.model_fields
        for k in arguments:
            if k not in known:
                raise self.fail(f"{field}.arguments.{k}", f"tool {name!r} has no argument {k!r} "
                                                          f"(arguments: {', '.join(known) or 'none'})")

    def action(self, action: Action, field: str) -> None:
        self.tool(action.name, action.arguments, field)
        try:
            self.toolbox.specs[action.name].arguments_model.model_validate(action.arguments)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise self.fail(f"{field}.arguments.{loc}", err["msg"]) from e


class OutcomeDomain(Protocol):
    """What checking a task's outcomes needs of its domain (:class:`simulator.world.domain.Domain` has it)."""

    name: str

    def toolbox(self) -> Toolbox:
        """The agent's tools."""
        ...

    def user_toolbox(self) -> Toolbox | None:
        """The user's tools (dual-control domains), else None."""
        ...

    def environment_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Non-tool environment functions of a side."""
        ...

    def assertion_functions(self, side: str) -> Mapping[str, Callable[..., Any]]:
        """Assertion functions of a side."""
        ...

    def install_sinks(self) -> StateSpec:
        """The schema with its sinks installed."""
        ...

    def event_names(self) -> set[str]:
        """The named domain events."""
        ...

    def has_clock(self) -> bool:
        """Whether the domain declares a Clock sink."""
        ...


def check_task_outcomes(domain: OutcomeDomain, task: Task, source: str, toolbox: Toolbox | None = None) -> None:
    """Check a task's ``initial_state``, ``assertions`` and ``env_assertions`` against its domain (at load time).

    Args:
        domain: the domain (its schema with sinks, tools and declared events).
        task: the task.
        source: the task file, for messages.
        toolbox: the tools the task runs with (None: the domain's :meth:`~simulator.world.domain.Domain.toolbox`).

    Raises:
        TaskFileError: naming the file, the task, the field (e.g. ``assertions[2].where.order``) and the
            problem: an unknown table, column, event or tool, a key that is not the primary key, a value of the
            wrong type, a clock time in a domain without a Clock, an outbox check in a domain without an Outbox,
            an env assertion naming no assertion function of its side.
    """
    env_field = "evaluation_criteria.env_assertions" if task.suite == "tau2" else "env_assertions"
    for i, ea in enumerate(task.env_assertions):
        ea_side = "user" if ea.env_type == "user" else "agent"
        if ea.func_name not in domain.assertion_functions(ea_side):
            raise TaskFileError(f"{source}: task {task.id!r}: field {env_field}[{i}].func_name: domain "
                                f"{domain.name!r} has no {ea_side}-side assertion function {ea.func_name!r}")
    if task.initial_state is None and not task.assertions:
        return
    spec = domain.install_sinks()
    c = _Checker(source, task, spec, toolbox or domain.toolbox(), domain.event_names(), domain.name)
    if task.initial_state is not None:
        _check_fixture(domain, task, task.initial_state, c)
    for i, a in enumerate(task.assertions):
        _check_assertion(domain, a, f"assertions[{i}]", c)


def _check_fixture(domain: OutcomeDomain, task: Task, fx: InitialState, c: _Checker) -> None:
    if fx.now is not None and not domain.has_clock():
        raise c.fail("initial_state.now", f"domain {domain.name!r} declares no Clock sink")
    for name, rows in fx.insert.items():
        table = c.table(name, f"initial_state.insert.{name}")
        required = [col.name for col in table.columns if not col.nullable and col.default is None
                    and col.server_default is None and not (col.primary_key and col.autoincrement is True)]
        for i, row in enumerate(rows):
            where = f"initial_state.insert.{name}[{i}]"
            c.row(table, row, where)
            missing = [r for r in required if r not in row]
            if missing:
                raise c.fail(where, f"missing required column(s) {', '.join(missing)}")
    for name, updates in fx.update.items():
        table = c.table(name, f"initial_state.update.{name}")
        for i, upd in enumerate(updates):
            c.key(table, upd.key, f"initial_state.update.{name}[{i}].key")
            c.row(table, upd.set, f"initial_state.update.{name}[{i}].set")
    for name, keys in fx.delete.items():
        table = c.table(name, f"initial_state.delete.{name}")
        for i, key in enumerate(keys):
            c.key(table, key, f"initial_state.delete.{name}[{i}]")
    setup_field = "initial_state.initialization_actions" if task.suite == "tau2" else "initial_state.setup"
    for i, action in enumerate(fx.setup):
        side = "user" if action.requestor == "user" else "agent"
        if action.name in domain.environment_functions(side):
            continue  # a non-tool environment function (dual-control domains); checked when it runs
        if side == "user":
            user_tools = domain.user_toolbox()
            if user_tools is None or action.name not in user_tools.specs:
                raise c.fail(f"{setup_field}[{i}].name", f"unknown user-side function {action.name!r} "
                                                            f"in domain {domain.name!r}")
            continue
        c.action(action, f"{setup_field}[{i}]")


def _check_assertion(domain: OutcomeDomain, a: Any, at: str, c: _Checker) -> None:
    if isinstance(a, CountAssertion | NetChangeAssertion):
        table = c.table(a.table, f"{at}.table")
        c.row(table, a.where, f"{at}.where")
        if isinstance(a, NetChangeAssertion):
            col = c.column(table, a.column, f"{at}.column")
            if _type_problem(col, 0.0) is not None:
                raise c.fail(f"{at}.column", f"column {a.column!r} is not numeric")
    elif isinstance(a, FieldAssertion):
        table = c.table(a.table, f"{at}.table")
        c.key(table, a.key, f"{at}.key")
        c.column(table, a.column, f"{at}.column", a.equals, check_value=True)
    elif isinstance(a, UnchangedExceptAssertion):
        for j, name in enumerate(a.tables):
            c.table(name, f"{at}.tables[{j}]")
        for j, rf in enumerate(a.rows):
            c.row(c.table(rf.table, f"{at}.rows[{j}].table"), rf.where, f"{at}.rows[{j}].where")
    elif isinstance(a, EventCountAssertion):
        c.event(a.event, f"{at}.event")
    elif isinstance(a, EventOrderAssertion):
        c.event(a.before, f"{at}.before")
        c.event(a.after, f"{at}.after")
    elif isinstance(a, ToolCalledAssertion | ToolNotCalledAssertion):
        _check_tool_assertion(domain, a, at, c)
    elif isinstance(a, EnvFunctionAssertion):
        if a.function not in domain.assertion_functions(a.side):
            raise c.fail(f"{at}.function", f"domain {domain.name!r} has no {a.side}-side assertion function "
                                           f"{a.function!r}")
    elif isinstance(a, SentAssertion) and "outbox" not in c.tables:
        raise c.fail(f"{at}.type", f"domain {domain.name!r} declares no Outbox sink")


def _check_tool_assertion(domain: OutcomeDomain, a: ToolCalledAssertion | ToolNotCalledAssertion, at: str,
                          c: _Checker) -> None:
    if a.requestor == "agent":
        c.tool(a.name, a.arguments, at)
        return
    user_tools = domain.user_toolbox()
    known = set(user_tools.specs if user_tools is not None else ())
    if a.requestor == "any":
        known |= set(c.toolbox.specs)
    if a.name not in known:
        raise c.fail(f"{at}.name", f"unknown {a.requestor}-side tool {a.name!r} in domain {domain.name!r}")


def apply_initial_state(toolbox: Toolbox, trial: TrialDatabase, task: Task, metadata: Any) -> list[CallOutcome]:
    """Apply a task's fixture to a trial database: rows (delete, update, insert), clock, then setup actions.

    Args:
        toolbox: the domain's tools (for the setup actions).
        trial: a fresh copy of the template (changed in place).
        task: the task; nothing happens when it has no ``initial_state``.
        metadata: the domain's schema (with its sinks' tables).

    Returns:
        The setup actions' outcomes (recorded as events of source ``setup``, step None).

    Raises:
        FixtureError: a row breaks a constraint, an update or delete matches no row, or a setup action does
            not succeed (the message names the task and the field).
    """
    fx = task.initial_state
    if fx is None:
        return []
    session = trial.session
    where = f"task {task.id!r}: initial_state"
    with session.begin():
        conn = session.connection()
        try:
            for name, keys in fx.delete.items():
                table = metadata.tables[name]
                for i, key in enumerate(keys):
                    cond = [table.c[k] == v for k, v in key.items()]
                    if conn.execute(table.delete().where(*cond)).rowcount != 1:
                        raise FixtureError(f"{where}.delete.{name}[{i}]: no row with key {key}")
            for name, updates in fx.update.items():
                table = metadata.tables[name]
                for i, upd in enumerate(updates):
                    cond = [table.c[k] == v for k, v in upd.key.items()]
                    if conn.execute(table.update().where(*cond).values(**upd.set)).rowcount != 1:
                        raise FixtureError(f"{where}.update.{name}[{i}]: no row with key {upd.key}")
            for name, rows in fx.insert.items():
                if rows:
                    conn.execute(metadata.tables[name].insert(), rows)
            if fx.now is not None:
                Clock.set(conn, fx.now)
        except SQLAlchemyError as e:  # a constraint or type error of the fixture, reported with its task
            raise FixtureError(f"{where}: {type(e).__name__}: {str(e).splitlines()[0]}") from e
    ctx = ToolContext(session, trial.options, step=None, source="setup")
    outcomes = []
    for i, action in enumerate(fx.setup):
        if action.requestor != "assistant":
            raise FixtureError(f"{where}.setup[{i}] ({action.name}): a user-side action needs a dual-control domain")
        out = toolbox.dispatch(ctx, action.name, action.arguments)
        if out.status != "ok":
            raise FixtureError(f"{where}.setup[{i}] ({action.name}): {out.content}")
        outcomes.append(out)
    outcomes += replay_history(toolbox, ctx, fx.history)
    return outcomes


def replay_history(toolbox: Toolbox, ctx: ToolContext, history: list[dict[str, Any]], *,
                   user_toolbox: Toolbox | None = None) -> list[CallOutcome]:
    """Replay a prior conversation's tool calls (tau2 ``message_history``) on the trial database.

    Every assistant tool call is dispatched in order, except those whose tool message says it failed
    (``"error": true``): a failed call changed nothing. Read calls change nothing either way. In a dual-control
    domain (``user_toolbox`` given) the user's own tool calls (user messages with ``tool_calls``) are replayed
    too, on the user's side, in conversation order.

    Args:
        toolbox: the tools.
        ctx: the setup tool context.
        history: the messages (``{role, content, tool_calls: [{id, name, arguments}]}``; tool messages
            ``{role: "tool", id, content, error}``).
        user_toolbox: the user's own tools (dual control); None: user messages' tool calls are not replayed.

    Returns:
        The outcomes of the replayed calls.
    """
    failed = {m.get("id") for m in history if m.get("role") == "tool" and m.get("error")}
    out = []
    for m in history:
        role = m.get("role")
        if role == "assistant" and m.get("requestor", "assistant") == "assistant":
            side = toolbox
        elif role == "user" and user_toolbox is not None:
            side = user_toolbox
        else:
            continue
        for call in m.get("tool_calls") or []:
            if call.get("id") in failed:
                continue
            out.append(side.dispatch(ctx, str(call.get("name")), dict(call.get("arguments") or {})))
    return out


def history_messages(history: list[dict[str, Any]]) -> list[Message]:
    """Convert a prior conversation (tau2 ``message_history``) into the trial's first messages.

    Args:
        history: the messages as in :func:`replay_history` (system messages are left out).

    Returns:
        :class:`~simulator.types.messages.Message` objects: user and assistant texts, assistant tool calls and the
        tool results.
    """
    out = []
    for m in history:
        role = m.get("role")
        if role == "assistant":
            calls = [ToolCall(id=str(c.get("id")), name=str(c.get("name")), arguments=dict(c.get("arguments") or {}))
                     for c in m.get("tool_calls") or []]
            out.append(Message(role="assistant", content=m.get("content"), tool_calls=calls))
        elif role == "user":
            out.append(Message(role="user", content=m.get("content") or ""))
        elif role == "tool":
            out.append(Message(role="tool", content=str(m.get("content") or ""), tool_call_id=str(m.get("id"))))
    return out

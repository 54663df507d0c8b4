"""Dual control: a simulated user who acts on its own side of the trial database (tau2-bench's telecom).

A domain declares its user side through optional hooks of :class:`~simulator.world.domain.Domain`:
:meth:`~simulator.world.domain.Domain.user_toolbox` (the user's tools),
:meth:`~simulator.world.domain.Domain.user_tables`
(the user's tables, e.g. telecom's single-row ``device`` and ``surroundings``),
:meth:`~simulator.world.domain.Domain.sync` (run after every step),
:meth:`~simulator.world.domain.Domain.environment_functions`
(non-tool functions a task's setup actions call) and :meth:`~simulator.world.domain.Domain.assertion_functions` (what
``env`` assertions call). Both sides live in the trial's one SQLite database, so provisioning is one copy, a
state diff covers both, and the sync is a few statements on the same connection.

Every call has a requestor: ``agent`` (the conversation's agent), ``user`` (the simulated user's own tools; see
:class:`~simulator.types.messages.UserTurn`), ``setup`` (the task's setup actions).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simulator.errors import SetupActionError, ToolError
from simulator.types.protocols import EnvCall
from simulator.types.tasks import Action
from simulator.world.database import WRITE_LOG
from simulator.world.domain import Domain
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["SetupActionError", "env_caller", "has_user_side", "run_action", "run_setup_actions", "syncer"]


def has_user_side(domain: Domain) -> bool:
    """Return whether the domain declares user-side tools or environment/assertion functions."""
    return domain.user_toolbox() is not None or bool(domain.environment_functions("agent")) or bool(
        domain.environment_functions("user"))


def syncer(domain: Domain, ctx: ToolContext) -> Callable[[], None]:
    """Return the trial's sync hook: :meth:`Domain.sync` run only when the database changed since the last run.

    Writes that hit only the domain's :meth:`~simulator.world.domain.Domain.sync_ignores` tables (read from the trial
    database's write log) do not call it either; the first call always does.

    Args:
        domain: the domain.
        ctx: a tool context on the trial's database.

    Returns:
        A no-argument callable for :class:`simulator.dialogue.observers.DualControlSync`.
    """
    conn = ctx.conn
    last = [-1]
    ignored = sorted(domain.sync_ignores())
    # the trial database's write log (simulator.world.database) says which tables the writes since the last sync hit
    relevant = (f'SELECT 1 FROM "{WRITE_LOG}" WHERE rowid > ? AND tbl NOT IN ({", ".join("?" * len(ignored))}) '
                "LIMIT 1") if ignored else None
    seen = [0]

    def sync() -> None:
        if conn.total_changes == last[0]:
            return
        if relevant is not None:
            try:
                hit = conn.execute(relevant, (seen[0], *ignored)).fetchone() is not None
            except sqlite3.OperationalError:  # a database without the write log: always sync
                hit = True
            if not hit and last[0] >= 0:
                last[0] = conn.total_changes
                seen[0] = _log_end(conn)
                return
        domain.sync(ctx)
        last[0] = conn.total_changes
        if relevant is not None:
            seen[0] = _log_end(conn)

    return sync


def _log_end(conn: sqlite3.Connection) -> int:
    """The last rowid of the trial's write log (0 when empty or absent)."""
    try:
        row = conn.execute(f'SELECT max(rowid) FROM "{WRITE_LOG}"').fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0] or 0)


def run_action(domain: Domain, ctx: ToolContext, action: Action, toolboxes: tuple[Toolbox, Toolbox | None], *,
               functions: bool = True) -> CallOutcome:
    """Run one action on its requestor's side: an environment function of that side, else a tool.

    Args:
        domain: the domain.
        ctx: a tool context on the trial's database.
        action: the action (``requestor`` picks the side).
        toolboxes: ``(agent tools, user tools or None)``.
        functions: look the name up in the side's environment functions first (setup actions); False: tools only.

    Returns:
        The :class:`~simulator.world.tools.CallOutcome` (a function's result rendered as text; ``tool_error`` when it
        raised :class:`~simulator.errors.ToolError`). A function's other exceptions propagate.
    """
    side = "user" if action.requestor == "user" else "agent"
    fn = domain.environment_functions(side).get(action.name) if functions else None
    if fn is not None:
        conn = ctx.conn
        conn.execute("BEGIN")
        try:
            value = fn(ctx, **action.arguments)
        except ToolError as e:
            conn.execute("ROLLBACK")
            return CallOutcome(f"Error: {e}", "tool_error", "write", 0.0)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return CallOutcome(value if isinstance(value, str) else repr(value), "ok", "write", 0.0)
    toolbox = toolboxes[1] if side == "user" else toolboxes[0]
    if toolbox is None:
        return CallOutcome(f"Error: domain {domain.name!r} has no user-side tools", "unknown_tool", None, 0.0)
    return toolbox.dispatch(ctx, action.name, action.arguments)


def run_setup_actions(domain: Domain, ctx: ToolContext, actions: Sequence[Action], toolbox: Toolbox) -> None:
    """Run a task's setup actions in order (requestor ``setup``), syncing after each; each must succeed.

    Args:
        domain: the domain.
        ctx: a tool context on the trial's database.
        actions: the setup actions.
        toolbox: the agent's tools.

    Raises:
        SetupActionError: an action did not succeed (naming its index, name and the error).
    """
    user_tools = domain.user_toolbox()
    source, ctx.source = ctx.source, "setup"
    try:
        sync = syncer(domain, ctx)
        for i, action in enumerate(actions):
            out = run_action(domain, ctx, action, (toolbox, user_tools))
            if out.status != "ok":
                raise SetupActionError(f"setup[{i}] {action.requestor}:{action.name}: {out.content}")
            sync()
    finally:
        ctx.source = source


def env_caller(domain: Domain, ctx: ToolContext) -> EnvCall | None:
    """Return the caller of the domain's assertion functions on a trial's database, or None when it has none.

    Args:
        domain: the domain.
        ctx: a tool context on the trial's (final) database.

    Returns:
        ``call(side, name, arguments) -> value``; an unknown function raises ``ValueError`` naming it.
    """
    tables: dict[str, Mapping[str, Callable[..., Any]]] = {
        side: domain.assertion_functions(side) for side in ("agent", "user")}
    if not any(tables.values()):
        return None

    def call(side: str, name: str, arguments: Mapping[str, Any]) -> Any:
        fn = tables.get(side, {}).get(name)
        if fn is None:
            raise ValueError(f"domain {domain.name!r} has no {side}-side assertion function {name!r}")
        return fn(ctx, **arguments)

    return call

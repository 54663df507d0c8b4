"""A trial's tools over MCP: one trial's agent-side toolbox served to an outside agent (streamable HTTP or stdio).

:class:`ToolSession` is one trial without a conversation loop of its own: the task is prepared as for a run (its goal
state computed once), the trial gets its own copy of the template database (the task's fixture applied), and each call
an outside agent makes is dispatched exactly as the conversation loop dispatches a native call
(:func:`simulator.dialogue.state.dispatch`: the trial's :class:`~simulator.world.tools.Toolbox`, wrapped in the
run's environment faults, on the trial's :class:`~simulator.world.tools.ToolContext`), and recorded in the trial's
trajectory as a :class:`~simulator.types.trajectory.ToolCallRecord` with requestor ``agent`` (status, content, kind,
step, timing). :meth:`ToolSession.finish` grades the trial the way the runner does (state differences against the goal
state, declarative and environment assertions, record owners, :func:`simulator.grading.grade_trial`).

:func:`mcp_server` wraps a session in an MCP server (the official ``mcp`` SDK, the ``mcp`` extra; built by the serving
core :mod:`simulator.agents.mcp_tools`) whose tools have the same names, descriptions and JSON schemas as
:meth:`Toolbox.schemas`; :func:`serve_http` serves it over streamable
HTTP at ``http://127.0.0.1:PORT/mcp`` (loopback only), :func:`serve_stdio` over stdin/stdout.

The ``mcp`` SDK, uvicorn and anyio are imported when a server is built, not with this module. In dual-control domains
the user side stays with the simulated user: only the agent's tools are served.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from simulator.agents.mcp_tools import LOOPBACK, LoopbackServer, bind_loopback, tools_server
from simulator.dialogue.state import dispatch
from simulator.errors import TausimError
from simulator.execution.runner import Runner, failure_signature
from simulator.grading import check_assertions, check_env_assertions, grade_trial
from simulator.grading.safety import record_owners
from simulator.types.messages import Message, ToolCall
from simulator.types.results import TrialResult
from simulator.types.sanitize import admit_call
from simulator.types.spec import RunSpec
from simulator.types.trajectory import ERROR_REASONS, TerminationReason, ToolCallRecord, Trajectory
from simulator.world.database import diff_against
from simulator.world.dual import env_caller, has_user_side, syncer
from simulator.world.events import read_events
from simulator.world.fixtures import history_messages
from simulator.world.replay import prepare_trial
from simulator.world.tools import ToolContext

__all__ = ["LOOPBACK", "SessionEnded", "ToolSession", "bind_loopback", "mcp_server", "serve_http", "serve_stdio"]


class SessionEnded(TausimError, RuntimeError):
    """A call came after the trial ended (a transfer, a tool bug, the step cap, or :meth:`ToolSession.finish`)."""


class ToolSession:
    """One trial's agent-side tools on the trial's own database; every call recorded as in a native trial.

    Args:
        runner: a runner built for the run (:func:`simulator.execution.build.build_runner`); its domain, template,
            toolbox, faults, caps and prepared tasks are used.
        task_id: the task of the trial (one of ``runner.tasks``).
        trial_index: the trial's index (its seed: :meth:`Runner.trial_seed`).

    Raises:
        KeyError: ``task_id`` is not one of the runner's tasks.
        ValueError: the task is a trajectory-prefix case (only its agent's next turn can run).
        simulator.world.replay.GoldToolBug: the task's goal state cannot be computed.
    """

    def __init__(self, runner: Runner, task_id: str, trial_index: int = 0) -> None:
        by_id = {t.id: t for t in runner.tasks}
        if task_id not in by_id:
            raise KeyError(f"task {task_id!r} is not in the run's tasks ({', '.join(by_id) or 'none'})")
        task = by_id[task_id]
        if task.prefix is not None:
            raise ValueError(f"task {task_id!r} is a trajectory-prefix case: its tools cannot be served alone")
        self.runner = runner
        self.task = task
        self.trial_index = trial_index
        self.seed = runner.trial_seed(task, trial_index)
        self.prepared = runner.prepare([task_id])[task_id]
        self._goal = self.prepared.gold.goal_state()  # a goal replay failure shows now, before any call
        self.toolbox = runner.agent_toolbox(task, trial_index)
        self.trajectory = Trajectory()
        self.result: TrialResult | None = None
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self._stack = contextlib.ExitStack()
        self._db = self._stack.enter_context(runner.template.trial())
        try:
            prepare_trial(runner.domain, self._db, task)
        except BaseException:
            self._stack.close()
            raise
        self.ctx = ToolContext(self._db.session, self._db.options)
        self._sync: Callable[[], None] | None = (
            syncer(runner.domain, self.ctx) if has_user_side(runner.domain) else None)
        if task.initial_state is not None and task.initial_state.history:
            self.trajectory.messages.extend(history_messages(task.initial_state.history))

    @classmethod
    def open(cls, spec: RunSpec, task_id: str | None = None, trial_index: int = 0) -> ToolSession:
        """Build the run of ``spec`` and open one trial of one of its tasks.

        Args:
            spec: the run spec (domain, data, tasks, seed, options, faults, caps); its agent and user are built but
                never called.
            task_id: the task; None: the only task ``spec.task_ids`` names.
            trial_index: the trial's index.

        Returns:
            The open session (close it with :meth:`finish` or :meth:`close`).

        Raises:
            ValueError: no task id given and ``spec.task_ids`` does not name exactly one; see also :func:`build_runner`
                and the class.
        """
        from simulator.execution.build import build_runner

        if task_id is None:
            if not spec.task_ids or len(spec.task_ids) != 1:
                raise ValueError("name one task (task_id, or exactly one in spec.task_ids)")
            task_id = spec.task_ids[0]
        runner = build_runner(spec.model_copy(update={"task_ids": [task_id]}))
        return cls(runner, task_id, trial_index)

    def schemas(self) -> list[dict[str, Any]]:
        """Return the tools' OpenAI function schemas, as :meth:`Toolbox.schemas` gives them to a native agent."""
        return self.toolbox.schemas()

    @property
    def ended(self) -> TerminationReason | None:
        """The reason the trial ended (a transfer, a tool bug, the step cap, finished), or None while it is open."""
        return self.trajectory.termination_reason

    def call(self, name: str, arguments: Mapping[str, Any] | None, call_id: str | None = None) -> ToolCallRecord:
        """Run one tool call on the trial's database and record it (thread-safe: calls run one at a time).

        The call is recorded like a native call of the agent: an assistant message carrying it, the
        :class:`ToolCallRecord` (requestor ``agent``) and the tool result message. A tool that ends the
        conversation ends the trial with ``agent_transfer``, a bug inside a tool with ``tool_bug``, the run's
        ``max_steps`` with ``max_steps``; later calls raise :class:`SessionEnded`.

        Args:
            name: the tool name.
            arguments: the arguments (a JSON object); None: none.
            call_id: the call's id; default a new ``mcp_...`` id.

        Returns:
            The call's record (``status``: ``ok``, ``tool_error``, ``unknown_tool``, ``invalid_arguments`` or
            ``tool_bug``; ``content``: what the agent sees).

        Raises:
            SessionEnded: the trial has ended.
        """
        with self._lock:
            traj = self.trajectory
            if traj.termination_reason is not None:
                raise SessionEnded(f"the trial has ended ({traj.termination_reason}); no more tool calls")
            if traj.steps >= self.runner.config.max_steps:
                traj.termination_reason = TerminationReason.MAX_STEPS
                raise SessionEnded(f"the trial reached max_steps ({self.runner.config.max_steps}); it has ended")
            call = admit_call(ToolCall(id=call_id or f"mcp_{uuid.uuid4().hex[:12]}", name=name,
                                       arguments=dict(arguments or {})), "agent (MCP)", traj.notes)
            traj.messages.append(Message(role="assistant", content=None, tool_calls=[call]))
            _, out, _, _ = dispatch(self.toolbox, self.ctx, call, traj, "agent")
            if self._sync is not None:
                self._sync()
            if out.status == "tool_bug":
                traj.termination_reason = TerminationReason.TOOL_BUG
                traj.error = out.bug
            elif out.ends_conversation:
                traj.termination_reason = TerminationReason.AGENT_TRANSFER
            return traj.tool_calls[-1]

    def finish(self) -> TrialResult:
        """End the trial (``user_stop`` unless it ended already), grade it as the runner does and close its database.

        Returns:
            The graded :class:`TrialResult` (also kept in :attr:`result`); calling it again returns the same.
        """
        with self._lock:
            if self.result is not None:
                return self.result
            traj, task, runner = self.trajectory, self.task, self.runner
            if traj.termination_reason is None:
                traj.termination_reason = TerminationReason.USER_STOP
            spec = runner.domain.state_spec()
            try:
                db = self._db
                diff = diff_against(db.raw, self._goal, spec)
                checks = check_assertions(task.assertions, db.raw, self.prepared.gold.initial, read_events(db.raw),
                                          traj, spec, env=env_caller(runner.domain, self.ctx))
                env = check_env_assertions(runner.domain, db, task.env_assertions) if task.env_assertions else None
                owners = record_owners(runner.domain, traj, db)
            finally:
                self._stack.close()
            grade = grade_trial(task, traj, diff, runner.domain.toolbox_for(runner.template.options),
                                judge=runner.judge, trial_seed=self.seed, prepared=self.prepared, assertions=checks,
                                owners=owners, env_assertions=env,
                                communicate=str(runner.template.options.get("communicate", "tausim")))
            res = TrialResult(task_id=task.id, trial=self.trial_index, seed=self.seed, persona=None,
                              passed=grade.passed, termination_reason=str(traj.termination_reason), grade=grade,
                              trajectory=traj, duration_s=time.perf_counter() - self._t0, error=traj.error,
                              faults=runner.record_faults(traj))
            kinds = {n: ("ending" if s.ends_conversation else s.kind) for n, s in self.toolbox.specs.items()}
            res.signature = failure_signature(task, res, kinds)
            self.result = res
            return res

    def close(self) -> None:
        """Close the trial's database without grading (idempotent)."""
        with self._lock:
            self._stack.close()


def _tool_result(session: ToolSession, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
    """Run a call for the MCP server: ``(text the agent sees, is an error)``."""
    try:
        rec = session.call(name, arguments)
    except SessionEnded as e:
        return f"Error: {e}", True
    error = rec.status != "ok"
    if session.ended is not None and str(session.ended) in {str(r) for r in ERROR_REASONS}:
        return rec.content + f"\n(the trial has ended: {session.ended})", True
    return rec.content, error


def mcp_server(session: ToolSession, name: str = "tausim") -> Any:
    """Return an MCP server (``mcp.server.lowlevel.Server``) serving a session's tools.

    Built by :func:`simulator.agents.mcp_tools.tools_server`: ``tools/list`` gives each tool with the name,
    description and JSON schema (``parameters``) of :meth:`ToolSession.schemas`; ``tools/call`` runs
    :meth:`ToolSession.call` in a worker thread and answers the text the agent sees (``is_error`` for anything but an
    ``ok`` call). Arguments are validated by the toolbox (an invalid call is recorded ``invalid_arguments``, as
    natively), not by the SDK.

    Args:
        session: the open trial.
        name: the server's name (``serverInfo``).

    Returns:
        The server (run it with :func:`serve_http` or :func:`serve_stdio`).

    Raises:
        ImportError: the ``mcp`` extra is not installed.
    """
    import anyio.to_thread

    async def call(request: Any, tool: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        return await anyio.to_thread.run_sync(_tool_result, session, tool, arguments)

    return tools_server(lambda request: session.schemas(), call, name=name,
                        instructions=f"The tools of task {session.task.id} (domain {session.runner.domain.name}); "
                        "every call runs on this trial's own database.")


def serve_http(session: ToolSession, sock: socket.socket, stop: threading.Event,
               on_ready: Callable[[str], None] | None = None, startup_timeout: float = 30.0) -> None:
    """Serve a session's tools over streamable HTTP at ``http://127.0.0.1:PORT/mcp`` until ``stop`` is set.

    The server (uvicorn, :class:`simulator.agents.mcp_tools.LoopbackServer`) runs in a thread of its own; this call
    waits for ``stop`` in the calling thread, then shuts the server down (open streams are closed) and returns. A
    Ctrl-C in the calling thread raises KeyboardInterrupt here after the server was shut down.

    Args:
        session: the open trial.
        sock: a listening socket on 127.0.0.1 (:func:`bind_loopback`).
        stop: set it to stop serving (e.g. on stdin EOF or a signal).
        on_ready: called with the endpoint URL once the server accepts connections.
        startup_timeout: seconds to wait for the server to start.

    Raises:
        ValueError: ``sock`` is not bound to 127.0.0.1.
        RuntimeError: the server did not start in time or failed.
    """
    app = mcp_server(session).streamable_http_app(host=LOOPBACK, stateless_http=False)
    server = LoopbackServer(app, sock, name="tausim-mcp-http")
    try:
        server.start(startup_timeout)
        if on_ready is not None:
            on_ready(f"http://{LOOPBACK}:{server.port}/mcp")
        while not stop.wait(0.2):
            if not server.alive:
                break
    finally:
        server.stop()


def serve_stdio(session: ToolSession) -> None:
    """Serve a session's tools over stdio (JSON-RPC on stdin/stdout) until stdin closes.

    Nothing else may write to stdout meanwhile: it carries the protocol.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    server = mcp_server(session)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)

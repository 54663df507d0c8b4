"""The trial loop: the user speaks, the agent acts (tool calls on the trial database), until termination.

Termination is decided here, not by a simulator's say-so alone:

- a user stop while the agent's last message asks for confirmation (:func:`simulator.dialogue.cues.asks_confirmation`:
  "Shall I proceed?", "Please confirm.", "Let me know if I should proceed.") is not a stop: the text is
  delivered and the conversation goes on;
- text attached to a stop is delivered before the trial ends;
- a tool that ends the conversation (transfer to a human agent) ends the trial with ``agent_transfer``;
- an unexpected exception inside a tool ends it with ``tool_bug`` (never shown as an agent mistake);
- budgets are caps (:mod:`simulator.dialogue.caps`) composed around the loop, as Gymnasium's ``TimeLimit`` wraps an
  environment: ``max_turns`` (messages of user or agent), ``max_steps`` (agent actions: tool calls and messages),
  ``too_many_errors`` and ``timeout`` end it with their own reasons;
- logs, traces, the dual-control sync hook and failure hunting's snapshots are observers
  (:mod:`simulator.dialogue.observers`) with optional hooks; they never decide anything.

After each agent turn (its tool calls and its closing message) the orchestrator judges the turn's progress
(:class:`~simulator.types.protocols.Progress`, :mod:`simulator.dialogue.signals`), records it in
``Trajectory.progress`` and, when the user has ``observe_progress``
(:class:`~simulator.types.protocols.ProgressAware`), tells the user before it replies; a persona's patience counts
consecutive turns without progress.

Async agents: an agent whose ``step`` is ``async def`` (:func:`is_async_agent`) is driven by :meth:`Conversation.arun`,
a coroutine that awaits each step; the loop itself (caps, observers, tools, the user) is the same code for both
drivers: a generator that yields the messages the agent is to see and is sent back the agent's turn. Cancelling
``arun`` (a trial timeout) cancels the agent's pending step; :meth:`Conversation.end` then records the reason on the
trajectory so far.

Example::

    traj = Conversation(agent, user, toolbox, ctx, Limits(max_turns=20),
                        caps=[TimeLimit(120)], observers=[ToolCallLog(log)]).run()
    traj = await Conversation(async_agent, user, toolbox, ctx).arun()
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, Literal

from simulator.dialogue.actors import actor_traceback, is_actor_failure
from simulator.dialogue.caps import CAP_HOOKS, Cap, ToolErrorLimit
from simulator.dialogue.cues import asks_confirmation
from simulator.dialogue.observers import OBSERVER_HOOKS, Observer
from simulator.dialogue.signals import ProgressJudge
from simulator.dialogue.state import ConversationState, dispatch, visible_to_user
from simulator.dialogue.text import clip_long_tokens
from simulator.errors import TausimError
from simulator.types.built import built
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.protocols import Agent, AsyncAgent, UserSimulator
from simulator.types.sanitize import (
    admit_agent_turn,
    admit_metadata,
    admit_user_turn,
    plain_agent_turn,
    plain_message,
    plain_user_turn,
)
from simulator.types.trajectory import Limits, TerminationReason, Trajectory
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["Conversation", "ConversationState", "is_async_agent"]

_LIMITS = Limits()
_ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "calls": 0, "attempts": 0}
"""The fields of ``Usage()``, compared with a turn's usage fields (read only)."""
_USER_SET = frozenset(("role", "content"))
"""The fields a user message is given (its ``model_fields_set``)."""


class _Ended(TausimError):  # noqa: N818 - control flow, not an error
    """Raised inside the loop to end the conversation; never leaves it (see :mod:`simulator.errors`)."""

    def __init__(self, reason: TerminationReason, error: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.error = error


class _Failed:
    """What a driver sends the loop when the agent's step raised: the formatted traceback."""

    __slots__ = ("error",)

    def __init__(self, error: str):
        self.error = error


_Loop = Generator[list[Message], "AgentTurn | _Failed | None", Trajectory]
"""The conversation loop as the drivers see it: yields what the agent sees, is sent its turn, returns the end."""


def is_async_agent(agent: Any) -> bool:
    """Return True when ``agent.step`` is a coroutine function (``async def step``), to be driven by ``arun``."""
    return inspect.iscoroutinefunction(getattr(agent, "step", None))


def _hooks(objects: Sequence[Any], names: Sequence[str]) -> dict[str, tuple[Callable[..., Any], ...]]:
    """Hook name -> the bound hooks of ``objects`` that define it, in the objects' order."""
    if not objects:
        return dict.fromkeys(names, ())
    found: dict[str, list[Callable[..., Any]]] = {name: [] for name in names}
    for o in objects:
        for name in names:
            hook = getattr(o, name, None)
            if callable(hook):
                found[name].append(hook)
    return {name: tuple(hooks) for name, hooks in found.items()}


def _adds_nothing(total: Usage, usage: Usage) -> bool:
    """True when ``total + usage`` equals ``total`` field by field (a model-free turn's zero usage): no need to add.

    Exact: zero counts and a zero cost change no sum, but ``-0.0 + 0.0`` is ``0.0`` and an int cost becomes a float,
    so such totals are added.
    """
    if usage.__dict__ != _ZERO_USAGE:  # equal: zero counts and a cost == 0.0, in one comparison
        cost = usage.cost_usd
        if (usage.prompt_tokens or usage.completion_tokens or usage.calls or usage.attempts or cost is None
                or cost != 0.0):
            return False
    kept = total.cost_usd
    return kept is None or (type(kept) is float and math.copysign(1.0, kept) > 0)


def _current_task() -> asyncio.Task[Any] | None:
    """The asyncio task running now, or None (none, or no asyncio event loop runs in this thread)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _closed_from_outside(error: BaseException, task: asyncio.Task[Any] | None) -> bool:
    """Whether a ``GeneratorExit`` met by :meth:`Conversation.arun` closes ``arun`` itself (not the agent's own).

    ``coroutine.close()`` (e.g. an abandoned conversation's coroutine collected once its loop is closed) throws
    ``GeneratorExit`` in at the pending step, outside ``task``, the task that ran ``arun``: it ends ``arun``
    (already ended from outside, :meth:`Conversation.end`), it is not recorded as the agent's.
    """
    return isinstance(error, GeneratorExit) and _current_task() is not task


class Conversation:
    """One trial's conversation: the loop, with its caps and observers composed around it.

    Args:
        agent: the agent under test, built for this trial.
        user: the simulated user, built for this trial.
        toolbox: the domain's tools.
        ctx: tool context bound to the trial's own database.
        limits: the standard caps (:func:`simulator.dialogue.caps.limit_caps`: turns, steps, failed tool calls)
            and the agent's ``greeting`` (said first, as a turn, when there is no ``history``).
        caps: more caps (:class:`~simulator.dialogue.caps.Cap`), checked after the standard ones, in order
            (e.g. a :class:`~simulator.dialogue.caps.TimeLimit`).
        observers: observers (:class:`~simulator.dialogue.observers.Observer`), called in order.
        user_toolbox: the simulated user's own tools (dual control); None: a user turn with tool calls ends the
            trial with ``user_error``. The user's calls run on ``user_ctx``, are recorded with requestor ``user``
            (in ``tool_calls`` and, marked ``requestor="user"``, in ``messages``, never shown to the agent) and
            count as steps; the user is asked again after them.
        user_ctx: tool context of the user's side (the same trial database, ``source="user"``).
        history: a prior conversation the trial starts with (tau2 ``message_history``; its tool calls were
            replayed on the database already); the greeting, if any, follows it only when it is empty.
        resume: continue from this state (taken by an observer's ``on_user_turn``, copied) instead of an empty
            conversation; the agent, user and database must be in the state they had then.

    Attributes:
        state: the loop's :class:`ConversationState` (live).
    """

    def __init__(self, agent: Agent | AsyncAgent, user: UserSimulator, toolbox: Toolbox, ctx: ToolContext,
                 limits: Limits = _LIMITS, *, caps: Sequence[Cap] = (), observers: Sequence[Observer] = (),
                 user_toolbox: Toolbox | None = None, user_ctx: ToolContext | None = None,
                 history: Sequence[Message] | None = None, resume: ConversationState | None = None):
        self.agent = agent
        self.user = user
        self.toolbox = toolbox
        self.ctx = ctx
        self.user_toolbox = user_toolbox
        self.user_ctx = user_ctx
        observe = getattr(user, "observe_progress", None)
        self._observe = observe if callable(observe) else None
        # the standard caps (limit_caps: TurnLimit, StepLimit) are checked inline, first, as their checkpoints check
        self._max_turns = limits.max_turns
        self._max_steps = limits.max_steps
        more = _hooks(caps, CAP_HOOKS)
        self._at_user_turn = more["at_user_turn"]
        self._at_agent_turn = more["at_agent_turn"]
        self._at_step = more["at_step"]
        self._after_tool_call = more["after_tool_call"] if limits.max_tool_errors is None else (
            ToolErrorLimit(limits.max_tool_errors).after_tool_call, *more["after_tool_call"])
        seen = _hooks(observers, OBSERVER_HOOKS)
        self._on_user_turn = seen["on_user_turn"]
        self._on_user_reply = seen["on_user_reply"]
        self._on_agent_turn = seen["on_agent_turn"]
        self._on_agent_reply = seen["on_agent_reply"]
        self._on_tool_call = seen["on_tool_call"]
        self._on_step = seen["on_step"]
        self._on_agent_turn_end = seen["on_agent_turn_end"]
        self._on_end = seen["on_end"]
        self.state = resume if resume is not None else self._opening(history, limits.greeting)
        traj = self.state.trajectory
        # the trajectory's counters are written straight into its fields, as pydantic's __setattr__ writes them (the
        # field's value in __dict__, its name added to model_fields_set), without its per-assignment dispatch
        self._fields: dict[str, Any] = traj.__dict__
        self._given: set[str] = traj.__pydantic_fields_set__

    @staticmethod
    def _opening(history: Sequence[Message] | None, greeting: str | None) -> ConversationState:
        """The state before the first user turn: the prior history, or the greeting."""
        state = ConversationState(Trajectory(), False, ProgressJudge(), None, [], [])
        traj = state.trajectory
        for m in history or []:
            traj.messages.append(m)
            state.seen.append(m)
            if visible_to_user(m):
                state.view.append(m)
        if greeting is not None and not history:
            hello = Message(role="assistant", content=greeting)
            traj.messages.append(hello)
            state.seen.append(hello)
            state.view.append(hello)
            traj.turns += 1
        return state

    def run(self) -> Trajectory:
        """Run the conversation to termination, calling a synchronous agent's ``step``.

        Returns:
            The :class:`Trajectory` with ``termination_reason`` set. Exceptions raised by the agent or the user
            are recorded as ``agent_error`` / ``user_error`` with their traceback, never raised, but the user's Ctrl-C
            (a ``KeyboardInterrupt`` in the main thread, :mod:`simulator.dialogue.actors`).
        """
        loop = self._loop()
        step: Callable[[list[Message]], Any] = self.agent.step
        reply: AgentTurn | _Failed | None = None
        try:
            while True:
                seen = loop.send(reply)
                try:
                    reply = step(seen)
                except BaseException as e:  # noqa: BLE001 - recorded as the trial's agent_error (SystemExit,
                    # GeneratorExit or the agent's own BaseException too), but the user's Ctrl-C
                    if not is_actor_failure(e):
                        raise
                    reply = _Failed(actor_traceback())
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def arun(self) -> Trajectory:
        """Run the conversation to termination, awaiting an async agent's ``step`` (``async def step``).

        The same loop as :meth:`run` (a synchronous agent works too; its steps block the event loop). Cancelling
        this coroutine (e.g. ``asyncio.timeout`` around it) cancels the agent's pending step and propagates; call
        :meth:`end` afterwards to record why on the trajectory so far. What the agent's step raises is recorded as
        :meth:`run` records it (:mod:`simulator.dialogue.actors`: a ``CancelledError`` it raised unasked too), but
        the user's Ctrl-C in the main thread, the cancellation and ``close()`` of this coroutine.

        Returns:
            The :class:`Trajectory`, as :meth:`run`.
        """
        loop = self._loop()
        step: Callable[[list[Message]], Any] = self.agent.step
        reply: AgentTurn | _Failed | None = None
        task = _current_task()
        try:
            while True:
                seen = loop.send(reply)
                t0 = time.perf_counter()
                try:
                    reply = step(seen)
                    if inspect.isawaitable(reply):  # async def step (a synchronous agent's turn is used as it is)
                        reply = await reply
                except BaseException as e:  # noqa: BLE001 - recorded as the trial's agent_error (as run records it)
                    if not is_actor_failure(e) or _closed_from_outside(e, task):
                        # cancelled (a time limit), closed, or the user's Ctrl-C: the step's time still counts; the
                        # loop is closed
                        self.state.trajectory.agent_seconds += time.perf_counter() - t0
                        loop.close()
                        raise
                    reply = _Failed(actor_traceback())
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def end(self, reason: TerminationReason, error: str | None = None) -> Trajectory:
        """End a conversation that was stopped from outside (a cancelled :meth:`arun`) with ``reason``.

        Args:
            reason: the termination reason, e.g. ``timeout``.
            error: what happened, recorded as the trajectory's ``error``.

        Returns:
            The trajectory so far, finished as :meth:`run` finishes one (observers told, metadata copied).
        """
        return self._finish(reason, error)

    def _loop(self) -> _Loop:
        """The loop: user turns and agent turns until a termination reason (see :data:`_Loop`)."""
        try:
            while True:
                self._user_turn()
                yield from self._agent_turn()
        except _Ended as e:
            return self._finish(e.reason, e.error)

    # ------------------------------------------------------------------------------------------------ helpers
    def _stepped(self) -> None:
        """Tell the observers a step was made."""
        for hook in self._on_step:
            hook(self.state)

    def _finish(self, reason: TerminationReason, error: str | None) -> Trajectory:
        """Set the termination reason, tell the observers, copy the actors' metadata; return the trajectory."""
        traj = self.state.trajectory
        traj.termination_reason = reason
        traj.error = error
        for hook in self._on_end:
            hook(self.state)
        traj.agent_metadata = admit_metadata(self.agent, "agent", traj.notes)
        traj.user_metadata = admit_metadata(self.user, "user", traj.notes)
        return traj

    # ------------------------------------------------------------------------------------------------ the user
    def _user_turn(self) -> None:
        """One user turn: its tool calls (dual control), then its text, its stop or its abandonment."""
        state = self.state
        for hook in self._on_user_turn:
            hook(state)
        if self._fields["turns"] >= self._max_turns:
            raise _Ended(TerminationReason.MAX_TURNS)
        for cap in self._at_user_turn:
            if (reason := cap(state)) is not None:
                raise _Ended(reason)
        ut = self._ask_user()
        while ut.tool_calls:
            self._user_tools(ut)
            ut = self._ask_user()
        traj = state.trajectory
        if content := ut.content:
            user_msg = built(Message, {"role": "user", "content": content, "tool_calls": [], "tool_call_id": None,
                                       "name": None, "requestor": None}, _USER_SET) if type(content) is str else (
                Message(role="user", content=content))
            traj.messages.append(user_msg)
            state.view.append(user_msg)
            state.seen.append(user_msg)
            self._fields["turns"] += 1
            self._given.add("turns")
            state.judge.on_user(ut.content)
            if self._on_step:
                self._stepped()
        if ut.abandon:
            raise _Ended(TerminationReason.USER_ABANDON)
        if ut.stop and not (state.awaiting and ut.content):
            raise _Ended(TerminationReason.USER_STOP)

    def _ask_user(self) -> UserTurn:
        """The user's reply (the last turn's progress given first); a failure ends the conversation."""
        state = self.state
        traj = state.trajectory
        w0 = time.time_ns() if self._on_user_reply else 0  # wall clock only for the observers that get it
        t0 = time.perf_counter()
        try:
            if state.pending is not None and self._observe is not None:
                self._observe(state.pending)
            state.pending = None
            ut: UserTurn = self.user.reply(list(state.view))
        except BaseException as e:  # noqa: BLE001 - recorded as the trial's user_error, but the user's Ctrl-C
            if not is_actor_failure(e):
                raise
            traj.user_seconds += time.perf_counter() - t0
            raise _Ended(TerminationReason.USER_ERROR, actor_traceback()) from None
        self._fields["user_seconds"] += time.perf_counter() - t0
        self._given.add("user_seconds")
        if not isinstance(ut, UserTurn):
            raise _Ended(TerminationReason.USER_ERROR, f"user.reply returned {type(ut).__name__}, expected UserTurn")
        usage = ut.usage
        content = ut.content
        # the common turn at once: ASCII text, no calls, no error, a zero usage (plain_user_turn holds; of
        # _adds_nothing only the total's half is left)
        zero = (usage.__dict__ == _ZERO_USAGE and type(usage.cost_usd) is float and ut.error is None
                and not ut.tool_calls and type(content) is str and content.isascii())
        if not zero and not plain_user_turn(ut):  # the notes name the turn: formatted only when there may be notes
            ut, notes = admit_user_turn(ut, f"user turn {traj.turns}")
            if notes:
                traj.notes.extend(notes)
        if self._on_user_reply:
            w1 = time.time_ns()
            for hook in self._on_user_reply:
                hook(state, ut, w0, w1)
        if zero:
            kept = traj.user_usage.cost_usd
            if not (kept is None or (type(kept) is float and math.copysign(1.0, kept) > 0)):
                traj.user_usage = traj.user_usage + usage
        elif not _adds_nothing(traj.user_usage, ut.usage):
            traj.user_usage = traj.user_usage + ut.usage
        if ut.error:
            raise _Ended(TerminationReason(ut.error_kind or "user_error"), ut.error)
        return ut

    def _user_tools(self, ut: UserTurn) -> None:
        """Run the user's own tool calls (dual control) on the user's side."""
        if self.user_toolbox is None or self.user_ctx is None:
            raise _Ended(TerminationReason.USER_ERROR, "the user called tools "
                         f"({', '.join(c.name for c in ut.tool_calls)}) but the domain has no user-side tools")
        state = self.state
        ask = Message(role="user", content=ut.content or None, tool_calls=list(ut.tool_calls), requestor="user")
        state.trajectory.messages.append(ask)
        state.view.append(ask)
        self._run_calls(ut.tool_calls, self.user_toolbox, self.user_ctx, "user", state.view)

    # ------------------------------------------------------------------------------------------------ the agent
    def _agent_turn(self) -> Generator[list[Message], AgentTurn | _Failed | None, None]:
        """One agent turn: tool calls until a text message; then the turn is judged.

        Each step asks the driver for the agent's next action (yields what the agent sees, is sent its turn); a
        failure, or a turn that is no :class:`AgentTurn`, ends the conversation.
        """
        state = self.state
        traj = state.trajectory
        fields, given = self._fields, self._given
        if fields["turns"] >= self._max_turns:
            raise _Ended(TerminationReason.MAX_TURNS)
        for cap in self._at_agent_turn:
            if (reason := cap(state)) is not None:
                raise _Ended(reason)
        first_call = len(traj.tool_calls)
        for hook in self._on_agent_turn:
            hook(state)
        at_step, max_steps = self._at_step, self._max_steps
        seen, messages = state.seen, traj.messages
        clock = time.perf_counter
        while True:
            if fields["steps"] >= max_steps:
                raise _Ended(TerminationReason.MAX_STEPS)
            for cap in at_step:
                if (reason := cap(state)) is not None:
                    raise _Ended(reason)
            w0 = time.time_ns() if self._on_agent_reply else 0  # wall clock only for the observers that get it
            t0 = clock()
            at = yield list(seen)
            fields["agent_seconds"] += clock() - t0
            given.add("agent_seconds")
            msg = self._accepted(at, w0)
            messages.append(msg)
            seen.append(msg)
            if not msg.tool_calls:
                break
            self._run_calls(msg.tool_calls, self.toolbox, self.ctx, "agent", seen)
        if msg.content and msg.role in ("user", "assistant"):  # visible_to_user (a message without tool calls)
            state.view.append(msg)
        fields["steps"] += 1
        fields["turns"] += 1
        given.update(("steps", "turns"))
        if self._on_step:
            self._stepped()
        text = msg.content or ""
        state.awaiting = asks_confirmation(clip_long_tokens(text))
        progress = state.judge.on_agent_turn(text, traj.tool_calls[first_call:], confirms=state.awaiting)
        state.pending = progress
        traj.progress.append(progress.as_dict())
        for hook in self._on_agent_turn_end:
            hook(state, progress)

    def _accepted(self, at: AgentTurn | _Failed | None, w0: int) -> Message:
        """The message of the agent's step ``at`` (admitted, its usage counted, the observers told); else the end.

        Args:
            at: what the driver sent: the agent's turn, its failure, or a wrong value.
            w0: :func:`time.time_ns` before the step (0 without ``on_agent_reply`` observers).
        """
        if type(at) is not AgentTurn and not isinstance(at, AgentTurn):
            raise self._not_a_turn(at)
        state = self.state
        traj = state.trajectory
        usage = at.usage
        if (usage.__dict__ == _ZERO_USAGE and type(usage.cost_usd) is float and at.error is None
                and plain_message(at.message)):
            # the common turn at once: nothing to admit (plain_agent_turn), a zero usage (_adds_nothing's first half)
            kept = traj.agent_usage.cost_usd
            if not (kept is None or (type(kept) is float and math.copysign(1.0, kept) > 0)):
                traj.agent_usage = traj.agent_usage + usage
        else:
            if not plain_agent_turn(at):  # the notes name the step: formatted only when there may be notes
                at, notes = admit_agent_turn(at, f"agent step {traj.steps}")
                if notes:
                    traj.notes.extend(notes)
            if not _adds_nothing(traj.agent_usage, at.usage):
                traj.agent_usage = traj.agent_usage + at.usage
        if self._on_agent_reply:
            w1 = time.time_ns()
            for hook in self._on_agent_reply:
                hook(state, at, w0, w1)
        if at.error:
            raise _Ended(TerminationReason(at.error_kind or "agent_error"), at.error)
        return at.message

    def _not_a_turn(self, at: object) -> _Ended:
        """The end of a conversation whose agent step gave ``at``, no :class:`AgentTurn` (a failure, a wrong value)."""
        if isinstance(at, _Failed):
            return _Ended(TerminationReason.AGENT_ERROR, at.error)
        if inspect.iscoroutine(at):
            at.close()  # never awaited: say why instead of a RuntimeWarning
            return _Ended(TerminationReason.AGENT_ERROR, "agent.step returned a coroutine: " + (
                "an `async def step` agent runs with Conversation.arun (tausim run, simulator.run), not here"
                if is_async_agent(self.agent) else
                "declare it `async def step` so that tausim awaits it"))
        return _Ended(TerminationReason.AGENT_ERROR, f"agent.step returned {type(at).__name__}, expected AgentTurn")

    # ------------------------------------------------------------------------------------------------ tool calls
    def _run_calls(self, calls: Sequence[ToolCall], toolbox: Toolbox, ctx: ToolContext,
                   requestor: Literal["agent", "user"], shown_to: list[Message]) -> None:
        """Run one side's tool calls in order, each a step, its result shown to that side (``shown_to``).

        Caps are checked before each call; a ``tool_bug`` ends the conversation. The agent's calls also end it on a
        tool that ends the conversation (``agent_transfer``) and are checked by the ``after_tool_call`` caps.
        Observers get each call's record and the wall-clock times around the tool.
        """
        state = self.state
        traj = state.trajectory
        agent = requestor == "agent"
        at_step, on_call, on_step, max_steps = self._at_step, self._on_tool_call, self._on_step, self._max_steps
        fields = self._fields
        for call in calls:
            if fields["steps"] >= max_steps:
                raise _Ended(TerminationReason.MAX_STEPS)
            for cap in at_step:
                if (reason := cap(state)) is not None:
                    raise _Ended(reason)
            result, out, w0, w1 = dispatch(toolbox, ctx, call, traj, requestor, timed=bool(on_call))
            if on_call:
                record = traj.tool_calls[-1]
                for hook in on_call:
                    hook(state, record, w0, w1)
            shown_to.append(result)
            if on_step:
                self._stepped()
            if out.status == "tool_bug":
                raise _Ended(TerminationReason.TOOL_BUG, out.bug)
            if not agent:
                continue
            if out.ends_conversation:
                raise _Ended(TerminationReason.AGENT_TRANSFER)
            for after in self._after_tool_call:
                if (reason := after(state, traj.tool_calls[-1])) is not None:
                    raise _Ended(reason)

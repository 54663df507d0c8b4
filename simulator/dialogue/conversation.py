"""The trial loop: the user speaks, the agent acts (tool calls on the trial database), until termination.

Termination is decided here, not by a simulator's say-so alone:
- a user stop while the agent's last message asks for confirmation (:func:`simulator.dialogue.cues.asks_confirmation`:
  "Shall I proceed?", "Please confirm.", "Let me know if I should proceed.") is not a stop: the text is
  delivered and the conversation goes on;
- text attached to a stop is delivered before the trial ends;
- a tool that ends the conversation (transfer to a human agent) ends the trial with ``agent_transfer``;
- an unexpected exception inside a tool ends it with ``tool_bug`` (never shown as an agent mistake);
- the caps ``max_turns`` (messages of user or agent) and ``max_steps`` (agent actions: tool calls and
  messages) end it with their own reasons.

After each agent turn (its tool calls and its closing message) the orchestrator judges the turn's progress
(:class:`~simulator.types.protocols.Progress`), records it in ``Trajectory.progress`` and, when the user has
``observe_progress`` (:class:`~simulator.types.protocols.ProgressAware`), tells the user before it replies; a persona's
patience counts consecutive turns without progress.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from simulator.dialogue.cues import asks_confirmation, is_yes, offers_more_help
from simulator.dialogue.text import clip_long_tokens
from simulator.types.messages import AgentTurn, Message, ToolCall, UserTurn
from simulator.types.protocols import PROGRESS_SIGNALS, Agent, Progress, UserSimulator
from simulator.types.trajectory import Limits, TerminationReason, ToolCallRecord, Trajectory
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["ConversationState", "run_conversation"]













# Linear on any input: an email is tried only where a run of [\w.+-] starts, and an id or number not inside a
# run of letters (a failed try there fails at every later letter of the run, so rescanning it from each
# position, quadratic in a long token, gives nothing).
_VALUE_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+"
                       r"|(?:(?<![A-Za-z_])|(?![A-Za-z_]))[#$]?[A-Za-z_]*+\d[\w-]*(?:[.,]\d+)*")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")


def _values(text: str) -> set[str]:
    """Value-like tokens of a message (ids, numbers, amounts, emails), normalised."""
    return {v.lower().lstrip("#$").rstrip(".,").replace(",", "") for v in _VALUE_RE.findall(text)}


def _questions(text: str) -> list[str]:
    """Return the question keys of an agent message.

    The whole message for a confirmation request (it is about the action it states), otherwise each question
    sentence; offers of more help ("anything else?") are not questions here.
    """
    norm = " ".join(text.lower().split())
    if asks_confirmation(text):
        return [norm]
    out = []
    for sent in _SENTENCE_RE.split(norm):
        sent = sent.strip(" -*")
        if sent.endswith("?") and not offers_more_help(sent):
            out.append(sent)
    return out


class _ProgressJudge:
    """Judges each agent turn's progress from what the conversation has seen so far."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.calls: dict[str, str | None] = {}  # call key -> tool kind; reads are forgotten after a write
        self.texts: set[str] = set()
        self.questions: set[str] = set()
        self.user_yes = False
        self.user_asked = False

    def on_user(self, text: str) -> None:
        text = clip_long_tokens(text)  # cues and values are scanned on a bounded copy of each long token
        self.values |= _values(text)
        self.user_yes = is_yes(text)
        self.user_asked = "?" in text

    def on_agent_turn(self, text: str, calls: list[ToolCallRecord]) -> Progress:
        signals: set[str] = set()
        for c in calls:
            key = json.dumps([c.name, c.arguments if c.arguments is not None else c.raw_arguments], sort_keys=True,
                             default=str)
            if key in self.calls:
                signals.add("agent_repeat")
            elif c.status == "ok":
                signals.add("tool_ok")
            if c.status != "ok":
                signals.add("tool_error")
            elif c.kind == "write" and self.user_yes:
                signals.add("confirmed_action")
            if c.status == "ok" and c.kind == "write":
                # the state changed: reading something again is no repetition
                self.calls = {k: v for k, v in self.calls.items() if v != "read"}
            self.calls[key] = c.kind
        norm = " ".join(text.lower().split())
        if norm and norm in self.texts:
            signals.add("agent_repeat")
        self.texts.add(norm)
        text = clip_long_tokens(text)  # cues and values are scanned on a bounded copy of each long token
        values = _values(text)
        if values - self.values:
            signals.add("new_info")
        elif self.user_asked and values:
            signals.add("answered")
        self.values |= values
        for q in _questions(text):
            signals.add("repeated_question" if q in self.questions else "new_question")
            self.questions.add(q)
        if "repeated_question" in signals:
            signals.discard("new_question")
        made = bool(signals & {"tool_ok", "confirmed_action", "new_info", "answered", "new_question"}) and not (
            signals & {"repeated_question", "agent_repeat"})
        order = PROGRESS_SIGNALS
        return Progress(made=made, signals=tuple(s for s in order if s in signals))


@dataclass
class ConversationState:
    """The orchestrator's loop state at the start of a user turn (see ``run_conversation``'s ``on_turn``).

    Given to ``on_turn`` as the live objects (copy them to keep them); given back as ``resume`` (as a copy: the
    loop goes on mutating it) to continue a conversation from that point, with the agent, user and database in
    the state they had then (see :mod:`simulator.hunt.search`).

    Attributes:
        trajectory: the trajectory so far.
        awaiting: the agent's last message asks for confirmation.
        judge: the progress judge (what the conversation has seen so far).
        pending: the last agent turn's progress, not yet given to the user.
        view: the messages the user sees.
        seen: the messages the agent sees.
    """

    trajectory: Trajectory
    awaiting: bool
    judge: Any
    pending: Progress | None
    view: list[Message]
    seen: list[Message]


def _visible_to_user(m: Message) -> bool:
    """True for the messages the simulated user sees: user and assistant text without tool calls."""
    return m.role in ("user", "assistant") and bool(m.content) and not m.tool_calls


def run_conversation(
    agent: Agent,
    user: UserSimulator,
    toolbox: Toolbox,
    ctx: ToolContext,
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass, immutable
    log: Any = None,
    tracing: Any = None,
    trial_span: Any = None,
    *,
    user_toolbox: Toolbox | None = None,
    user_ctx: ToolContext | None = None,
    sync: Callable[[], None] | None = None,
    history: list[Message] | None = None,
    on_turn: Callable[[ConversationState], None] | None = None,
    resume: ConversationState | None = None,
) -> Trajectory:
    """Run one trial's conversation to termination.

    Args:
        agent: the agent under test, built for this trial.
        user: the simulated user, built for this trial.
        toolbox: the domain's tools.
        ctx: tool context bound to the trial's own database.
        limits: turn and step caps.
        log: the trial's structlog logger, or None; when given, each dispatched tool call emits a
            ``tool_call`` event (name, status, kind, step, duration).
        tracing: a :class:`simulator.execution.tracing.Tracing`, or None: spans for each agent turn, tool call and model
            call (children of ``trial_span``).
        trial_span: the trial's span (the parent of the turn spans and of the user's model-call spans).
        user_toolbox: the simulated user's own tools (dual control); None: a user turn with tool calls ends the
            trial with ``user_error``. The user's calls run on ``user_ctx``, are recorded with requestor ``user``
            (in ``tool_calls`` and, marked ``requestor="user"``, in ``messages``, never shown to the agent) and
            count as steps; the user is asked again after them.
        user_ctx: tool context of the user's side (the same trial database, ``source="user"``).
        sync: the domain's sync hook, called after every step of agent or user (each tool call and each message).
        history: a prior conversation the trial starts with (tau2 ``message_history``; its tool calls were
            replayed on the database already); the greeting, if any, follows it only when it is empty.
        on_turn: called at the start of every user turn with the live :class:`ConversationState` (snapshots,
            :mod:`simulator.hunt.search`); it must not change it.
        resume: continue from this state (taken by ``on_turn``, copied) instead of an empty conversation; the
            agent, user and database must be in the state they had then.

    Returns:
        The :class:`Trajectory` with ``termination_reason`` set. Exceptions raised by the agent or the user
        are recorded as ``agent_error`` / ``user_error`` with their traceback, never raised.
    """
    traj = Trajectory()
    awaiting = False
    judge = _ProgressJudge()
    pending: Progress | None = None  # the last agent turn's progress, not yet given to the user
    observe = getattr(user, "observe_progress", None)
    view: list[Message] = []  # the messages _visible_to_user, appended as they come (no rescan per turn)
    turn_span: list[Any] = []  # the open agent-turn span (tracing only)
    seen: list[Message] = []  # the messages the agent sees: all but the user's own tool calls and results
    after_step = sync if sync is not None else _nothing
    tool_errors = 0  # failed agent tool calls (limits.max_tool_errors)
    for m in history or []:
        traj.messages.append(m)
        seen.append(m)
        if _visible_to_user(m):
            view.append(m)
    if limits.greeting is not None and not history:
        hello = Message(role="assistant", content=limits.greeting)
        traj.messages.append(hello)
        seen.append(hello)
        view.append(hello)
        traj.turns += 1
    if resume is not None:
        traj, awaiting, judge, pending = resume.trajectory, resume.awaiting, resume.judge, resume.pending
        view, seen = resume.view, resume.seen

    def end(reason: TerminationReason, error: str | None = None) -> Trajectory:
        if turn_span:
            turn_span.pop().end()
        traj.termination_reason = reason
        traj.error = error
        metadata = getattr(agent, "metadata", None)
        if isinstance(metadata, dict):
            traj.agent_metadata = dict(metadata)
        user_metadata = getattr(user, "metadata", None)
        if isinstance(user_metadata, dict):
            traj.user_metadata = dict(user_metadata)
        return traj

    while True:
        # --- user turn --------------------------------------------------------------------------------
        if on_turn is not None:
            on_turn(ConversationState(traj, awaiting, judge, pending, view, seen))
        if traj.turns >= limits.max_turns:
            return end(TerminationReason.MAX_TURNS)
        while True:
            t0 = time.perf_counter()
            w0 = time.time_ns()
            try:
                if pending is not None and callable(observe):
                    observe(pending)
                pending = None
                ut: UserTurn = user.reply(list(view))
            except (Exception, SystemExit):  # noqa: BLE001 - recorded as the trial's user_error
                traj.user_seconds += time.perf_counter() - t0
                return end(TerminationReason.USER_ERROR, traceback.format_exc())
            traj.user_seconds += time.perf_counter() - t0
            if not isinstance(ut, UserTurn):
                return end(TerminationReason.USER_ERROR,
                           f"user.reply returned {type(ut).__name__}, expected UserTurn")
            if tracing is not None:
                tracing.model_call(trial_span, "user", getattr(user, "model", None), ut.usage, w0, time.time_ns())
            traj.user_usage = traj.user_usage + ut.usage
            if ut.error:
                kind = TerminationReason(ut.error_kind or "user_error")
                return end(kind, ut.error)
            if not ut.tool_calls:
                break
            if user_toolbox is None or user_ctx is None:
                return end(TerminationReason.USER_ERROR, "the user called tools "
                           f"({', '.join(c.name for c in ut.tool_calls)}) but the domain has no user-side tools")
            ask = Message(role="user", content=ut.content or None, tool_calls=list(ut.tool_calls), requestor="user")
            traj.messages.append(ask)
            view.append(ask)
            for call in ut.tool_calls:
                if traj.steps >= limits.max_steps:
                    return end(TerminationReason.MAX_STEPS)
                result, out = _dispatch(user_toolbox, user_ctx, call, traj, log, "user", tracing, trial_span)
                view.append(result)
                after_step()
                if out.status == "tool_bug":
                    return end(TerminationReason.TOOL_BUG, out.bug)
        if ut.content:
            user_msg = Message(role="user", content=ut.content)
            traj.messages.append(user_msg)
            view.append(user_msg)
            seen.append(user_msg)
            traj.turns += 1
            judge.on_user(ut.content)
            after_step()
        if ut.abandon:
            return end(TerminationReason.USER_ABANDON)
        if ut.stop and not (awaiting and ut.content):
            return end(TerminationReason.USER_STOP)
        # --- agent turn: tool calls until a text message ----------------------------------------------
        if traj.turns >= limits.max_turns:
            return end(TerminationReason.MAX_TURNS)
        first_call = len(traj.tool_calls)
        if tracing is not None:
            turn_span.append(tracing.start_turn(trial_span, len(traj.progress)))
        while True:
            if traj.steps >= limits.max_steps:
                return end(TerminationReason.MAX_STEPS)
            t0 = time.perf_counter()
            w0 = time.time_ns()
            try:
                at: AgentTurn = agent.step(list(seen))
            except (Exception, SystemExit):  # noqa: BLE001 - recorded as the trial's agent_error
                traj.agent_seconds += time.perf_counter() - t0
                return end(TerminationReason.AGENT_ERROR, traceback.format_exc())
            traj.agent_seconds += time.perf_counter() - t0
            if not isinstance(at, AgentTurn):
                return end(TerminationReason.AGENT_ERROR,
                           f"agent.step returned {type(at).__name__}, expected AgentTurn")
            traj.agent_usage = traj.agent_usage + at.usage
            if tracing is not None:
                tracing.model_call(turn_span[-1] if turn_span else trial_span, "agent", getattr(agent, "model", None),
                                   at.usage, w0, time.time_ns())
            if at.error:
                return end(TerminationReason(at.error_kind or "agent_error"), at.error)
            msg = at.message
            traj.messages.append(msg)
            seen.append(msg)
            if _visible_to_user(msg):
                view.append(msg)
            if not msg.tool_calls:
                traj.steps += 1
                traj.turns += 1
                after_step()
                awaiting = asks_confirmation(clip_long_tokens(msg.content or ""))
                pending = judge.on_agent_turn(msg.content or "", traj.tool_calls[first_call:])
                traj.progress.append(pending.as_dict())
                if turn_span:
                    turn_span.pop().end()
                break
            for call in msg.tool_calls:
                if traj.steps >= limits.max_steps:
                    return end(TerminationReason.MAX_STEPS)
                result, out = _dispatch(toolbox, ctx, call, traj, log, "agent", tracing,
                                        turn_span[-1] if turn_span else trial_span)
                seen.append(result)
                after_step()
                if out.status == "tool_bug":
                    return end(TerminationReason.TOOL_BUG, out.bug)
                if out.ends_conversation:
                    return end(TerminationReason.AGENT_TRANSFER)
                if out.status != "ok":
                    tool_errors += 1
                    if limits.max_tool_errors is not None and tool_errors >= limits.max_tool_errors:
                        return end(TerminationReason.TOO_MANY_ERRORS)


def _nothing() -> None:
    """The sync hook of a domain without one."""


def _dispatch(toolbox: Toolbox, ctx: ToolContext, call: ToolCall, traj: Trajectory, log: Any,
              requestor: Literal["agent", "user"], tracing: Any = None,
              span: Any = None) -> tuple[Message, CallOutcome]:
    """Run one call, record it in the trajectory (a step); return its result message (already appended) and outcome.

    With ``tracing``, the call is a span (``execute_tool NAME``), a child of ``span``.
    """
    ctx.step = traj.steps
    w0 = time.time_ns()
    out = toolbox.dispatch(ctx, call.name, call.arguments)
    if tracing is not None:
        tracing.tool_call(span, call.name, call.id, out.status, w0, time.time_ns())
    traj.tool_seconds += out.duration_s
    traj.tool_calls.append(ToolCallRecord(
        step=traj.steps, call_id=call.id, name=call.name, arguments=call.arguments,
        raw_arguments=call.raw_arguments if call.arguments is None else None, kind=out.kind,
        status=out.status, content=out.content, duration_s=out.duration_s, bug=out.bug, requestor=requestor,
        fault=getattr(out, "fault", None),
    ))
    if log is not None:
        log.info("tool_call", step=traj.steps, call_id=call.id, name=call.name, kind=out.kind,
                 status=out.status, duration_s=round(out.duration_s, 6),
                 **({"requestor": requestor} if requestor != "agent" else {}))
    traj.steps += 1
    result = Message(role="tool", content=out.content, tool_call_id=call.id, name=call.name,
                     requestor="user" if requestor == "user" else None)
    traj.messages.append(result)
    return result, out

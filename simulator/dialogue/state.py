"""The conversation loop's state, and the one way a tool call is run and recorded.

:class:`ConversationState` is what the loop (:class:`simulator.dialogue.conversation.Conversation`) carries from turn
to turn; caps and observers read it, failure hunting pickles it (:mod:`simulator.hunt.snapshot`) and gives it back
to resume a conversation. :func:`dispatch` runs one tool call on a trial database and records it as a step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from simulator.dialogue.signals import ProgressJudge
from simulator.types.built import built
from simulator.types.messages import Message, ToolCall
from simulator.types.protocols import Progress
from simulator.types.trajectory import ToolCallRecord, Trajectory
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["ConversationState", "dispatch", "visible_to_user"]

_RESULT_SET = ("role", "content", "tool_call_id", "name", "requestor")
"""The fields a tool result message is given (its ``model_fields_set``)."""


@dataclass
class ConversationState:
    """The loop's state: given live to caps and observers (copy it to keep it), given back to resume.

    Given to the observers' ``on_user_turn`` at the start of every user turn (snapshots,
    :mod:`simulator.hunt.snapshot`); given back to :class:`~simulator.dialogue.conversation.Conversation` as
    ``resume`` (a copy: the loop goes on mutating it) to continue a conversation from that point, with the agent,
    user and database in the state they had then.

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
    judge: ProgressJudge
    pending: Progress | None
    view: list[Message]
    seen: list[Message]


def visible_to_user(m: Message) -> bool:
    """True for the messages the simulated user sees: user and assistant text without tool calls."""
    return m.role in ("user", "assistant") and bool(m.content) and not m.tool_calls


def dispatch(toolbox: Toolbox, ctx: ToolContext, call: ToolCall, traj: Trajectory,
             requestor: Literal["agent", "user"], *, timed: bool = True) -> tuple[Message, CallOutcome, int, int]:
    """Run one call and record it in the trajectory as a step.

    Args:
        toolbox: the tools of the side that calls (the agent's or the user's).
        ctx: the tool context of that side (bound to the trial database).
        call: the call.
        traj: the trajectory: gets the :class:`ToolCallRecord`, the result message and one more step.
        requestor: who calls.
        timed: read the wall clock around the tool (False: the times returned are 0, the clock is not read).

    Returns:
        ``(result message (already appended to traj.messages), outcome, start ns, end ns)``, the times from
        :func:`time.time_ns` around the tool itself.
    """
    fields = traj.__dict__  # written as pydantic's __setattr__ writes a field, without its dispatch
    step = fields["steps"]
    ctx.step = step
    if timed:
        w0 = time.time_ns()
        out = toolbox.dispatch(ctx, call.name, call.arguments)
        w1 = time.time_ns()
    else:
        w0 = w1 = 0
        out = toolbox.dispatch(ctx, call.name, call.arguments)
    fields["tool_seconds"] += out.duration_s
    given = traj.__pydantic_fields_set__
    given.add("tool_seconds")
    call_id, name, arguments, raw = call.id, call.name, call.arguments, call.raw_arguments
    content, duration = out.content, out.duration_s
    fault = getattr(out, "fault", None)
    if (type(call_id) is str and type(name) is str and type(content) is str and type(duration) is float
            and (arguments is None or type(arguments) is dict) and (raw is None or type(raw) is str)):
        # every value is of its field's type already (the call was validated and admitted, the outcome is the
        # toolbox's): the records are built without validating them again (the dict copied, as validation does)
        record = built(ToolCallRecord, {
            "step": step, "call_id": call_id, "name": name, "arguments": None if arguments is None else dict(arguments),
            "raw_arguments": raw if arguments is None else None, "kind": out.kind, "status": out.status,
            "content": content, "duration_s": duration, "bug": out.bug, "requestor": requestor, "fault": fault})
        result = built(Message, {"role": "tool", "content": content, "tool_calls": [], "tool_call_id": call_id,
                                 "name": name, "requestor": "user" if requestor == "user" else None}, _RESULT_SET)
    else:
        record = ToolCallRecord(
            step=step, call_id=call_id, name=name, arguments=arguments,
            raw_arguments=raw if arguments is None else None, kind=out.kind, status=out.status, content=content,
            duration_s=duration, bug=out.bug, requestor=requestor, fault=fault)
        result = Message(role="tool", content=content, tool_call_id=call_id, name=name,
                         requestor="user" if requestor == "user" else None)
    fields["tool_calls"].append(record)
    fields["steps"] = step + 1
    given.add("steps")
    fields["messages"].append(result)
    return result, out, w0, w1

"""The plumbing shared by the domains' rule-based reference agents (``--agent reference``).

A reference agent reads the conversation one new message at a time, keeps what it learned, and decides its next
tool call or message. What differs between domains (what a tool result or a user message teaches it, and what it
does next) is the subclass's; this module holds the rest: the fault draws
(:class:`~simulator.agents.rates.FaultDraws`), tool call ids, the ``repeat_call`` loop on a first look-up, and the
step loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.agents.rates import FaultDraws
from simulator.dialogue.cues import is_retryable_error
from simulator.dialogue.text import clip_long_tokens
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext

__all__ = ["ANYTHING_ELSE", "REPEATS", "RETRIES", "ReferenceAgentBase"]

ANYTHING_ELSE = "Is there anything else I can help you with?"
GOODBYE = "Thank you for contacting us. Have a great day!"
FOUND_ACCOUNT = "Thank you, I have found your account. How can I help you today?"

REPEATS = 3
"""How many more times a ``repeat_call`` fault repeats a look-up (four identical calls: a loop)."""
RETRIES = 2
"""How many times a call answered by a retryable error (:func:`simulator.dialogue.cues.is_retryable_error`: a busy
service,
a timeout, a rolled-back write) is made again before the error is taken as the answer."""


class ReferenceAgentBase:
    """Base of a rule-based reference agent for one trial.

    Subclasses implement :meth:`_absorb_tool`, :meth:`_absorb_user` and :meth:`_decide`, and build their turns
    with :meth:`_call` (a tool call) and :meth:`_text_turn` (a message). A call answered by a retryable error (a
    busy service, a timeout: environment faults) is made again, at most :data:`RETRIES` times, before its error
    is absorbed as the answer.

    Args:
        ctx: the trial context; only ``ctx.seed`` is read (the fault draws' seed).
        faults: fault knob -> rate in [0, 1]; None: no faults.
        known: the knobs the agent knows.
        who: the agent named in error messages.
        salt: the agent's own constant mixed into its generator's seed.

    Attributes:
        metadata: ``{"faults": [{"fault": knob, "step": n, "detail": str}, ...]}``, the injected faults.
        LOOKUPS: name prefixes of the read-only tools (a ``repeat_call`` fault repeats the first call of one).

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    LOOKUPS: tuple[str, ...] = ("get_", "find_", "list_")

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None, *, known: Sequence[str], who: str,
                 salt: int):
        self._faults = FaultDraws(faults or {}, known, who, ctx.seed, salt)
        self.metadata: dict[str, Any] = {"faults": self._faults.injected}
        self._seen = 0
        self._steps = 0
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._made: set[str] = set()
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._retried: dict[str, int] = {}
        self._asking: str | None = None
        self._closed = False

    # ------------------------------------------------------------------------------------------ to implement
    def _absorb_tool(self, name: str, args: dict[str, Any], data: Any, ok: bool, content: str) -> None:
        """Learn from the result of the agent's own call ``name(args)`` (``data``: its JSON, else the text)."""
        raise NotImplementedError

    def _absorb_user(self, text: str) -> None:
        """Learn from a user message (long tokens already clipped)."""
        raise NotImplementedError

    def _decide(self) -> AgentTurn:
        """Return the next tool call or message."""
        raise NotImplementedError

    def _say(self, text: str, question: bool = True) -> AgentTurn:
        """A message to the user (``question``: it asks something, so a ``repeat_question`` fault may replace it)."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------ plumbing
    def _draw(self, knob: str, detail: str) -> bool:
        """Draw one opportunity of ``knob`` (recorded with the step and ``detail`` when injected)."""
        return self._faults.draw(knob, step=self._steps, detail=detail)

    def _tool_turn(self, name: str, args: dict[str, Any]) -> AgentTurn:
        """One tool call turn (its id remembered, so that its result is read as the answer to it)."""
        call_id = f"ref_{len(self._calls)}"
        self._calls[call_id] = (name, dict(args))
        self._steps += 1
        return AgentTurn(message=Message(role="assistant", tool_calls=[ToolCall(id=call_id, name=name,
                                                                                arguments=args)]))

    def _call(self, name: str, args: dict[str, Any]) -> AgentTurn:
        """Call a tool; the first call of a look-up may draw ``repeat_call`` (then it is made REPEATS more times)."""
        key = json.dumps([name, args], sort_keys=True)
        if name.startswith(self.LOOKUPS) and key not in self._made and self._draw("repeat_call", f"{name} repeated"):
            self._queue.extend([(name, dict(args))] * REPEATS)
        self._made.add(key)
        return self._tool_turn(name, args)

    def _between_requests(self, served: bool) -> AgentTurn:
        """The turn when no request is being served: a goodbye after the user closed, else the offer of help.

        Args:
            served: whether a request was served already (then "anything else?", else "how can I help?").
        """
        if self._closed:
            self._closed = False
            self._asking = None
            return self._say(GOODBYE, question=False)
        self._asking = "anything_else"
        return self._say(ANYTHING_ELSE if served else FOUND_ACCOUNT)

    def _text_turn(self, text: str) -> AgentTurn:
        """A message to the user."""
        self._steps += 1
        return AgentTurn(message=Message(role="assistant", content=text))

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the next tool call or message given the conversation so far.

        Args:
            messages: the trial's messages (user, assistant, tool), in order; only those not seen yet are read.

        Returns:
            One tool call, or a text message to the user.
        """
        for m in messages[self._seen:]:
            if m.role == "tool":
                name, args = self._calls.get(m.tool_call_id or "", ("", {}))
                content = m.content or ""
                key = json.dumps([name, args], sort_keys=True)
                if name and is_retryable_error(content) and self._retried.get(key, 0) < RETRIES:
                    self._retried[key] = self._retried.get(key, 0) + 1
                    self._queue.insert(0, (name, dict(args)))  # the same call again, before anything else
                    continue
                try:
                    data: Any = json.loads(content)
                except json.JSONDecodeError:
                    data = content
                self._absorb_tool(name, args, data, not content.lower().startswith("error"), content)
            elif m.role == "user":
                self._absorb_user(clip_long_tokens(m.content or ""))  # a long token names nothing
        self._seen = len(messages)
        if self._queue:
            return self._tool_turn(*self._queue.pop(0))
        return self._decide()

"""A rule-based reference agent for the airline domain (``--agent reference``), with fault knobs.

The agent talks through the same :class:`~simulator.Agent` interface as an LLM agent and sees only
what an LLM agent sees: the conversation, the tool results, the tool schemas and the policy. It never reads
the task's scenario, gold actions or required outputs. It understands the member by patterns over plain
English (:mod:`domains.airline._understand`) and follows the policy (``domains/airline/policy.md``):

1. asks for the user id and reads the profile before anything else;
2. reads the reservation concerned and checks the policy's rules (owner, status, flown segments, the
   cancellation conditions, basic economy flights, bags only added, passenger count, compensation
   eligibility), refusing with the rule's reason when one forbids the request;
3. works out the change and its price (searching flights for current prices), states the action with every
   key value (reservation, flights and dates, cabin, passengers, bags, payment method, amount) and asks
   "Shall I proceed (yes/no)?";
4. on an explicit yes makes the one write, reports the result ("Done: ...") and asks whether there is
   anything else; on a no it takes the member's restated request into account and tries again (twice at most);
5. transfers to a human agent (tool ``transfer_to_human_agents``, with the message "I'm transferring you to a
   human agent.") what no tool can do: lost bags and claims, cancelling part of a trip or a trip partly flown,
   and requests it does not understand after asking twice.

It handles: booking (one-way or round trip, the cheapest available itinerary with direct flights first, the
member and its saved passengers, bags and insurance, payment split certificate first, then gift cards, then a
credit card), cancelling a reservation, adding checked bags, changing the cabin, replacing passengers, changing
flights (same route, new dates), compensation certificates, and questions about balances and amounts.

The agent is composed of: understanding (:mod:`domains.airline._understand`: the member's words as slots), the
catalog (:mod:`domains.airline._catalog`: allowances, fees and the policy's checks on the records it read),
answers (:mod:`domains.airline._answers`: the wording) and dialogues (:mod:`domains.airline._dialogues`: one
generator per request, on a shared core); this module joins them and speaks the agent protocol.

Fault knobs (``faults``: knob -> rate in [0, 1]); each is drawn at each opportunity from the agent's own
generator, seeded from the trial seed, and every injected fault is recorded in ``metadata["faults"]`` as
``{"fault": knob, "turn": agent message index, ...}``:

- ``skip_confirmation`` (each write): writes without asking for confirmation;
- ``wrong_item`` (each write): picks a wrong value for the change's item (another reservation of the member
  to cancel, one bag more, another cabin, another date, a wrong date of birth, one passenger too many in a
  certificate's amount, the second-cheapest itinerary of a booking);
- ``repeat_call`` (each look-up): repeats the same look-up three more times (a loop past the default threshold);
- ``early_transfer`` (each new request): transfers to a human agent before trying;
- ``forget_constraint`` (each choice the member constrained): ignores the member's named payment method or its
  "same flight" preference and takes the first alternative;
- ``repeat_question`` (each message after the member has given its user id, and again after each re-ask, at
  most three in a row): first asks again for the user id or the reservation id it was already given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from domains.airline._dialogues import BookingDialogues, Call, ChangeDialogues, Dialogue, Result, Say
from simulator.agents.kit import (
    REFERENCE_KNOBS,
    AgentTurn,
    FaultDraws,
    Message,
    ToolCall,
    TrialContext,
    check_fault_rates,
    clip_long_tokens,
)

__all__ = ["KNOBS", "AirlineReferenceAgent", "check_faults"]

KNOBS = REFERENCE_KNOBS
"""The fault knobs the agent knows."""
_SEED_SALT = 0xA1B5
"""Mixed into the trial seed so that the agent's draws do not follow the user's."""


def check_faults(faults: Mapping[str, float]) -> dict[str, float]:
    """Validate fault knob rates (see :func:`simulator.agents.kit.check_fault_rates`).

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """
    return check_fault_rates(faults, KNOBS, "airline reference agent")


class AirlineReferenceAgent(ChangeDialogues, BookingDialogues):
    """The airline reference agent (see the module docstring).

    Args:
        ctx: the trial context; only ``ctx.seed`` is read (never the task).
        faults: fault knob -> rate in [0, 1] (see :data:`KNOBS`).

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None = None):
        super().__init__(FaultDraws(faults or {}, KNOBS, "airline reference agent", ctx.seed, _SEED_SALT))
        self.metadata: dict[str, Any] = {"faults": self._faults.injected}
        self._dialogue: Dialogue | None = None
        self._calls = 0
        self._done = False

    # ---------------------------------------------------------------------------------------------- protocol
    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the next tool call or message given the conversation so far.

        Args:
            messages: the trial's messages in order (user, assistant, tool).

        Returns:
            An :class:`AgentTurn` with one tool call, or a text message (which ends the agent's turn).
        """
        last = messages[-1] if messages else None
        if self._done:
            return self._turn(Say("This conversation has been handed over to a human agent."))
        if self._dialogue is None:
            # a long token names nothing: cut to its ends, so that parsing it stays cheap
            self._dialogue = self._main(clip_long_tokens(last.content or "") if last is not None and last.role == "user"
                                        else "")
            action = next(self._dialogue)
        else:
            if last is None:
                value: Any = ""
            elif last.role == "tool":
                content = last.content or ""
                value = Result(ok=not content.startswith("Error"), content=content)
            else:
                value = clip_long_tokens(last.content or "")
            action = self._dialogue.send(value)
        return self._turn(action)

    def _turn(self, action: Call | Say) -> AgentTurn:
        if isinstance(action, Call):
            self._calls += 1
            call = ToolCall(id=f"ref_{self._calls}", name=action.name, arguments=action.arguments)
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        self._messages_out += 1
        if action.transfer_summary is not None:
            self._calls += 1
            self._done = True
            call = ToolCall(id=f"ref_{self._calls}", name="transfer_to_human_agents",
                            arguments={"summary": action.transfer_summary})
            return AgentTurn(message=Message(role="assistant", content=action.text, tool_calls=[call]))
        return AgentTurn(message=Message(role="assistant", content=action.text))

    def _handle(self, kind: str, request: str) -> Dialogue:
        """Run the dialogue of one request (see :class:`ChangeDialogues` and :class:`BookingDialogues`)."""
        handlers = {
            "cancel": self._cancel, "bags": self._bags, "cabin": self._cabin, "change_flights": self._change_flights,
            "passengers": self._passengers, "add_passenger": self._add_passenger,
            "compensation": self._compensation, "info": self._info, "transfer": self._out_of_scope,
            "book": self._book, "details": self._details,
        }
        yield from handlers[kind](request)

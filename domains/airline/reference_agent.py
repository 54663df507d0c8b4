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

import json
import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from datetime import datetime, timedelta
from typing import Any

from domains.airline import _understand as nl
from simulator import TausimError
from simulator.agents.kit import (
    REFERENCE_KNOBS,
    RETRIES,
    AgentTurn,
    FaultDraws,
    Message,
    ToolCall,
    TrialContext,
    check_fault_rates,
    clip_long_tokens,
    is_closing,
    is_no,
    is_retryable_error,
    is_yes,
)

__all__ = ["KNOBS", "AirlineReferenceAgent", "check_faults"]

KNOBS = REFERENCE_KNOBS
"""The fault knobs the agent knows."""

MAX_REASKS = 3
"""Most ``repeat_question`` re-asks in a row before the agent's own message (each one a drawn opportunity)."""
LOOP_REPEATS = 3
"""Extra identical calls a ``repeat_call`` fault adds (with the domain's threshold of 2, a fourth call is a loop)."""

_ALLOWANCE = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
              "silver": {"basic_economy": 1, "economy": 2, "business": 3},
              "gold": {"basic_economy": 2, "economy": 3, "business": 3}}
_BAG_FEE = 50
_DAY_AGO = (datetime.fromisoformat(nl.NOW) - timedelta(hours=24)).isoformat()
"""24 hours before the policy's current time: a reservation booked since then may be cancelled."""
_TRANSFER_TEXT = "I'm transferring you to a human agent."
_ANYTHING_ELSE = "Is there anything else I can help you with?"
_SEED_SALT = 0xA1B5
"""Mixed into the trial seed so that the agent's draws do not follow the user's."""


def _label_after(method: dict[str, Any], charged: float) -> str:
    """Name a payment method after a charge of ``charged`` dollars: a gift card or certificate with its new balance.

    (A confirmation names the balance before the change; the report must not repeat it.)
    """
    label = nl.method_label(method, balance=False)
    if charged > 0 and method.get("source") != "credit_card" and isinstance(method.get("amount"), int | float):
        label += f" (balance now ${_fmt(float(method['amount']) - charged)})"
    return label


def _money_after(diff: float, method: dict[str, Any], saving: str) -> str:
    """The money line of a done change: ``diff`` dollars more (charged) or back (refunded), or no change."""
    label = _label_after(method, diff)
    if diff > 0:
        return f"you paid ${_fmt(diff)} more, charged to {label}"
    if diff < 0:
        return f"{saving} ${_fmt(-diff)}, refunded to {label}"
    return "the price did not change"


def check_faults(faults: Mapping[str, float]) -> dict[str, float]:
    """Validate fault knob rates (see :func:`simulator.check_fault_rates`).

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """
    return check_fault_rates(faults, KNOBS, "airline reference agent")


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]


@dataclass
class _Say:
    text: str
    transfer_summary: str | None = None
    """When set, the message also calls the transfer tool with this summary (the conversation ends)."""


@dataclass
class _Result:
    ok: bool
    content: str

    def json(self) -> Any:
        return json.loads(self.content) if self.ok else None


Dialogue = Generator["_Call | _Say", Any, Any]


class _Transferred(TausimError):  # noqa: N818 - control flow, not an error
    """Raised inside the dialogue after the transfer message; never leaves the agent (see :mod:`simulator.errors`)."""


@dataclass
class _Session:
    """What the agent has learnt in the conversation."""

    user_id: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    """Every user message, in order."""
    reservation_ids: list[str] = field(default_factory=list)
    """Reservation ids the member gave, in order."""
    changed: set[str] = field(default_factory=set)
    """Reservations changed or cancelled in this conversation."""
    compensated: set[str] = field(default_factory=set)
    """Reservations a certificate was issued for."""
    resume_trip: dict[str, Any] | None = None
    """A booking's collected trip, kept when the payment the member named was refused (it may name another)."""
    money: list[str] = field(default_factory=list)
    """One line per amount moved or quoted (for "how much" questions)."""
    charged_total: float = 0.0
    """Dollars charged to the member by this conversation's writes (refunds negative)."""
    writes_with_money: int = 0
    last_reservation: dict[str, Any] | None = None


class AirlineReferenceAgent:
    """The airline reference agent (see the module docstring).

    Args:
        ctx: the trial context; only ``ctx.seed`` is read (never the task).
        faults: fault knob -> rate in [0, 1] (see :data:`KNOBS`).

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None = None):
        self._faults = FaultDraws(faults or {}, KNOBS, "airline reference agent", ctx.seed, _SEED_SALT)
        self.metadata: dict[str, Any] = {"faults": self._faults.injected}
        self._s = _Session()
        self._dialogue: Dialogue | None = None
        self._calls = 0
        self._messages_out = 0
        self._done = False
        self._pending_info: list[str] = []
        self._lookups: dict[tuple[str, str], _Result] = {}

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
            return self._turn(_Say("This conversation has been handed over to a human agent."))
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
                value = _Result(ok=not content.startswith("Error"), content=content)
            else:
                value = clip_long_tokens(last.content or "")
            action = self._dialogue.send(value)
        return self._turn(action)

    def _turn(self, action: _Call | _Say) -> AgentTurn:
        if isinstance(action, _Call):
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

    # ---------------------------------------------------------------------------------------------- faults
    def _draw(self, knob: str, **details: Any) -> bool:
        """Draw one opportunity of ``knob``; record and return True when the fault is injected."""
        return self._faults.draw(knob, turn=self._messages_out, **details)

    # ---------------------------------------------------------------------------------------------- primitives
    def _call(self, name: str, **arguments: Any) -> Dialogue:
        """Call one tool and return its :class:`_Result`.

        A look-up already made since the last write is answered from memory (a member who insists does not make
        the agent read the same record again); a look-up may be repeated by the ``repeat_call`` knob; a call answered
        by a retryable error (a busy service, a timeout) is made again, at most ``RETRIES`` times.
        """
        read = name.startswith(("get_", "search_", "list_"))
        key = (name, json.dumps(arguments, sort_keys=True))
        if read and key in self._lookups:
            return self._lookups[key]
        result = yield _Call(name, arguments)
        for _ in range(RETRIES):  # a busy service or a timeout (environment faults): the same call again
            if result.ok or not is_retryable_error(result.content):
                break
            result = yield _Call(name, dict(arguments))
        if not read:
            self._lookups.clear()
            return result
        if self._draw("repeat_call", tool=name):
            for _ in range(LOOP_REPEATS):
                result = yield _Call(name, dict(arguments))
        self._lookups[key] = result
        return result

    def _say(self, text: str) -> Dialogue:
        """Write to the member and return its reply (text); ``repeat_question`` may first re-ask a known value."""
        s = self._s
        for _ in range(MAX_REASKS):
            if s.user_id is None or not self._draw("repeat_question"):
                break
            if s.reservation_ids and self._faults.rng.random() < 0.5:
                ask = "Sorry, could you tell me the reservation id again (like ABC123)?"
            else:
                ask = "Sorry, could you give me your user id again?"
            reply = yield _Say(ask)
            self._hear(reply)
        reply = yield _Say(self._with_info(text))
        self._hear(reply)
        return reply

    def _with_info(self, text: str) -> str:
        """Prefix the information waiting to be told (results, refusals) to a message."""
        out = " ".join([*self._pending_info, text])
        self._pending_info.clear()
        return out

    def _hear(self, text: str) -> None:
        s = self._s
        s.texts.append(text)
        for rid in nl.reservation_ids(text):
            if rid not in s.reservation_ids:
                s.reservation_ids.append(rid)

    def _transfer(self, why: str, summary: str) -> Dialogue:
        """Tell the member it is transferred and call the transfer tool (ends the conversation)."""
        yield _Say(self._with_info(f"{why} {_TRANSFER_TEXT}"), transfer_summary=summary)
        raise _Transferred

    def _confirm(self, text: str, tool: str) -> Dialogue:
        """Ask for confirmation of a write; return (confirmed, reply). ``skip_confirmation`` skips the question."""
        if self._draw("skip_confirmation", tool=tool):
            return True, ""
        reply = yield from self._say(f"{text} Shall I proceed (yes/no)?")
        if is_yes(reply):
            return True, reply
        if not is_no(reply):
            reply = yield from self._say("To be sure: shall I proceed with this exactly as described (yes/no)?")
            if is_yes(reply):
                return True, reply
        return False, reply

    # ---------------------------------------------------------------------------------------------- main loop
    def _main(self, opening: str) -> Dialogue:
        try:
            yield from self._conversation(opening)
        except _Transferred:
            pass
        while True:  # after a transfer the trial is over; keep the generator answering
            yield _Say("This conversation has been handed over to a human agent.")

    def _conversation(self, opening: str) -> Dialogue:
        s = self._s
        self._hear(opening)
        request = opening
        unclear = 0
        while True:
            kinds = nl.intents_in(request)
            if not kinds and s.resume_trip is not None and _names_payment(request, s.profile):
                kinds = ["book"]
            if not kinds:
                if s.texts and is_closing(request):
                    reply = yield from self._say("Thank you for contacting us. Have a good trip!")
                    request = reply
                    continue
                unclear += 1
                if unclear > 2:
                    yield from self._transfer("I'm sorry, I can't work out what you need.",
                                              f"User {s.user_id or 'unidentified'}: request not understood: "
                                              f"{' / '.join(s.texts)[-300:]}")
                request = yield from self._say(
                    "I can help with your reservations: cancelling, changing flights or cabin, adding checked "
                    "bags, changing passengers, and compensation. What can I do for you?")
                continue
            unclear = 0
            if kinds == ["info"] and s.resume_trip is not None and _names_payment(request, s.profile):
                kinds = ["book"]
            if s.user_id is None:
                yield from self._identify()
            for kind in kinds:
                if self._draw("early_transfer", request=kind):
                    yield from self._transfer("Let me get you to the right person.",
                                              f"User {s.user_id} asks: {request[:300]}")
                yield from self._handle(kind, request)
            request = yield from self._say(_ANYTHING_ELSE)

    def _identify(self) -> Dialogue:
        s = self._s
        asked = 0
        while s.user_id is None:
            uid = next((u for t in reversed(s.texts) if (u := nl.user_id_in(t))), None)
            if uid is not None:
                res = yield from self._call("get_user_details", user_id=uid)
                if res.ok:
                    s.user_id, s.profile = uid, res.json()
                    return
                s.texts = [t for t in s.texts if nl.user_id_in(t) != uid]
                yield from self._say(f"I couldn't find a profile with the user id {uid}. Could you check your "
                                     "user id and give it again?")
                continue
            asked += 1
            if asked > 3:
                yield from self._transfer("I can't identify your profile without your user id.",
                                          "Caller could not give a user id.")
            yield from self._say("Could you give me your user id (like first_last_1234) so I can find your "
                                 "profile?")

    def _handle(self, kind: str, request: str) -> Dialogue:
        handlers = {
            "cancel": self._cancel, "bags": self._bags, "cabin": self._cabin, "change_flights": self._change_flights,
            "passengers": self._passengers, "add_passenger": self._add_passenger,
            "compensation": self._compensation, "info": self._info, "transfer": self._out_of_scope,
            "book": self._book, "details": self._details,
        }
        yield from handlers[kind](request)

    # ---------------------------------------------------------------------------------------------- helpers
    def _refresh_profile(self) -> Dialogue:
        s = self._s
        res = yield from self._call("get_user_details", user_id=s.user_id)
        if res.ok:
            s.profile = res.json()

    def _reservation(self, request: str, what: str, cancelled_ok: bool = False) -> Dialogue:
        """Find, read and check the reservation a request is about; return its record or None (refused).

        A cancelled reservation is refused unless ``cancelled_ok`` (compensation may concern one).
        """
        s = self._s
        own = list(s.profile.get("reservations", []))
        named = nl.reservation_ids(request)
        rid = next((r for r in named if r in own), None) or (named[0] if named else None)
        asked = 0
        while rid is None:
            asked += 1
            if asked > 2:
                yield from self._transfer("I can't find the reservation concerned.",
                                          f"User {s.user_id} wants to {what} but could not give a reservation id.")
            reply = yield from self._say(f"Which reservation do you want to {what}? Please give the reservation id "
                                         "(like ABC123).")
            ids = nl.reservation_ids(reply)
            rid = next((r for r in ids if r in own), None) or (ids[0] if ids else None)
        res = yield from self._call("get_reservation_details", reservation_id=rid)
        if not res.ok:
            self._tell(f"I couldn't find a reservation with the id {rid}.")
            return None
        record = res.json()
        if record.get("user_id") != s.user_id:
            self._tell(f"I'm sorry, but I can't help with reservation {rid}: it does not belong to your "
                                      "profile, and I can only act on your own reservations. The owner has to "
                                      "contact us.")
            return None
        if record.get("status") == "cancelled" and not cancelled_ok:
            self._tell(f"I'm sorry, but reservation {rid} is already cancelled, so it can't be "
                                      "changed.")
            return None
        s.last_reservation = record
        return record

    def _tell(self, text: str) -> None:
        """Tell the member something (a result, a refusal) at the start of the agent's next message."""
        self._pending_info.append(text)

    def _choose_payment(self, request: str, record: dict[str, Any] | None, amount: float,
                        purpose: str) -> Dialogue:
        """Return the payment method id for a change (credit card or gift card), asking when not named."""
        s = self._s
        methods: dict[str, dict[str, Any]] = s.profile.get("payment_methods", {})
        allowed = {pid: m for pid, m in methods.items() if m.get("source") in ("credit_card", "gift_card")}
        paid_with = [p["payment_id"] for p in (record or {}).get("payment_history", [])]
        asked = 0
        text = " ".join(s.texts[-4:] + [request])
        while True:
            named = nl.find_payment(text, methods, paid_with)
            choice = next((p for p in named if p in allowed), None)
            problem = None
            if named and choice is None:
                problem = "A travel certificate can't pay for a change; please choose a credit card or gift card."
            elif choice is not None and allowed[choice].get("source") == "gift_card" and amount > 0 and (
                    allowed[choice].get("amount") or 0) < amount:
                problem = (f"The gift card {choice} has a balance of ${allowed[choice].get('amount')}, less than "
                           f"${_fmt(amount)}.")
                choice = None
            if choice is not None:
                if len(allowed) > 1 and self._draw("forget_constraint", constraint="payment"):
                    choice = next(p for p in allowed if p != choice)
                return choice
            usable = [p for p, m in allowed.items()
                      if m.get("source") == "credit_card" or amount <= 0 or (m.get("amount") or 0) >= amount]
            if not named and len(allowed) == 1 and usable:
                return usable[0]  # the only method that can pay: named in the confirmation question
            asked += 1
            if asked > 4:
                return None
            options = "; ".join(nl.method_label(m) for m in allowed.values())
            if asked > 1:
                problem = ((problem or "") + " Sorry, I still need the payment method (for example: gift card, or "
                           "credit card ending in 1234).").strip()
            text = yield from self._say(f"{problem + ' ' if problem else ''}Your payment methods: {options}. Which "
                                        f"payment method should {purpose}?")

    def _money_line(self, line: str, charged: float) -> None:
        s = self._s
        s.money.append(line)
        if charged:
            s.charged_total += charged
            s.writes_with_money += 1

    def _report(self, text: str) -> None:
        s = self._s
        if s.writes_with_money > 1:
            net = s.charged_total
            text += (f" Altogether, the changes in this conversation cost you ${_fmt(net)}." if net >= 0 else
                     f" Altogether, you get ${_fmt(-net)} back from the changes in this conversation.")
        self._tell(text)

    # ---------------------------------------------------------------------------------------------- handlers
    def _cancel(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "cancel")
            if record is None:
                return
            rid = record["reservation_id"]
            texts = " ".join(s.texts)
            reason = nl.reason_in(request) or nl.reason_in(texts)
            flown = [f for f in record["flights"] if f["date"] < nl.TODAY]
            if reason is None:
                reply = yield from self._say("What is the reason for the cancellation: a change of plans, a flight "
                                             "cancelled by the airline, or another reason?")
                reason = nl.reason_in(reply) or "other"
            if flown and reason != "airline_cancelled":
                yield from self._transfer(
                    f"Part of reservation {rid} has already been flown ({_flights(flown)}), so I can't cancel it "
                    "myself.",
                    f"User {s.user_id} wants to cancel reservation {rid}, which is partly flown; the agent cannot "
                    "cancel it.")
            allowed, why_not = _may_cancel(record, reason)
            if not allowed:
                self._tell(f"I'm sorry, but I can't cancel reservation {rid}: {why_not}")
                return
            target = record
            if self._draw("wrong_item", item="reservation"):
                other = next((r for r in s.profile.get("reservations", []) if r != rid), None)
                if other is not None:
                    res = yield from self._call("get_reservation_details", reservation_id=other)
                    if res.ok:
                        target = res.json()
            refund = _fmt(sum(p["amount"] for p in target["payment_history"]))
            pays = _payments(target, s.profile)
            ok, reply = yield from self._confirm(
                f"I will cancel reservation {target['reservation_id']} ({target['origin']} to "
                f"{target['destination']}, {target['flight_type'].replace('_', ' ')}, {_flights(target['flights'])}, "
                f"passengers: {_people(target['passengers'])}). The full ${refund} will be refunded: {pays}.",
                "cancel_reservation")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("cancel_reservation", reservation_id=target["reservation_id"])
            if not res.ok:
                self._tell(f"The cancellation failed: {res.content}")
                return
            s.changed.add(target["reservation_id"])
            self._money_line(f"the refund for reservation {target['reservation_id']} is ${refund}",
                             -float(refund))
            balances = ""
            refunded = [p["payment_id"] for p in target["payment_history"]
                        if s.profile.get("payment_methods", {}).get(p["payment_id"], {}).get("source") == "gift_card"]
            if refunded:
                yield from self._refresh_profile()
                methods = s.profile.get("payment_methods", {})
                balances = " New balance: " + "; ".join(
                    f"gift card {pid}: ${_fmt(methods[pid].get('amount', 0))}"
                    for pid in dict.fromkeys(refunded) if pid in methods) + "."
            self._report(f"Done: reservation {target['reservation_id']} has been cancelled; ${refund} "
                                    f"will be refunded ({pays}; a gift card at once, a credit card within 5 to 7 "
                                    f"business days).{balances}")
            return
        self._tell("I have not cancelled anything.")

    def _bags(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "add bags to")
            if record is None:
                return
            rid = record["reservation_id"]
            current, nonfree_now = record["total_baggages"], record["nonfree_baggages"]
            total = nl.bag_request(request, current)
            while total is None:
                reply = yield from self._say(f"Reservation {rid} has {current} checked bag(s). How many checked bags "
                                             "should it have in total?")
                total = nl.bag_request(reply, current)
            if total < current:
                self._tell(f"I'm sorry, but I can't remove bags from reservation {rid}: checked "
                                          "bags can be added but never removed.")
                return
            if total == current:
                self._tell(f"Reservation {rid} already has {current} checked bag(s).")
                return
            if self._draw("wrong_item", item="bags"):
                total += 1
            pax = len(record["passengers"])
            allowance = _ALLOWANCE.get(s.profile.get("membership", "regular"), _ALLOWANCE["regular"])[
                record["cabin"]] * pax
            nonfree = max(nonfree_now, total - allowance)
            cost = _BAG_FEE * (nonfree - nonfree_now)
            payment = yield from self._choose_payment(request, record, cost, "pay for the bags")
            if payment is None:
                self._tell("I can't add the bags without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} to {total} checked bags in total (now {current}); the free "
                f"allowance is {allowance} bag(s), so {nonfree} bag(s) are non-free. The extra bags cost "
                f"${_fmt(cost)}, paid with {label}.", "update_reservation_baggages")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("update_reservation_baggages", reservation_id=rid, total_baggages=total,
                                        nonfree_baggages=nonfree, payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the bags cost ${_fmt(cost)}", cost)
            self._report(f"Done: reservation {rid} has been updated to {total} checked bags; ${_fmt(cost)} "
                         f"was charged to {_label_after(s.profile['payment_methods'][payment], cost)}.")
            return

    def _cabin(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the cabin of")
            if record is None:
                return
            rid, current = record["reservation_id"], record["cabin"]
            cabin = nl.target_cabin(request, current)
            while cabin is None:
                reply = yield from self._say(f"Reservation {rid} is in {nl.CABIN_NAMES[current]}. Which cabin should "
                                             "it move to: basic economy, economy or business?")
                cabin = nl.target_cabin(reply, current)
            if cabin == current:
                self._tell(f"Reservation {rid} is already in {nl.CABIN_NAMES[current]}.")
                return
            flown = [f for f in record["flights"] if f["date"] < nl.TODAY]
            if flown:
                self._tell(f"I'm sorry, but I can't change the cabin of reservation {rid}: some of "
                                          "its flights have already been flown, and flown flights cannot change.")
                return
            if self._draw("wrong_item", item="cabin"):
                cabin = next(c for c in nl.CABIN_NAMES if c not in (cabin, current))
            prices = yield from self._prices(record["flights"], cabin, len(record["passengers"]))
            if prices is None:
                return
            pax = len(record["passengers"])
            new_total = sum(prices) * pax
            old_total = sum(f["price"] for f in record["flights"]) * pax
            diff = new_total - old_total
            payment = yield from self._choose_payment(
                request, record, diff, "pay the difference" if diff > 0 else "receive the refund")
            if payment is None:
                self._tell("I can't change the cabin without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            money = (f"you pay ${_fmt(diff)} more, charged to {label}" if diff > 0 else
                     f"you save ${_fmt(-diff)}, refunded to {label}" if diff < 0 else "the price does not change")
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} from {nl.CABIN_NAMES[current]} to {nl.CABIN_NAMES[cabin]} on the "
                f"same flights ({_flights(record['flights'])}) for {pax} passenger(s): the new price is "
                f"${_fmt(new_total)} against ${_fmt(old_total)} paid, so {money}.", "update_reservation_flights")
            if not ok:
                request = reply or request
                continue
            flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in record["flights"]]
            res = yield from self._call("update_reservation_flights", reservation_id=rid, cabin=cabin,
                                        flights=flights, payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the cabin change: {money}", diff)
            done = _money_after(diff, s.profile["payment_methods"][payment], "you save")
            self._report(f"Done: reservation {rid} has been updated to {nl.CABIN_NAMES[cabin]}; {done}.")
            return

    def _prices(self, flights: list[dict[str, Any]], cabin: str, pax: int) -> Dialogue:
        """Return the current price of ``cabin`` on each flight (searching each), or None (told the member)."""
        out: list[float] = []
        for f in flights:
            res = yield from self._call("search_direct_flight", origin=f["origin"], destination=f["destination"],
                                        date=f["date"])
            found = next((x for x in (res.json() or []) if x["flight_number"] == f["flight_number"]), None)
            if found is None or (found["available_seats"].get(cabin) or 0) < pax:
                self._tell(f"I'm sorry, but flight {f['flight_number']} on {f['date']} has no "
                                          f"{nl.CABIN_NAMES[cabin]} seats available for {pax} passenger(s).")
                return None
            out.append(found["prices"][cabin])
        return out

    def _change_flights(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the flights of")
            if record is None:
                return
            rid, cabin = record["reservation_id"], record["cabin"]
            if cabin == "basic_economy":
                self._tell(f"I'm sorry, but I can't change the flights of reservation {rid}: it is "
                                          "in basic economy, and basic economy flights can never be changed. "
                                          "(Its cabin could be changed, on the same flights.)")
                return
            plan = yield from self._new_itinerary(record, request)
            if plan is None:
                return
            new_flights, prices = plan
            pax = len(record["passengers"])
            old = {(f["flight_number"], f["date"]): f["price"] for f in record["flights"]}
            diff = 0.0
            for nf, price in zip(new_flights, prices, strict=True):
                diff += (price if (nf["flight_number"], nf["date"]) not in old else old[nf["flight_number"],
                                                                                        nf["date"]]) * pax
            diff -= sum(old.values()) * pax
            payment = yield from self._choose_payment(
                request, record, diff, "pay the difference" if diff >= 0 else "receive the refund")
            if payment is None:
                self._tell("I can't change the flights without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            money = (f"you pay ${_fmt(diff)} more, charged to {label}" if diff > 0 else
                     f"you get ${_fmt(-diff)} back, refunded to {label}" if diff < 0 else
                     "the price does not change")
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} ({nl.CABIN_NAMES[cabin]}, {pax} passenger(s)) from "
                f"{_flights(record['flights'])} to {_flights(new_flights)}; {money}.", "update_reservation_flights")
            if not ok:
                request = reply or request
                continue
            refs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in new_flights]
            res = yield from self._call("update_reservation_flights", reservation_id=rid, cabin=cabin, flights=refs,
                                        payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the flight change: {money}", diff)
            done = _money_after(diff, s.profile["payment_methods"][payment], "you get")
            self._report(f"Done: reservation {rid} has been updated to {_flights(new_flights)}; {done}.")
            return

    def _new_itinerary(self, record: dict[str, Any], request: str, asked: int = 0) -> Dialogue:
        """Work out the new flights of a change; return (flights with origin/destination/date, prices) or None.

        ``asked`` counts the questions already asked for it (after two, the agent gives up).
        """
        if asked > 2:
            self._tell("I'm sorry, but I couldn't work out which flight should move to which date.")
            return None
        s = self._s
        flights = record["flights"]
        legs = _legs(record)
        texts = " ".join([request, *s.texts[-3:]])
        low = texts.lower()
        old_dates = {f["date"] for f in flights}
        new_dates = [d for d in nl.dates_in(request) if d not in old_dates] or [
            d for d in nl.dates_in(texts) if d not in old_dates]
        shift = nl.day_shift(texts)
        # which leg changes: the one whose date the member names, else the one its words point to
        said = [d for d in nl.dates_in(request) if d in old_dates] or [
            d for d in nl.dates_in(texts) if d in old_dates]
        leg = next((i for i, lg in enumerate(legs) for f in lg if f["date"] in said), -1)
        if leg >= 0 or len(legs) == 1:
            leg = max(leg, 0)
        elif any(w in low for w in ("come back", "coming back", "return", "fly back", "way back")):
            leg = 1
        elif any(w in low for w in ("outbound", "going out", "fly out", "departure", "leaving")):
            leg = 0
        else:
            if leg < 0:
                reply = yield from self._say("Which flight do you want to change: the outbound or the return flight, "
                                             "and to which date?")
                return (yield from self._new_itinerary(record, reply, asked + 1))
        changed = legs[leg]
        if any(f["date"] < nl.TODAY for f in changed):
            self._tell("I'm sorry, but flights that have already been flown can't be changed.")
            return None
        if new_dates:
            days = _days_between(changed[0]["date"], new_dates[0])
        elif shift is not None:
            days = shift
        else:
            reply = yield from self._say("To which date do you want to move it?")
            return (yield from self._new_itinerary(record, reply, asked + 1))
        if self._draw("wrong_item", item="date"):
            days += 1
        out: list[dict[str, Any]] = []
        prices: list[float] = []
        pax = len(record["passengers"])
        for f in flights:
            if f not in changed:
                out.append(dict(f))
                prices.append(f["price"])
                continue
            day = nl.shifted(f["date"], days)
            res = yield from self._call("search_direct_flight", origin=f["origin"], destination=f["destination"],
                                        date=day)
            options = [x for x in (res.json() or []) if (x["available_seats"].get(record["cabin"]) or 0) >= pax]
            pick = next((x for x in options if x["flight_number"] == f["flight_number"]), None)  # same flight
            if pick is not None and len(options) > 1 and self._draw("forget_constraint", constraint="same flight"):
                pick = next(x for x in options if x is not pick)
            if pick is None and options:
                listing = "; ".join(f"{x['flight_number']} leaving {x['scheduled_departure_time_est'][:5]} "
                                    f"(${x['prices'][record['cabin']]})" for x in options)
                reply = yield from self._say(f"Flight {f['flight_number']} is not available on {day}. These flights "
                                             f"from {f['origin']} to {f['destination']} are: {listing}. Which one "
                                             "do you choose?")
                pick = next((x for x in options if x["flight_number"].lower() in reply.lower()), None)
            if pick is None:
                self._tell(f"I'm sorry, but I found no available flight from {f['origin']} to "
                                          f"{f['destination']} on {day} with {pax} seat(s) in "
                                          f"{nl.CABIN_NAMES[record['cabin']]}.")
                return None
            out.append({"flight_number": pick["flight_number"], "origin": f["origin"], "destination": f["destination"],
                        "date": day})
            prices.append(pick["prices"][record["cabin"]])
        return out, prices

    def _passengers(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the passengers of")
            if record is None:
                return
            rid = record["reservation_id"]
            texts = " ".join([request, *s.texts[-3:]])
            names = nl.names_in(texts)
            current = record["passengers"]
            outgoing = next((p for p in current for n in names
                             if (p["first_name"], p["last_name"]) == n), None)
            saved = s.profile.get("saved_passengers", [])
            incoming = next(({"first_name": n[0], "last_name": n[1], "dob": p["dob"]} for n in names for p in saved
                             if (p["first_name"], p["last_name"]) == n
                             and all((q["first_name"], q["last_name"]) != n for q in current)), None)
            if incoming is None:
                other = next((n for n in names if all((q["first_name"], q["last_name"]) != n for q in current)
                              and n != (s.profile.get("name", {}).get("first_name"),
                                        s.profile.get("name", {}).get("last_name"))), None)
                dob = next((d for d in _dobs(texts)), None)
                if other is not None:
                    while dob is None:
                        reply = yield from self._say(f"What is the date of birth of {other[0]} {other[1]} "
                                                     "(YYYY-MM-DD)?")
                        dob = next((d for d in _dobs(reply)), None)
                    incoming = {"first_name": other[0], "last_name": other[1], "dob": dob}
            if outgoing is None or incoming is None:
                reply = yield from self._say(f"Reservation {rid} has these passengers: {_people(current)}. Who should "
                                             "be replaced, and by whom (first and last name)?")
                request = f"{request} {reply}"
                continue
            if self._draw("wrong_item", item="passenger"):
                incoming = {**incoming, "dob": outgoing["dob"]}
            new = [dict(incoming) if p is outgoing else {k: p[k] for k in ("first_name", "last_name", "dob")}
                   for p in current]
            ok, reply = yield from self._confirm(
                f"I will update the passengers of reservation {rid}: {incoming['first_name']} {incoming['last_name']} "
                f"(born {incoming['dob']}) replaces {outgoing['first_name']} {outgoing['last_name']}, so the "
                f"passengers will be {_people(new)}. This costs nothing.", "update_reservation_passengers")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("update_reservation_passengers", reservation_id=rid, passengers=new)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._report(f"Done: reservation {rid} has been updated; the passengers are now {_people(new)}.")
            return

    def _add_passenger(self, request: str) -> Dialogue:
        record = yield from self._reservation(request, "add a passenger to")
        if record is None:
            return
        self._tell(f"I'm sorry, but I can't add a passenger to reservation {record['reservation_id']}: "
                                  "the number of passengers of a reservation can never change, and nobody, not even "
                                  "a human agent, can add or remove one. A separate booking would be needed.")

    def _compensation(self, request: str) -> Dialogue:
        s = self._s
        record = yield from self._reservation(request, "look at for compensation", cancelled_ok=True)
        if record is None:
            return
        rid = record["reservation_id"]
        texts = " ".join([request, *s.texts]).lower()
        delayed = "delay" in texts
        eligible = (s.profile.get("membership") in ("silver", "gold") or record.get("insurance") == "yes"
                    or record.get("cabin") == "business")
        if not eligible:
            self._tell(
                f"I'm sorry for the trouble, but I can't offer compensation for reservation {rid}: under our policy "
                "a regular member without travel insurance flying economy or basic economy receives no "
                "compensation.")
            return
        if rid in s.compensated:
            self._tell(f"A certificate has already been issued for this disruption on {rid}; only "
                                      "one certificate per disruption is possible.")
            return
        pax = len(record["passengers"])
        if delayed:
            if rid not in s.changed:
                self._tell(f"For a delayed flight, compensation is possible once reservation {rid} has "
                                          "been changed or cancelled because of the delay.")
                return
            per, what = 50, "the delayed flight"
        else:
            per, what = 100, "the flight the airline cancelled"
        amount = per * pax
        if self._draw("wrong_item", item="certificate"):
            amount += per
        ok, _reply = yield from self._confirm(
            f"As compensation for {what} on reservation {rid}, I will send a travel certificate of ${amount} "
            f"(${per} for each of the {pax} passenger(s)) to your profile {s.user_id}.", "send_certificate")
        if not ok:
            self._tell("Understood, I will not issue a certificate.")
            return
        res = yield from self._call("send_certificate", user_id=s.user_id, amount=amount)
        if not res.ok:
            self._tell(f"The certificate could not be issued: {res.content}")
            return
        s.compensated.add(rid)
        self._money_line(f"the compensation certificate is ${amount}", 0)
        self._report(f"Done: a travel certificate of ${amount} has been added to your profile.")

    def _info(self, request: str) -> Dialogue:
        s = self._s
        low = request.lower()
        if "balance" in low or "left" in low or "remaining" in low:
            yield from self._refresh_profile()
            methods = s.profile.get("payment_methods", {})
            record = s.last_reservation
            paid = {p["payment_id"] for p in (record or {}).get("payment_history", [])}
            shown = [m for pid, m in methods.items() if m.get("source") in ("gift_card", "certificate")]
            shown.sort(key=lambda m: m["id"] not in paid)
            if not shown:
                self._tell("Your profile has no gift card or certificate with a balance.")
                return
            lines = "; ".join(f"{m['source'].replace('_', ' ')} {m['id']}: balance ${m.get('amount', 0)}"
                              for m in shown)
            self._tell(f"Your balances: {lines}.")
            return
        if s.money:
            self._report("To recap the amounts: " + "; ".join(s.money) + ".")
            return
        self._tell("Nothing has been charged or refunded in this conversation.")

    def _details(self, request: str) -> Dialogue:
        record = yield from self._reservation(request, "look up", cancelled_ok=True)
        if record is None:
            return
        status = " It is cancelled." if record.get("status") == "cancelled" else ""
        self._tell(f"Reservation {record['reservation_id']}: {record['flight_type'].replace('_', ' ')} from "
                   f"{record['origin']} to {record['destination']} in {nl.CABIN_NAMES[record['cabin']]}; flights "
                   f"{_flights(record['flights'])}; passengers {_people(record['passengers'])}; "
                   f"{record['total_baggages']} checked bag(s) ({record['nonfree_baggages']} non-free); travel "
                   f"insurance: {record['insurance']}; booked on {record['created_at']}.{status}")

    def _out_of_scope(self, request: str) -> Dialogue:
        s = self._s
        rids = [r for r in nl.reservation_ids(request) if r in s.profile.get("reservations", [])]
        extra = ""
        if rids:
            res = yield from self._call("get_reservation_details", reservation_id=rids[0])
            if res.ok:
                extra = f" on reservation {rids[0]}"
        yield from self._transfer("I'm sorry, but none of my tools can handle that.",
                                  f"User {s.user_id} needs help I cannot give{extra}: {request[:300]}")

    def _book(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            trip, s.resume_trip = s.resume_trip, None
            if trip is None:
                trip = yield from self._trip(request)
            if trip is None:
                return
            itinerary = yield from self._search_trip(trip)
            if itinerary is None:
                return
            flights, prices = itinerary
            pax, cabin = trip["passengers"], trip["cabin"]
            n = len(pax)
            allowance = _ALLOWANCE.get(s.profile.get("membership", "regular"), _ALLOWANCE["regular"])[cabin] * n
            nonfree = max(0, trip["bags"] - allowance)
            total = sum(prices) * n + (30 * n if trip["insurance"] == "yes" else 0) + _BAG_FEE * nonfree
            split = yield from self._split_payment(request, total)
            if split is None:
                s.resume_trip = trip
                return
            methods = s.profile.get("payment_methods", {})
            paying = ", ".join(f"${_fmt(a)} with {nl.method_label(methods[pid], balance=False)}" for pid, a in split)
            kind = "round trip" if trip["flight_type"] == "round_trip" else "one-way trip"
            ok, reply = yield from self._confirm(
                f"I will book a {kind} in {nl.CABIN_NAMES[cabin]} from {trip['origin']} to "
                f"{trip['destination']}: {_flights(flights)}, for {_people(pax)}; {trip['bags']} checked bag(s) "
                f"({nonfree} non-free at ${_BAG_FEE} each), travel insurance: {trip['insurance']}. The total is "
                f"${_fmt(total)}: {paying}.", "book_reservation")
            if not ok:
                request = f"{request} {reply}"
                continue
            res = yield from self._call(
                "book_reservation", user_id=s.user_id, origin=trip["origin"], destination=trip["destination"],
                flight_type=trip["flight_type"], cabin=cabin,
                flights=[{"flight_number": f["flight_number"], "date": f["date"]} for f in flights],
                passengers=pax, payment_methods=[{"payment_id": pid, "amount": a} for pid, a in split],
                total_baggages=trip["bags"], nonfree_baggages=nonfree, insurance=trip["insurance"])
            if not res.ok:
                self._tell(f"The booking failed: {res.content}")
                return
            booked = res.json()
            s.changed.add(booked["reservation_id"])
            self._money_line(f"the booking costs ${_fmt(total)} ({paying})", total)
            self._report(f"Done: reservation {booked['reservation_id']} has been booked; the total of "
                                    f"${_fmt(total)} was paid: {paying}.")
            return

    def _trip(self, request: str) -> Dialogue:
        """Collect a booking's trip type, airports, dates, cabin, passengers, bags and insurance (asking for each)."""
        s = self._s
        airports: dict[str, str] = {}
        res = yield from self._call("list_all_airports")
        if res.ok:
            airports = res.json()
        text = request
        trip: dict[str, Any] = {}
        for _ in range(12):
            low = text.lower()
            if "flight_type" not in trip:
                if re.search(r"round[ -]trip|coming back|come back|\breturn", low):
                    trip["flight_type"] = "round_trip"
                elif re.search(r"one[ -]way|single", low):
                    trip["flight_type"] = "one_way"
            places = _airports_in(text, airports)
            if "origin" not in trip and len(places) >= 2:
                trip["origin"], trip["destination"] = places[0], places[1]
            dates = nl.dates_in(text)
            if "date" not in trip and dates:
                trip["date"] = dates[0]
                dates = dates[1:]
            if trip.get("flight_type") == "round_trip" and "return_date" not in trip and dates:
                trip["return_date"] = dates[0]
            cabins = nl.cabin_mentions(text)
            if "cabin" not in trip and cabins:
                trip["cabin"] = cabins[0]
            if "passengers" not in trip:
                people = _travellers(text, s.profile)
                if people:
                    trip["passengers"] = people
            if "bags" not in trip:
                bags = nl.bag_request(text, 0)
                if bags is not None:
                    trip["bags"] = bags
            if "insurance" not in trip and (answer := _insurance(text)) is not None:
                trip["insurance"] = answer
            if "flight_type" not in trip:
                ask = "Is it a one-way or a round trip?"
            elif "origin" not in trip:
                ask = "From which city or airport, and to which one, do you want to fly?"
            elif "date" not in trip:
                ask = "On which date do you want to leave?"
            elif trip["flight_type"] == "round_trip" and "return_date" not in trip:
                ask = "On which date do you want to come back (return date)?"
            elif "cabin" not in trip:
                ask = "Which cabin class: basic economy, economy or business?"
            elif "passengers" not in trip:
                ask = ("Who are the passengers? Please give each passenger's first and last name (and date of birth, "
                       "YYYY-MM-DD, unless saved in your profile).")
            elif "bags" not in trip:
                ask = "How many checked bags in total for this trip?"
            elif "insurance" not in trip:
                ask = "Travel insurance costs $30 per passenger. What about travel insurance: with it, or without?"
            else:
                if len(trip["passengers"]) > 5:
                    self._tell("I'm sorry, but a reservation can have at most five passengers.")
                    return None
                return trip
            text = yield from self._say(ask)
        return None

    def _search_trip(self, trip: dict[str, Any]) -> Dialogue:
        """Find the cheapest available itinerary (direct flights first) for each way; return (flights, prices)."""
        legs = [(trip["origin"], trip["destination"], trip["date"])]
        if trip["flight_type"] == "round_trip":
            legs.append((trip["destination"], trip["origin"], trip["return_date"]))
        cabin, n = trip["cabin"], len(trip["passengers"])
        flights: list[dict[str, Any]] = []
        prices: list[float] = []
        for origin, destination, day in legs:
            options: list[list[dict[str, Any]]] = []
            res = yield from self._call("search_direct_flight", origin=origin, destination=destination, date=day)
            options = [[{**x, "date": day}] for x in (res.json() or [])]
            options = [o for o in options if all((x["available_seats"].get(cabin) or 0) >= n for x in o)]
            if not options:
                res = yield from self._call("search_onestop_flight", origin=origin, destination=destination, date=day)
                options = [o for o in (res.json() or [])
                           if all((x["available_seats"].get(cabin) or 0) >= n for x in o)]
            if not options:
                self._tell(f"I'm sorry, but I found no flight from {origin} to {destination} on {day} "
                                          f"with {n} {nl.CABIN_NAMES[cabin]} seat(s), direct or with one stop.")
                return None
            options.sort(key=lambda o: sum(x["prices"][cabin] for x in o))
            pick = options[0]
            if len(options) > 1 and self._draw("wrong_item", item="flight"):
                pick = options[1]
            for x in pick:
                flights.append({"flight_number": x["flight_number"], "origin": x["origin"],
                                "destination": x["destination"], "date": x["date"]})
                prices.append(x["prices"][cabin])
        return flights, prices

    def _split_payment(self, request: str, total: float) -> Dialogue:
        """Return [(payment id, amount)] covering ``total``: a certificate first, gift cards, then a credit card.

        Returns None after telling the member why the methods it named cannot pay (the policy's limits, or not
        enough balance).
        """
        s = self._s
        methods: dict[str, dict[str, Any]] = s.profile.get("payment_methods", {})
        text = request if nl.find_payment(request, methods) else " ".join([request, *s.texts[-2:]])
        for _ in range(3):
            named = nl.find_payment(text, methods)
            if named:
                break
            options = "; ".join(nl.method_label(m) for m in methods.values())
            text = yield from self._say(f"The total is ${_fmt(total)}. Your payment methods: {options}. Which payment "
                                        "method(s) should pay?")
        else:
            self._tell("I can't book without a payment method.")
            return None
        certs = [p for p in named if methods[p]["source"] == "certificate"]
        gifts = [p for p in named if methods[p]["source"] == "gift_card"]
        cards = [p for p in named if methods[p]["source"] == "credit_card"]
        if len(certs) > 1:
            self._tell("I'm sorry, but I can't accept more than one travel certificate: a booking "
                                      "may combine at most one travel certificate, one credit card and three gift "
                                      "cards.")
            return None
        if len(cards) > 1 or len(gifts) > 3:
            self._tell("I'm sorry, but a booking may combine at most one credit card and three gift "
                                      "cards.")
            return None
        split: list[tuple[str, float]] = []
        left = total
        for pid in certs + gifts:
            amount = min(methods[pid].get("amount") or 0, left)
            if amount > 0:
                split.append((pid, amount))
                left = round(left - amount, 2)
        if left > 0 and cards:
            split.append((cards[0], left))
            left = 0
        if left > 0:
            self._tell(f"I'm sorry, but the methods you named cover only ${_fmt(total - left)} of the "
                                      f"${_fmt(total)} total.")
            return None
        return split


# ------------------------------------------------------------------------------------------------ pure helpers
def _fmt(x: float) -> str:
    """Dollars as text: ``80`` or ``12.5`` (cents only when there are some)."""
    x = round(float(x), 2)
    return str(int(x)) if x == int(x) else f"{x:.2f}"


def _flights(flights: list[dict[str, Any]]) -> str:
    return ", ".join(f"{f['flight_number']} {f['origin']}-{f['destination']} on {f['date']}" for f in flights)


def _people(passengers: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['first_name']} {p['last_name']}" for p in passengers)


def _payments(record: dict[str, Any], profile: dict[str, Any]) -> str:
    methods = profile.get("payment_methods", {})
    net: dict[str, float] = {}
    for p in record["payment_history"]:
        net[p["payment_id"]] = net.get(p["payment_id"], 0) + p["amount"]
    parts = []
    for pid, amount in net.items():
        label = nl.method_label(methods[pid], balance=False) if pid in methods else pid
        parts.append(f"${_fmt(amount)} to {label}")
    return ", ".join(parts)


def _may_cancel(record: dict[str, Any], reason: str) -> tuple[bool, str]:
    """Apply the policy's cancellation conditions; return (allowed, why not)."""
    if record.get("created_at", "") >= _DAY_AGO:
        return True, ""
    if reason == "airline_cancelled":
        return True, ""
    if record.get("cabin") == "business":
        return True, ""
    if record.get("insurance") == "yes" and reason in ("health", "weather"):
        return True, ""
    if record.get("insurance") == "yes":
        return False, ("it was booked more than 24 hours ago, no flight was cancelled by the airline, it is not "
                       "business class, and its travel insurance covers only cancellations for health or weather "
                       "reasons, not this one. Membership level changes nothing here.")
    return False, ("it was booked more than 24 hours ago, no flight was cancelled by the airline, it is not business "
                   "class, and it has no travel insurance. Under our policy such a reservation cannot be cancelled, "
                   "whatever the membership level.")


def _legs(record: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Split a reservation's flights into the outbound leg and (round trips) the return leg."""
    flights = record["flights"]
    if record.get("flight_type") != "round_trip":
        return [list(flights)]
    out: list[dict[str, Any]] = []
    for i, f in enumerate(flights):
        out.append(f)
        if f["destination"] == record["destination"]:
            return [out, list(flights[i + 1:])] if flights[i + 1:] else [out]
    return [list(flights)]


def _days_between(a: str, b: str) -> int:
    return (Date.fromisoformat(b) - Date.fromisoformat(a)).days


def _dobs(text: str) -> list[str]:
    """Dates of birth in a message: ``YYYY-MM-DD`` after "born", "birth" or "dob" (or the whole message)."""
    if re.fullmatch(r"\W*(\d{4}-\d{2}-\d{2})\W*", text):
        return [text.strip(" .")]
    return [m.group(1) for m in re.finditer(r"\b(?:born|birth|dob)\b\D{0,20}(\d{4}-\d{2}-\d{2})\b", text,
                                            re.IGNORECASE)]


def _airports_in(text: str, airports: dict[str, str]) -> list[str]:
    """Return the airport codes a message names (by code or city), in order of mention."""
    found: list[tuple[int, str]] = []
    for code, city in airports.items():
        m = re.search(rf"\b{re.escape(code)}\b", text) or re.search(rf"\b{re.escape(city)}\b", text, re.IGNORECASE)
        if m:
            found.append((m.start(), code))
    return [c for _, c in sorted(found)]


def _travellers(text: str, profile: dict[str, Any]) -> list[dict[str, str]]:
    """Return the passengers a message names: the member ("me", "myself"), saved passengers, names with a dob."""
    out: list[dict[str, str]] = []
    low = text.lower()
    name = profile.get("name", {})
    me = {"first_name": name.get("first_name", ""), "last_name": name.get("last_name", ""),
          "dob": profile.get("dob", "")}
    if re.search(r"\b(me|myself)\b", low) or f"{me['first_name']} {me['last_name']}".lower() in low:
        out.append(me)
    saved = {(p["first_name"], p["last_name"]): p for p in profile.get("saved_passengers", [])}
    dobs = _dobs(text)
    for first, last in nl.names_in(text):
        if (first, last) == (me["first_name"], me["last_name"]) or any(
                (p["first_name"], p["last_name"]) == (first, last) for p in out):
            continue
        if (first, last) in saved:
            p = saved[first, last]
            out.append({"first_name": first, "last_name": last, "dob": p["dob"]})
        elif dobs:
            out.append({"first_name": first, "last_name": last, "dob": dobs.pop(0)})
    return out


def _insurance(text: str) -> str | None:
    low = text.lower()
    if re.search(r"\b(no|not|don'?t|without|decline)\b[^.]{0,40}insurance|insurance[^.]{0,20}\b(no|not)\b|"
                 r"^\W*no\b", low):
        return "no"
    if re.search(r"\b(yes|with|want|add|buy|include)\b[^.]{0,30}insurance|insurance[^.]{0,20}\byes\b|"
                 r"^\W*yes\b", low):
        return "yes"
    return None


def _names_payment(text: str, profile: dict[str, Any]) -> bool:
    return bool(nl.find_payment(text, profile.get("payment_methods", {})))

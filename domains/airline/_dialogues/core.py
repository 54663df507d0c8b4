"""The airline reference agent's dialogue machinery: what a dialogue yields, what the agent learnt, the main loop.

The conversation is a generator (:data:`Dialogue`) that yields tool calls and messages and receives results and
replies; :class:`DialogueCore` holds the primitives every request's dialogue uses (call a tool, say something and
hear the reply, confirm a write, transfer), the main loop and the look-ups shared by several requests.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from domains.airline import _understand as nl
from domains.airline._answers import (
    ANYTHING_ELSE,
    TRANSFER_TEXT,
    fmt,
)
from simulator import TausimError
from simulator.agents.kit import RETRIES, FaultDraws, is_closing, is_no, is_retryable_error, is_yes

__all__ = ["LOOP_REPEATS", "MAX_REASKS", "Call", "DialogueCore", "Dialogue", "Result", "Say", "Session"]

MAX_REASKS = 3
"""Most ``repeat_question`` re-asks in a row before the agent's own message (each one a drawn opportunity)."""
LOOP_REPEATS = 3
"""Extra identical calls a ``repeat_call`` fault adds (with the domain's threshold of 2, a fourth call is a loop)."""


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass
class Say:
    text: str
    transfer_summary: str | None = None
    """When set, the message also calls the transfer tool with this summary (the conversation ends)."""


@dataclass
class Result:
    ok: bool
    content: str

    def json(self) -> Any:
        return json.loads(self.content) if self.ok else None


Dialogue = Generator["Call | Say", Any, Any]


class _Transferred(TausimError):  # noqa: N818 - control flow, not an error
    """Raised inside the dialogue after the transfer message; never leaves the agent (see :mod:`simulator.errors`)."""


@dataclass
class Session:
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


class DialogueCore:
    """The conversation's primitives and main loop; the dialogues of each request are the subclasses'.

    A dialogue is a generator: it yields a :class:`Call` or a :class:`Say` and is sent back the tool's
    :class:`Result` or the member's reply. :meth:`_handle` (the final agent's) runs the dialogue of one request.

    Args:
        faults: the agent's fault draws.
    """

    def __init__(self, faults: FaultDraws):
        self._faults = faults
        self._s = Session()
        self._messages_out = 0
        self._pending_info: list[str] = []
        self._lookups: dict[tuple[str, str], Result] = {}

    def _handle(self, kind: str, request: str) -> Dialogue:
        """Run the dialogue serving one request of ``kind``."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------- faults
    def _draw(self, knob: str, **details: Any) -> bool:
        """Draw one opportunity of ``knob``; record and return True when the fault is injected."""
        return self._faults.draw(knob, turn=self._messages_out, **details)

    # ---------------------------------------------------------------------------------------------- primitives

    # ---------------------------------------------------------------------------------------------- primitives
    def _call(self, name: str, **arguments: Any) -> Dialogue:
        """Call one tool and return its :class:`Result`.

        A look-up already made since the last write is answered from memory (a member who insists does not make
        the agent read the same record again); a look-up may be repeated by the ``repeat_call`` knob; a call answered
        by a retryable error (a busy service, a timeout) is made again, at most ``RETRIES`` times.
        """
        read = name.startswith(("get_", "search_", "list_"))
        key = (name, json.dumps(arguments, sort_keys=True))
        if read and key in self._lookups:
            return self._lookups[key]
        result = yield Call(name, arguments)
        for _ in range(RETRIES):  # a busy service or a timeout (environment faults): the same call again
            if result.ok or not is_retryable_error(result.content):
                break
            result = yield Call(name, dict(arguments))
        if not read:
            self._lookups.clear()
            return result
        if self._draw("repeat_call", tool=name):
            for _ in range(LOOP_REPEATS):
                result = yield Call(name, dict(arguments))
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
            reply = yield Say(ask)
            self._hear(reply)
        reply = yield Say(self._with_info(text))
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
        yield Say(self._with_info(f"{why} {TRANSFER_TEXT}"), transfer_summary=summary)
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
            yield Say("This conversation has been handed over to a human agent.")

    def _conversation(self, opening: str) -> Dialogue:
        s = self._s
        self._hear(opening)
        request = opening
        unclear = 0
        while True:
            kinds = nl.intents_in(request)
            if not kinds and s.resume_trip is not None and nl.names_payment(request, s.profile):
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
            if kinds == ["info"] and s.resume_trip is not None and nl.names_payment(request, s.profile):
                kinds = ["book"]
            if s.user_id is None:
                yield from self._identify()
            for kind in kinds:
                if self._draw("early_transfer", request=kind):
                    yield from self._transfer("Let me get you to the right person.",
                                              f"User {s.user_id} asks: {request[:300]}")
                yield from self._handle(kind, request)
            request = yield from self._say(ANYTHING_ELSE)

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
                           f"${fmt(amount)}.")
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
            text += (f" Altogether, the changes in this conversation cost you ${fmt(net)}." if net >= 0 else
                     f" Altogether, you get ${fmt(-net)} back from the changes in this conversation.")
        self._tell(text)

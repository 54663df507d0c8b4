"""A rule-based agent for the returns desk (``--agent reference``), with fault knobs.

It talks through the same :class:`~simulator.Agent` interface as an LLM agent and sees only what one sees: the
conversation, the tool results and the tool schemas. It never reads the task's scenario, gold actions or
assertions. It understands the customer by a few general patterns (e-mail addresses, a full name with a zip
code, order ids written after "order", the reason after "reason"/"because") and the shared dialogue cues
(the cues `is_yes`, `is_no`, `is_closing` of `simulator.agents.kit`), and follows ``policy.md``:

1. identifies the customer (e-mail, else full name and zip code) and reads the account before anything else;
   acts only on the customer's own orders;
2. reads the order (``get_order``) and checks the policy's rules in their order of precedence, refusing with
   the rule's reason when one forbids the request: a refund needs a return the warehouse has **received** and
   no earlier refund; a return needs a delivered order inside the 30-day window and no return yet; a
   cancellation needs a processing order; ``receive_return`` is never called, whatever the customer asks;
3. states the whole plan of writes with its values (order, amount, payment account, approval step above $200,
   the notification template) and asks "Shall I proceed (yes/no)?"; one yes covers the plan it names;
4. on the yes makes the writes one at a time in the policy's order (approval, then the refund with the
   approval id, then exactly one notification e-mail), reports the result ("Done: ...") and asks whether there
   is anything else; on a no it reads the restated request and plans again (twice at most);
5. transfers to a human agent only when the customer asks for one (policy), and otherwise explains what it
   cannot do.

Requests it understands: refund, return, cancel, "I don't want order N any more" (a cancellation while the
order is processing, a return once delivered) and questions about an order's status.

Fault knobs (:data:`FAULT_KNOBS`, knob -> rate in [0, 1]); each is drawn at each opportunity from the agent's own
generator seeded by the trial seed, and every injected fault is recorded in ``metadata["faults"]`` as
``{"fault": knob, "step": n, "detail": str}``:

- ``skip_confirmation`` (each plan of writes): writes without asking;
- ``wrong_item`` (each plan): refunds 10% less than the refundable amount, or acts on another order of the
  customer (a return or cancellation);
- ``repeat_call`` (each first look-up): repeats the same look-up three more times (a loop);
- ``early_transfer`` (each new request): transfers to a human agent before trying;
- ``forget_constraint`` (each refund above the approval threshold): skips the supervisor approval;
- ``repeat_question`` (each question once the customer is identified): asks again for the e-mail or the order id
  already given instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.agents.kit import (
    ANYTHING_ELSE,
    REFERENCE_KNOBS,
    AgentTurn,
    ReferenceAgentBase,
    TrialContext,
    check_fault_rates,
    is_closing,
    is_no,
    is_yes,
)

__all__ = ["APPROVAL_THRESHOLD", "FAULT_KNOBS", "ReturnsReferenceAgent", "check_faults"]

FAULT_KNOBS = REFERENCE_KNOBS
"""The fault knobs the agent knows (see the module docstring)."""
APPROVAL_THRESHOLD = 200.0
"""Refunds above this amount (USD) need a supervisor approval first (``policy.md``; the agent reads the policy's
number, not the tools module)."""
MAX_REJECTIONS = 2
"""Plans the customer may turn down for one request before the agent gives the request up."""

ASK_IDENTITY = ("Could you give me your email address, or your full name and zip code, so I can find your "
                "account?")
ASK_ORDER = "Which order is it? Please give me the order id."

_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
_ZIP_RE = re.compile(r"\bzip(?:\s*+code)?(?:\s++is)?\s*+[:#]?\s*+(\d{5})\b", re.IGNORECASE)
_NAME_RE = re.compile(r"(?:\b(?i:i'm|i am|my name is|the name is|name is|it's|this is)\s+|^\W*|,\s*)"
                      r"([A-Z][a-z'-]++(?:\s++[A-Z][a-z'-]++){1,5})\s*+(?:,|\band\b|\bzip\b)")
"""A full name (capitalised words) introduced ("I'm ...", "my name is ...") or ahead of the zip code."""
_ORDER_RE = re.compile(r"\border(?:\s++(?:id|number|no\.?))?(?:\s++is)?\s*+[:#]?\s*+([A-Za-z]{0,3}\d{3,})\b",
                       re.IGNORECASE)
_TOKEN_RE = re.compile(r"#?\b([A-Za-z]{0,3}\d{3,})\b")
_REASON_RE = re.compile(r"(?:\breason(?:\s++is)?\s*+:?|\bbecause\b|:)\s*+(?P<reason>[^:]{1,500}?)\s*+[.!]*+\s*+$",
                        re.IGNORECASE)
_OTHER_DESTINATION_RE = re.compile(r"\b(?:another|different|other|new)\s+(?:credit\s+)?(?:card|account|bank)\b",
                                   re.IGNORECASE)

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("transfer", re.compile(r"\b(?:human|real person|representative|supervisor|manager)\b", re.IGNORECASE)),
    ("refund", re.compile(r"\brefund|\bmoney back\b|\breimburs", re.IGNORECASE)),
    ("cancel", re.compile(r"\bcancel", re.IGNORECASE)),
    ("return", re.compile(r"\breturn\b|\bsend (?:it |them |this |that )?back\b|\bsend back\b", re.IGNORECASE)),
    ("unwanted", re.compile(r"\b(?:don'?t|do not|no longer)\s+(?:want|need)\b|\bchanged my mind\b",
                            re.IGNORECASE)),
    ("status", re.compile(r"\bstatus\b|\bwhere is\b|\bwhen\b|\bhow long\b", re.IGNORECASE)),
)
"""Request kinds by the words that name them, first match first (a refund request often mentions the return)."""
_MARK_RECEIVED_RE = re.compile(r"\b(?:mark|record|register|set|log)\b[^.?!]{0,200}\b(?:received|arrived)\b",
                               re.IGNORECASE)
"""A request to record a return's arrival, which only the warehouse may do (``receive_return``)."""
_ACK_RE = re.compile(r"^\W*(?:ok|okay|alright|i see|thanks|thank you|got it|fine|understood)\b", re.IGNORECASE)
_LEAD_NO_RE = re.compile(r"^\W*(?:no|nope|nah|wait)\b[^.!?]*[.!?]\s*", re.IGNORECASE)


def check_faults(faults: Mapping[str, float]) -> dict[str, float]:
    """Validate fault knob rates (see :func:`simulator.agents.kit.check_fault_rates`).

    Args:
        faults: knob -> rate.

    Returns:
        A copy with the rates as floats.

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """
    return check_fault_rates(faults, FAULT_KNOBS, "returns reference agent")


def _money(x: float) -> str:
    return f"${x:,.2f}"


@dataclass
class _Request:
    """One request of the customer being served."""

    kind: str | None
    text: str
    order_id: str | None = None
    reason: str | None = None
    mark_received: bool = False
    other_destination: bool = False
    rejections: int = 0
    order_asks: int = 0
    done: bool = False


class ReturnsReferenceAgent(ReferenceAgentBase):
    """The returns desk's reference agent for one trial (see the module docstring).

    Args:
        ctx: the trial context; the agent reads only ``ctx.seed`` (its fault draws come from its own generator,
            a stream apart from ``ctx.rng``).
        faults: fault knob -> rate in [0, 1] (see :data:`FAULT_KNOBS`); None: no faults.

    Attributes:
        metadata: ``{"faults": [{"fault": knob, "step": n, "detail": str}, ...]}``, the injected faults.

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    LOOKUPS = ("get_", "find_")

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None = None):
        super().__init__(ctx, faults, known=FAULT_KNOBS, who="returns reference agent", salt=0x5E7C2D)
        # identity
        self._email: str | None = None
        self._name: str | None = None
        self._zip: str | None = None
        self._tried: set[tuple[str, ...]] = set()
        self._customer_id: str | None = None
        self._customer: dict[str, Any] | None = None
        self._orders: dict[str, dict[str, Any]] = {}
        # dialogue
        self._requests: list[_Request] = []
        self._answer: str | None = None
        self._plan: list[tuple[str, dict[str, Any]]] = []
        self._confirmed = False
        self._done: list[str] = []
        self._failed: str | None = None
        self._transfer: str | None = None
        self._reasked = False

    # ------------------------------------------------------------------------------------------ plumbing
    def _say(self, text: str, question: bool = True) -> AgentTurn:
        if question and self._customer_id is not None:
            request = self._current()
            target = "order id" if request is not None and request.order_id else "email"
            if self._draw("repeat_question", f"asked again for the {target}"):
                self._reasked = True  # the answer to this question is not the answer to the agent's own question
                return self._text_turn(ASK_ORDER if target == "order id" else ASK_IDENTITY)
        return self._text_turn(text)

    # ------------------------------------------------------------------------------------------ reading
    def _absorb_tool(self, name: str, args: dict[str, Any], data: Any, ok: bool, content: str) -> None:
        if name in ("find_customer_by_email", "find_customer_by_name_zip"):
            if ok and isinstance(data, str) and data:
                self._customer_id = data
        elif name == "get_customer" and isinstance(data, dict):
            self._customer = data
        elif name == "get_order":
            self._orders[str(args.get("order_id"))] = data if isinstance(data, dict) else {"missing": True}
        elif name and name != "transfer_to_human_agents":
            self._after_write(name, args, data, ok, content)

    def _after_write(self, name: str, args: dict[str, Any], data: Any, ok: bool, content: str) -> None:
        oid = str(args.get("order_id"))
        self._orders.pop(oid, None)  # stale: read it again before another decision on it
        if not ok:
            self._failed = f"the system refused to {name.replace('_', ' ')} for order {oid} ({content})"
            self._plan = []
            return
        if name == "request_refund_approval" and isinstance(data, dict):
            self._done.append(f"a supervisor approved the refund of {_money(float(data['amount']))} "
                              f"(approval {data['approval_id']})")
            for _, planned in self._plan:
                if "approval_id" in planned:
                    planned["approval_id"] = data["approval_id"]
        elif name == "issue_refund" and isinstance(data, dict):
            self._done.append(f"the refund of {_money(float(data['amount']))} for order {oid} has been issued "
                              f"(refund {data['refund_id']}) to your original payment method; the money arrives "
                              "within 5 business days")
        elif name == "open_return":
            self._done.append(f"the return for order {oid} has been opened ({content})")
        elif name == "cancel_order":
            self._done.append(f"order {oid} has been cancelled and its total goes back to your original payment "
                              "method")
        elif name == "send_email":
            self._done.append(f"I've sent you the {args.get('template')} email")
        else:
            self._done.append(f"{name.replace('_', ' ')}: {content}")

    def _absorb_user(self, text: str) -> None:
        self._answer = "yes" if is_yes(text) else "no" if is_no(text) else None
        if self._reasked:
            self._reasked = False
            self._answer = None
            return
        if self._customer_id is None:
            email = _EMAIL_RE.search(text)
            if email:
                self._email = email.group(0).rstrip(".")
            zip_code = _ZIP_RE.search(text)
            if zip_code:
                self._zip = zip_code.group(1)
            elif self._asking == "identity" and re.fullmatch(r"\W*(\d{5})\W*", text):
                self._zip = text.strip(" .!")
            name = _NAME_RE.search(text)
            if name:
                self._name = name.group(1)
        request = self._current()
        if self._plan and not self._confirmed:
            if self._answer == "yes":
                self._confirmed = True
                return
            self._plan = []
            if request is not None:
                request.rejections += 1
                restated = _LEAD_NO_RE.sub("", text)
                self._read_into(request, restated, replace=True)
            return
        if request is not None and (self._asking == "order_id" or request.kind is None):
            self._read_into(request, text)
            return
        if request is not None and self._asking == "reason":
            m = _REASON_RE.search(text)
            reason = (m.group("reason") if m else text.strip(" .!")).strip().lower()
            # the reason is the first sentence: a persona's politeness after it ("... thank you") is not part of it
            request.reason = re.split(r"[.!?]\s+", reason, maxsplit=1)[0].strip(" .!")
            return
        if self._asking == "anything_else" and (is_closing(text) or self._answer == "no"):
            self._closed = True
            return
        kind = self._kind_of(text)
        if kind is None and (self._answer is not None or _ACK_RE.search(text)):
            return  # an acknowledgement, or an answer to no question: nothing new
        if kind is None and request is not None:
            self._read_into(request, text)
            return
        self._requests.append(self._new_request(text, kind))

    def _kind_of(self, text: str) -> str | None:
        for kind, pattern in _KINDS:
            if pattern.search(text):
                return kind
        return None

    def _order_ids(self, text: str) -> list[str]:
        """Order ids in the text: after "order", any id of the customer's orders, or a lone id when asked."""
        found = [m.group(1).upper() for m in _ORDER_RE.finditer(text)]
        own = [str(o) for o in (self._customer or {}).get("orders", [])]
        found += [t for t in (m.group(1).upper() for m in _TOKEN_RE.finditer(text)) if t in own]
        if not found and self._asking == "order_id":
            found = [m.group(1).upper() for m in _TOKEN_RE.finditer(_EMAIL_RE.sub(" ", text))
                     if not (len(m.group(1)) == 5 and m.group(1) == self._zip)]
        return list(dict.fromkeys(found))

    def _new_request(self, text: str, kind: str | None) -> _Request:
        request = _Request(kind=kind, text="")
        self._read_into(request, text)
        return request

    def _read_into(self, request: _Request, text: str, replace: bool = False) -> None:
        ids = self._order_ids(text)
        if ids and (replace or request.order_id is None or self._asking == "order_id"):
            request.order_id = ids[0]
        kind = self._kind_of(text)
        if kind is not None and (replace or request.kind is None):
            request.kind = kind
        request.text = f"{request.text} {text}".strip()
        request.mark_received = request.mark_received or bool(_MARK_RECEIVED_RE.search(text))
        request.other_destination = request.other_destination or bool(_OTHER_DESTINATION_RE.search(text))
        because = re.search(r"\bbecause\s+(?!i'?d\b|i (?:want|need|would|am writing)\b)(?:it\s+)?([^.!?]+)", text,
                            re.IGNORECASE)
        if because:
            request.reason = because.group(1).strip().lower()

    def _current(self) -> _Request | None:
        return next((r for r in self._requests if not r.done), None)

    # ------------------------------------------------------------------------------------------ deciding
    def _decide(self) -> AgentTurn:
        if self._transfer is not None:
            summary, self._transfer = self._transfer, None
            turn = self._call("transfer_to_human_agents", {"summary": summary})
            turn.message.content = "I'm transferring you to a human agent."
            return turn
        if self._plan and self._confirmed:
            name, args = self._plan.pop(0)
            return self._call(name, args)
        if self._confirmed or self._failed is not None:
            return self._report()
        if self._customer_id is None:
            return self._authenticate()
        if self._customer is None:
            return self._call("get_customer", {"customer_id": self._customer_id})
        request = self._current()
        self._answer = None
        if request is None:
            return self._between_requests(served=bool(self._requests))
        return self._serve(request)

    def _authenticate(self) -> AgentTurn:
        if self._email and ("email", self._email) not in self._tried:
            self._tried.add(("email", self._email))
            return self._call("find_customer_by_email", {"email": self._email})
        if self._name and self._zip and ("name_zip", self._name, self._zip) not in self._tried:
            self._tried.add(("name_zip", self._name, self._zip))
            return self._call("find_customer_by_name_zip", {"name": self._name, "zip": self._zip})
        self._asking = "identity"
        if self._tried:
            return self._say("I could not find an account with those details. " + ASK_IDENTITY, question=False)
        return self._say(ASK_IDENTITY, question=False)

    def _report(self) -> AgentTurn:
        parts = "; ".join(self._done)
        request = self._current()
        if request is not None:
            request.done = True
        text = (f"Done: {parts}." if parts else "")
        if self._failed is not None:
            text += f" I'm sorry, {self._failed}."
        self._done, self._failed, self._confirmed, self._plan = [], None, False, []
        self._asking = "anything_else"
        return self._say(f"{text.strip()} {ANYTHING_ELSE}", question=False)

    def _give_up(self, request: _Request, text: str) -> AgentTurn:
        request.done = True
        self._asking = "anything_else"
        return self._say(f"{text} {ANYTHING_ELSE}", question=False)

    def _serve(self, request: _Request) -> AgentTurn:
        if request.kind not in ("transfer", None) and request.rejections == 0 and not request.done and \
                self._draw("early_transfer", f"transferred the {request.kind} request before trying"):
            request.done = True
            self._transfer = f"Customer {self._customer_id}: {request.text.strip()[:300]}"
            return self._decide()
        if request.kind == "transfer":
            request.done = True
            self._transfer = f"Customer {self._customer_id} asks for a human agent: {request.text.strip()[:300]}"
            return self._decide()
        if request.rejections > MAX_REJECTIONS:
            return self._give_up(request, "I'm sorry, I can't process this request: I could not work out what you "
                                          "would like me to do, so I have made no change.")
        if request.order_id is None:
            if request.order_asks >= 2:
                return self._give_up(request, "I'm sorry, I can't go on without the order id.")
            request.order_asks += 1
            self._asking = "order_id"
            return self._say(ASK_ORDER)
        oid = request.order_id
        if oid not in [str(o) for o in (self._customer or {}).get("orders", [])]:
            return self._give_up(request, f"I'm sorry, I can't help with order {oid}: it is not an order on your "
                                          "account, and I can only act on your own orders.")
        order = self._orders.get(oid)
        if order is None:
            return self._call("get_order", {"order_id": oid})
        if order.get("missing"):
            return self._give_up(request, f"I'm sorry, I could not find order {oid}.")
        kind = request.kind
        if kind == "unwanted":
            kind = {"processing": "cancel", "delivered": "return"}.get(str(order.get("status")), "return")
        if kind == "refund":
            return self._refund(request, order)
        if kind == "return":
            return self._return(request, order)
        if kind == "cancel":
            return self._cancel(request, order)
        if kind == "status":
            return self._give_up(request, self._describe(order))
        self._asking = "what"
        request.kind = None
        return self._say(f"{self._describe(order)} What would you like me to do with order {oid}: return it, "
                         "refund it or cancel it?")

    # ------------------------------------------------------------------------------------------ policy
    @staticmethod
    def _describe(order: Mapping[str, Any]) -> str:
        ret = order.get("return") or {}
        text = (f"Order {order['order_id']} ({order.get('item')}, {_money(float(order.get('total', 0)))}) is "
                f"{order.get('status')}.")
        if ret:
            text += f" Its return is {ret.get('status')}."
        for r in order.get("refunds") or []:
            text += f" A refund of {_money(float(r['amount']))} was issued ({r['refund_id']})."
        return text

    def _refund(self, request: _Request, order: Mapping[str, Any]) -> AgentTurn:
        oid = str(order["order_id"])
        ret = order.get("return") or {}
        mark = ("I can't mark a return as received: only the warehouse records that a parcel arrived. "
                if request.mark_received and ret.get("status") != "received" else "")
        if order.get("refunds"):
            done = "; ".join(f"{_money(float(r['amount']))} ({r['refund_id']})" for r in order["refunds"])
            return self._give_up(request, f"{mark}I can't refund order {oid} again: a refund of {done} was already "
                                          "issued to your original payment method. It can take up to 5 business "
                                          "days to reach your account.")
        if order.get("status") == "cancelled":
            return self._give_up(request, f"{mark}I can't refund order {oid}: it was cancelled, and its total "
                                          "already went back to your original payment method.")
        if not ret:
            extra = (" If you want to send it back, I can open a return for it." if order.get("status") == "delivered"
                     and order.get("return_window_open") else "")
            return self._give_up(request, f"{mark}I can't refund order {oid}: a refund follows a return that our "
                                          f"warehouse has received, and the order has no return.{extra}")
        if ret.get("status") != "received":
            return self._give_up(request, f"{mark}I can't refund order {oid} yet: our warehouse has not received "
                                          "the returned parcel. The refund to your original payment method follows "
                                          "as soon as it arrives.")
        amount = round(float(order.get("refundable", order.get("total", 0))), 2)
        if self._draw("wrong_item", f"refunded 10% less than {amount}"):
            amount = round(amount * 0.9, 2)
        plan: list[tuple[str, dict[str, Any]]] = []
        steps = []
        if amount > APPROVAL_THRESHOLD and not self._draw("forget_constraint", "refund above the threshold "
                                                                               "without approval"):
            plan.append(("request_refund_approval", {"order_id": oid, "amount": amount}))
            plan.append(("issue_refund", {"order_id": oid, "amount": amount, "approval_id": ""}))
            steps.append(f"ask a supervisor to approve a refund of {_money(amount)} for order {oid} (refunds above "
                         f"{_money(APPROVAL_THRESHOLD)} need one)")
            steps.append(f"refund {_money(amount)} with that approval")
        else:
            plan.append(("issue_refund", {"order_id": oid, "amount": amount}))
            steps.append(f"refund {_money(amount)} for order {oid} ({order.get('item')})")
        plan.append(("send_email", {"order_id": oid, "template": "refund_confirmation"}))
        dest = "to your original payment method" + (", since refunds always go back to it" if
                                                     request.other_destination else "")
        text = (f"Your return of order {oid} has been received. I will {', then '.join(steps)} {dest}, and then "
                "send you one refund_confirmation email.")
        return self._propose(plan, text)

    def _return(self, request: _Request, order: Mapping[str, Any]) -> AgentTurn:
        oid = str(order["order_id"])
        status = str(order.get("status"))
        if status == "shipped":
            return self._give_up(request, f"I'm sorry, order {oid} can't be returned yet: it is shipped but not "
                                          "delivered. Please wait for the delivery; you can return it then.")
        if status == "processing":
            return self._give_up(request, f"I'm sorry, order {oid} can't be returned: it has not shipped yet. "
                                          "I can cancel it instead if you like.")
        if status != "delivered":
            return self._give_up(request, f"I'm sorry, order {oid} can't be returned: it is {status}.")
        if order.get("return"):
            return self._give_up(request, f"I'm sorry, order {oid} can't be returned again: it already has a return "
                                          f"(status {order['return'].get('status')}), and an order has at most one.")
        if not order.get("return_window_open"):
            return self._give_up(request, f"I'm sorry, order {oid} can't be returned: it was delivered on "
                                          f"{order.get('delivered_at')}, more than 30 days ago, so the return window "
                                          "is closed.")
        if request.reason is None:
            self._asking = "reason"
            return self._say(f"Order {oid} ({order.get('item')}) was delivered on {order.get('delivered_at')} and "
                             "can be returned. What is the reason for the return?")
        target = self._other_order(oid, "opened a return for another order")
        plan = [("open_return", {"order_id": target, "reason": request.reason}),
                ("send_email", {"order_id": target, "template": "return_instructions"})]
        return self._propose(plan, f"I will open a return for order {target} ({order.get('item')}) with the reason "
                                   f"'{request.reason}', and then send you the return_instructions email with the "
                                   "label.")

    def _cancel(self, request: _Request, order: Mapping[str, Any]) -> AgentTurn:
        oid = str(order["order_id"])
        status = str(order.get("status"))
        if status != "processing":
            extra = " Once it is delivered you can return it." if status == "shipped" else ""
            return self._give_up(request, f"I can't cancel order {oid}: it is {status}, and only orders that have "
                                          f"not shipped yet (processing) can be cancelled.{extra}")
        target = self._other_order(oid, "cancelled another order")
        plan = [("cancel_order", {"order_id": target}),
                ("send_email", {"order_id": target, "template": "order_cancelled"})]
        return self._propose(plan, f"I will cancel order {target} ({order.get('item')}); its total of "
                                   f"{_money(float(order.get('total', 0)))} goes back to your original payment "
                                   "method. Then I will send you the order_cancelled email.")

    def _other_order(self, oid: str, detail: str) -> str:
        others = [str(o) for o in (self._customer or {}).get("orders", []) if str(o) != oid]
        if others and self._draw("wrong_item", detail):
            return others[int(self._faults.rng.integers(len(others)))]
        return oid

    def _propose(self, plan: list[tuple[str, dict[str, Any]]], text: str) -> AgentTurn:
        self._plan = plan
        self._asking = "confirm"
        if self._draw("skip_confirmation", f"{plan[0][0]} without asking"):
            self._confirmed = True
            return self._decide()
        self._confirmed = False
        return self._say(f"{text} Shall I proceed (yes/no)?")

"""A rule-based customer-service agent for the retail domain (``--agent reference``).

It talks through the same :class:`~simulator.Agent` interface as an LLM agent and sees only what
one sees: the conversation, the tool results, the tool schemas and the policy. It never reads the task's
gold actions, required outputs or scenario. It understands the user by patterns over plain English (order ids
``#W...``, e-mail addresses, names with zip codes, item descriptions matched against the product names and
option values of the looked-up orders and products, payment kinds, addresses written as ``ADDRESS1, ADDRESS2,
CITY, STATE ZIP, COUNTRY``, cancellation reasons) and follows the retail policy: it authenticates the user,
looks up what it needs, refuses what the policy forbids (saying why), states every write with its key values
and waits for an explicit yes, performs the write, reports the result with the money that moves, and asks
whether there is anything else. Requests no tool can serve go to a human agent.

Fault knobs (:data:`FAULT_KNOBS`) make it commit known mistakes at known rates, each drawn at every
opportunity from a generator seeded by the trial seed; what it injected is in ``metadata["faults"]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

__all__ = ["FAULT_KNOBS", "RetailReferenceAgent", "check_faults"]

FAULT_KNOBS = REFERENCE_KNOBS
"""Fault knobs: ``skip_confirmation`` writes without asking; ``wrong_item`` picks a wrong item or variant;
``repeat_call`` repeats a look-up until it is a loop (four identical calls); ``early_transfer`` transfers a new
request to a human before trying; ``forget_constraint`` drops one requested option value when choosing a
variant; ``repeat_question`` asks again for the identity or order id already given instead of its question."""

ASK_IDENTITY = ("Could you give me your email address, or your first and last name with your zip code, so I can "
                "find your account?")
ASK_ORDER = "Which order is it? Please give the order id (like #W0000000)."

_ORDER_RE = re.compile(r"#?\b(W\d{7})\b", re.IGNORECASE)
_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
"""An email; tried only where a run of word characters, dots, pluses and hyphens starts (linear: a long
unbroken token is scanned once, not from each of its characters)."""
_ZIP_RE = re.compile(r"\bzip(?:\s*+code)?(?:\s++is)?\s*+[:#]?\s*+(\d{5})\b", re.IGNORECASE)
_NAME_RE = re.compile(r"\b(?i:i'm|i am|my name is|this is|name is|name:|it's|it is)\s+([A-Z][a-z'-]+)\s+"
                      r"([A-Z][a-z'-]+)")
_LOOSE_NAME_RE = re.compile(r"\b([A-Za-z][a-z'-]{1,40}+)\s+([A-Za-z][a-z'-]{1,40}+)\s*+,?\s*+(?:zip(?:\s*+code)?\s*+)?"
                            r"(\d{5})\b")
"""A name right before a zip code ("Samuel Laine, 83782", "samuel laine 83782"); names are title-cased. A name
word has at most 41 letters (so a long hyphenated token costs linear time, not a rescan from every hyphen)."""
_ADDRESS_RE = re.compile(
    r"(?<![\w#-])(?P<a1>\d+\s[^,\n]{0,100}?),\s*(?:(?P<a2>[^,\n]{1,100}?),\s*)?"
    r"(?P<city>[A-Za-z][A-Za-z .'-]{0,60}?),\s*(?P<state>[A-Z]{2})\s+"
    r"(?P<zip>\d{5})(?:\s*,\s*(?P<country>[A-Z][A-Za-z]*(?: [A-Z][a-z]+){0,2})\b)?")
_ADDRESS_REF_RE = re.compile(
    r"\b(?:to|as|use|using)\s+(?:the\s+|my\s+)?(?:same\s+)?(?:shipping\s+|delivery\s+)?"
    r"address(?:\s+in\s+(?P<city>[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,4}))?\s+(?:that|which|where|of)\s+(?:my\s+)?"
    r"(?:other\s+)?order\s+(?:(?P<oid>#?W\d{7})|with\s+(?P<items>.{1,200}?))"
    r"(?:\s+(?:ships?|is shipped|was shipped|is going|goes|went|was sent|is sent|is delivered|was delivered)\b"
    r"(?:\s+to)?|[.?!;]|$)", re.IGNORECASE)
"""A new address named by the order that ships there: "to the address (in CITY) that my order with X ships to"
(only after "to"/"as"/"use": "change the address of my order with X" names the order being changed)."""
_PARTIAL_ADDRESS_RE = re.compile(
    r"\b(?P<a2>(?:suite|apt\.?|apartment|unit|ste\.?|floor|room)\s*+#?\s*+\d\w*)\b[^().;]{0,20}?\(?\s*(?:and\s+|with\s+)?"
    r"(?:the\s+)?rest\s+(?:of\s+(?:the|my)\s+address\s+)?(?:stays?|is|remains?|keeps?)\s+(?:the\s+)?same",
    re.IGNORECASE)
"""A partial address: a new second line, the rest unchanged ("Suite 641 (the rest of the address stays the
same)")."""
_RECENT_ORDER_RE = re.compile(
    r"\b(?:most recent(?:ly placed)?|latest|newest|last)\s+order\b|"
    r"\border\s+(?:that\s+)?(?:i\s+)?(?:have\s+)?(?:most recently|just|recently|last)\s+(?:placed|made|ordered)\b",
    re.IGNORECASE)
"""The order the user placed last (the last of the account's orders)."""
_UNKNOWN_RE = re.compile(r"\b(?:don'?t|do not) (?:know|have|remember)|no idea|not sure", re.IGNORECASE)
_NEGATED_RE = re.compile(r"\b(?:instead of|rather than|not)\s++(?:to\s+)?(?:the\s+|my\s+|your\s+|a\s+)?"
                         r"[^,.;]{0,200}?(?:card|paypal|account)\b", re.IGNORECASE)
_TRANSFER_RE = re.compile(
    r"never (?:arrived|came|got|received)|didn't (?:arrive|get it|receive)|did not (?:arrive|receive)|"
    r"\bmissing\b|\blost\b|\bstolen\b|investigat|\bhuman\b|real person|representative|supervisor|manager|"
    r"(?:change|update|modify)\s+(?:the\s+|my\s+)?(?:e-?mail|phone|name)|new e-?mail|e-?mail address on|"
    r"\bdamaged\b|\bbroken\b|\bcomplain|\bundo\b|\bun-?cancel|\breinstate|\brestore", re.IGNORECASE)
_KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cancel", re.compile(r"\bcancel(?!l?ed\s+(?:order|one)\b)", re.IGNORECASE)),
    ("return", re.compile(r"\breturn(?!\s+instructions)\b", re.IGNORECASE)),
    ("item_change", re.compile(r"\b(?:exchange|swap|switch|replace|trade)\b", re.IGNORECASE)),
    ("modify_payment", re.compile(r"\b(?:pay(?:ing)? for|payment method|pay (?:it|order|the order|with|using)|"
                                  r"charged? (?:it |the order )?(?:to|on)|paid with)\b", re.IGNORECASE)),
    ("address", re.compile(r"\baddress\b|\bship(?:ped)?\b|\bsend\b|\bsent\b|\bmoving\b|\bmoved\b", re.IGNORECASE)),
    ("item_change", re.compile(r"\b(?:change|instead)\b", re.IGNORECASE)),
    ("info", re.compile(r"\b(?:balance|how much|how many|status|total|what|what's|which|where is|when will|"
                        r"available|in stock|options|i wonder|(?:like|want|need) to know|tell me|whether)\b",
                        re.IGNORECASE)),
)
_ACTION_RE = re.compile(r"\b(?:cancel\w*|return|exchange|swap|switch|replace|update|change|modify|ship|send|mov\w+|"
                        r"pay|charge|balance|how much|what|status|total)\b", re.IGNORECASE)
_NOT_NAMES = frozenset({"hi", "hello", "hey", "dear", "is", "code", "zip", "my", "and", "name", "it's", "im", "i'm",
                        "am", "the", "in", "at", "of", "to"})
"""Words before a zip code that are not a name ("my zip is 83782", "zip code 83782")."""
_REASONS = (("ordered by mistake", re.compile(r"by mistake|\bmistake|accident", re.IGNORECASE)),
            ("no longer needed", re.compile(r"no longer need|don'?t need|do not need|not needed|no need",
                                            re.IGNORECASE)))


def check_faults(faults: Mapping[str, float]) -> dict[str, float]:
    """Validate fault knob rates (see :func:`simulator.check_fault_rates`).

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """
    return check_fault_rates(faults, FAULT_KNOBS, "reference agent")


def _money(x: float) -> str:
    return f"${x:,.2f}"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("enamelled", "enameled")).strip()


def _mentions(text: str, phrase: str) -> bool:
    """True when ``phrase`` occurs in ``text`` as whole words (case-insensitive, plural 's' allowed)."""
    return re.search(r"(?<![\w.-])" + re.escape(_norm(phrase)) + r"(?:s|es)?(?![\w-])", _norm(text)) is not None


_GENERIC_WORDS = frozenset({"standing", "electric", "kitchen", "ceramic", "acoustic", "camping", "machine", "winter"})


def _name_forms(name: str) -> set[str]:
    """Return the ways a product name may be written.

    Whole, its last two words ("knife set"), its last word when it has four letters or more ("mixer"), or a
    distinctive long word ("microwave").
    """
    words = name.lower().split()
    forms = {name.lower(), " ".join(words[-2:])}
    if len(words[-1]) >= 4:
        forms.add(words[-1])
    return forms | {w for w in words if len(w) >= 6 and w not in _GENERIC_WORDS}


def _name_mentioned(text: str, name: str) -> bool:
    """True when a product name is mentioned in one of its :func:`_name_forms`."""
    return any(_mentions(text, f) for f in _name_forms(name))


def _change_parts(text: str, name: str) -> list[str]:
    """The parts of a change request about product ``name``, one per item to change.

    "the tea kettle for a tea kettle with material ceramic and the tea kettle for a tea kettle with capacity 1.5
    liters" has two: each starts at a mention of the old item (one followed by "for"/"into"/"to a"/"->") and runs
    to the next such mention.
    """
    low = _norm(text)
    word = re.escape(name.lower().split()[-1])
    starts = [m.start() for m in re.finditer(r"\b" + word + r"s?\b(?:\s*+\([^)]{0,200}\))?\s+(?:for|into|->|to an?)\s",
                                            low)]
    return [low[a:b] for a, b in zip(starts, [*starts[1:], len(low)], strict=True)] if starts else []


def _split_change(text: str, name: str) -> tuple[str, str]:
    """Split a change request about product ``name`` into the old item's words and the new item's words.

    "X for Y", "X to Y", "X -> Y": X describes the old item, Y the new one; "Y instead of X": the reverse. The
    separator is looked for after the product name.
    """
    low = _norm(text)
    inst = re.search(r"\binstead of\b", low)
    if inst:
        return low[inst.end():], low[:inst.start()]
    spots = [m.start() for f in _name_forms(name) for m in [re.search(re.escape(f), low)] if m]
    sep = re.compile(r"\s(?:for|into|->|with an?|to an?|to the|to one)\s|[:;,]\s*(?:i (?:want|need|would like|'d like)|"
                     r"i'd prefer|make it|the new one)\b").search(low, min(spots, default=0))
    if sep:
        return low[:sep.start()], low[sep.end():]
    return low, low


@dataclass
class _Intent:
    """One request of the user being served."""

    kind: str | None
    text: str
    order_id: str | None = None
    reason: str | None = None
    address: dict[str, str] | None = None
    payment_id: str | None = None
    items: list[str] | None = None
    new_items: list[str] | None = None
    done: bool = False
    rejections: int = 0
    notes: list[str] = field(default_factory=list)


class RetailReferenceAgent(ReferenceAgentBase):
    """The retail reference agent for one trial (see the module docstring).

    Args:
        ctx: the trial context; the agent reads only ``ctx.seed``: its fault draws come from its own
            ``numpy.random.Generator`` seeded by the trial seed (a stream apart from ``ctx.rng``, so that its
            draws do not shift the simulated user's).
        faults: fault knob -> rate in [0, 1] (see :data:`FAULT_KNOBS`).

    Attributes:
        metadata: ``{"faults": [{"fault": knob, "step": n, "detail": str}, ...]}``, the injected faults.

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None = None):
        super().__init__(ctx, faults, known=FAULT_KNOBS, who="reference agent", salt=0x7E7A11)
        # identity
        self._email: str | None = None
        self._name: tuple[str, str] | None = None
        self._zip: str | None = None
        self._tried: set[tuple[str, ...]] = set()
        self._auth_failed = False
        self._user_id: str | None = None
        self._user: dict[str, Any] | None = None
        self._orders: dict[str, dict[str, Any]] = {}
        self._products: dict[str, dict[str, Any]] = {}
        self._product_types: dict[str, str] | None = None
        # dialogue
        self._intents: list[_Intent] = []
        self._pending: tuple[str, dict[str, Any]] | None = None
        self._answer: str | None = None
        self._last_user = ""
        self._last_result: dict[str, Any] = {}
        self._unclear = 0
        self._transfer: str | None = None
        self._report: str | None = None
        self._offered: list[str] = []
        self._listed_orders: list[str] = []
        self._refunds: list[tuple[str, float]] = []
        self._charges: list[tuple[str, float]] = []
        self._previous_address: dict[str, str] | None = None

    # ------------------------------------------------------------------------------------------ plumbing
    def _say(self, text: str, question: bool = True) -> AgentTurn:
        if question and self._user_id is not None:
            intent = self._current()
            target = "order id" if intent is not None and intent.order_id else "identity"
            if self._draw("repeat_question", f"asked again for the {target}"):
                return self._text_turn(ASK_ORDER if target == "order id" else ASK_IDENTITY)
        return self._text_turn(text)

    # ------------------------------------------------------------------------------------------ reading
    def _absorb_tool(self, name: str, args: dict[str, Any], data: Any, ok: bool, content: str) -> None:
        if name == "find_user_id_by_email" or name == "find_user_id_by_name_zip":
            if ok and isinstance(data, str) and data:
                self._user_id = data
                self._auth_failed = False
            else:
                self._auth_failed = True
        elif name == "get_user_details" and isinstance(data, dict):
            self._user = data
        elif name == "get_order_details" and isinstance(data, dict):
            self._orders[str(data.get("order_id", args.get("order_id")))] = data
        elif name == "get_order_details":
            self._orders[str(args.get("order_id"))] = {"missing": True}
        elif name == "get_product_details" and isinstance(data, dict):
            self._products[str(data.get("product_id", args.get("product_id")))] = data
        elif name == "list_all_product_types" and isinstance(data, dict):
            self._product_types = {str(k): str(v) for k, v in data.items()}
        elif name in _WRITES:
            self._after_write(name, args, data if isinstance(data, dict) else None, content)

    def _absorb_user(self, text: str) -> None:
        self._last_user = text
        self._answer = "yes" if is_yes(text) else "no" if is_no(text) else None
        for email in _EMAIL_RE.finditer(text):
            before = text[max(0, email.start() - 25):email.start()].lower()
            if self._user_id is None and not re.search(r"\bto\s*$|\bnew\b|\binto\s*$", before):
                self._email = email.group(0).rstrip(".")
                break
        name = _NAME_RE.search(text)
        zip_code = _ZIP_RE.search(text)
        loose = _LOOSE_NAME_RE.search(text)
        if self._user_id is None:
            if name:
                self._name = (name.group(1), name.group(2))
            if zip_code:
                self._zip = zip_code.group(1)
            if loose and loose.group(1).lower() not in _NOT_NAMES and loose.group(2).lower() not in _NOT_NAMES:
                self._name = self._name or (loose.group(1).title(), loose.group(2).title())
                self._zip = self._zip or loose.group(3)
            if self._asking == "identity" and self._zip is None:
                bare = re.search(r"\b\d{5}\b", text)
                if bare and not _ADDRESS_RE.search(text):
                    self._zip = bare.group(0)
        if self._closed and not self._pending:
            self._closed = False
        intent = self._current()
        if self._pending is not None:
            if self._answer == "no" and intent is not None:
                intent.rejections += 1
                self._pending = None
                restated = text.split(":", 1)[1] if ":" in text else text
                if self._kind_of(restated) == "transfer" and intent.kind != "transfer":
                    # "No, I want a human agent": the request is dropped for a transfer
                    intent.done = True
                    self._intents.insert(self._intents.index(intent) + 1, _Intent(kind="transfer", text=restated))
                    return
                if self._kind_of(restated) in (None, intent.kind, "item_change") or intent.kind == "exchange":
                    self._reset(intent, restated)
            return
        if intent is not None and self._asking not in (None, "identity", "anything_else"):
            self._fill_slot(intent, text)
            return
        self._new_requests(text)

    def _reset(self, intent: _Intent, text: str) -> None:
        intent.text = text
        intent.items = intent.new_items = None
        intent.payment_id = None
        intent.address = None
        order = _ORDER_RE.search(text)
        if order:
            intent.order_id = "#" + order.group(1).upper()

    def _kind_of(self, text: str) -> str | None:
        if _TRANSFER_RE.search(text):
            return "transfer"
        text = re.sub(r"\be-?mail(?: address)?\b", "email", _EMAIL_RE.sub(" ", text), flags=re.IGNORECASE)
        if re.search(r"\bhow much\b[^.?!]{0,200}\b(?:pay|paid|cost|charged?|spend|spent)\b", text, re.IGNORECASE) or \
                re.search(r"^\W*(?:(?:another thing|one more (?:thing|question)|also|next|and|so)\W+)?(?:(?:could|can) "
                          r"you (?:tell|let) me\s+|i'?d like to know\s+|i want to know\s+|i wonder\s+)?"
                          r"(?:what (?:is|are|was|were) the|what's the|how much|how many)\b", text, re.IGNORECASE):
            # a question about an amount or a fact, even when it names an action ("the price after the change")
            return "info"
        if re.search(r"\b(?:tell me|know|wonder|ask)\s+(?:if|whether)\s+(?:i|we|you)\s+(?:can|could)\b|"
                     r"\b(?:whether|which card|did i|have i)\b[^.?!]{0,200}\b(?:paid|used)\b", text,
                     re.IGNORECASE) and not _ORDER_RE.search(text):
            # "could you tell me if I can ...": asks whether something is possible, not to do it
            return "info"
        if self._last_result.get("money") and re.search(r"\b(?:price difference|the price|the refund)\b", text,
                                                         re.IGNORECASE) and re.search(
                r"^\W*(?:\w+\W+){0,3}?(?:can|could|is|are|will|would|did|does|verify|confirm)\b", text, re.IGNORECASE) \
                and not _ORDER_RE.search(text):
            # a question about the money of the action just done
            return "info"
        for kind, pattern in _KIND_PATTERNS:
            if pattern.search(text):
                if kind == "address" and re.search(r"\b(?:which|what|where)\b[^.?!]{0,200}\baddress\b|"
                                                   r"\bwhere\b[^.?!]{0,200}\b(?:sent|shipped|going)\b", text,
                                                   re.IGNORECASE) and not \
                        re.search(r"\b(?:change|update|modify|move|instead|switch|correct|fix)\b", text,
                                  re.IGNORECASE):
                    return "info"
                if kind == "address":
                    return self._address_kind(text)
                return kind
        return None

    def _address_kind(self, text: str) -> str:
        text = _ADDRESS_REF_RE.sub("address", text)
        if _ORDER_RE.search(text) or re.search(r"\border\b", text, re.IGNORECASE):
            if not re.search(r"\b(?:default|profile|account|on file)\b", text, re.IGNORECASE):
                return "modify_address"
            return "modify_address" if re.search(r"\bship|\bsend|\bsent\b", text, re.IGNORECASE) and not re.search(
                r"\bdefault address\b.{0,300}\border\b|\bupdate\b.{0,300}\bdefault\b", text, re.IGNORECASE) else \
                "modify_user_address"
        return "modify_user_address"

    def _new_requests(self, text: str) -> None:
        clauses = [c for c in re.split(r";|(?<=[.!?])\s+|\balso\b|\bas well\b|,\s*and\s+(?=(?:return|cancel|exchange|"
                                       r"modify|update|switch)\b)", text) if c and c.strip()]
        found: list[_Intent] = []
        current = self._current()
        for clause in clauses:
            kind = self._kind_of(clause)
            target = found[-1] if found else current
            if kind is not None and target is not None and not _ACTION_RE.search(clause):
                kind = None
            if kind is None or (kind == "info" and found and found[-1].kind != "info"):
                if found:
                    found[-1].text += " " + clause
                continue
            found.append(_Intent(kind=kind, text=clause))
        if not found:
            current = self._current()
            if current is not None:
                self._fill_slot(current, text)
                if current.kind is None:
                    current.kind = self._kind_of(current.text)
            elif self._asking == "anything_else" and (is_closing(text) or self._answer == "no"):
                self._closed = True
            elif self._user_id is None or self._answer == "yes" or re.search(
                    r"^\W*(?:ok|okay|alright|i see|thanks|thank you|got it|fine|understood)\b", text, re.IGNORECASE):
                pass
            else:
                self._intents.append(_Intent(kind=None, text=text))
            return
        for intent in found:
            self._fill_slot(intent, intent.text)
            if intent.order_id is None and intent.kind not in ("modify_user_address", "info"):
                previous = self._intents[-1] if self._intents else None
                if previous is not None and previous.order_id and not _ORDER_RE.search(text) and re.search(
                        r"\b(?:it|that order|the same order|this order)\b", intent.text, re.IGNORECASE):
                    intent.order_id = previous.order_id
        self._intents.extend(found)

    def _fill_slot(self, intent: _Intent, text: str) -> None:
        if text is not intent.text:
            intent.text += " " + text
        order = _ORDER_RE.search(text)
        if order and (intent.order_id is None or self._asking == "order_id"):
            intent.order_id = "#" + order.group(1).upper()
        if not order and self._asking == "order_id" and self._listed_orders:
            ordinal = re.search(r"\b(first|second|third|fourth|fifth|last|only)\b", text, re.IGNORECASE)
            if ordinal:
                k = {"first": 0, "only": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
                     "last": -1}[ordinal.group(1).lower()]
                if -1 <= k < len(self._listed_orders):
                    intent.order_id = self._listed_orders[k]
        for reason, pattern in _REASONS:
            if pattern.search(text):
                intent.reason = reason
        if self._asking == "reason" and intent.reason is None:
            ordinal = re.search(r"\b(first|former|second|latter|either|whichever|any)\b", text, re.IGNORECASE)
            if ordinal:
                second = ordinal.group(1).lower() in ("second", "latter")
                intent.reason = "ordered by mistake" if second else "no longer needed"
        address = self._parse_address(text, intent.kind)
        if address is not None:
            intent.address = address
        if self._asking == "options" and intent.items:
            intent.new_items = None
        if self._asking in ("payment", "refund") :
            intent.payment_id = None

    def _parse_address(self, text: str, kind: str | None = None) -> dict[str, str] | None:
        m = _ADDRESS_RE.search(text)
        if m:
            return {"address1": m.group("a1").strip(), "address2": (m.group("a2") or "").strip(),
                    "city": m.group("city").strip(), "state": m.group("state"),
                    "country": (m.group("country") or "USA").strip(), "zip": m.group("zip")}
        if self._previous_address is not None and re.search(
                r"\b(?:had before|previous|original|old|former|used to have|back)\b", text, re.IGNORECASE):
            return dict(self._previous_address)
        if kind != "modify_user_address" and self._user is not None and re.search(
                r"\b(?:default|current|profile|on file|home) address\b", text, re.IGNORECASE):
            a = self._user.get("address") or {}
            return {k: str(a.get(k, "")) for k in ("address1", "address2", "city", "state", "country", "zip")}
        return None

    def _current(self) -> _Intent | None:
        return next((i for i in self._intents if not i.done), None)

    # ------------------------------------------------------------------------------------------ deciding
    def _decide(self) -> AgentTurn:
        if self._transfer is not None:
            summary = self._transfer
            self._transfer = None
            turn = self._call("transfer_to_human_agents", {"summary": summary})
            turn.message.content = "I'm transferring you to a human agent."
            return turn
        if self._user_id is None:
            return self._authenticate()
        if self._user is None:
            return self._call("get_user_details", {"user_id": self._user_id})
        if self._report is not None:
            report, self._report = self._report, None
            self._asking = "anything_else"
            return self._say(f"{report} {ANYTHING_ELSE}", question=False)
        intent = self._current()
        answer, self._answer = self._answer, None
        if self._pending is not None:
            if answer == "yes":
                name, args = self._pending
                self._pending = None
                return self._call(name, args)
            return self._say(self._confirm_text(*self._pending))
        if intent is None:
            return self._between_requests(served=bool(self._intents))
        return self._serve(intent)

    def _authenticate(self) -> AgentTurn:
        if self._email and ("email", self._email) not in self._tried:
            self._tried.add(("email", self._email))
            return self._call("find_user_id_by_email", {"email": self._email})
        if self._name and self._zip and ("name", *self._name, self._zip) not in self._tried:
            self._tried.add(("name", *self._name, self._zip))
            return self._call("find_user_id_by_name_zip",
                              {"first_name": self._name[0], "last_name": self._name[1], "zip": self._zip})
        self._asking = "identity"
        if self._name and not self._zip and not self._auth_failed:
            return self._say(f"Thank you, {self._name[0]}. Could you also give me your zip code?")
        if self._zip and not self._name and not self._auth_failed:
            return self._say("Thank you. Could you also give me your first and last name?")
        if self._auth_failed:
            return self._say("I'm sorry, I could not find an account with those details. " + ASK_IDENTITY)
        prefix = "I'd be glad to help. " if self._intents else "Hello! "
        return self._say(prefix + ASK_IDENTITY)

    def _finish(self, intent: _Intent, text: str) -> AgentTurn:
        intent.done = True
        self._asking = "anything_else"
        return self._say(f"{text} {ANYTHING_ELSE}", question=False)

    def _refuse(self, intent: _Intent, reason: str) -> AgentTurn:
        return self._finish(intent, f"I'm sorry, but {reason}")

    def _ask(self, slot: str, text: str) -> AgentTurn:
        self._asking = slot
        return self._say(text)

    def _serve(self, intent: _Intent) -> AgentTurn:
        assert self._user is not None
        if intent.kind is None:
            intent.kind = self._kind_of(intent.text)
        if intent.kind is None:
            self._unclear += 1
            intent.done = True
            if self._unclear >= 3:
                self._transfer = f"User {self._user_id}: request not understood: {intent.text[:200]}"
                return self._decide()
            self._asking = None
            return self._say("I'm sorry, I did not understand what you need. I can cancel or modify pending "
                             "orders, return or exchange items of delivered orders, update your default address "
                             "and answer questions about your account. What would you like to do?")
        if not intent.notes and intent.kind != "info":
            intent.notes.append("started")
            if self._draw("early_transfer", f"transferred the {intent.kind} request before trying"):
                self._transfer = f"User {self._user_id} asks: {intent.text[:200]}"
                return self._decide()
        if intent.kind == "transfer":
            if intent.order_id and intent.order_id not in self._orders and self._owns(intent.order_id):
                return self._call("get_order_details", {"order_id": intent.order_id})
            self._transfer = f"User {self._user_id}: {intent.text.strip()[:300]} (no tool can do this)"
            return self._decide()
        if intent.kind == "info":
            return self._info(intent)
        if intent.kind == "modify_user_address":
            return self._user_address(intent)
        # every other kind acts on one of the user's orders
        if intent.order_id is None:
            found = self._find_order(intent)
            if isinstance(found, AgentTurn):
                return found
            if found is None:
                if self._asking == "order_id" and _UNKNOWN_RE.search(self._last_user):
                    self._listed_orders = [oid for oid in self._user.get("orders", []) if oid in self._orders]
                    listing = "\n".join(f"- {oid} ({self._orders[oid].get('status')}): "
                                        f"{self._items_text(self._orders[oid])}" for oid in self._listed_orders)
                    if listing:
                        return self._ask("order_id", f"These are your orders:\n{listing}\nWhich order is it?")
                return self._ask("order_id", ASK_ORDER)
            intent.order_id = found
        if not self._owns(intent.order_id):
            return self._refuse(intent, f"I can't help with order {intent.order_id}: it is not one of the orders in "
                                        "your account, and I can only act on your own orders.")
        if intent.order_id not in self._orders or (self._last_result.get("order_id") == intent.order_id
                                                   and self._orders[intent.order_id].get("stale")):
            return self._call("get_order_details", {"order_id": intent.order_id})
        order = self._orders[intent.order_id]
        if order.get("missing"):
            intent.order_id = None
            return self._ask("order_id", "I could not find that order. " + ASK_ORDER)
        status = str(order.get("status"))
        if intent.kind == "item_change":
            intent.kind = "exchange" if status == "delivered" else "modify_items"
        handler = {"cancel": self._cancel, "modify_address": self._order_address, "modify_payment": self._payment,
                   "return": self._return, "exchange": self._items, "modify_items": self._items}[intent.kind]
        return handler(intent, order)

    def _owns(self, order_id: str) -> bool:
        return order_id in (self._user or {}).get("orders", [])

    def _find_order(self, intent: _Intent) -> str | AgentTurn | None:
        """Find the order the described items belong to, fetching the user's orders one by one."""
        assert self._user is not None
        wanted_status = {"cancel": "pending", "return": "delivered", "exchange": "delivered",
                         "modify_address": "pending", "modify_payment": "pending", "modify_items": "pending"}
        recent = self._recent_order(intent.text)
        if recent is not None:
            return recent
        for order_id in self._user.get("orders", []):
            if order_id not in self._orders:
                if not self._describes_items(intent.text):
                    return None
                return self._call("get_order_details", {"order_id": order_id})
        matches = []
        text = _ADDRESS_REF_RE.sub("address", intent.text)
        said = re.search(r"\b(pending|delivered|processed)\b", text, re.IGNORECASE)
        status = said.group(1).lower() if said else wanted_status.get(str(intent.kind))
        for order_id in self._user.get("orders", []):
            order = self._orders[order_id]
            scores = []
            for it in order.get("items", []):
                name = str(it.get("name"))
                if not _name_mentioned(text, name):
                    continue
                described = _split_change(text, name)[0] if intent.kind in ("item_change", "exchange",
                                                                            "modify_items") else text
                values = [str(v) for v in it.get("options", {}).values()]
                scores.append(1 + 0.5 * sum(_mentions(described, v) for v in values))
            if scores:
                score = sum(scores) + (2 if status is not None and order.get("status") == status else 0)
                matches.append((score, order_id))
        matches.sort(reverse=True)
        if matches and (len(matches) == 1 or matches[0][0] > matches[1][0]):
            return matches[0][1]
        if matches:
            # a tie: the order the conversation is about (the last one handled) is the one meant
            tied = {oid for score, oid in matches if score == matches[0][0]}
            handled = [i.order_id for i in self._intents if i.order_id and i is not intent]
            if handled and handled[-1] in tied:
                return handled[-1]
        return None

    def _order_described(self, text: str) -> str | AgentTurn | None:
        """The order a question describes by its status or its shipping, when exactly one of the orders fits.

        "my cancelled order" names the status; "the tracking number", "still in transit", "sent to" ask about an
        order that has shipped (not a cancelled one). The user's orders are fetched first.

        Args:
            text: the user's question.

        Returns:
            The order id, a tool call fetching one of the user's orders, or None.
        """
        status = re.search(r"\b(pending|delivered|processed|cancell?ed)\s+order\b", text, re.IGNORECASE)
        shipping = re.search(r"\btracking\b|\bin transit\b|\bsent to\b|\bshipped to\b", text, re.IGNORECASE)
        if not status and not shipping:
            return None
        orders = (self._user or {}).get("orders", [])
        for oid in orders:
            if oid not in self._orders:
                return self._call("get_order_details", {"order_id": oid})
        holding = [o for o in orders if any(_name_mentioned(text, str(it.get("name")))
                                            for it in self._orders[o].get("items", []))]
        if len(holding) == 1:
            # "the tracking number of the order ... the tablet": the one order holding the product named
            return str(holding[0])
        if status:
            wanted = status.group(1).lower().replace("canceled", "cancelled")
            fits = [o for o in orders if self._orders[o].get("status") == wanted]
        else:
            fits = [o for o in orders if self._orders[o].get("fulfillments")
                    and self._orders[o].get("status") != "cancelled"]
        return str(fits[0]) if len(fits) == 1 else None

    def _cheapest_total(self, order_id: str | None, text: str) -> str | AgentTurn | None:
        """What the order would cost with every item switched to its product's cheapest available variant.

        The order is the one asked about, else the user's only pending order. An amount the user names ("bring
        the cost down to $950") is compared with the result.

        Args:
            order_id: the order asked about, if any.
            text: the user's question.

        Returns:
            The answer, a look-up needed first, or None when no order fits.
        """
        orders = (self._user or {}).get("orders", [])
        if order_id is None:
            for oid in orders:
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
            pending = [o for o in orders if self._orders[o].get("status") == "pending"]
            if len(pending) != 1:
                return None
            order_id = str(pending[0])
        order = self._orders.get(order_id) or {}
        for it in order.get("items", []):
            if str(it["product_id"]) not in self._products:
                return self._call("get_product_details", {"product_id": str(it["product_id"])})
        lines, total = [], 0.0
        for it in order.get("items", []):
            variants = [v for v in self._products[str(it["product_id"])].get("variants", {}).values()
                        if v.get("available") or str(v.get("item_id")) == str(it["item_id"])]
            low = min(variants, key=lambda v: float(v["price"]), default=None)
            price = float(low["price"]) if low else float(it.get("price", 0))
            total += price
            lines.append(f"{it.get('name')} {_money(price)}" + (f" ({self._options_text(low.get('options', {}))})"
                                                                if low else ""))
        answer = (f"With every item switched to its cheapest available option, order {order_id} would cost "
                  f"{_money(total)} instead of {_money(self._order_total(order))}: " + "; ".join(lines) + ".")
        target = re.search(r"\$\s?([\d,]+(?:\.\d+)?)", text)
        if target:
            goal = float(target.group(1).replace(",", ""))
            answer += (f" That is within ${target.group(1)}." if total <= goal else
                       f" That is still above ${target.group(1)}.")
        return answer

    def _recent_order(self, text: str) -> str | None:
        """The last order of the account when ``text`` speaks of the order placed most recently, else None."""
        orders = (self._user or {}).get("orders", [])
        if orders and _RECENT_ORDER_RE.search(_ADDRESS_REF_RE.sub("address", text)):
            return str(orders[-1])
        return None

    def _describes_items(self, text: str) -> bool:
        names = {str(it.get("name")) for o in self._orders.values() for it in o.get("items", [])}
        names |= set((self._product_types or {}).keys())
        generic = re.search(r"\b(?:the|my|a|an)\s+[a-z]+(?:\s+[a-z]+)?\b", text, re.IGNORECASE)
        return bool(names and any(_name_mentioned(text, n) for n in names)) or bool(generic)

    # ------------------------------------------------------------------------------------------ actions
    def _confirm(self, intent: _Intent, name: str, args: dict[str, Any]) -> AgentTurn:
        if self._draw("skip_confirmation", f"{name} without asking"):
            return self._call(name, args)
        self._pending = (name, args)
        self._asking = "confirm"
        return self._say(self._confirm_text(name, args))

    def _cancel(self, intent: _Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"order {intent.order_id} can't be cancelled: its status is {status}, and "
                                        "only pending orders can be cancelled.")
        if intent.reason is None:
            return self._ask("reason", f"Order {intent.order_id} ({self._items_text(order)}) is pending and can "
                                       "be cancelled. What is the reason for the cancellation: no longer needed, "
                                       "or ordered by mistake?")
        return self._confirm(intent, "cancel_pending_order", {"order_id": intent.order_id, "reason": intent.reason})

    def _order_address(self, intent: _Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"the shipping address of order {intent.order_id} can't be changed: its "
                                        f"status is {status}, and only pending orders can be modified.")
        if intent.address is None:
            intent.address = self._parse_address(intent.text, intent.kind)
        if intent.address is None:
            found = self._address_reference(intent, order.get("address") or {})
            if isinstance(found, AgentTurn):
                return found
            intent.address = found
        if intent.address is None:
            return self._ask("address", "What is the new shipping address? Please write it like this: 12 Main "
                                        "Street, Apt 3, Springfield, IL 62701, USA.")
        return self._confirm(intent, "modify_pending_order_address", {"order_id": intent.order_id,
                                                                      **intent.address})

    def _address_reference(self, intent: _Intent, base: Mapping[str, Any]) -> dict[str, str] | AgentTurn | None:
        """The new address when the user names it instead of giving it.

        "the address (in CITY) that my order with ITEMS ships to" / "... that order #W... ships to": the shipping
        address of that order (the user's orders are fetched to find it; another order than the one being changed;
        on a tie the CITY decides); "Suite 641 (the rest of the address stays the same)": ``base`` with the new
        second line.

        Args:
            intent: the request being served; its text is searched.
            base: the address being changed (the order's or the user's default address).

        Returns:
            The address fields, a tool call fetching an order needed to find it, or None when none is named.
        """
        assert self._user is not None
        fields = ("address1", "address2", "city", "state", "country", "zip")
        refs = list(_ADDRESS_REF_RE.finditer(intent.text))
        ref = refs[-1] if refs else None
        if ref is not None:
            if ref.group("oid"):
                oid = "#" + ref.group("oid").lstrip("#").upper()
                if not self._owns(oid):
                    return None
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
                a = self._orders[oid].get("address") or {}
                return {k: str(a.get(k, "")) for k in fields} if a else None
            for order_id in self._user.get("orders", []):
                if order_id not in self._orders:
                    return self._call("get_order_details", {"order_id": order_id})
            wanted = ref.group("items") or ""
            city = (ref.group("city") or "").strip().lower()
            scored = []
            for order_id in self._user.get("orders", []):
                order = self._orders[order_id]
                if order_id == intent.order_id or not order.get("address"):
                    continue
                names = {str(it.get("name")) for it in order.get("items", [])}
                hits = sum(_name_mentioned(wanted, n) for n in names)
                if not hits:
                    continue
                in_city = bool(city) and str(order["address"].get("city", "")).lower() == city
                scored.append((hits - 0.1 * len(names - {n for n in names if _name_mentioned(wanted, n)})
                               + (1 if in_city else 0), order_id))
            scored.sort(reverse=True)
            if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
                a = self._orders[scored[0][1]]["address"]
                return {k: str(a.get(k, "")) for k in fields}
            return None
        partial = _PARTIAL_ADDRESS_RE.search(intent.text)
        if partial and base:
            line2 = re.sub(r"\s+", " ", partial.group("a2")).strip()
            return {k: str(base.get(k, "")) for k in fields} | {"address2": line2[0].upper() + line2[1:]}
        return None

    def _user_address(self, intent: _Intent) -> AgentTurn:
        if intent.address is None:
            found = self._address_reference(intent, (self._user or {}).get("address") or {})
            if isinstance(found, AgentTurn):
                return found
            intent.address = found
        if intent.address is None:
            return self._ask("address", "What is your new default address? Please write it like this: 12 Main "
                                        "Street, Apt 3, Springfield, IL 62701, USA.")
        return self._confirm(intent, "modify_user_address", {"user_id": self._user_id, **intent.address})

    def _payment(self, intent: _Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"the payment method of order {intent.order_id} can't be changed: its "
                                        f"status is {status}, and only pending orders can be modified.")
        current = self._order_method(order)
        if intent.payment_id is None:
            intent.payment_id = self._resolve_payment(intent.text if self._asking != "payment" else
                                                      self._last_user, exclude=current)
        if intent.payment_id is None:
            return self._ask("payment", "Which payment method should be used for the order? You have: "
                                        + self._methods_text() + ".")
        if intent.payment_id == current:
            return self._refuse(intent, f"I can't change the payment method of order {intent.order_id} to "
                                        f"{self._method_text(current)}: it is already paid with it, and the new "
                                        "method must be a different one.")
        method = self._method(intent.payment_id)
        total = self._order_total(order)
        if method.get("source") == "gift_card" and float(method.get("balance", 0)) < total:
            return self._refuse(intent, f"I can't change the payment of order {intent.order_id} to your gift card: "
                                        f"its balance is {_money(float(method.get('balance', 0)))}, less than the "
                                        f"order total {_money(total)}. The order stays on "
                                        f"{self._method_text(current)}.")
        return self._confirm(intent, "modify_pending_order_payment", {"order_id": intent.order_id,
                                                                      "payment_method_id": intent.payment_id})

    def _return(self, intent: _Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "delivered":
            return self._refuse(intent, f"items of order {intent.order_id} can't be returned: its status is "
                                        f"{status}, and only delivered orders can be returned.")
        if intent.items is None:
            intent.items = self._match_items(intent, order)
            if not intent.items:
                intent.items = None
                return self._ask("items", "Which item(s) do you want to return? The order holds: "
                                          f"{self._items_text(order, options=True)}.")
        original = self._order_method(order)
        if intent.payment_id is None:
            text = intent.text if self._asking != "refund" else self._last_user
            first = self._asking == "refund" and re.search(r"\b(?:first|former)\b", text, re.IGNORECASE)
            if first or re.search(r"\b(?:original|same|paid with|used to pay|back to the)\b", text,
                                  re.IGNORECASE) and not re.search(r"\bnot (?:to )?the (?:card|one|payment)", text,
                                                                   re.IGNORECASE):
                intent.payment_id = original
            else:
                intent.payment_id = self._resolve_payment(text, exclude=None, prefer=original)
        if intent.payment_id is None:
            return self._ask("refund", "Which payment method should the refund go to: the original payment method "
                                       f"({self._method_text(original)}) or one of your gift cards?")
        method = self._method(intent.payment_id)
        if intent.payment_id != original and method.get("source") != "gift_card":
            intent.payment_id = None
            return self._ask("refund", "I'm sorry, but a refund can only go to the original payment method "
                                       f"({self._method_text(original)}) or to a gift card. Which one should it be?")
        return self._confirm(intent, "return_delivered_order_items", {
            "order_id": intent.order_id, "item_ids": intent.items, "payment_method_id": intent.payment_id})

    def _items(self, intent: _Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        exchange = intent.kind == "exchange"
        if exchange and status != "delivered":
            return self._refuse(intent, f"items of order {intent.order_id} can't be exchanged: its status is "
                                        f"{status}, and only delivered orders can be exchanged.")
        if not exchange and status != "pending":
            return self._refuse(intent, f"the items of order {intent.order_id} can't be changed: its status is "
                                        f"{status}, and only pending orders can be modified.")
        if intent.items is None:
            items = self._match_items(intent, order)
            if not items:
                return self._ask("items", f"Which item(s) do you want to {'exchange' if exchange else 'change'}? "
                                          f"The order holds: {self._items_text(order, options=True)}.")
            intent.items = items
        by_id = {str(it["item_id"]): it for it in order.get("items", [])}
        for item_id in intent.items:
            pid = str(by_id[item_id]["product_id"])
            if pid not in self._products:
                return self._call("get_product_details", {"product_id": pid})
        if intent.new_items is None:
            chosen: list[str] = []
            seen: dict[str, int] = {}
            for item_id in intent.items:
                name = str(by_id[item_id].get("name"))
                parts = _change_parts(intent.text, name) if self._asking != "options" else []
                k = seen[name] = seen.get(name, -1) + 1
                pick = self._choose_variant(intent, by_id[item_id], part=parts[k] if len(parts) > 1 and
                                            k < len(parts) else None)
                if isinstance(pick, AgentTurn):
                    return pick
                chosen.append(pick)
            intent.new_items = chosen
        if intent.payment_id is None:
            text = intent.text if self._asking != "payment" else self._last_user
            intent.payment_id = self._resolve_payment(text, exclude=None, prefer=self._order_method(order))
            if intent.payment_id is None and re.search(r"\b(?:original|same|paid with)\b", text, re.IGNORECASE):
                intent.payment_id = self._order_method(order)
        diff = self._difference(order, intent.items, intent.new_items)
        if intent.payment_id is None:
            return self._ask("payment", f"Which payment method should {'pay' if diff >= 0 else 'receive'} the "
                                        f"price difference of {_money(abs(diff))}? You have: "
                                        f"{self._methods_text()}.")
        method = self._method(intent.payment_id)
        if method.get("source") == "gift_card" and float(method.get("balance", 0)) < diff:
            intent.payment_id = None
            if "gift card short" in intent.notes:
                # named again after being told it does not cover the difference: the change can't be made with it
                return self._refuse(intent, f"your gift card balance ({_money(float(method.get('balance', 0)))}) "
                                            f"does not cover the price difference of {_money(diff)}, so I can't "
                                            "make this change with it.")
            intent.notes.append("gift card short")
            return self._ask("payment", f"Your gift card balance ({_money(float(method.get('balance', 0)))}) does "
                                        f"not cover the price difference of {_money(diff)}. Which other payment "
                                        "method should pay it?")
        name = "exchange_delivered_order_items" if exchange else "modify_pending_order_items"
        return self._confirm(intent, name, {"order_id": intent.order_id, "item_ids": intent.items,
                                            "new_item_ids": intent.new_items, "payment_method_id": intent.payment_id})

    def _info(self, intent: _Intent) -> AgentTurn:
        assert self._user is not None
        text = intent.text
        order_id = intent.order_id
        if order_id is None:
            order_id = intent.order_id = self._recent_order(text)
        if order_id is None:
            described = self._order_described(text)
            if isinstance(described, AgentTurn):
                return described
            order_id = intent.order_id = described
        if order_id is None and re.search(r"\b(?:the|that|this|same|my new|the new) order\b|\bit\b", text,
                                            re.IGNORECASE):
            order_id = intent.order_id = self._last_result.get("order_id") or next(
                (i.order_id for i in reversed(self._intents) if i.order_id), None)
        if order_id and self._owns(order_id) and order_id not in self._orders:
            return self._call("get_order_details", {"order_id": order_id})
        parts: list[str] = []
        if re.search(r"\b(?:options?|variants?|available|in stock|how many|kinds?|types?|ordered|bought|paid|"
                     r"purchased|"
                     r"materials?|colou?rs?|sizes?)\b", text, re.IGNORECASE):
            product = self._product_info(text)
            if isinstance(product, AgentTurn):
                return product
            if product:
                parts.append(product)
        if re.search(r"\b(?:used|paid|pay)\b", text, re.IGNORECASE) and re.search(
                r"\b(?:card|paypal|visa|mastercard|amex|american express|payment method)\b", text, re.IGNORECASE):
            # which method paid: the order asked about, or every order of the account
            asked = [order_id] if order_id and self._owns(order_id) else list(self._user.get("orders", []))
            for oid in asked:
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
            paid = [f"order {oid} was paid with {self._method_text(self._order_method(self._orders[oid]))}"
                    for oid in asked if not self._orders[oid].get("missing")]
            if paid:
                parts.append("; ".join(paid)[0].upper() + "; ".join(paid)[1:] + ".")
        if re.search(r"\bsplit\b", text, re.IGNORECASE) and re.search(r"\bpay|\bcard|\bcharge", text, re.IGNORECASE):
            parts.append("I'm sorry, but splitting a payment is not possible: an order is paid with one payment "
                         "method (a gift card must cover the whole amount).")
        if re.search(r"\bcheapest\b", text, re.IGNORECASE) and re.search(r"\ball (?:the )?items\b|\bevery item\b",
                                                                          text, re.IGNORECASE):
            cheapest = self._cheapest_total(order_id, text)
            if isinstance(cheapest, AgentTurn):
                return cheapest
            if cheapest:
                parts.append(cheapest)
        if re.search(r"gift card|balance", text, re.IGNORECASE):
            cards = [m for m in self._user.get("payment_methods", {}).values() if m.get("source") == "gift_card"]
            if not cards:
                parts.append("You have no gift card on your account.")
            else:
                balances = [float(c.get("balance", 0)) for c in cards]
                listing = ", ".join(f"gift card {c.get('id')}: {_money(b)}" for c, b in zip(cards, balances,
                                                                                             strict=True))
                parts.append(f"Your gift card balance{'s are' if len(cards) > 1 else ' is'} {listing}"
                             + (f"; together {_money(sum(balances))}." if len(cards) > 1 else "."))
        if self._charges and re.search(r"\bpay\b", text, re.IGNORECASE) and re.search(
                r"\b(?:total|all|altogether|together|in all|overall|today)\b", text, re.IGNORECASE):
            # what the user pays in all: the charges less the money coming back
            net = sum(a for _, a in self._charges) - sum(a for _, a in self._refunds)
            moves = [f"{what}: {_money(a)} charged" for what, a in self._charges] + [
                f"{what}: {_money(a)} back" for what, a in self._refunds]
            parts.append((f"In total you pay {_money(net)}" if net >= 0 else
                          f"In total you get back {_money(-net)}") + " (" + "; ".join(moves) + ").")
        elif len(self._refunds) > 1 and re.search(r"refund|back|money", text, re.IGNORECASE):
            parts.append("In total you get back " + _money(sum(a for _, a in self._refunds)) + ": " + "; ".join(
                f"{what}: {_money(a)}" for what, a in self._refunds) + ".")
        elif re.search(r"refund|back|difference|extra|cost|charge|price|pay", text, re.IGNORECASE) and \
                self._last_result:
            parts.append(f"{self._last_result.get('money', '')} {self._last_result.get('detail', '')}")
        if order_id and order_id in self._orders and not self._orders[order_id].get("missing"):
            order = self._orders[order_id]
            if re.search(r"\btracking\b", text, re.IGNORECASE):
                numbers = [str(n) for f in order.get("fulfillments", []) for n in f.get("tracking_id", [])]
                parts.append(f"The tracking number of order {order_id} is {', '.join(numbers)}." if numbers else
                             f"Order {order_id} has no tracking number yet: it has not shipped.")
            if re.search(r"\baddress\b|\bsent to\b|\bshipp(?:ed|ing) to\b|\bwhere\b", text, re.IGNORECASE):
                a = order.get("address") or {}
                parts.append(f"Order {order_id} ships to {self._address_text(a)}." if a else "")
            returned = [str(i) for i in order.get("return_items") or order.get("exchange_items") or []]
            if returned and re.search(r"\bremaining|\bleft\b|\bkeep|\bother items\b|\brest\b", text, re.IGNORECASE):
                prices = {str(it["item_id"]): float(it.get("price", 0)) for it in order.get("items", [])}
                rest = self._order_total(order) - sum(prices.get(i, 0.0) for i in returned)
                parts.append(f"The items of order {order_id} you keep come to {_money(rest)}.")
            parts.append(f"Order {order_id} is {order.get('status')}; its total is "
                         f"{_money(self._order_total(order))} ({self._items_text(order)}).")
        elif order_id and not self._owns(order_id):
            parts.append(f"Order {order_id} is not one of the orders in your account.")
        parts = [p.strip() for p in parts if p.strip()]
        if not parts and re.search(r"order", text, re.IGNORECASE) and order_id is None:
            if self._asking == "order_id" and _UNKNOWN_RE.search(self._last_user):
                for oid in self._user.get("orders", []):
                    if oid not in self._orders:
                        return self._call("get_order_details", {"order_id": oid})
                listing = "\n".join(f"- {oid} ({self._orders[oid].get('status')}, total "
                                    f"{_money(self._order_total(self._orders[oid]))}): "
                                    f"{self._items_text(self._orders[oid])}"
                                    for oid in self._user.get("orders", []) if not self._orders[oid].get("missing"))
                if listing:
                    return self._finish(intent, f"These are your orders:\n{listing}\n")
            return self._ask("order_id", ASK_ORDER)
        if not parts:
            return self._finish(intent, "I'm sorry, I don't have that information. I can tell you about your orders, "
                                        "their status and totals, and your gift card balances.")
        return self._finish(intent, " ".join(parts))

    def _product_info(self, text: str) -> str | AgentTurn | None:
        """Answer a question about a product: the user's own items of it, or its variants available now."""
        if self._product_types is None:
            return self._call("list_all_product_types", {})
        squashed = re.sub(r"[^a-z0-9]", "", text.lower())
        names = [n for n in self._product_types if re.sub(r"[^a-z0-9]", "", n.lower()) in squashed
                 or _name_mentioned(text, n)]
        if not names:
            return None
        name = max(names, key=len)
        if re.search(r"\b(?:i|my|me)\b.{0,300}\b(?:ordered|bought|have|got|purchased)\b|\bmy orders?\b", text,
                     re.IGNORECASE):
            for order_id in (self._user or {}).get("orders", []):
                if order_id not in self._orders:
                    return self._call("get_order_details", {"order_id": order_id})
            mine = [(oid, it) for oid in (self._user or {}).get("orders", [])
                    for it in self._orders[oid].get("items", []) if it.get("name") == name]
            if not mine:
                return f"None of your orders holds a {name}."
            together = f" (together {_money(sum(float(it.get('price', 0)) for _, it in mine))})" \
                if len(mine) > 1 else ""
            return f"Your orders hold {len(mine)} {name} item(s){together}: " + "; ".join(
                f"in order {oid} ({self._orders[oid].get('status')}): {self._options_text(it.get('options', {}))}, "
                f"{_money(float(it.get('price', 0)))}" for oid, it in mine) + "."
        pid = self._product_types[name]
        if pid not in self._products:
            return self._call("get_product_details", {"product_id": pid})
        available = [v for v in self._products[pid].get("variants", {}).values() if v.get("available")]
        return (f"The store has {len(available)} {name} variants in stock right now: " + "; ".join(
            f"{self._options_text(v.get('options', {}))} ({_money(float(v['price']))})" for v in available) + ".")

    def _after_write(self, name: str, args: dict[str, Any], data: dict[str, Any] | None, content: str) -> None:
        intent = self._current()
        if intent is None:
            return
        if data is None:
            intent.done = True
            self._last_result = {"error": content}
            self._report = f"I'm sorry, the request could not be completed: {content}"
            return
        self._last_result = {"order_id": args.get("order_id"), "money": "", "detail": ""}
        before = self._orders.get(str(args.get("order_id")), {})
        self._track_balances(name, args, before)
        if "order_id" in args:
            self._orders[str(args["order_id"])] = data
        if name == "modify_user_address":
            old = (self._user or {}).get("address") or {}
            self._previous_address = {k: str(old.get(k, "")) for k in ("address1", "address2", "city", "state",
                                                                       "country", "zip")}
            self._user = data
        intent.done = True
        self._report = self._result_text(name, args, data)
        by_id = {str(it["item_id"]): it for it in before.get("items", [])}
        if name == "cancel_pending_order":
            self._last_result["detail"] = "It covers " + "; ".join(
                f"{it.get('name')} {_money(float(it.get('price', 0)))}" for it in before.get("items", [])) + "."
        elif name == "return_delivered_order_items":
            self._last_result["detail"] = "It covers " + "; ".join(
                f"{by_id[i].get('name')} {_money(float(by_id[i].get('price', 0)))}" for i in args["item_ids"]
                if i in by_id) + "."
        elif "new_item_ids" in args:
            prices = {str(v["item_id"]): float(v["price"]) for p in self._products.values()
                      for v in p.get("variants", {}).values()}
            self._last_result["detail"] = "Per item: " + "; ".join(
                f"{by_id[o].get('name')} {_money(float(by_id[o].get('price', 0)))} -> {_money(prices.get(n, 0.0))}"
                for o, n in zip(args["item_ids"], args["new_item_ids"], strict=True) if o in by_id) + "."

    def _track_balances(self, name: str, args: dict[str, Any], before: dict[str, Any]) -> None:
        """Update the gift card balances known from the user's details after a write (no new look-up)."""
        def add(method_id: str | None, amount: float) -> None:
            method = (self._user or {}).get("payment_methods", {}).get(method_id)
            if method is not None and method.get("source") == "gift_card":
                method["balance"] = round(float(method.get("balance", 0)) + amount, 2)

        payments = [p for p in before.get("payment_history", []) if p.get("transaction_type") == "payment"]
        if name == "cancel_pending_order":
            for p in payments:
                add(str(p.get("payment_method_id")), float(p.get("amount", 0)))
        elif name == "modify_pending_order_payment" and payments:
            amount = float(payments[0].get("amount", 0))
            add(str(args["payment_method_id"]), -amount)
            add(str(payments[0].get("payment_method_id")), amount)
        elif name == "modify_pending_order_items":
            add(str(args["payment_method_id"]), -self._pending_diff)

    def _result_text(self, name: str, args: dict[str, Any], data: dict[str, Any]) -> str:
        oid = args.get("order_id")
        if name == "cancel_pending_order":
            refunds = [p for p in data.get("payment_history", []) if p.get("transaction_type") == "refund"]
            total = sum(float(p.get("amount", 0)) for p in refunds)
            money = f"A refund of {_money(total)} goes back to " + ", ".join(
                self._method_text(str(p.get("payment_method_id"))) for p in refunds) + "."
            self._last_result["money"] = money
            self._refunds.append((f"order {oid} cancelled", total))
            return f"Done: order {oid} has been cancelled. {money}"
        if name == "return_delivered_order_items":
            order = self._orders.get(str(oid), data)
            prices = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
            total = sum(prices.get(i, 0.0) for i in args["item_ids"])
            money = (f"The refund of {_money(total)} will go to {self._method_text(args['payment_method_id'])} once "
                     "the items are received.")
            self._last_result["money"] = money
            self._refunds.append((f"return from order {oid}", total))
            return (f"Done: the return of {self._names_of(order, args['item_ids'])} from order {oid} has been "
                    f"requested; you will receive return instructions by email. {money}")
        if name in ("exchange_delivered_order_items", "modify_pending_order_items"):
            diff = self._pending_diff
            who = self._method_text(args["payment_method_id"])
            money = (f"The price difference of {_money(diff)} is charged to {who}." if diff > 0 else
                     f"The price difference of {_money(-diff)} is refunded to {who}." if diff < 0 else
                     "There is no price difference.")
            self._last_result["money"] = money
            if diff < 0:
                self._refunds.append((f"price difference of order {oid}", -diff))
            elif diff > 0:
                self._charges.append((f"price difference of order {oid}", diff))
            verb = "exchanged (exchange requested; instructions follow by email)" if name.startswith("exchange") \
                else "updated"
            return f"Done: the items of order {oid} have been {verb}. {money}"
        if name == "modify_pending_order_payment":
            return f"Done: order {oid} has been updated to be paid with {self._method_text(args['payment_method_id'])}."
        if name == "modify_pending_order_address":
            return f"Done: the shipping address of order {oid} has been updated to {self._address_text(args)}."
        return f"Done: your default address has been updated to {self._address_text(args)}."

    # ------------------------------------------------------------------------------------------ matching
    def _match_items(self, intent: _Intent, order: dict[str, Any]) -> list[str]:
        """Return the ids of the order's items the user describes (a wrong one under ``wrong_item``)."""
        items = list(order.get("items", []))
        text = intent.text if self._asking != "items" else self._last_user + " " + intent.text
        change = intent.kind in ("exchange", "modify_items", "item_change")
        if re.search(r"\b(?:all|everything|whole order|every item)\b", text, re.IGNORECASE) and \
                intent.kind == "return":
            but = re.search(r"\b(?:except(?: for)?|but not|other than|apart from|besides)\b(?P<rest>[^.;?!]*)", text,
                            re.IGNORECASE)
            kept = {str(it["item_id"]) for it in items if but and _name_mentioned(but.group("rest"),
                                                                                  str(it.get("name")))}
            return [str(it["item_id"]) for it in items if str(it["item_id"]) not in kept]
        chosen: list[str] = []
        names = list(dict.fromkeys(str(it.get("name")) for it in items))
        mentioned = [n for n in names if _name_mentioned(text, n)]
        for name in mentioned:
            same = [it for it in items if it.get("name") == name]
            segment = self._segment(text, name, mentioned)
            old_part = _split_change(segment, name)[0] if change else segment
            if not _name_mentioned(old_part, name):
                old_part = segment
            parts = _change_parts(segment, name) if change else []
            if len(parts) > 1:
                # one item changed per "X for Y" of this product; the same item id may be there twice
                ranked_items = sorted(same, key=lambda it: -sum(_mentions(segment, str(v))
                                                                for v in it.get("options", {}).values()))
                for k in range(min(len(parts), len(same))):
                    chosen.append(str(ranked_items[k]["item_id"]))
                continue
            word = name.lower().split()[-1]
            spots = [m.start() for m in re.finditer(r"\b" + re.escape(word), _norm(old_part))]
            if not change and len(same) > 1 and len(spots) > 1:
                # the same product named several times ("the skateboard (length: 28 inch), the skateboard
                # (length: 34 inch)"): each mention picks its own item by its option values
                low = _norm(old_part)
                for a, b in zip(spots, spots[1:] + [len(low)], strict=True):
                    part = low[a:b]
                    free = [it for it in same if str(it["item_id"]) not in chosen]
                    if not free:
                        break
                    ranked = sorted(((sum(_mentions(part, str(v)) for v in it.get("options", {}).values()), i)
                                     for i, it in enumerate(free)), reverse=True)
                    chosen.append(str(free[ranked[0][1]]["item_id"]))
                continue
            scored = sorted(((sum(_mentions(old_part, str(v)) for v in it.get("options", {}).values()), i)
                             for i, it in enumerate(same)), reverse=True)
            best = scored[0][0]
            picks = [same[i] for s, i in scored if s == best]
            count = self._count_mentioned(old_part, name)
            for it in picks[:max(1, count)]:
                chosen.append(str(it["item_id"]))
        others = [str(it["item_id"]) for it in items if str(it["item_id"]) not in chosen]
        if chosen and others and self._draw("wrong_item", "picked another item of the order"):
            chosen[0] = others[int(self._faults.rng.integers(len(others)))]
        return chosen

    @staticmethod
    def _count_mentioned(text: str, name: str) -> int:
        m = re.search(r"\b(two|both|2|three|3)\s+(?:of the\s+)?" + re.escape(name.lower().split()[-1]),
                      text.lower())
        return {"two": 2, "both": 2, "2": 2, "three": 3, "3": 3}.get(m.group(1), 1) if m else 1

    def _segment(self, text: str, name: str, names: list[str]) -> str:
        """Return the part of ``text`` about the item named ``name`` (when several items are named)."""
        low = _norm(text)
        spots = sorted((low.find(n.lower().split()[-1]), n) for n in set(names) if low.find(n.lower().split()[-1])
                       >= 0)
        if len(spots) <= 1:
            return text
        cuts = [0]
        for (pos, _), (nxt, _) in zip(spots, spots[1:], strict=False):
            between = low[pos:nxt]
            sep = max(between.rfind(" and "), between.rfind(";"), between.rfind(", the "))
            cuts.append(pos + sep if sep >= 0 else nxt)
        cuts.append(len(low))
        for k, (_, n) in enumerate(spots):
            if n == name:
                return low[cuts[k]:cuts[k + 1]]
        return text

    def _choose_variant(self, intent: _Intent, item: dict[str, Any], part: str | None = None) -> str | AgentTurn:
        """Return the new item id for ``item`` from the user's words, or the message asking which one.

        ``part`` is the user's words about this very item when the same product is changed more than once.
        """
        product = self._products[str(item["product_id"])]
        variants = list(product.get("variants", {}).values())
        old = {k: str(v) for k, v in item.get("options", {}).items()}
        order = self._orders.get(str(intent.order_id), {})
        names = [str(it.get("name")) for it in order.get("items", []) if str(it["item_id"]) in (intent.items or [])]
        text = self._last_user if self._asking == "options" else part if part is not None else self._segment(
            intent.text, str(item["name"]), names)
        new_part = text if self._asking == "options" else _split_change(text, str(item["name"]))[1]
        if self._asking == "options" and self._offered:
            ordinal = re.search(r"\b(first|second|third|fourth|fifth|last)\b|\b(?:number|option|#)\s*(\d+)\b",
                                text, re.IGNORECASE)
            if ordinal:
                words = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}
                k = words[ordinal.group(1).lower()] if ordinal.group(1) else int(ordinal.group(2)) - 1
                if -1 <= k < len(self._offered):
                    return self._offered[k]
        # another product named as the new item: not possible
        other = [n for n in (self._product_types or {}) if n != item["name"] and _name_mentioned(new_part, n)
                 and not _name_mentioned(new_part, str(item["name"]))]
        if other:
            return self._refuse(intent, f"I can't exchange the {item['name']} for a {other[0]}: an item can only be "
                                        "exchanged for another variant of the same product.")
        if self._product_types is None and self._asking != "options" and not any(
                _mentions(new_part, str(v)) for var in variants for v in var.get("options", {}).values()):
            return self._call("list_all_product_types", {})
        wanted: dict[str, str] = {}
        for opt in old:
            values = sorted({str(v["options"].get(opt)) for v in variants if v.get("options", {}).get(opt)},
                            key=len, reverse=True)
            hits = [v for v in values if v != old[opt] and self._value_mentioned(new_part, v, values)]
            if len(hits) == 1:
                wanted[opt] = hits[0]
        if wanted and len(wanted) > 1 and self._draw("forget_constraint", f"ignored the wanted {item['name']} "
                                                                          "option " + next(iter(wanted))):
            wanted.pop(next(iter(wanted)))
        if not wanted and re.search(r"\b(?:same|identical|exactly|new one|replacement|another one)\b", new_part,
                                    re.IGNORECASE) or not wanted and self._asking == "options" and all(
                                        _mentions(new_part, v) for v in old.values()):
            same = next((v for v in variants if str(v["item_id"]) == str(item["item_id"])), None)
            if same is not None and same.get("available"):
                return str(item["item_id"])
        target = {**old, **wanted}
        match = [v for v in variants if {k: str(x) for k, x in v.get("options", {}).items()} == target]
        if wanted and match:
            chosen = match[0]
            if not chosen.get("available"):
                return self._refuse(intent, f"the {item['name']} ({self._options_text(target)}) is not available "
                                            "right now, so that exchange is not possible." if intent.kind ==
                                    "exchange" else f"the {item['name']} ({self._options_text(target)}) is not "
                                                    "available right now, so that change is not possible.")
            new_id = str(chosen["item_id"])
            others = [str(v["item_id"]) for v in variants if v.get("available") and str(v["item_id"]) not in
                      (new_id, str(item["item_id"]))]
            if others and self._draw("wrong_item", f"picked another {item['name']} variant"):
                new_id = others[int(self._faults.rng.integers(len(others)))]
            return new_id
        if self._asking == "options" and intent.rejections > 2:
            return self._refuse(intent, "I can't make that change: I could not find the variant you want.")
        available = [v for v in variants if v.get("available") and str(v["item_id"]) != str(item["item_id"])]
        if not available:
            return self._refuse(intent, f"I can't change the {item['name']}: no other variant of it is available "
                                        "right now.")
        if self._asking == "options":
            intent.rejections += 1
        self._offered = [str(v["item_id"]) for v in available]
        listing = "\n".join(f"- {self._options_text(v.get('options', {}))} ({_money(float(v['price']))})"
                            for v in available)
        self._asking = "options"
        return self._say(f"Which options do you want for the new {item['name']} (now: {self._options_text(old)})? "
                         f"These are available:\n{listing}\nWhich one would you like?")

    @staticmethod
    def _value_mentioned(text: str, value: str, values: list[str]) -> bool:
        if _mentions(text, value):
            return True
        tokens = [t for t in re.findall(r"[a-z]+", value.lower()) if len(t) >= 4]
        # a word of this value alone names it only when no other value has that word (plural or not)
        others = {t.rstrip("s") for v in values if v != value for t in re.findall(r"[a-z]+", v.lower())}
        return any(t.rstrip("s") not in others and _mentions(text, t) for t in tokens)

    def _resolve_payment(self, text: str, exclude: str | None, prefer: str | None = None) -> str | None:
        """Return the id of the user's payment method the text names (negated mentions ignored), or None.

        A bare "credit card" that fits several cards means ``prefer`` (the card the order was paid with) when it
        is one of them; otherwise it stays ambiguous (None).
        """
        assert self._user is not None
        clean = _NEGATED_RE.sub(" ", text)
        methods = list(self._user.get("payment_methods", {}).values())
        hits: list[str] = []
        for m in methods:
            mid = str(m.get("id"))
            source = str(m.get("source"))
            if source == "gift_card" and re.search(r"gift ?card", clean, re.IGNORECASE):
                hits.append(mid)
            elif source == "paypal" and re.search(r"pay ?pal", clean, re.IGNORECASE):
                hits.append(mid)
            elif source == "credit_card":
                last = str(m.get("last_four", ""))
                brand = str(m.get("brand", "")).lower()
                brands = {brand, {"amex": "american express", "mastercard": "master card"}.get(brand, brand)}
                if (last and re.search(r"\b" + last + r"\b", clean)) or any(
                        re.search(r"\b" + re.escape(b) + r"\b", clean, re.IGNORECASE) for b in brands):
                    hits.append(mid)
        if not hits:
            cards = [str(m.get("id")) for m in methods if m.get("source") == "credit_card"]
            if re.search(r"credit card|\bcard\b", clean, re.IGNORECASE) and not re.search(r"gift ?card", clean,
                                                                                           re.IGNORECASE):
                hits = cards
        hits = [h for h in dict.fromkeys(hits) if h != exclude]
        if len(hits) > 1 and prefer in hits and all(self._method(h).get("source") == "credit_card" for h in hits):
            hits = [prefer]
        if len(hits) > 1 and all(self._method(h).get("source") == "gift_card" for h in hits):
            hits = sorted(hits, key=lambda h: -float(self._method(h).get("balance", 0)))[:1]
        return hits[0] if len(hits) == 1 else None

    # ------------------------------------------------------------------------------------------ texts
    def _method(self, method_id: str) -> dict[str, Any]:
        return dict((self._user or {}).get("payment_methods", {}).get(method_id) or {"id": method_id})

    def _method_text(self, method_id: str | None) -> str:
        if method_id is None:
            return "the original payment method"
        m = self._method(method_id)
        source = m.get("source")
        if source == "gift_card":
            return f"your gift card ({method_id}, balance {_money(float(m.get('balance', 0)))})"
        if source == "paypal":
            return f"your PayPal account ({method_id})"
        if source == "credit_card":
            return f"your {str(m.get('brand', 'credit')).title()} credit card ending in {m.get('last_four')}"
        return str(method_id)

    def _methods_text(self) -> str:
        return "; ".join(self._method_text(str(k)) for k in (self._user or {}).get("payment_methods", {}))

    @staticmethod
    def _order_method(order: dict[str, Any]) -> str | None:
        pays = [p for p in order.get("payment_history", []) if p.get("transaction_type") == "payment"]
        return str(pays[0]["payment_method_id"]) if pays else None

    @staticmethod
    def _order_total(order: dict[str, Any]) -> float:
        return round(sum(float(it.get("price", 0)) for it in order.get("items", [])), 2)

    @staticmethod
    def _options_text(options: Mapping[str, Any]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in options.items())

    def _items_text(self, order: dict[str, Any], options: bool = False) -> str:
        return "; ".join(f"{it.get('name')}" + (f" ({self._options_text(it.get('options', {}))})" if options else "")
                         for it in order.get("items", []))

    def _names_of(self, order: dict[str, Any], item_ids: Sequence[str]) -> str:
        by_id = {str(it["item_id"]): it for it in order.get("items", [])}
        return " and ".join(f"{by_id[i]['name']} ({self._options_text(by_id[i].get('options', {}))})"
                            if i in by_id else i for i in item_ids)

    @staticmethod
    def _address_text(a: Mapping[str, Any]) -> str:
        parts = [a.get("address1"), a.get("address2"), a.get("city"), f"{a.get('state')} {a.get('zip')}",
                 a.get("country")]
        return ", ".join(str(p) for p in parts if p)

    def _difference(self, order: dict[str, Any], items: Sequence[str], new_items: Sequence[str]) -> float:
        old = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
        prices = {str(v["item_id"]): float(v["price"]) for p in self._products.values()
                  for v in p.get("variants", {}).values()}
        diff = round(sum(prices.get(n, 0.0) for n in new_items) - sum(old.get(i, 0.0) for i in items), 2)
        self._pending_diff = diff
        return diff

    _pending_diff: float = 0.0

    def _confirm_text(self, name: str, args: dict[str, Any]) -> str:
        oid = args.get("order_id")
        order = self._orders.get(str(oid), {})
        if name == "cancel_pending_order":
            refund = self._order_total(order)
            body = (f"I will cancel order {oid} ({self._items_text(order)}) for the reason '{args['reason']}'. The "
                    f"refund of {_money(refund)} goes back to {self._method_text(self._order_method(order))}.")
        elif name == "modify_pending_order_address":
            body = f"I will change the shipping address of order {oid} to {self._address_text(args)}."
        elif name == "modify_user_address":
            body = f"I will update your default address to {self._address_text(args)}."
        elif name == "modify_pending_order_payment":
            body = (f"I will change the payment method of order {oid} (total {_money(self._order_total(order))}) "
                    f"from {self._method_text(self._order_method(order))} to "
                    f"{self._method_text(args['payment_method_id'])}.")
        elif name == "return_delivered_order_items":
            prices = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
            total = sum(prices.get(i, 0.0) for i in args["item_ids"])
            body = (f"I will return the {self._names_of(order, args['item_ids'])} from order {oid}; the refund of "
                    f"{_money(total)} goes to {self._method_text(args['payment_method_id'])}.")
        else:
            variants = {str(v["item_id"]): v for p in self._products.values() for v in p.get("variants", {}).values()}
            by_id = {str(it["item_id"]): it for it in order.get("items", [])}
            swaps = "; ".join(
                f"the {by_id[o]['name']} ({self._options_text(by_id[o].get('options', {}))}) for "
                f"{by_id[o]['name']} ({self._options_text(variants.get(n, {}).get('options', {}))})"
                for o, n in zip(args["item_ids"], args["new_item_ids"], strict=True) if o in by_id)
            diff = self._difference(order, args["item_ids"], args["new_item_ids"])
            who = self._method_text(args["payment_method_id"])
            money = (f"price difference {_money(diff)} charged to {who}" if diff > 0 else
                     f"price difference {_money(-diff)} refunded to {who}" if diff < 0 else "no price difference")
            verb = "exchange" if name.startswith("exchange") else "modify order " + str(oid) + ": change"
            where = f" in order {oid}" if name.startswith("exchange") else ""
            body = (f"I will {verb} {swaps}{where}, {money}. This can be done only once for the order, so every "
                    "item to change must be in it.")
        return f"{body} Shall I proceed (yes/no)?"


_WRITES = frozenset({"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
                     "modify_pending_order_items", "modify_user_address", "return_delivered_order_items",
                     "exchange_delivered_order_items"})

"""The retail reference agent's understanding: the user's words read into requests (:class:`Intent`) and slots.

Patterns over plain English find order ids, e-mail addresses, names with zip codes, addresses written as
``ADDRESS1, ADDRESS2, CITY, STATE ZIP, COUNTRY``, payment kinds and cancellation reasons; product names are
matched in the ways they may be written (:func:`name_forms`). :class:`RetailUnderstanding` holds what the agent
has learnt and reads each user message (``_absorb_user``) into the requests being served.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.agents.kit import ReferenceAgentBase, TrialContext, is_closing, is_no, is_yes

__all__ = [
    "ACTION_RE", "ADDRESS_RE", "ADDRESS_REF_RE", "EMAIL_RE", "KIND_PATTERNS", "LOOSE_NAME_RE", "NAME_RE",
    "NEGATED_RE", "NOT_NAMES", "ORDER_RE", "PARTIAL_ADDRESS_RE", "REASONS", "RECENT_ORDER_RE", "TRANSFER_RE",
    "UNKNOWN_RE", "ZIP_RE", "Intent", "RetailUnderstanding", "change_parts", "mentions", "name_forms",
    "name_mentioned", "normalize", "split_change",
]

ORDER_RE = re.compile(r"#?\b(W\d{7})\b", re.IGNORECASE)
EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
"""An email; tried only where a run of word characters, dots, pluses and hyphens starts (linear: a long
unbroken token is scanned once, not from each of its characters)."""
ZIP_RE = re.compile(r"\bzip(?:\s*+code)?(?:\s++is)?\s*+[:#]?\s*+(\d{5})\b", re.IGNORECASE)
NAME_RE = re.compile(r"\b(?i:i'm|i am|my name is|this is|name is|name:|it's|it is)\s+([A-Z][a-z'-]+)\s+"
                      r"([A-Z][a-z'-]+)")
LOOSE_NAME_RE = re.compile(r"\b([A-Za-z][a-z'-]{1,40}+)\s+([A-Za-z][a-z'-]{1,40}+)\s*+,?\s*+(?:zip(?:\s*+code)?\s*+)?"
                            r"(\d{5})\b")
"""A name right before a zip code ("Samuel Laine, 83782", "samuel laine 83782"); names are title-cased. A name
word has at most 41 letters (so a long hyphenated token costs linear time, not a rescan from every hyphen)."""
ADDRESS_RE = re.compile(
    r"(?<![\w#-])(?P<a1>\d+\s[^,\n]{0,100}?),\s*(?:(?P<a2>[^,\n]{1,100}?),\s*)?"
    r"(?P<city>[A-Za-z][A-Za-z .'-]{0,60}?),\s*(?P<state>[A-Z]{2})\s+"
    r"(?P<zip>\d{5})(?:\s*,\s*(?P<country>[A-Z][A-Za-z]*(?: [A-Z][a-z]+){0,2})\b)?")
ADDRESS_REF_RE = re.compile(
    r"\b(?:to|as|use|using)\s+(?:the\s+|my\s+)?(?:same\s+)?(?:shipping\s+|delivery\s+)?"
    r"address(?:\s+in\s+(?P<city>[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,4}))?\s+(?:that|which|where|of)\s+(?:my\s+)?"
    r"(?:other\s+)?order\s+(?:(?P<oid>#?W\d{7})|with\s+(?P<items>.{1,200}?))"
    r"(?:\s+(?:ships?|is shipped|was shipped|is going|goes|went|was sent|is sent|is delivered|was delivered)\b"
    r"(?:\s+to)?|[.?!;]|$)", re.IGNORECASE)
"""A new address named by the order that ships there: "to the address (in CITY) that my order with X ships to"
(only after "to"/"as"/"use": "change the address of my order with X" names the order being changed)."""
PARTIAL_ADDRESS_RE = re.compile(
    r"\b(?P<a2>(?:suite|apt\.?|apartment|unit|ste\.?|floor|room)\s*+#?\s*+\d\w*)\b[^().;]{0,20}?\(?\s*(?:and\s+|with\s+)?"
    r"(?:the\s+)?rest\s+(?:of\s+(?:the|my)\s+address\s+)?(?:stays?|is|remains?|keeps?)\s+(?:the\s+)?same",
    re.IGNORECASE)
"""A partial address: a new second line, the rest unchanged ("Suite 641 (the rest of the address stays the
same)")."""
RECENT_ORDER_RE = re.compile(
    r"\b(?:most recent(?:ly placed)?|latest|newest|last)\s+order\b|"
    r"\border\s+(?:that\s+)?(?:i\s+)?(?:have\s+)?(?:most recently|just|recently|last)\s+(?:placed|made|ordered)\b",
    re.IGNORECASE)
"""The order the user placed last (the last of the account's orders)."""
UNKNOWN_RE = re.compile(r"\b(?:don'?t|do not) (?:know|have|remember)|no idea|not sure", re.IGNORECASE)
NEGATED_RE = re.compile(r"\b(?:instead of|rather than|not)\s++(?:to\s+)?(?:the\s+|my\s+|your\s+|a\s+)?"
                         r"[^,.;]{0,200}?(?:card|paypal|account)\b", re.IGNORECASE)
TRANSFER_RE = re.compile(
    r"never (?:arrived|came|got|received)|didn't (?:arrive|get it|receive)|did not (?:arrive|receive)|"
    r"\bmissing\b|\blost\b|\bstolen\b|investigat|\bhuman\b|real person|representative|supervisor|manager|"
    r"(?:change|update|modify)\s+(?:the\s+|my\s+)?(?:e-?mail|phone|name)|new e-?mail|e-?mail address on|"
    r"\bdamaged\b|\bbroken\b|\bcomplain|\bundo\b|\bun-?cancel|\breinstate|\brestore", re.IGNORECASE)
KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
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
ACTION_RE = re.compile(r"\b(?:cancel\w*|return|exchange|swap|switch|replace|update|change|modify|ship|send|mov\w+|"
                        r"pay|charge|balance|how much|what|status|total)\b", re.IGNORECASE)
NOT_NAMES = frozenset({"hi", "hello", "hey", "dear", "is", "code", "zip", "my", "and", "name", "it's", "im", "i'm",
                        "am", "the", "in", "at", "of", "to"})
"""Words before a zip code that are not a name ("my zip is 83782", "zip code 83782")."""
REASONS = (("ordered by mistake", re.compile(r"by mistake|\bmistake|accident", re.IGNORECASE)),
            ("no longer needed", re.compile(r"no longer need|don'?t need|do not need|not needed|no need",
                                            re.IGNORECASE)))


_DOUBLED_L = re.compile(r"(?<=[aeiou])ll(?=(?:ed|ing)\b)")
"""British spelling's doubled final l before -ed/-ing ("enamelled", "travelling"), written with one l."""


def normalize(text: str) -> str:
    """Lower-case ``text``, spell a doubled final l before -ed/-ing with one l, and collapse whitespace."""
    return re.sub(r"\s+", " ", _DOUBLED_L.sub("l", text.lower())).strip()


def mentions(text: str, phrase: str) -> bool:
    """True when ``phrase`` occurs in ``text`` as whole words (case-insensitive, plural 's' allowed)."""
    return re.search(r"(?<![\w.-])" + re.escape(normalize(phrase)) + r"(?:s|es)?(?![\w-])", normalize(text)) is not None


_GENERIC_WORDS = frozenset({"standing", "electric", "kitchen", "ceramic", "acoustic", "camping", "machine", "winter"})


def name_forms(name: str) -> set[str]:
    """Return the ways a product name may be written.

    Whole, its last two words ("knife set"), its last word when it has four letters or more ("mixer"), or a
    distinctive long word ("microwave").
    """
    words = name.lower().split()
    forms = {name.lower(), " ".join(words[-2:])}
    if len(words[-1]) >= 4:
        forms.add(words[-1])
    return forms | {w for w in words if len(w) >= 6 and w not in _GENERIC_WORDS}


def name_mentioned(text: str, name: str) -> bool:
    """True when a product name is mentioned in one of its :func:`name_forms`."""
    return any(mentions(text, f) for f in name_forms(name))


def change_parts(text: str, name: str) -> list[str]:
    """The parts of a change request about product ``name``, one per item to change.

    "the tea kettle for a tea kettle with material ceramic and the tea kettle for a tea kettle with capacity 1.5
    liters" has two: each starts at a mention of the old item (one followed by "for"/"into"/"to a"/"->") and runs
    to the next such mention.
    """
    low = normalize(text)
    word = re.escape(name.lower().split()[-1])
    starts = [m.start() for m in re.finditer(r"\b" + word + r"s?\b(?:\s*+\([^)]{0,200}\))?\s+(?:for|into|->|to an?)\s",
                                            low)]
    return [low[a:b] for a, b in zip(starts, [*starts[1:], len(low)], strict=True)] if starts else []


def split_change(text: str, name: str) -> tuple[str, str]:
    """Split a change request about product ``name`` into the old item's words and the new item's words.

    "X for Y", "X to Y", "X -> Y": X describes the old item, Y the new one; "Y instead of X": the reverse. The
    separator is looked for after the product name.
    """
    low = normalize(text)
    inst = re.search(r"\binstead of\b", low)
    if inst:
        return low[inst.end():], low[:inst.start()]
    spots = [m.start() for f in name_forms(name) for m in [re.search(re.escape(f), low)] if m]
    sep = re.compile(r"\s(?:for|into|->|with an?|to an?|to the|to one)\s|[:;,]\s*(?:i (?:want|need|would like|'d like)|"
                     r"i'd prefer|make it|the new one)\b").search(low, min(spots, default=0))
    if sep:
        return low[:sep.start()], low[sep.end():]
    return low, low


@dataclass
class Intent:
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


class RetailUnderstanding(ReferenceAgentBase):
    """What the agent has learnt, and the reading of each user message into requests and their slots."""

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None, *, known: Sequence[str], who: str,
                 salt: int):
        super().__init__(ctx, faults, known=known, who=who, salt=salt)
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
        self._intents: list[Intent] = []
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

    def _current(self) -> Intent | None:
        return next((i for i in self._intents if not i.done), None)

    def _absorb_user(self, text: str) -> None:
        self._last_user = text
        self._answer = "yes" if is_yes(text) else "no" if is_no(text) else None
        for email in EMAIL_RE.finditer(text):
            before = text[max(0, email.start() - 25):email.start()].lower()
            if self._user_id is None and not re.search(r"\bto\s*$|\bnew\b|\binto\s*$", before):
                self._email = email.group(0).rstrip(".")
                break
        name = NAME_RE.search(text)
        zip_code = ZIP_RE.search(text)
        loose = LOOSE_NAME_RE.search(text)
        if self._user_id is None:
            if name:
                self._name = (name.group(1), name.group(2))
            if zip_code:
                self._zip = zip_code.group(1)
            if loose and loose.group(1).lower() not in NOT_NAMES and loose.group(2).lower() not in NOT_NAMES:
                self._name = self._name or (loose.group(1).title(), loose.group(2).title())
                self._zip = self._zip or loose.group(3)
            if self._asking == "identity" and self._zip is None:
                bare = re.search(r"\b\d{5}\b", text)
                if bare and not ADDRESS_RE.search(text):
                    self._zip = bare.group(0)
        if self._closed and not self._pending:
            self._closed = False
        intent = self._current()
        if self._pending is not None:
            if self._answer == "no" and intent is not None:
                self._declined(intent, text)
            return
        if intent is not None and self._asking not in (None, "identity", "anything_else"):
            self._fill_slot(intent, text)
            return
        self._new_requests(text)

    def _declined(self, intent: Intent, text: str) -> None:
        """The user said no to the pending write: restate the request, or drop it for a transfer or another one."""
        intent.rejections += 1
        self._pending = None
        restated = text.split(":", 1)[1] if ":" in text else text
        kind = self._kind_of(restated)
        if kind == "transfer" and intent.kind != "transfer":
            # "No, I want a human agent": the request is dropped for a transfer
            intent.done = True
            self._intents.insert(self._intents.index(intent) + 1, Intent(kind="transfer", text=restated))
        elif kind not in (None, "info", "item_change", intent.kind) and intent.kind != "exchange" \
                and ACTION_RE.search(restated):
            # "No, cancel the order instead": a change of mind; the request is dropped for the new one
            intent.done = True
            new = Intent(kind=kind, text=restated)
            self._intents.insert(self._intents.index(intent) + 1, new)
            self._fill_slot(new, restated)
        elif kind in (None, intent.kind, "item_change") or intent.kind == "exchange":
            self._reset(intent, restated)

    def _reset(self, intent: Intent, text: str) -> None:
        intent.text = text
        intent.items = intent.new_items = None
        intent.payment_id = None
        intent.address = None
        order = ORDER_RE.search(text)
        if order:
            intent.order_id = "#" + order.group(1).upper()

    def _kind_of(self, text: str) -> str | None:
        if TRANSFER_RE.search(text):
            return "transfer"
        text = re.sub(r"\be-?mail(?: address)?\b", "email", EMAIL_RE.sub(" ", text), flags=re.IGNORECASE)
        if re.search(r"\bhow much\b[^.?!]{0,200}\b(?:pay|paid|cost|charged?|spend|spent)\b", text, re.IGNORECASE) or \
                re.search(r"^\W*(?:(?:another thing|one more (?:thing|question)|also|next|and|so)\W+)?(?:(?:could|can) "
                          r"you (?:tell|let) me\s+|i'?d like to know\s+|i want to know\s+|i wonder\s+)?"
                          r"(?:what (?:is|are|was|were) the|what's the|how much|how many)\b", text, re.IGNORECASE):
            # a question about an amount or a fact, even when it names an action ("the price after the change")
            return "info"
        if re.search(r"\b(?:tell me|know|wonder|ask)\s+(?:if|whether)\s+(?:i|we|you)\s+(?:can|could)\b|"
                     r"\b(?:whether|which card|did i|have i)\b[^.?!]{0,200}\b(?:paid|used)\b", text,
                     re.IGNORECASE) and not ORDER_RE.search(text):
            # "could you tell me if I can ...": asks whether something is possible, not to do it
            return "info"
        if self._last_result.get("money") and re.search(r"\b(?:price difference|the price|the refund)\b", text,
                                                         re.IGNORECASE) and re.search(
                r"^\W*(?:\w+\W+){0,3}?(?:can|could|is|are|will|would|did|does|verify|confirm)\b", text, re.IGNORECASE) \
                and not ORDER_RE.search(text):
            # a question about the money of the action just done
            return "info"
        for kind, pattern in KIND_PATTERNS:
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
        text = ADDRESS_REF_RE.sub("address", text)
        if ORDER_RE.search(text) or re.search(r"\border\b", text, re.IGNORECASE):
            if not re.search(r"\b(?:default|profile|account|on file)\b", text, re.IGNORECASE):
                return "modify_address"
            return "modify_address" if re.search(r"\bship|\bsend|\bsent\b", text, re.IGNORECASE) and not re.search(
                r"\bdefault address\b.{0,300}\border\b|\bupdate\b.{0,300}\bdefault\b", text, re.IGNORECASE) else \
                "modify_user_address"
        return "modify_user_address"

    def _new_requests(self, text: str) -> None:
        clauses = [c for c in re.split(r";|(?<=[.!?])\s+|\balso\b|\bas well\b|,\s*and\s+(?=(?:return|cancel|exchange|"
                                       r"modify|update|switch)\b)", text) if c and c.strip()]
        found: list[Intent] = []
        current = self._current()
        for clause in clauses:
            kind = self._kind_of(clause)
            target = found[-1] if found else current
            if kind is not None and target is not None and not ACTION_RE.search(clause):
                kind = None
            if kind is None or (kind == "info" and found and found[-1].kind != "info"):
                if found:
                    found[-1].text += " " + clause
                continue
            found.append(Intent(kind=kind, text=clause))
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
                self._intents.append(Intent(kind=None, text=text))
            return
        for intent in found:
            self._fill_slot(intent, intent.text)
            if intent.order_id is None and intent.kind not in ("modify_user_address", "info"):
                previous = self._intents[-1] if self._intents else None
                if previous is not None and previous.order_id and not ORDER_RE.search(text) and re.search(
                        r"\b(?:it|that order|the same order|this order)\b", intent.text, re.IGNORECASE):
                    intent.order_id = previous.order_id
        self._intents.extend(found)

    def _fill_slot(self, intent: Intent, text: str) -> None:
        if text is not intent.text:
            intent.text += " " + text
        order = ORDER_RE.search(text)
        if order and (intent.order_id is None or self._asking == "order_id"):
            intent.order_id = "#" + order.group(1).upper()
        if not order and self._asking == "order_id" and self._listed_orders:
            ordinal = re.search(r"\b(first|second|third|fourth|fifth|last|only)\b", text, re.IGNORECASE)
            if ordinal:
                k = {"first": 0, "only": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
                     "last": -1}[ordinal.group(1).lower()]
                if -1 <= k < len(self._listed_orders):
                    intent.order_id = self._listed_orders[k]
        for reason, pattern in REASONS:
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
        m = ADDRESS_RE.search(text)
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

"""Dialogue acts of an agent message, recognised by patterns (no model).

The rule-based user (:mod:`simulator.users.rule_user`) never sees the agent's internals; it reads the agent's
last message as a set of dialogue acts:

- ``request_identity``: asks the user to identify (email, name and zip, user id, date of birth ...); ``slots``
  names the identity facts asked for (``email``, ``name``, ``zip``, ``user_id``, ``dob``), possibly none.
- ``request_slot``: asks for a value; ``slots`` names it by standard slot name (``order_id``, ``items``,
  ``new_items``, ``payment``, ``reason``, ``address``, ``reservation_id`` ..., see :data:`SLOT_PATTERNS`) or, for
  values no user ever knows, ``item_id``, ``product_id``, ``payment_method_id``, ``password`` ...
- ``confirm``: states an action and asks yes/no (:func:`simulator.dialogue.cues.asks_confirmation` holds and the
  question is not a "which/what" question).
- ``offer_options``: lists choices (bullet or numbered lines, or "available options ... which one").
- ``report_result``: says an action was carried out ("Done: ... has been cancelled").
- ``anything_else``: offers more help ("Is there anything else I can help you with?").
- ``refuse``: says the wish cannot be met ("I'm sorry, but I can't ...", "... is not possible").
- ``transfer``: says the user is being handed to a human.
- ``inform``: states facts (amounts, numbers, statuses) in a sentence that is not a question.
- ``unclear``: none of the above.

A message can carry several acts (e.g. ``report_result`` + ``anything_else``). Patterns look only at sentences
that ask something for the request acts (a question, or an imperative such as "please provide ..."), so a report
that mentions "your order" is not a request for the order id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simulator.dialogue.cues import asks_confirmation, offers_more_help
from simulator.dialogue.text import clip_long_tokens

__all__ = ["ACTS", "IDENTITY_PATTERNS", "SLOT_PATTERNS", "DialogueActs", "classify", "sentences"]

ACTS = ("request_identity", "request_slot", "confirm", "offer_options", "report_result", "anything_else",
        "refuse", "transfer", "inform", "unclear")
"""Every act :func:`classify` can return, in the order it reports them."""


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


IDENTITY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", _rx(r"\be-?mail\b")),
    ("name", _rx(r"\b(?:(?:first|last|full|sur)\s*(?:and last )?name|your name|name on the account)\b")),
    ("zip", _rx(r"\b(?:zip|postal|post)\s*code\b|\bzip\b")),
    ("user_id", _rx(r"\b(?:user|customer|account|member(?:ship)?)\s*(?:id|number)\b|\busername\b")),
    ("dob", _rx(r"\b(?:date of birth|birth ?date|birthday|dob)\b")),
)
"""Identity facts an agent may ask for, with the pattern recognising each in an asking sentence."""

_IDENTITY_GENERIC = _rx(
    r"\b(?:authenticat\w*|verify (?:your )?identity|identify (?:yourself|you)|verify (?:who you are|your account)|"
    r"(?:find|locate|look up|pull up|access) your (?:account|profile|record)s?)\b"
)

SLOT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("item_id", _rx(r"\bitem\s*ids?\b|\bitem numbers?\b")),
    ("product_id", _rx(r"\bproduct\s*ids?\b")),
    ("payment_method_id", _rx(r"\bpayment(?: method)?\s*ids?\b")),
    ("password", _rx(r"\b(?:password|passcode|pin|security code|cvv|otp|one-time code)\b")),
    ("card_number", _rx(r"\b(?:full )?(?:card|credit card) number\b")),
    ("order_id", _rx(r"\border\s*(?:id|number|#)|\bwhich (?:of your )?orders?\b|\bwhat orders?\b|\bthe order\b")),
    ("reservation_id", _rx(r"\b(?:reservation|booking)\s*(?:id|number|code|reference)|\bconfirmation (?:number|code)"
                           r"|\bwhich (?:of your )?(?:reservation|booking)s?\b")),
    ("new_items", _rx(r"\bnew (?:item|product|version|variant|option)s?\b|\bwhich options\b|\bwhat options\b|"
                      r"\b(?:exchange|swap|replace|change) (?:it|them|(?:the|that|this|those|these) items?) "
                      r"(?:for|with|to)\b|\bwhich (?:color|colour|size|variant|version|model|capacity|style)\b|"
                      r"\b(?:exchange|swap) (?:it )?for\b|"
                      r"\bwhat would you like (?:it |them )?(?:exchanged|changed) to\b")),
    ("items", _rx(r"\bwhich (?:of the )?(?:items?|products?)\b|\bwhat (?:items?|products?)\b|\bitem\(s\)|"
                  r"\b(?:items?|products?) (?:do|would) you (?:like|want)\b|\bwhich ones?\b.*\b(?:return|exchange|"
                  r"cancel|modify|change)\b")),
    ("payment", _rx(r"\bpayment\b|\bpay (?:with|for|by)\b|\brefund(?:ed)? (?:to|into|back to)\b|\bwhich card\b|"
                    r"\bcharge(?:d)? (?:to|on)\b|\bgift card or\b|\bhow would you like to pay\b")),
    ("reason", _rx(r"\breason\b|\bwhy\b")),
    ("address", _rx(r"(?<!mail )(?<!mail-)\baddress\b|\bship(?:ped|ping)? to\b|\bdeliver(?:ed)? to\b")),
    ("flight", _rx(r"\bflights?\b")),
    ("cabin", _rx(r"\bcabin\b|\bclass\b|\bseat type\b")),
    ("passengers", _rx(r"\bpassengers?\b|\btravel(?:l)?ers?\b|\bwho (?:is|will be) (?:flying|travel)")),
    ("baggage", _rx(r"\bbag(?:s|gage|gages)?\b|\bluggage\b|\bsuitcases?\b")),
    ("insurance", _rx(r"\binsurance\b")),
    ("date", _rx(r"\bdates?\b|\bwhen (?:do|would|will) you\b")),
    ("origin", _rx(r"\b(?:flying|departing|leaving) from\b|\borigin\b|\bdeparture (?:city|airport)\b")),
    ("destination", _rx(r"\bdestination\b|\b(?:flying|going|travell?ing) to\b|\barrival (?:city|airport)\b")),
)
"""Slots an agent may ask for, with the pattern recognising each in an asking sentence (first match first).

``item_id``, ``product_id``, ``payment_method_id``, ``password`` and ``card_number`` are values a simulated user
never has; they are recognised so that the user can say it does not know them."""

_ASKING = _rx(
    r"\?\s*$|^\s*(?:please\s+)?(?:provide|give|tell|share|send|let me know|specify|enter|type|confirm|choose|"
    r"select|pick)\b|\b(?:could|can|would|will) you (?:please )?(?:provide|give|tell|share|send|let me know|"
    r"specify|confirm|choose|select|pick)\b|\bi (?:will |'ll )?(?:need|require)\b|\bplease (?:provide|give|tell|"
    r"share|send|let me know|specify|enter|choose|select|pick)\b|\bmay i (?:have|get|ask)\b"
)
_WH_QUESTION = _rx(r"^\W*(?:which|what|where|when|who|how)\b")
_TRANSFER = _rx(
    r"\btransfer(?:ring|red)? you\b|\b(?:connect|escalat)(?:ing|ed|e)? (?:you|this|your)\b|"
    r"\bhand(?:ing)? (?:you )?(?:over )?to\b|\bto a human\b|\bhuman (?:agent|representative)s? will\b|"
    r"\ba (?:live |human )?(?:agent|representative|specialist|colleague) will (?:be with you|contact|help|take)"
)
_ACTION_VERBS = (r"(?:cancel+(?:ed|led)?|returned|exchanged|modified|changed|updated|processed|booked|refunded|"
                 r"issued|submitted|placed|upgraded|downgraded|added|removed|rebooked|switched|applied|initiated|"
                 r"requested|made|handled|completed|taken care of)")
_REPORT = _rx(
    r"^\W*(?:done|all set|all done|success)\b|\bsuccessfully\b|\b(?:has|have) (?:now )?been (?:successfully )?"
    + _ACTION_VERBS + r"\b|\b(?:is|are|was|were) now " + _ACTION_VERBS + r"\b|\bi(?:'ve| have)? (?:now )?(?:just )?"
    r"(?:cancel+ed|returned|exchanged|modified|changed|updated|processed|booked|refunded|issued|submitted|placed|"
    r"upgraded|added|removed|rebooked|switched)\b|\b(?:the|your) (?:cancellation|return|exchange|modification|"
    r"change|update|refund|booking|upgrade) (?:is|was|has been) (?:complete|completed|done|confirmed|processed|"
    r"successful)\b"
)
_REFUSE = _rx(
    r"\b(?:can(?:no|')t|cannot|can not|unable to|not able to|won'?t be able to|couldn'?t|could not) (?:be )?"
    r"(?:cancel|return|exchang|modif|chang|process|refund|do|help with|make|offer|issue|grant|allow|book|upgrad|"
    r"add|remov|updat|accept|apply|waive|give|provide|compensat|switch|rebook|bend|override)\w*|"
    r"\b(?:is|are|isn'?t|aren'?t) (?:not )?(?:possible|allowed|permitted|eligible)\b|\bnot (?:possible|allowed|"
    r"permitted|eligible)\b|\bonly (?:be )?(?:possible|allowed|permitted|eligible)\b|\b(?:can|may) only (?:be )?\w+|"
    r"\bagainst (?:our|the|company) polic(?:y|ies)\b|\bpolicy (?:does not|doesn'?t) "
    r"(?:allow|permit)\b|\bno longer (?:be )?(?:cancel|return|exchang|modif|chang)\w*|\bi(?:'m| am) (?:not able|"
    r"unable|afraid i can'?t|not allowed)\b"
)
_REFUSE_EXCLUDE = _rx(r"^\W*(?:is|are|isn'?t|aren'?t) (?:not )?(?:possible|allowed)\b.*\?")
_INFORM = _rx(
    r"\$\s?\d|\b\d[\d,]*(?:\.\d+)?\b|\b(?:balance|status|total|price|cost|refund|pending|delivered|processed|"
    r"shipped|cancell?ed|available|in stock|out of stock|scheduled|delayed|landed)\b"
)
_BULLET = re.compile(r"^[^\S\n]*+(?:[-*\u2022]|\d+[.)]|[a-z][.)])\s++\S", re.IGNORECASE | re.MULTILINE)
_OPTIONS = _rx(
    r"\b(?:available|the following|these|here) (?:are|is)? ?(?:the )?(?:available )?(?:options|choices|"
    r"variants|versions|alternatives)\b|\b(?:options|choices|variants) (?:are|available|include)\b|"
    r"\b(?:these|the following) are available\b|\bwhich (?:one|option|of (?:these|them|those|the options))\b|"
    r"\b(?:choose|pick|select) (?:one|from|between|among)\b|\bwould you prefer\b|"
    r"\bwhich (?:would|do) you prefer\b|\byou can choose\b|\bwe have\b.*\b(?:or|and)\b.*\?"
)
_WHICH_Q = _rx(r"\bwhich\b[^?]*\?")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'\-*\u2022\d#$])|\n+")


def sentences(text: str) -> list[str]:
    """Split a message into sentences (on sentence ends and on line breaks).

    Args:
        text: the message.

    Returns:
        The non-blank sentences, stripped, in order.
    """
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


@dataclass(frozen=True)
class DialogueActs:
    """The acts of one agent message.

    Attributes:
        acts: the acts found, in :data:`ACTS` order (``("unclear",)`` when none).
        slots: the facts asked for by ``request_identity`` and ``request_slot``, identity facts first, each once,
            in the order of :data:`IDENTITY_PATTERNS` then :data:`SLOT_PATTERNS`.
        text: the classified message.
    """

    acts: tuple[str, ...]
    slots: tuple[str, ...] = ()
    text: str = ""

    def __contains__(self, act: object) -> bool:
        return act in self.acts

    @property
    def identity_slots(self) -> tuple[str, ...]:
        """The identity facts asked for (a subset of ``slots``)."""
        names = {n for n, _ in IDENTITY_PATTERNS}
        return tuple(s for s in self.slots if s in names)

    @property
    def value_slots(self) -> tuple[str, ...]:
        """The non-identity slots asked for (a subset of ``slots``)."""
        names = {n for n, _ in IDENTITY_PATTERNS}
        return tuple(s for s in self.slots if s not in names)


def _is_confirm(text: str) -> bool:
    if not asks_confirmation(text):
        return False
    last = sentences(text)[-1] if sentences(text) else text
    return not _WH_QUESTION.search(last) and not offers_more_help(last)


def classify(text: str | None) -> DialogueActs:
    """Classify an agent message into dialogue acts.

    Args:
        text: the agent's message (None or blank: ``unclear``). Tokens longer than
            :data:`~simulator.dialogue.text.MAX_TOKEN_CHARS` are cut to their ends first (they hold no cue; the cut
            keeps
            the scanning of a degenerate million-character token cheap); ``DialogueActs.text`` is the cut text.

    Returns:
        The :class:`DialogueActs` of the message.
    """
    if not text or not text.strip():
        return DialogueActs(acts=("unclear",), text=text or "")
    text = clip_long_tokens(text)
    found: set[str] = set()
    ident: list[str] = []
    slots: list[str] = []
    sents = sentences(text)
    confirm = _is_confirm(text)
    if confirm:
        found.add("confirm")
    if _offers_options(text):
        found.add("offer_options")
    for i, sent in enumerate(sents):
        asking = bool(_ASKING.search(sent))
        is_last = i == len(sents) - 1
        if asking and offers_more_help(sent):
            found.add("anything_else")
            continue
        if asking and not (confirm and is_last):
            _scan_request(sent, found, ident, slots)
        if not asking:
            _scan_statement(sent, found)
        if _REFUSE.search(sent) and not _REFUSE_EXCLUDE.search(sent) and not (asking and _WH_QUESTION.search(sent)):
            found.add("refuse")
    if ident:
        found.add("request_identity")
    if "offer_options" in found and not confirm:
        # a question that offers choices asks for a choice, not for the item itself
        slots = [s for s in slots if s not in ("items", "new_items")]
    if slots:
        found.add("request_slot")
    if "refuse" in found and "report_result" in found:
        found.discard("report_result")
    if not found:
        found.add("unclear")
    return DialogueActs(acts=tuple(a for a in ACTS if a in found), slots=tuple(ident + slots), text=text)


def _offers_options(text: str) -> bool:
    """Return whether a message offers choices (a bulleted question, a "which" over one bullet, listed options)."""
    bullets = len(_BULLET.findall(text))
    return bool((bullets >= 2 and "?" in text) or (bullets == 1 and _WHICH_Q.search(text))
                or _OPTIONS.search(text) and (bullets >= 2 or "," in text or " or " in text))


def _scan_request(sent: str, found: set[str], ident: list[str], slots: list[str]) -> None:
    """Note what a question sentence asks for: identity fields (``ident``), other slots (``slots``), in order.

    Args:
        sent: the sentence.
        found: the acts found so far (``request_identity`` is added on a generic identity request).
        ident: identity slot names asked for so far (extended, no repeats).
        slots: other slot names asked for so far (extended, no repeats).
    """
    for name, pat in IDENTITY_PATTERNS:
        if pat.search(sent) and name not in ident:
            ident.append(name)
    if _IDENTITY_GENERIC.search(sent):
        found.add("request_identity")
    for name, pat in SLOT_PATTERNS:
        if pat.search(sent) and name not in slots:
            slots.append(name)


def _scan_statement(sent: str, found: set[str]) -> None:
    """Note what a sentence that asks nothing does: ``transfer``, ``report_result``, ``inform`` (added to ``found``)."""
    if _TRANSFER.search(sent):
        found.add("transfer")
    if _REPORT.search(sent):
        found.add("report_result")
    if _INFORM.search(sent) and not _BULLET.match(sent):
        found.add("inform")

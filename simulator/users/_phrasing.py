"""Wording of the rule-based user: several phrasings per act, drawn by the trial's generator.

Messages are built from segments: framing text (drawn from :data:`PHRASES`, may get the persona's typos and
manner) and values (slot values, the scenario's own request wording; never altered). Templates name their
values with ``{field}``; :func:`render` keeps each field as a value segment, so no typo or case change can ever
touch an id, an email or an amount.

No template contains a digit, an email address or an id: every such token in a rule-based user's message comes
from its scenario.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ASIDES", "PHRASES", "Phraser", "Segment", "join_segments", "render"]

PHRASES: dict[str, tuple[str, ...]] = {
    "greeting": ("Hi.", "Hello.", "Hi there.", "Hello there.", "Good day.", "Hey."),
    "frame_request": ("I'd like to {request}.", "I want to {request}.", "I need to {request}.",
                      "Could you help me {request}?", "I'm writing because I'd like to {request}.",
                      "Can you help me {request}?", "Please help me {request}."),
    "frame_request_terse": ("Want to {request}.", "Need to {request}.", "{Request}, please."),
    "frame_own": ("{Request}.",),
    "frame_whether": ("I'd like to know {request}.", "Could you tell me {request}?", "I wonder {request}."),
    "frame_question": ("{Request}?", "Could you tell me {request}?", "I'd like to know {request}."),
    "frame_ask": ("Also, {request}?", "One more thing: {request}?", "Could you also tell me {request}?",
                  "And {request}?"),
    "email": ("my email is {email}", "my email address is {email}", "you can use my email, {email}"),
    "name_zip": ("I'm {name}, zip code {zip}", "my name is {name} and my zip code is {zip}",
                 "it's {name}, zip {zip}", "{name}, zip code {zip}"),
    "name": ("my name is {name}", "I'm {name}", "the name is {name}"),
    "zip": ("my zip code is {zip}", "the zip code is {zip}", "zip code {zip}"),
    "user_id": ("my user id is {user_id}", "my user id: {user_id}", "the user id is {user_id}"),
    "dob": ("my date of birth is {dob}", "I was born on {dob}"),
    "identity_other": ("my {label} is {value}", "the {label} is {value}"),
    "order_id": ("it's order {value}", "the order id is {value}", "order {value}", "it's {value}"),
    "reservation_id": ("the reservation id is {value}", "it's reservation {value}", "reservation {value}"),
    "items": ("the {value}", "it's the {value}", "I mean the {value}"),
    "new_items": ("I'd like {value}", "I want {value} instead", "{value}, please"),
    "payment": ("please use my {value}", "my {value}", "the {value}, please"),
    "payment_bare": ("please use {value}", "pay with {value}, please", "{value}"),
    "items_bare": ("it's {value}", "I mean {value}", "{value}"),
    "reason": ("the reason is: {value}", "reason: {value}", "it's simple: {value}"),
    "address": ("the address is {value}", "please use {value}", "{value}"),
    "slot_other": ("{label}: {value}", "for the {label}, {value}", "as for the {label}: {value}"),
    "yes": ("Yes, please go ahead.", "Yes, please do.", "Yes, that's right, go ahead.", "Yes, go ahead.",
            "Yes, please proceed."),
    "yes_terse": ("Yes.", "Yes, go ahead.", "Yes, do it."),
    "no": ("No, that's not what I want.", "No, that's not right.", "No, please don't do that.",
           "No, wait, that's wrong."),
    "no_terse": ("No.", "No, wrong."),
    "restate": ("What I want is to {request}.", "I want to {request}.", "I'd like to {request}."),
    "choose": ("I'd like the one with {prefs}.", "The one with {prefs}, please.", "I'll take the one with {prefs}.",
               "Please pick the one with {prefs}."),
    "choose_terse": ("The one with {prefs}.", "{Prefs}."),
    "prefs": ("I'd like one with {prefs}.", "I want it with {prefs}.", "Something with {prefs}, please."),
    "no_match": ("None of those work for me.", "Hmm, none of those is what I'm after.",
                 "That's not what I'm looking for."),
    "dont_know": ("Sorry, I don't know the {label}.", "I don't have the {label}, sorry.",
                  "I'm afraid I don't know the {label}.", "I don't know that."),
    "dont_know_terse": ("Don't know.", "No idea."),
    "describe_items": ("It's the {value}.", "All I can tell you is it's the {value}.", "It's about the {value}."),
    "closing": ("No, that's all, thank you.", "No, that's everything. Thanks!", "That's all I needed, thank you.",
                "No, nothing else. Thanks for your help."),
    "closing_terse": ("No, that's all.", "That's all.", "Nothing else."),
    "after_transfer": ("Okay, thank you.", "Alright, thanks.", "Fine, I'll wait."),
    "accept_refusal": ("Okay, I understand.", "Alright then.", "I see."),
    "check_claim": ("Has it really gone through? I haven't confirmed anything yet.",
                    "Are you sure it's done? I never confirmed it.",
                    "Wait, did that actually happen? We didn't go over the details."),
    "give_up_intent": ("Okay, I understand. Then that's all.", "Alright, never mind then. That's all.",
                       "I see. Let's leave it there then."),
    "fallback": ("In that case, I'd like to {request}.", "Then I want to {request} instead.",
                 "Okay, then please {request}."),
    "ack": ("Okay, thanks.", "Got it, thanks.", "Thanks, that's helpful.", "Alright."),
    "done_on_device": ("Okay, I did that.", "Done.", "Alright, I did it on my phone.",
                       "I did that. Here is what I see."),
    "ack_terse": ("Ok.", "Fine."),
    "unclear": ("Sorry, I'm not sure what you mean.", "I don't follow.", "I'm not sure I understand."),
    "go_on": ("Please go ahead with it.", "So can you do that?", "Can we go on with it?"),
    "next_request": ("I also need to {request}.", "Another thing: I'd like to {request}.",
                     "Next, I want to {request}.", "One more thing, I'd like to {request}."),
    "next_question": ("Another thing: {request}?", "Also, {request}?", "One more question: {request}?"),
    "choose_first": ("I'll take the first one.", "The first one, please."),
    "indifferent": ("Either is fine, the first one.", "The first option is fine.", "Whichever, the first one."),
    "already_told": ("I already told you.", "As I said before,", "Again:"),
}
"""Framing templates per act. Fields: ``{request}`` (``{Request}``: first letter upper-cased), ``{value}``,
``{label}``, ``{prefs}``, and identity fields. No template holds a digit, an ``@`` or an id."""

ASIDES: tuple[str, ...] = (
    "It's been a busy week, to be honest.",
    "I've been meaning to sort this out for a while.",
    "My neighbour recommended your store, by the way.",
    "Sorry, I'm typing this on my phone while the kettle boils.",
    "I hope your day is going well.",
    "I don't usually contact support, so bear with me.",
    "My cat keeps walking over the keyboard, apologies.",
)
"""What a verbose user adds: chat that carries no task information."""

POLITE: tuple[str, ...] = ("Thank you.", "Thanks so much.", "I appreciate your help.", "Thanks in advance.")
RUDE: tuple[str, ...] = ("Hurry up, please.", "Let's get this over with.", "This should be simple.",
                         "Come on.")


@dataclass(frozen=True)
class Segment:
    """A piece of a user message.

    Attributes:
        text: the text.
        value: True for a value taken verbatim from the scenario (never altered by typos or case changes).
    """

    text: str
    value: bool = False


def render(template: str, **fields: str) -> list[Segment]:
    """Fill a template, keeping each field but ``{label}`` (a slot's name) as a value segment.

    A field written with an upper-case first letter (``{Request}``) is filled with the value of the lower-case
    field with its first letter upper-cased.

    Args:
        template: a template from :data:`PHRASES`.
        **fields: the values by field name (lower-case).

    Returns:
        The segments, in order.

    Raises:
        KeyError: a field of the template is not given.
    """
    out: list[Segment] = []
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        if literal:
            out.append(Segment(literal))
        if name is None:
            continue
        if name == "label":
            out.append(Segment(fields[name]))  # a slot's name, not a value: framing text
        elif name in fields:
            out.append(Segment(fields[name], value=True))
        else:
            low = name[0].lower() + name[1:]
            text = fields[low]
            out.append(Segment(text[:1].upper() + text[1:], value=True))
    return out


def join_segments(parts: Sequence[Sequence[Segment]]) -> list[Segment]:
    """Join several sentences' segments with a space between them.

    Args:
        parts: the sentences, each a list of segments (empty ones are skipped).

    Returns:
        One list of segments.
    """
    out: list[Segment] = []
    for p in parts:
        if not p:
            continue
        if out:
            out.append(Segment(" "))
        out.extend(p)
    return out


_WORD = re.compile(r"[A-Za-z]{4,}")


class Phraser:
    """Draws phrasings and applies a persona's manner, from one trial generator.

    Args:
        rng: the user's generator (seeded from the trial seed).
        typo_rate: probability that a framing word (four letters or more) gets a typo (two letters swapped).
        verbosity: ``terse``, ``normal`` or ``verbose``.
        politeness: ``rude``, ``neutral`` or ``polite``.
    """

    def __init__(self, rng: np.random.Generator, typo_rate: float = 0.0, verbosity: str = "normal",
                 politeness: str = "neutral"):
        self.rng = rng
        self.typo_rate = typo_rate
        self.verbosity = verbosity
        self.politeness = politeness

    def choice(self, options: Sequence[str]) -> str:
        """Return one of ``options``, drawn uniformly.

        Raises:
            ValueError: ``options`` is empty.
        """
        if not options:
            raise ValueError("no options to choose from")
        return options[int(self.rng.integers(len(options)))]

    def key(self, act: str) -> str:
        """Return the phrase key for ``act`` honouring terseness (``act_terse`` when it exists)."""
        terse = f"{act}_terse"
        return terse if self.verbosity == "terse" and terse in PHRASES else act

    def phrase(self, act: str, **fields: str) -> list[Segment]:
        """Draw a phrasing of ``act`` and fill it.

        Args:
            act: a key of :data:`PHRASES` (its ``_terse`` variant is used for a terse persona).
            **fields: the template's values.

        Returns:
            The segments.
        """
        return render(self.choice(PHRASES[self.key(act)]), **fields)

    def sentence(self, act: str, **fields: str) -> list[Segment]:
        """Like :meth:`phrase`, with the first letter upper-cased and a final full stop when missing."""
        segs = self.phrase(act, **fields)
        return _as_sentence(segs)

    def decorate(self, segs: list[Segment], yes_no: bool = False) -> list[Segment]:
        """Add the persona's manner: a verbose aside, a polite or rude remark (after the content).

        Args:
            segs: the message so far.
            yes_no: the message answers a yes/no question (remarks go after it; it must still start with the
                answer).

        Returns:
            The decorated segments.
        """
        extra: list[list[Segment]] = []
        if self.verbosity == "verbose" and self.rng.random() < 0.8:
            extra.append([Segment(self.choice(ASIDES))])
        if self.politeness == "polite" and self.verbosity != "terse" and self.rng.random() < 0.4:
            extra.append([Segment(self.choice(POLITE))])
        if self.politeness == "rude" and self.rng.random() < 0.4:
            extra.append([Segment(self.choice(RUDE))])
        return join_segments([segs, *extra])

    def finish(self, segs: Sequence[Segment]) -> str:
        """Apply typos to framing text only and return the message text."""
        out = []
        for s in segs:
            out.append(s.text if s.value or self.typo_rate <= 0 else self._typos(s.text))
        return "".join(out).strip()

    def _typos(self, text: str) -> str:
        def swap(m: re.Match[str]) -> str:
            w = m.group(0)
            if self.rng.random() >= self.typo_rate:
                return w
            i = int(self.rng.integers(1, len(w) - 1))
            return w[:i] + w[i + 1] + w[i] + w[i + 2:] if i + 1 < len(w) else w

        return _WORD.sub(swap, text)


def _as_sentence(segs: list[Segment]) -> list[Segment]:
    if not segs:
        return segs
    first = segs[0]
    segs = [Segment(first.text[:1].upper() + first.text[1:], first.value) if not first.value else first, *segs[1:]]
    last = segs[-1]
    if not last.text.rstrip().endswith((".", "?", "!")):
        segs.append(Segment("."))
    return segs

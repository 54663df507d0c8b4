"""Progress signals of a conversation: what each agent turn achieved, judged from what was said and done so far.

The loop (:class:`simulator.dialogue.conversation.Conversation`) keeps one :class:`ProgressJudge` per trial: it hears
every user message (:meth:`ProgressJudge.on_user`) and judges each finished agent turn
(:meth:`ProgressJudge.on_agent_turn`) into a :class:`~simulator.types.protocols.Progress` (made progress or not, and
the signals: ``tool_ok``, ``tool_error``, ``confirmed_action``, ``new_info``, ``answered``, ``new_question``,
``repeated_question``, ``agent_repeat``).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from simulator.dialogue.cues import asks_confirmation, is_yes, offers_more_help
from simulator.dialogue.text import clip_long_tokens
from simulator.types.protocols import PROGRESS_SIGNALS, Progress
from simulator.types.trajectory import ToolCallRecord

__all__ = ["ProgressJudge", "questions", "values"]


# Linear on any input: an email is tried only where a run of [\w.+-] starts, and an id or number not inside a
# run of letters (a failed try there fails at every later letter of the run, so rescanning it from each
# position, quadratic in a long token, gives nothing).
_VALUE_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+"
                       r"|(?:(?<![A-Za-z_])|(?![A-Za-z_]))[#$]?[A-Za-z_]*+\d[\w-]*(?:[.,]\d+)*")
_VALUE_CHAR_RE = re.compile(r"[\d@]")
"""What every value holds: a digit (an id, a number) or an at sign (an email)."""
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_slow_key = json.JSONEncoder(sort_keys=True, default=str).encode


def _key_function() -> Callable[[Any], str]:
    """The tool-call key: ``json.dumps(value, sort_keys=True, default=str)``, its C encoder made once.

    ``JSONEncoder.encode`` makes a new C encoder (and a dict for its circular-reference check) on every call; this
    one makes it once, without the check: a circular value recurses until ``RecursionError``, and is then encoded
    again by ``JSONEncoder.encode``, which raises what ``json.dumps`` raises. Without the C encoder (another Python),
    ``JSONEncoder.encode`` itself.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _slow_key
    encode = make(None, str, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, True)

    def key(value: Any) -> str:
        try:
            return "".join(encode(value, 0))
        except RecursionError:
            return _slow_key(value)  # type: ignore[no-any-return]

    return key


_SIGNALS = {flags: tuple(s for s, on in zip(PROGRESS_SIGNALS, flags, strict=True) if on)
            for flags in itertools.product((False, True), repeat=len(PROGRESS_SIGNALS))}
"""Which signals are on (a bool per signal, in :data:`PROGRESS_SIGNALS` order) -> those signals, in that order."""

_call_key = _key_function()
"""A tool call's key: ``json.dumps([name, arguments], sort_keys=True, default=str)``."""


def values(text: str) -> set[str]:
    """Value-like tokens of a message (ids, numbers, amounts, emails), normalised.

    The same tokens as ``_VALUE_RE.findall(text)``, found word by word: a token holds no whitespace and the
    pattern's lookarounds see whitespace and the text's ends alike, so only the words with a digit or an at sign
    (:data:`_VALUE_CHAR_RE`; a word of letters only has neither) need the pattern.
    """
    search = _VALUE_CHAR_RE.search
    if search(text) is None:
        return set()
    found = _VALUE_RE.findall
    return {v.lower().lstrip("#$").rstrip(".,").replace(",", "")
            for word in text.split() if not word.isalpha() and search(word) for v in found(word)}


def questions(text: str, *, confirms: bool | None = None) -> list[str]:
    """Return the question keys of an agent message.

    The whole message for a confirmation request (it is about the action it states), otherwise each question
    sentence; offers of more help ("anything else?") are not questions here.

    Args:
        text: the message.
        confirms: ``asks_confirmation(text)`` when the caller has it already (None: computed here).
    """
    norm = " ".join(text.lower().split())
    if asks_confirmation(text) if confirms is None else confirms:
        return [norm]
    if "?" not in norm:
        return []  # no sentence ends with "?"
    out = []
    for sent in _SENTENCE_RE.split(norm):
        sent = sent.strip(" -*")
        if sent.endswith("?") and not offers_more_help(sent):
            out.append(sent)
    return out


class ProgressJudge:
    """Judges each agent turn's progress from what the conversation has seen so far.

    Attributes:
        values: value-like tokens said so far (by either side).
        calls: tool-call key -> tool kind of the agent's calls so far (reads forgotten after a write).
        texts: the agent's messages so far, normalised.
        questions: the agent's question keys so far.
        user_yes: the user's last message said yes.
        user_asked: the user's last message asked something.
    """

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.calls: dict[str, str | None] = {}  # call key -> tool kind; reads are forgotten after a write
        self.texts: set[str] = set()
        self.questions: set[str] = set()
        self.user_yes = False
        self.user_asked = False

    def on_user(self, text: str) -> None:
        """Hear a user message (its values, whether it says yes, whether it asks)."""
        text = clip_long_tokens(text)  # cues and values are scanned on a bounded copy of each long token
        self.values |= values(text)
        self.user_yes = is_yes(text)
        self.user_asked = "?" in text

    def on_agent_turn(self, text: str, calls: list[ToolCallRecord], *, confirms: bool | None = None) -> Progress:
        """Judge a finished agent turn.

        Args:
            text: the turn's closing message.
            calls: the tool calls the agent made in the turn.
            confirms: ``asks_confirmation(clip_long_tokens(text))`` when the caller has it already (None: computed
                here).

        Returns:
            The turn's :class:`Progress` (made or not, and its signals in :data:`PROGRESS_SIGNALS` order).
        """
        repeat = tool_ok = tool_error = confirmed = False
        known = self.calls
        yes = self.user_yes
        for c in calls:
            arguments = c.arguments
            key = _call_key([c.name, arguments if arguments is not None else c.raw_arguments])
            kind = c.kind
            if key in known:
                repeat = True
            if c.status != "ok":
                tool_error = True
            else:
                tool_ok = tool_ok or key not in known
                if kind == "write":
                    confirmed = confirmed or yes
                    # the state changed: reading something again is no repetition
                    self.calls = known = {k: v for k, v in known.items() if v != "read"}
            known[key] = kind
        norm = " ".join(text.lower().split())
        if norm and norm in self.texts:
            repeat = True
        self.texts.add(norm)
        text = clip_long_tokens(text)  # cues and values are scanned on a bounded copy of each long token
        said = values(text)
        new_info = answered = False
        if said:
            if said - self.values:
                new_info = True
                self.values |= said
            else:
                answered = self.user_asked
        asked = repeated = False
        for q in questions(text, confirms=confirms):
            if q in self.questions:
                repeated = True
            else:
                asked = True
                self.questions.add(q)
        asked = asked and not repeated
        made = (tool_ok or confirmed or new_info or answered or asked) and not (repeated or repeat)
        return Progress(made, _SIGNALS[tool_ok, confirmed, new_info, answered, asked, repeated, repeat, tool_error])

"""Progress signals of a conversation: what each agent turn achieved, judged from what was said and done so far.

The loop (:class:`simulator.dialogue.conversation.Conversation`) keeps one :class:`ProgressJudge` per trial: it hears
every user message (:meth:`ProgressJudge.on_user`) and judges each finished agent turn
(:meth:`ProgressJudge.on_agent_turn`) into a :class:`~simulator.types.protocols.Progress` (made progress or not, and
the signals: ``tool_ok``, ``tool_error``, ``confirmed_action``, ``new_info``, ``answered``, ``new_question``,
``repeated_question``, ``agent_repeat``).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from simulator.dialogue.cues import asks_confirmation, is_yes, offers_more_help
from simulator.dialogue.text import clip_long_tokens
from simulator.types.protocols import PROGRESS_SIGNALS, Progress
from simulator.types.trajectory import ToolCallRecord
from simulator.world.jsontext import sorted_json_text

__all__ = ["ProgressJudge", "questions", "values"]


# Linear on any input: an email is tried only where a run of [\w.+-] starts, and an id or number not inside a
# run of letters (a failed try there fails at every later letter of the run, so rescanning it from each
# position, quadratic in a long token, gives nothing).
_VALUE_RE = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+"
                       r"|(?:(?<![A-Za-z_])|(?![A-Za-z_]))[#$]?[A-Za-z_]*+\d[\w-]*(?:[.,]\d+)*")
_VALUE_CHAR_RE = re.compile(r"[\d@]")
"""What every value holds: a digit (an id, a number) or an at sign (an email)."""
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_SIGNALS = {flags: tuple(s for s, on in zip(PROGRESS_SIGNALS, flags, strict=True) if on)
            for flags in itertools.product((False, True), repeat=len(PROGRESS_SIGNALS))}
"""Which signals are on (a bool per signal, in :data:`PROGRESS_SIGNALS` order) -> those signals, in that order."""

_call_key = sorted_json_text
"""A tool call's key: ``json.dumps([name, arguments], sort_keys=True, default=str)``'s text (and errors)."""


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
    return _questions(text, " ".join(text.lower().split()), confirms)


def _questions(text: str, norm: str, confirms: bool | None) -> list[str]:
    """:func:`questions` of ``text`` whose normal form (lower case, whitespace runs as one space) is ``norm``."""
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


class _Call:
    """One distinct call of a tool the agent made (:attr:`ProgressJudge.calls`), its key made only when needed.

    A call is known by its key ``json.dumps([name, arguments or raw text], sort_keys=True, default=str)``: two calls
    are the same when their keys are equal, so only calls of the same tool can be. Most tools are called once or
    twice in a trial, with arguments of str keys and str values: two such calls (or two without arguments) have
    equal keys exactly when their arguments are equal, compared without making keys (:func:`_plain`). Any other
    key is made when first compared (arguments of scalars only, which cannot change meanwhile: the record's own
    dict) or at once (anything else: a nested value an agent might still change, or one whose key raises, as it
    did when every key was made at the end of its turn).

    Attributes:
        value: the call's arguments (or raw text, or None).
        kind: the tool's kind (``read``, ``write``, None).
        writes: the successful write calls made before it (a ``read`` made before the latest write is forgotten).
        plain: ``value`` is None, a str, or a dict of str keys and str values.
        key: the key, once made.
    """

    __slots__ = ("key", "kind", "plain", "value", "writes")

    def __init__(self, value: Any, kind: str | None, writes: int, plain: bool, key: str | None):
        self.value = value
        self.kind = kind
        self.writes = writes
        self.plain = plain
        self.key = key

    def same(self, name: str, value: Any, plain: bool, key: str | None) -> bool:
        """True when the call ``name(value)`` has this call's key (``key``: its key when made, else None)."""
        if plain and self.plain:
            return type(value) is type(self.value) and value == self.value
        mine = self.key
        if mine is None:
            mine = self.key = _call_key([name, self.value])
        return (key if key is not None else _call_key([name, value])) == mine


def _plain(value: Any) -> bool:
    """True for None, a str, or a dict of str keys and str values: such values are equal exactly when their keys are."""
    if value is None or type(value) is str:
        return True
    if type(value) is not dict:
        return False
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            return False
    return True


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _deferrable(value: Any) -> bool:
    """True when the key of a call with arguments ``value`` (the record's own dict) may be made later, the same.

    That is: a dict of str keys and scalar values (none can change in place, and making the key cannot raise).
    """
    if type(value) is not dict:
        return False
    scalars = _SCALARS
    for k, v in value.items():
        if type(k) is not str or type(v) not in scalars:
            return False
    return True


class ProgressJudge:
    """Judges each agent turn's progress from what the conversation has seen so far.

    Attributes:
        values: value-like tokens said so far (by either side).
        calls: tool name -> the agent's distinct calls of that tool so far (:class:`_Call`; a read made before a
            successful write is forgotten).
        texts: the agent's messages so far, normalised.
        questions: the agent's question keys so far.
        user_yes: the user's last message said yes.
        user_asked: the user's last message asked something.
    """

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.calls: dict[str, list[_Call]] = {}
        self.texts: set[str] = set()
        self.questions: set[str] = set()
        self.user_yes = False
        self.user_asked = False
        self._writes = 0  # successful writes so far: a read made before the last of them is forgotten

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
        if calls:
            repeat, tool_ok, tool_error, confirmed = self._judge_calls(calls)
        norm = " ".join(text.lower().split())
        if norm and norm in self.texts:
            repeat = True
        self.texts.add(norm)
        clipped = clip_long_tokens(text)  # cues and values are scanned on a bounded copy of each long token
        if clipped is not text:
            text, norm = clipped, " ".join(clipped.lower().split())
        said = values(text)
        new_info = answered = False
        if said:
            if said - self.values:
                new_info = True
                self.values |= said
            else:
                answered = self.user_asked
        asked = repeated = False
        for q in _questions(text, norm, confirms):
            if q in self.questions:
                repeated = True
            else:
                asked = True
                self.questions.add(q)
        asked = asked and not repeated
        made = (tool_ok or confirmed or new_info or answered or asked) and not (repeated or repeat)
        return Progress(made, _SIGNALS[tool_ok, confirmed, new_info, answered, asked, repeated, repeat, tool_error])

    def _judge_calls(self, calls: list[ToolCallRecord]) -> tuple[bool, bool, bool, bool]:
        """Judge a turn's calls in order: ``(repeat, tool_ok, tool_error, confirmed_action)``; remember them.

        A call repeats one still known with the same key; a successful one that does not is ``tool_ok``; a
        successful write right after a user yes is ``confirmed_action``, and after any successful write the reads
        so far are forgotten.
        """
        repeat = tool_ok = tool_error = confirmed = False
        groups = self.calls
        yes = self.user_yes
        for c in calls:
            arguments = c.arguments
            value = arguments if arguments is not None else c.raw_arguments
            name, kind = c.name, c.kind
            plain = _plain(value)
            key = None if plain or _deferrable(value) else _call_key([name, value])
            group = groups.get(name)
            if group is None:
                group = groups[name] = []
            match = None
            for known in group:
                if known.same(name, value, plain, key):
                    match = known
                    break
            seen = match is not None and (match.kind != "read" or match.writes == self._writes)
            if seen:
                repeat = True
            if c.status != "ok":
                tool_error = True
            else:
                tool_ok = tool_ok or not seen
                if kind == "write":
                    confirmed = confirmed or yes
                    self._writes += 1  # the state changed: reading something again is no repetition
            if match is None:
                group.append(_Call(value, kind, self._writes, plain, key))
            else:
                match.kind, match.writes = kind, self._writes
        return repeat, tool_ok, tool_error, confirmed

r"""Required-output grading: did the agent tell the user each value the task requires?

A task may list required outputs (an amount, an order id, a name). The trial passes this component when
every required output appears in at least one of the agent's messages. Each message is searched on its
own (a value is never assembled across two messages). Tokenisation is done with regular expressions;
nothing is evaluated.

Rules
-----
Both sides are first normalised with Unicode NFKC (so full-width digits and no-break spaces behave like
their plain forms).

**Numbers.** A required output that is, as a whole, a number is compared *as a number* (exact decimal
equality, no float rounding) with every number token of the agent's text:

- a number is ``[sign][currency symbol][sign]digits[.digits][%]``; digits may be grouped by thousands
  with commas (``1,234,567.5``); the sign is ``-``, ``+`` or ``−`` (U+2212); currency symbols are
  ``$ € £ ¥ ₹`` and are ignored on both sides, so required ``"$25"`` matches ``"25"`` and ``"25.00"``,
  and required ``"25"`` matches ``"$25.00"``;
- trailing zeros and grouping do not matter: required ``"1234.5"`` matches ``"1,234.50"`` and
  ``"$1,234.50"``;
- a number token must stand alone: required ``"10"`` matches none of ``"$100"``, ``"10.5"``,
  ``"1010"``, ``"10kg"``, ``"A10"``. A number glued to another number by ``.``, ``,``, ``-``, ``/``
  or ``:`` is part of a compound token (a date ``2024-05-01`` or ``10.09.2024``, a version ``2.5.1``, a
  range ``10-20``, a time ``10:30``, a fraction ``3/4``, a malformed grouping ``1,2345``, a decimal
  comma ``10,5``) and yields no number. Punctuation around a number is fine: ``"(25)"``, ``"25,"``,
  ``"The total is 25."`` (a period followed by no digit ends a sentence, it is not a decimal point);
- **the sign is significant**: required ``"-10.09"`` matches ``"-10.09"``, ``"-$10.09"``, ``"$-10.09"``
  and ``"−10.09"``, but not ``"10.09"``; required ``"10.09"`` does not match ``"-10.09"``. A minus sign
  counts only when it touches the number and is not itself glued to a preceding word or number
  (``"Total: -5"`` is minus five; ``"x-5"`` and ``"3-5"`` are compound tokens; ``"costs - 5"`` is
  five). Accounting parentheses ``"($5)"`` are read as five;
- **the percent sign is significant**: required ``"25%"`` matches ``"25%"``, ``"25 %"``, ``"25.0%"``
  and ``"25 percent"``, and nothing without a percent; required ``"25"`` does not match ``"25%"``;
- digit strings with a leading zero (``"007"``, ``"02139"``) are identifiers, not numbers: as required
  outputs they are matched as text, and in the agent's text they yield no number (required ``"7"`` does
  not match ``"007"``);
- not supported (never matched as numbers): exponents (``1e3``), spaces or periods as thousands
  separators, decimal commas, number words (``"ten"``).

**Text.** Any other required output (an id ``"#W1234567"``, a name, ``"25 USD"``) is matched as a whole
token, case-insensitively (Unicode case folding), with flexible whitespace: each run of whitespace in the
required output matches any run of whitespace (spaces, newlines) in the text. Whole token means the match
is neither preceded nor followed by a letter, digit or underscore, nor by a joiner (``- . / @``) touching
a letter or digit: ``"abc"`` does not match ``"abcd"``, ``"xabc"``, ``"abc-d"`` or ``"abc.com"``, but does
match ``"ABC."``, ``"(abc)"``, ``"abc's"`` and ``"#abc"``. So required ``"W1234567"`` matches
``"#W1234567"`` (the ``#`` is punctuation), while required ``"#W1234567"`` needs the ``#``.

An empty (or whitespace-only) required output is a task error and raises ``ValueError``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from simulator.types.grade import OutputsResult

__all__ = ["check_outputs", "find_output"]

_SIGN = r"[-+\u2212]"
_CURRENCY = r"[$€£¥₹]"
# Thousands-grouped (no leading zero) | plain integer part (0 or no leading zero) | bare fraction.
_DIGITS = r"(?:[1-9][0-9]{0,2}(?:,[0-9]{3})+(?:\.[0-9]+)?|(?:0|[1-9][0-9]*)(?:\.[0-9]+)?|\.[0-9]+)"
_PERCENT = r"(?:\s?%|\s+per\s?cent\b)"
_NUMBER_BODY = rf"(?P<sign>{_SIGN})?{_CURRENCY}?(?P<sign2>{_SIGN})?(?P<digits>{_DIGITS})(?P<percent>{_PERCENT})?"

# A required output that is a number as a whole (surrounding whitespace allowed).
_REQUIRED_NUMBER = re.compile(rf"\s*{_NUMBER_BODY}\s*", re.IGNORECASE)

# A number token inside free text. Not preceded by a word character or a joiner (so "x-5", "3.5.1",
# "1,2345" and "A10" yield nothing), nor by "digit:" (a time); not followed by a word character or by a
# joiner that touches a digit.
_NUMBER_IN_TEXT = re.compile(
    rf"(?<![\w.,/\-+\u2212])(?<!\d:){_NUMBER_BODY}(?![\w])(?![.,/:\-\u2212][0-9])",
    re.IGNORECASE,
)

# Text boundaries: no word character, and no joiner touching a word character, on either side.
_TEXT_BEFORE = r"(?<!\w)(?<!\w[-./@])"
_TEXT_AFTER = r"(?!\w)(?![-./@]\w)"


def _normalise(text: str) -> str:
    """Unicode-normalise a text for matching (NFKC).

    Args:
        text: Raw text.

    Returns:
        The NFKC form of ``text``.
    """
    return unicodedata.normalize("NFKC", text)


def _number_key(match: re.Match[str]) -> tuple[Decimal, bool]:
    """Turn a number match into a comparable key.

    Args:
        match: A match of ``_REQUIRED_NUMBER`` or ``_NUMBER_IN_TEXT``.

    Returns:
        ``(value, is_percent)``; ``value`` is an exact Decimal with the sign applied.
    """
    value = Decimal(match["digits"].replace(",", ""))
    negative = sum(1 for sign in (match["sign"], match["sign2"]) if sign and sign != "+") % 2 == 1
    if negative:
        value = -value
    return value, match["percent"] is not None


@dataclass(frozen=True)
class _Required:
    """A parsed required output.

    Attributes:
        raw: The required output as written in the task.
        number: ``(value, is_percent)`` if it is a number, else ``None``.
        pattern: For a text output, the compiled whole-token pattern (on case-folded text).
    """

    raw: str
    number: tuple[Decimal, bool] | None
    pattern: re.Pattern[str] | None


def _parse_required(required: str) -> _Required:
    """Parse a required output into a number key or a whole-token text pattern.

    Args:
        required: The required output.

    Returns:
        The parsed form.

    Raises:
        TypeError: If ``required`` is not a string.
        ValueError: If ``required`` is empty or whitespace only.
    """
    if not isinstance(required, str):
        raise TypeError(f"a required output must be a string, got {type(required).__name__} {required!r}")
    normalised = _normalise(required)
    if not normalised.strip():
        raise ValueError(f"a required output must not be empty, got {required!r}")
    number = _REQUIRED_NUMBER.fullmatch(normalised)
    if number is not None:
        return _Required(raw=required, number=_number_key(number), pattern=None)
    words = normalised.casefold().split()
    body = r"\s+".join(re.escape(word) for word in words)
    return _Required(raw=required, number=None, pattern=re.compile(_TEXT_BEFORE + body + _TEXT_AFTER))


@dataclass
class _Text:
    """An agent message prepared for matching (normalised once, numbers extracted lazily).

    Attributes:
        folded: The NFKC-normalised, case-folded text.
        normalised: The NFKC-normalised text.
    """

    normalised: str
    folded: str
    _numbers: set[tuple[Decimal, bool]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, text: str) -> _Text:
        """Prepare a message.

        Args:
            text: The message text.

        Returns:
            The prepared message.
        """
        normalised = _normalise(text)
        return cls(normalised=normalised, folded=normalised.casefold())

    @property
    def numbers(self) -> set[tuple[Decimal, bool]]:
        """The ``(value, is_percent)`` keys of all number tokens in the message."""
        if self._numbers is None:
            self._numbers = {_number_key(m) for m in _NUMBER_IN_TEXT.finditer(self.normalised)}
        return self._numbers


def _prepare_texts(texts: Sequence[str | None]) -> list[_Text]:
    """Prepare the agent's messages, skipping empty ones (e.g. tool-call-only turns).

    Args:
        texts: The agent's message texts.

    Returns:
        The prepared messages.

    Raises:
        TypeError: If ``texts`` is a single string rather than a sequence of strings.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of message strings, not a single string")
    return [_Text.of(text) for text in texts if text]


def _found(required: _Required, texts: Sequence[_Text]) -> bool:
    """Whether a parsed required output occurs in any prepared message.

    Args:
        required: The parsed required output.
        texts: The prepared messages.

    Returns:
        ``True`` if found.
    """
    if required.number is not None:
        return any(required.number in text.numbers for text in texts)
    assert required.pattern is not None
    return any(required.pattern.search(text.folded) is not None for text in texts)


def find_output(required: str, texts: Sequence[str]) -> bool:
    """Whether one required output appears in the agent's messages (rules in the module docstring).

    Args:
        required: The required output, e.g. ``"1234.5"``, ``"$25"``, ``"25%"`` or ``"#W1234567"``.
        texts: The agent's message texts, one string per message (``None``/empty entries are skipped).

    Returns:
        ``True`` if some message contains it as a whole token (numbers compared as numbers).

    Raises:
        TypeError: If ``required`` is not a string or ``texts`` is a single string.
        ValueError: If ``required`` is empty or whitespace only.
    """
    parsed = _parse_required(required)
    return _found(parsed, _prepare_texts(texts))




def check_outputs(required: Sequence[str], agent_texts: Sequence[str]) -> OutputsResult:
    """Check that every required output appears in the agent's messages.

    Args:
        required: The task's required outputs.
        agent_texts: The agent's message texts, one string per message (``None``/empty entries are
            skipped). Pass only the agent's messages: a value said only by the user does not count.

    Returns:
        ``OutputsResult(passed, missing)``.

    Raises:
        TypeError: If ``required`` or ``agent_texts`` is a single string, or an output is not a string.
        ValueError: If a required output is empty or whitespace only.
    """
    if isinstance(required, str):
        raise TypeError("required must be a sequence of output strings, not a single string")
    parsed = [_parse_required(item) for item in required]
    texts = _prepare_texts(agent_texts)
    missing = [item.raw for item in parsed if not _found(item, texts)]
    return OutputsResult(passed=not missing, missing=missing)

"""Decode the JSON text of a user's file (task, data, spec, persona, budgets, run document): every failure one line.

``json.loads`` fails in three ways on a file a person wrote or a tool produced: a syntax error
(``json.JSONDecodeError``, with line and column), nesting deeper than Python's recursion limit (``RecursionError``,
e.g. 100,000 ``[``), and an integer of more digits than Python converts from text (``ValueError``: "Exceeds the
limit (4300 digits) for integer string conversion", with no position and advice to call
``sys.set_int_max_str_digits()``). :func:`decode_json` turns each into a :class:`JSONTextError` whose message says
where (``invalid JSON at line 1 column 412: an integer of more than 4300 digits``); each loader puts its file's name
in front and raises its own error (``TaskFileError``, ``DomainError``...).

Example::

    try:
        data = decode_json(path.read_text(encoding="utf-8"))
    except JSONTextError as e:
        raise TaskFileError(f"{path}: {e}") from None
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from simulator.errors import JSONTextError
from simulator.types.sanitize import LONE_SURROGATE, clipped, excerpt, lone_surrogate_path

__all__ = ["TOO_DEEP", "JSONTextError", "decode_json", "decode_file_text", "not_utf8"]

TOO_DEEP = "JSON nested too deeply to read (Python's parser stops at about 1,000 levels)"
"""The message of a JSON text whose nesting exhausts the parser's recursion (e.g. 100,000 ``[``)."""

_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|(-?)([0-9]+)((?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)|[^"0-9-]++|.', re.S)
"""One token of JSON text, matched at a position (``.match``): a string (digits inside one are text), a number
(sign, integer digits, then fraction and exponent: a number with either is a float, which Python reads at any
length), a run of anything else, or one character."""


def decode_json(text: str, first_line: int = 1) -> Any:
    """Return the decoded JSON of ``text`` (``json.loads``), every failure as one :class:`JSONTextError`.

    Args:
        text: the file's text, or one line of a JSON-lines file.
        first_line: the file's line number of the text's first line (a JSON-lines file's line), for the message.

    Returns:
        The decoded value (dicts, lists, strings, numbers, booleans, None).

    Raises:
        JSONTextError: ``invalid JSON at line L column C: <reason>`` for a syntax error or an integer of more digits
            than ``sys.get_int_max_str_digits()`` (4,300 by default; the line and column of its first digit);
            :data:`TOO_DEEP` for nesting Python's parser cannot follow.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JSONTextError(f"invalid JSON at line {e.lineno + first_line - 1} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise JSONTextError(TOO_DEEP if first_line == 1 else f"line {first_line}: {TOO_DEEP}") from None
    except ValueError:  # int(): the integer digit limit (CVE-2020-10735), the only other ValueError json raises
        raise JSONTextError(_long_integer(text, first_line)) from None


def _long_integer(text: str, first_line: int) -> str:
    """The message for a text holding an integer longer than Python converts: where its first digit is."""
    limit = sys.get_int_max_str_digits()
    reason = f"an integer of more than {limit} digits"
    pos = 0
    while (m := _TOKEN.match(text, pos)) is not None:  # token by token: linear; the text before it is valid JSON
        if m.group(2) is not None and not m.group(3) and len(m.group(2)) > limit:
            pos = m.start()  # as json.JSONDecodeError counts: lines and columns from 1
            line, column = text.count("\n", 0, pos) + first_line, pos - text.rfind("\n", 0, pos)
            return f"invalid JSON at line {line} column {column}: {reason}"
        pos = m.end()
    return f"invalid JSON: {reason}" if first_line == 1 else f"invalid JSON at line {first_line}: {reason}"


def not_utf8(raw: bytes, error: UnicodeDecodeError) -> str:
    """Say why a file is not UTF-8 text, naming a UTF-16 or UTF-32 byte-order mark when it has one."""
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                      (b"\xfe\xff", "UTF-16")):
        if raw.startswith(bom):
            return f"the file is {name} text; save it as UTF-8"
    return f"not UTF-8 text ({error.reason} at byte {error.start}); save it as UTF-8"


def decode_file_text(text: str, name: object, error: Callable[[str], Exception]) -> Any:
    """Decode a user file's JSON text as every loader of user files does: each failure one line naming the file.

    Args:
        text: the file's text.
        name: the file as the message names it (a path, or where the text came from).
        error: makes the exception raised from its message (``TaskFileError``, ``DomainError``, ``PersonaError``).

    Returns:
        The decoded value.

    Raises:
        What ``error`` makes: ``"{name}: invalid JSON at line L column C: <reason>"`` (:func:`decode_json`), or
        ``"{name}: <path>: '<value>' holds a lone surrogate ..."`` for a string holding half of a UTF-16 pair
        (no file or record can hold it; :func:`~simulator.types.sanitize.lone_surrogate_path`).
    """
    try:
        data = decode_json(text)
    except JSONTextError as e:
        raise error(f"{name}: {e}") from None
    if (where := lone_surrogate_path(data)) is not None:
        raise error(f"{name}: {clipped(where[0])}: {excerpt(where[1])} {LONE_SURROGATE}")
    return data

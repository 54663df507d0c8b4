"""Decoding a user's JSON file: a syntax error, deep nesting and a too-long integer are each one line saying where."""

from __future__ import annotations

import json

import pytest

from simulator.types.jsonfile import TOO_DEEP, JSONTextError, decode_json

BIG = "9" * 4301  # one digit more than Python converts from text by default


def _error(text: str) -> str:
    with pytest.raises(JSONTextError) as info:
        decode_json(text)
    return str(info.value)


def test_valid_text_decodes_as_json_loads_does():
    text = '{"a": [1, -2.5e3, "x", null, true], "b": ' + "9" * 4300 + "}"
    assert decode_json(text) == json.loads(text)


@pytest.mark.parametrize(("text", "where"), [
    ("[" + BIG + "]", "line 1 column 2"),
    ('{\n  "a": 1,\n  "b": -' + BIG + "\n}", "line 3 column 8"),  # the sign's column: 3 spaces + "b": is 7 chars
    ('{"digits in a string": "' + BIG + '", "n": ' + BIG + "}", f"line 1 column {24 + 4301 + 9}"),
    ("[1." + BIG + ", " + BIG + "]", f"line 1 column {3 + 4301 + 3}"),  # a long fraction is a float: fine
    ("[1" + "0" * 4301 + "e2, " + BIG + "]", f"line 1 column {2 + 4301 + 2 + 3}"),
])
def test_an_integer_of_more_than_4300_digits_is_reported_at_its_first_character(text, where):
    assert _error(text) == f"invalid JSON at {where}: an integer of more than 4300 digits"


def test_syntax_errors_and_deep_nesting_keep_their_messages():
    assert _error('{"a": }') == "invalid JSON at line 1 column 7: Expecting value"
    assert _error("[" * 100_000 + "]" * 100_000) == TOO_DEEP


def test_a_json_lines_file_line_is_numbered_as_in_the_file():
    assert _error_at('{"a": ' + BIG + "}", 7) == "invalid JSON at line 7 column 7: an integer of more than 4300 digits"
    assert _error_at('{"a": }', 7) == "invalid JSON at line 7 column 7: Expecting value"
    assert _error_at("[" * 100_000, 7) == f"line 7: {TOO_DEEP}"


def _error_at(text: str, first_line: int) -> str:
    with pytest.raises(JSONTextError) as info:
        decode_json(text, first_line=first_line)
    return str(info.value)

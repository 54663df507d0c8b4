"""The rules for values from a model, an agent or a user (simulator.types.sanitize)."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import types
import uuid

import pytest

from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.sanitize import (
    REPLACEMENT,
    admit_agent_turn,
    admit_metadata,
    admit_text,
    admit_user_turn,
    admit_value,
    known_cost,
    refused_path,
    shown,
)


def test_lone_surrogates_are_replaced_and_counted_pairs_joined():
    assert admit_text("ab") == ("ab", 0)
    assert admit_text("half \ud83d of an emoji") == (f"half {REPLACEMENT} of an emoji", 1)
    assert admit_text("\udc00\ud800") == (REPLACEMENT * 2, 2)  # low then high: not a pair
    assert admit_text("\ud83d\ude00") == ("\U0001F600", 0)  # a pair as two code points: one emoji
    assert admit_text(f"{REPLACEMENT}\ud800") == (REPLACEMENT * 2, 1)  # an existing U+FFFD is not counted
    text, _ = admit_text("x\ud800y\udfffz")
    text.encode("utf-8")  # encodable now


def test_non_finite_numbers_are_found_with_their_path():
    nan = "a non-finite number"
    assert refused_path({"a": 1, "b": [1.5, "NaN"]}) is None
    assert refused_path(json.loads('{"order_id": NaN}')) == ("order_id", nan)
    assert refused_path({"a": {"b": [0, 1, -math.inf]}}) == ("a.b[2]", nan)
    assert refused_path(math.inf) == ("(arguments)", nan)
    assert refused_path({"a": [math.nan]}, non_finite=False) is None  # metadata: recorded as None instead
    deep: list = []
    cur = deep
    for _ in range(100_000):  # no RecursionError: refused at the depth limit before the NaN is reached
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    cur.append(math.nan)
    path, what = refused_path(deep)
    assert what == "nesting deeper than 64 levels" and path == "[0]" * 64  # the 65th level, counted by hand


@pytest.mark.parametrize(("value", "expected"), [
    (0.25, 0.25), (0, 0.0), (1e9, 1e9), (1.7e308, None), (10**400, None), (math.nan, None), (math.inf, None),
    (-math.inf, None), (-0.01, None), (True, None), ("1.0", None), (None, None)])
def test_known_cost(value, expected):
    assert known_cost(value) == expected


def test_admit_value_keeps_clean_values_and_fixes_the_rest():
    clean = {"a": [1, "x", None, True]}
    assert admit_value(clean)[0] is clean
    value, surrogates, dropped = admit_value({"k\ud800": [math.nan, "v\udfff", {"z": math.inf}]})
    assert value == {f"k{REPLACEMENT}": [None, f"v{REPLACEMENT}", {"z": None}]}
    assert (surrogates, dropped) == (2, 2)
    json.dumps(value, allow_nan=False).encode("utf-8")


def test_agent_turn_with_nan_arguments_becomes_an_unparsed_call_with_a_note():
    call = ToolCall(id="c1", name="get_order_details", arguments=json.loads('{"order_id": NaN, "n": Infinity}'))
    turn, notes = admit_agent_turn(AgentTurn(message=Message(role="assistant", tool_calls=[call])), "agent step 0")
    out = turn.message.tool_calls[0]
    assert out.arguments is None
    assert out.raw_arguments == '{"order_id": NaN, "n": Infinity}'
    assert notes == ["agent step 0: tool call 'get_order_details' has a non-finite number at order_id: refused as "
                     "invalid_arguments"]


def test_agent_turn_surrogates_everywhere_and_bad_cost():
    call = ToolCall(id="c\ud800", name="find\ud83d", arguments={"q": "#W\ud83d"})
    turn = AgentTurn(message=Message(role="assistant", content="hi \ud83d", tool_calls=[call]),
                     usage=Usage(prompt_tokens=3, cost_usd=math.nan), error="boom \udfff")
    out, notes = admit_agent_turn(turn)
    dumped = out.model_dump_json()
    dumped.encode("utf-8")
    assert out.message.content == f"hi {REPLACEMENT}"
    assert out.message.tool_calls[0].arguments == {"q": f"#W{REPLACEMENT}"}
    assert out.message.tool_calls[0].name == f"find{REPLACEMENT}"
    assert out.usage.cost_usd is None and out.usage.prompt_tokens == 3
    assert out.error == f"boom {REPLACEMENT}"
    assert len(notes) == 3  # the call's surrogates, the text's, the cost


def test_clean_turns_are_returned_as_they_are():
    turn = AgentTurn(message=Message(role="assistant", content="plain \x1b[2J text kept"),
                     usage=Usage(cost_usd=0.5))
    assert admit_agent_turn(turn) == (turn, [])
    assert admit_agent_turn(turn)[0] is turn  # control characters are kept in the record
    user = UserTurn(content="fine")
    assert admit_user_turn(user)[0] is user


def test_user_turn_surrogates_and_infinite_cost():
    out, notes = admit_user_turn(UserTurn(content="\ud83d", usage=Usage(cost_usd=math.inf)), "user turn 1")
    assert out.content == REPLACEMENT and out.usage.cost_usd is None
    assert notes[0].startswith("user turn 1: message text: 1 lone surrogate")


def test_shown_escapes_every_control_and_bidi_character_and_nothing_else():
    hostile = "t\x1b]0;pwned\x07 \x1b[2J \x1b]52;c;aGk=\x07 nul\x00 c1\x9b del\x7f bidi\u202e \ud83d"
    out = shown(hostile)
    assert out == ("t\\x1b]0;pwned\\x07 \\x1b[2J \\x1b]52;c;aGk=\\x07 nul\\x00 c1\\x9b del\\x7f bidi\\u202e "
                   "\\ud83d")
    assert all(ch in "\t\n" or (0x20 <= ord(ch) < 0x7f) or ord(ch) > 0x9f for ch in out)
    out.encode("utf-8")
    assert shown("é 中文 emoji \U0001F600\ttab\nline") == "é 中文 emoji \U0001F600\ttab\nline"
    assert shown("a\nb\tc\rd", one_line=True) == "a\\nb\\tc\\rd"
    assert shown(None) == "None"
    for code in [*range(0x20), 0x7f, *range(0x80, 0xa0)]:  # every C0 and C1 character, by its code
        if chr(code) not in "\t\n":
            assert shown(chr(code)) == f"\\x{code:02x}" or shown(chr(code)) in ("\\r",)


@pytest.mark.parametrize("arguments, refused, replaced", [
    ({"order_id": "#W1", "items": ["a", "b"], "n": 2, "x": 1.5, "ok": True, "none": None}, False, 0),
    ({"deep": {"er": [{"x": [1.0, float("nan")]}]}}, True, 0),  # NaN nested below the plain check's first levels
    ({"t": (1.0, float("inf"))}, True, 0),  # a tuple, as json.loads never makes but an adapter may
    ({"caf\u00e9": "cr\u00e8me"}, False, 0),  # non-ASCII but whole: kept, no note
    ({"k\ud800": "v"}, False, 1),  # a lone surrogate in a key
    ({"k": ["\udfff"]}, False, 1),  # and in a nested value
    ({"d": [[[[[[[[[[["deep"]]]]]]]]]]]}, False, 0),  # deeper than the plain check looks: the full check decides
])
def test_tool_call_arguments_are_admitted_whether_plain_or_not(arguments, refused, replaced):
    call = ToolCall(id="c1", name="get", arguments=arguments)
    turn = AgentTurn(message=Message(role="assistant", tool_calls=[call]))
    out, notes = admit_agent_turn(turn)
    got = out.message.tool_calls[0]
    if not refused and not replaced:  # nothing to change: the very same objects, no note
        assert out is turn and got is call and notes == []
    if refused:
        raw = got.raw_arguments or ""
        assert got.arguments is None and ("NaN" in raw or "Infinity" in raw)
        assert len(notes) == 1 and "non-finite" in notes[0]
    if replaced:
        assert REPLACEMENT in json.dumps(got.arguments, ensure_ascii=False)
        assert notes == [f"agent: tool call 'get': {replaced} lone surrogate(s) replaced with U+FFFD"]


def test_non_ascii_call_name_and_id_still_checked():
    call = ToolCall(id="c\ud800", name="g\u00e9t", arguments={})
    out, notes = admit_agent_turn(AgentTurn(message=Message(role="assistant", tool_calls=[call])))
    assert out.message.tool_calls[0].id == f"c{REPLACEMENT}" and out.message.tool_calls[0].name == "g\u00e9t"
    assert len(notes) == 1


def test_usage_counts_and_costs_no_record_can_hold_are_refused_with_notes():
    usage = Usage(prompt_tokens=10**12, completion_tokens=10**12 + 1, calls=-(10**40), attempts=3, cost_usd=0.5)
    usage.prompt_tokens = 2.0  # type: ignore[assignment]  # not an int: set after validation, as an agent may
    out, notes = admit_agent_turn(AgentTurn(message=Message(role="assistant", content="x"), usage=usage), "a")
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.calls, out.usage.attempts) == (0, 0, 0, 3)
    assert out.usage.cost_usd == 0.5
    assert notes == ["a: prompt_tokens 2.0 is not a count: recorded as 0",
                     "a: completion_tokens 1000000000001 > 1,000,000,000,000: recorded as 0",
                     "a: calls (an integer of 133 bits) < 0: recorded as 0"]  # 10**40 < 2**133 (1.09e40)
    kept = Usage(prompt_tokens=10**12, completion_tokens=0, calls=1, attempts=1, cost_usd=1e9)  # the limits: kept
    assert admit_agent_turn(AgentTurn(message=Message(role="assistant", content="x"), usage=kept))[1] == []


class _Unprintable:
    """Its repr and str raise, and so does reading its ``__class__`` (what ``isinstance`` falls back on)."""

    def __repr__(self) -> str:
        raise RuntimeError("repr raises")

    __str__ = __repr__

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: D105 - hostile on purpose
        raise RuntimeError("__class__ raises")


class _BadDict(dict):
    def __iter__(self):
        raise RuntimeError("iteration raises")


def test_values_json_has_none_for_are_refused_by_type_never_by_repr():
    assert refused_path({"o": object()}) == ("o", "a value of type object (not JSON)")
    assert refused_path({"a": [1, {"w": _Unprintable()}]}) == ("a[1].w", "a value of type _Unprintable (not JSON)")
    assert refused_path({"when": datetime.date(2026, 1, 1)}) == ("when", "a value of type date (not JSON)")
    assert refused_path({"m": types.MappingProxyType({})}) == ("m", "a value of type mappingproxy (not JSON)")
    assert refused_path({"d": _BadDict(a=1)}) == ("d", "a value of type _BadDict whose own code raised RuntimeError")
    kept = {"t": (1, "x"), "s": "é", "n": None, "b": False, "f": 1.5, "i": 2**100, "d": {"k": [{}]}}
    assert refused_path(kept) is None  # JSON's own values (a tuple is an array)
    text = {"at": datetime.datetime(2026, 1, 1), "d": decimal.Decimal("1.5"), "u": uuid.UUID(int=5), "b": b"ok"}
    assert refused_path(text, as_text=True) is None  # metadata: written as text, as it always was
    assert refused_path({"b": b"\xff"}, as_text=True) == ("b", "a value of type bytes (not JSON)")  # not UTF-8


def test_arguments_holding_an_object_become_invalid_arguments_with_a_note():
    for value, name in ((object(), "object"), (_Unprintable(), "_Unprintable")):
        call = ToolCall(id="c1", name="get_order_details", arguments={"order_id": value, "n": 1})
        turn, notes = admit_agent_turn(AgentTurn(message=Message(role="assistant", tool_calls=[call])), "agent step 0")
        out = turn.message.tool_calls[0]
        assert out.arguments is None and out.raw_arguments == f'{{"order_id": "<{name}>", "n": 1}}'
        assert notes == [f"agent step 0: tool call 'get_order_details' has a value of type {name} (not JSON) at "
                         "order_id: refused as invalid_arguments"]
        json.loads(turn.model_dump_json())  # the record can be written


def test_metadata_holding_an_object_is_left_out_with_a_note():
    class Actor:
        metadata = {"fine": 1, "w": [_Unprintable()]}

    notes: list[str] = []
    assert admit_metadata(Actor(), "agent", notes) == {}
    assert notes == ["agent metadata: a value of type _Unprintable (not JSON) at w[0]: not recorded"]
    Actor.metadata = {"at": datetime.datetime(2026, 1, 1)}
    assert admit_metadata(Actor(), "agent", notes) == {"at": datetime.datetime(2026, 1, 1)} and len(notes) == 1


def test_refused_sets_are_shown_as_before_unless_an_items_repr_raises():
    for value, raw in (({1, 2}, '{"s": "{1, 2}"}'),
                       ({_Unprintable()}, '{"s": "<a set whose items\' repr raised RuntimeError>"}')):
        call = ToolCall(id="c1", name="get", arguments={"s": value})
        out, notes = admit_agent_turn(AgentTurn(message=Message(role="assistant", tool_calls=[call])))
        assert out.message.tool_calls[0].raw_arguments == raw
        assert notes == ["agent: tool call 'get' has a set (JSON has none) at s: refused as invalid_arguments"]

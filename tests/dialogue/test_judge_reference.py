"""The progress judge gives, turn after turn, what the plain statement of its rules gives.

The reference below states each signal's rule with sets, one rule at a time (the judge's first form); the judge keeps
flags and precomputed signal tuples instead. Both judge the same seeded random conversations (repeated calls, reads
after writes, yes answers, repeated texts and questions, values old and new) and must agree on every turn.
"""

from __future__ import annotations

import decimal
import enum
import json
import math
import random
from typing import Any

import pytest

from simulator.dialogue.cues import is_yes
from simulator.dialogue.signals import ProgressJudge, questions, values
from simulator.dialogue.text import clip_long_tokens
from simulator.types.protocols import PROGRESS_SIGNALS
from simulator.types.trajectory import ToolCallRecord


class ReferenceJudge:
    """The rules, one signal at a time, on sets (keys by ``json.dumps``)."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.calls: dict[str, Any] = {}
        self.texts: set[str] = set()
        self.questions: set[str] = set()
        self.user_yes = self.user_asked = False

    def on_user(self, text: str) -> None:
        text = clip_long_tokens(text)
        self.values |= values(text)
        self.user_yes = is_yes(text)
        self.user_asked = "?" in text

    def on_agent_turn(self, text: str, calls: list[ToolCallRecord]) -> tuple[bool, tuple[str, ...]]:
        signals: set[str] = set()
        for c in calls:
            key = json.dumps([c.name, c.arguments if c.arguments is not None else c.raw_arguments], sort_keys=True,
                             default=str)
            if key in self.calls:
                signals.add("agent_repeat")
            elif c.status == "ok":
                signals.add("tool_ok")
            if c.status != "ok":
                signals.add("tool_error")
            elif c.kind == "write" and self.user_yes:
                signals.add("confirmed_action")
            if c.status == "ok" and c.kind == "write":
                self.calls = {k: v for k, v in self.calls.items() if v != "read"}
            self.calls[key] = c.kind
        norm = " ".join(text.lower().split())
        if norm and norm in self.texts:
            signals.add("agent_repeat")
        self.texts.add(norm)
        said = values(clip_long_tokens(text))
        if said - self.values:
            signals.add("new_info")
        elif self.user_asked and said:
            signals.add("answered")
        self.values |= said
        for q in questions(clip_long_tokens(text)):
            signals.add("repeated_question" if q in self.questions else "new_question")
            self.questions.add(q)
        if "repeated_question" in signals:
            signals.discard("new_question")
        made = bool(signals & {"tool_ok", "confirmed_action", "new_info", "answered", "new_question"}) and not (
            signals & {"repeated_question", "agent_repeat"})
        return made, tuple(s for s in PROGRESS_SIGNALS if s in signals)


USER_LINES = ["Hi, my order is #W1002.", "yes, go ahead", "What is the total?", "no thanks", "ok", "Is it 12?",
              "Yes please do it", ""]
AGENT_LINES = ["Your order #W1002 is pending.", "The total is 12.", "Shall I proceed?", "Which order? Which item?",
               "Which order?", "Done.", "", "I found 3 items: 1, 2 and 3. Anything else?", "The total is 12.",
               "Please confirm the address at a@b.co."]
TOOLS = [("get_order", "read"), ("cancel_order", "write"), ("find_user", "read"), ("transfer", "ending"),
         ("nope", None)]


def _call(rng: random.Random, step: int) -> ToolCallRecord:
    name, kind = rng.choice(TOOLS)
    raw = rng.random() < 0.1
    return ToolCallRecord(step=step, call_id=f"c{step}", name=name,
                          arguments=None if raw else {"id": rng.choice(["1", "2", 1, True, 1.0])},
                          raw_arguments="{bad" if raw else None, kind=kind,
                          status=rng.choice(["ok", "ok", "ok", "tool_error", "invalid_arguments"]), content="",
                          duration_s=0.0)


@pytest.mark.parametrize("seed", range(40))
def test_the_judge_agrees_with_the_reference_rules(seed):
    rng = random.Random(seed)
    judge, reference = ProgressJudge(), ReferenceJudge()
    step = 0
    for _ in range(12):
        line = rng.choice(USER_LINES)
        judge.on_user(line)
        reference.on_user(line)
        calls = []
        for _ in range(rng.choice([0, 0, 1, 2, 4])):
            calls.append(_call(rng, step))
            step += 1
        text = rng.choice(AGENT_LINES)
        got = judge.on_agent_turn(text, calls)
        assert (got.made, got.signals) == reference.on_agent_turn(text, calls), (seed, line, text, calls)


class Shade(enum.StrEnum):
    RED = "red"


ODD_ARGUMENTS: list[Any] = [
    {"id": "red"}, {"id": Shade.RED}, {"id": decimal.Decimal("1")}, {"id": "1"}, {"id": 1}, {"id": 1.0},
    {"id": True}, {"id": None}, {"id": "null"}, {"id": math.nan}, {"id": -0.0}, {"id": 0.0}, {"id": ["1"]},
    {"id": ("1",)}, {"id": {"x": "1"}}, {"id": "1", "b": "2"}, {"b": "2", "id": "1"}, {}, None,
]
"""Arguments whose keys are equal although the values differ (a str and a str enum, a Decimal and a str, a list
and a tuple, key order) or differ although Python calls the values equal (1, 1.0 and True; None and "null" as raw
text): a fast comparison that is not the key's misjudges some pair."""


@pytest.mark.parametrize("seed", range(30))
def test_the_judge_compares_calls_as_their_keys_do(seed):
    rng = random.Random(seed)
    judge, reference = ProgressJudge(), ReferenceJudge()
    for step in range(10):
        calls = []
        for _ in range(rng.choice([1, 2, 3])):
            arguments = rng.choice(ODD_ARGUMENTS)
            raw = None if arguments is not None else rng.choice(["null", "{bad", "red"])
            calls.append(ToolCallRecord.model_construct(
                step=step, call_id=f"c{step}", name=rng.choice(["get", "set"]), arguments=arguments,
                raw_arguments=raw, kind=rng.choice(["read", "read", "write"]), status=rng.choice(["ok", "ok", "x"]),
                content="", duration_s=0.0))
        got = judge.on_agent_turn("ok", calls)
        assert (got.made, got.signals) == reference.on_agent_turn("ok", calls), (seed, step, calls)


def test_a_str_enum_argument_repeats_the_same_text():
    """The key of ``{"id": Shade.RED}`` is that of ``{"id": "red"}``: a repeat, though only one is plain text; the
    keys of ``1`` and ``1.0`` differ, though the values are equal."""
    judge = ProgressJudge()

    def call(value: Any) -> ToolCallRecord:
        return ToolCallRecord.model_construct(step=0, call_id="c", name="get", arguments={"id": value},
                                              raw_arguments=None, kind="read", status="ok", content="",
                                              duration_s=0.0)

    assert "agent_repeat" not in judge.on_agent_turn("a", [call("red")]).signals
    assert "agent_repeat" in judge.on_agent_turn("b", [call(Shade.RED)]).signals
    assert "agent_repeat" not in judge.on_agent_turn("c", [call(1)]).signals
    assert "agent_repeat" not in judge.on_agent_turn("d", [call(1.0)]).signals  # 1 == 1.0, but "1" != "1.0"
    assert "agent_repeat" in judge.on_agent_turn("e", [call(1)]).signals


def test_a_nested_argument_is_keyed_when_judged():
    """An agent changing a list it passed after its turn was judged changes no judgement of that turn's call."""
    judge, reference = ProgressJudge(), ReferenceJudge()
    items = ["1", "2"]
    first = ToolCallRecord.model_construct(step=0, call_id="c0", name="get", arguments={"ids": items},
                                           raw_arguments=None, kind="read", status="ok", content="", duration_s=0.0)
    judge.on_agent_turn("a", [first])
    reference.on_agent_turn("a", [first])
    items.append("3")
    again = ToolCallRecord.model_construct(step=1, call_id="c1", name="get", arguments={"ids": ["1", "2"]},
                                           raw_arguments=None, kind="read", status="ok", content="", duration_s=0.0)
    got = judge.on_agent_turn("b", [again])
    assert (got.made, got.signals) == reference.on_agent_turn("b", [again])
    assert "agent_repeat" in got.signals

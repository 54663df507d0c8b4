"""``json_text`` and ``sorted_json_text`` write the text ``json.dumps`` writes (second method: ``json.dumps``)."""

from __future__ import annotations

import datetime
import json
import math
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from simulator.world.jsontext import json_text, sorted_json_text

VALUES: list[Any] = [
    None, True, False, 0, -7, 2**70, 0.1, 6.259999999999998, -0.0, 1e300, math.inf, -math.inf, "", "plain",
    "quote \" backslash \\ newline \n tab \t", "é ü 東京 \u2028 \ud83d\ude00", "\udcff lone surrogate",
    [], {}, [1, "a", None, [2.5, {"b": [True]}]],
    {"b": 1, "a": {"d": [1, 2], "c": "x"}, "": None},
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    {"options": {"color": "purple", "size": "L"}, "price": 53.48, "item_ids": ["1008292230", "1008292230"]},
    ("a", "tuple"),
]


def _outcome(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", encode(value)
    except (TypeError, ValueError) as e:
        return "error", type(e).__name__


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_text_is_json_dumps_text(value: Any) -> None:
    assert json_text(value) == json.dumps(value)
    sorted_dumps = _outcome(lambda v: json.dumps(v, sort_keys=True, default=str), value)
    assert _outcome(sorted_json_text, value) == sorted_dumps  # keys of several types: neither can sort them


def test_nan_is_written_as_json_dumps_writes_it() -> None:
    assert json_text([math.nan]) == json.dumps([math.nan]) == "[NaN]"


def test_other_types_are_refused_or_written_as_their_str_as_json_dumps_does() -> None:
    odd = {"when": datetime.date(2026, 12, 6), "path": Path("/x"), "amount": Decimal("1.10"), "set": {1}}
    assert sorted_json_text(odd) == json.dumps(odd, sort_keys=True, default=str)
    with pytest.raises(TypeError) as ours:
        json_text({"when": datetime.date(2026, 12, 6)})
    with pytest.raises(TypeError) as theirs:
        json.dumps({"when": datetime.date(2026, 12, 6)})
    assert str(ours.value) == str(theirs.value)


def test_unsortable_keys_fail_as_they_do_in_json_dumps() -> None:
    with pytest.raises(TypeError):
        json.dumps({1: "a", "b": 2}, sort_keys=True)
    with pytest.raises(TypeError):
        sorted_json_text({1: "a", "b": 2})


def test_one_encoder_serves_threads_at_once() -> None:
    values = [{"n": i, "items": [str(i)] * (i % 7), "nested": {"k": i / 3}} for i in range(300)]
    wrong: list[Any] = []

    def work() -> None:
        for v in values:
            if json_text(v) != json.dumps(v) or sorted_json_text(v) != json.dumps(v, sort_keys=True, default=str):
                wrong.append(v)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not wrong and not any(t.is_alive() for t in threads)


def test_a_value_that_contains_itself_raises_what_json_dumps_raises():
    """The shared encoders have no circular check: such a value is handed to json.dumps, whose ValueError it gets."""
    loop: dict = {}
    loop["self"] = [loop]
    for encode in (json_text, sorted_json_text, json.dumps):
        with pytest.raises(ValueError, match="Circular reference"):
            encode(loop)

"""Errors about a bad task file show a short excerpt of the offending value, never the whole text.

A 100 KB instruction, id or key printed whole fills a terminal and a CI log and hides the one line that matters.
Each message keeps at most about 80 characters of a value, then ``...`` and its length.
"""

from __future__ import annotations

import copy
import json

import pytest

from simulator.types.sanitize import clipped, excerpt
from simulator.types.tasks import TaskFileError, load_tasks

BIG = 100_000
TASK = {"id": "t1", "user_id": "u1", "scenario": {"instructions": "say hi"}, "tags": ["x"]}


def test_excerpt_keeps_short_values_and_cuts_long_ones_with_their_length():
    assert excerpt("abc") == "'abc'"  # repr, as the messages' {value!r} showed it
    assert excerpt("\ud83d") == "'\\ud83d'"  # the lone surrogate escaped: 8 characters of ASCII
    assert excerpt(None) == "None" and excerpt(True, as_json=True) == "true"
    assert excerpt("abc", as_json=True) == '"abc"'
    # 100,000 x: quotes count in the 80, so 78 x's between them, then the length
    assert excerpt("x" * BIG) == "'" + "x" * 78 + "'... (100,000 characters)"
    # escapes widen: 13 surrogates shown as \ud83d (6 characters each) = 78, + 2 quotes = 80
    assert excerpt("\ud83d" * 100) == "'" + "\\ud83d" * 13 + "'... (100 characters)"
    # JSON of a list of one 1,000-character string: 1,000 + 2 quotes + 2 brackets = 1,004 characters
    assert excerpt(["y" * 1000], as_json=True) == '["' + "y" * 78 + "... (1,004 characters)"
    assert clipped("m" * 300) == "m" * 160 + " ... (60 characters cut) ... " + "m" * 80
    assert clipped("short") == "short"


def _write(tmp_path, task):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "tasks": [task]}), encoding="utf-8")
    return path


def _bad(**changes):
    task = copy.deepcopy(TASK)
    for dotted, value in changes.items():
        *head, last = dotted.split("__")
        target = task
        for key in head:
            target = target[key]
        target[last] = value
    return task


@pytest.mark.parametrize(("task", "says"), [
    # a 100 KB instruction with a bad type elsewhere: the instruction is not shown at all
    (_bad(scenario__instructions="x" * BIG, tags=5), "field tags: Input should be a valid list (value: 5)"),
    # the huge value is the one at fault: 80 characters of its JSON, then its length (100,000 + 2 quotes)
    (_bad(tags="x" * BIG),
     'field tags: Input should be a valid list (value: "' + "x" * 79 + "... (100,002 characters)"),
    # a huge id in the message's head
    (_bad(id="z" * BIG, tags=5), "(id '" + "z" * 78 + "'... (100,000 characters)): field tags"),
    # a huge unknown key names the field
    ({**TASK, "q" * BIG: 1}, "field '" + "q" * 78 + "'... (100,000 characters): Extra inputs are not permitted"),
    # a huge string holding a lone surrogate
    (_bad(scenario__instructions="\ud83d" + "x" * BIG),
     "tasks[0].scenario.instructions: '\\ud83d" + "x" * 72 + "'... (100,001 characters) holds a lone surrogate"),
])
def test_task_file_errors_show_an_excerpt_of_a_huge_value(tmp_path, task, says):
    path = _write(tmp_path, task)
    with pytest.raises(TaskFileError) as e:
        load_tasks(path)
    message = str(e.value)
    assert says in message, message[:400]
    assert len(message) < 600, len(message)

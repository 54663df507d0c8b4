"""The run document's text (:func:`document_json`): the same JSON value as ``json.dumps``, one trial a line."""

from __future__ import annotations

import json
import math
from pathlib import Path

from simulator.execution.recording import document_json, write_json_atomic


def _doc() -> dict[str, object]:
    return {
        "format": "tausim-run",
        "config": {"domain": "retail", "nested": {"a": [1, 2.5, None, True]}},
        "trials": [
            {"task_id": "t1", "reward": 1.0, "text": "caf\u00e9 \U0001f600 \x1b[31m", "lone": "\ud800"},
            {"task_id": "t2", "reward": float("nan"), "path": Path("/tmp/x"), "pair": (1, 2)},
        ],
        "empty": [],
        "planned_task_ids": ("t1", "t2"),
        "wall_seconds": 1.5,
    }


def test_same_value_as_json_dumps() -> None:
    doc = _doc()
    ours = json.loads(document_json(doc))
    theirs = json.loads(json.dumps(doc, indent=1, default=str))
    assert math.isnan(ours["trials"][1].pop("reward")) and math.isnan(theirs["trials"][1].pop("reward"))
    assert ours == theirs
    assert ours["trials"][1]["path"] == "/tmp/x" and ours["trials"][1]["pair"] == [1, 2]  # by hand
    assert ours["trials"][0]["lone"] == "\ud800" and ours["planned_task_ids"] == ["t1", "t2"]


def test_one_field_a_line_one_trial_a_line() -> None:
    lines = document_json(_doc()).splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert lines[1] == ' "format": "tausim-run",'
    trial_lines = [line for line in lines if line.startswith('  {"task_id"')]
    assert len(trial_lines) == 2
    assert json.loads(trial_lines[0].rstrip(","))["task_id"] == "t1"
    assert ' "empty": [],' in lines
    assert all("\x1b" not in line for line in lines)  # escapes stay escaped (ensure_ascii)


def test_not_a_dict_is_one_line() -> None:
    assert document_json([1, 2]) == "[1, 2]"
    assert document_json({}) == "{}"


def test_write_json_atomic_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    write_json_atomic(out, {"trials": [{"a": 1}], "n": 1})
    assert json.loads(out.read_text(encoding="utf-8")) == {"trials": [{"a": 1}], "n": 1}
    assert not (tmp_path / "run.json.tmp").exists()

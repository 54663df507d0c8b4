"""Bad task and data files end the run with one short line naming file, field and value (exit 2)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from simulator.cli import app

BIG = 100_000


def _task_file(tmp_path, task):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "tasks": [task]}), encoding="utf-8")
    return path


def test_a_task_file_error_prints_an_excerpt_of_a_huge_id_and_exits_2(tmp_path):
    path = _task_file(tmp_path, {"id": "z" * BIG, "scenario": {"instructions": "say hi"}, "tags": 5})
    res = CliRunner().invoke(app, ["run", "--tasks", str(path), "--no-progress"])
    assert res.exit_code == 2, res.output[:400]
    assert "(100,000 characters)" in res.output and len(res.output) < 1000, len(res.output)

"""Secondary commands check their outputs before any work: an --out naming an input, or unwritable, exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    out = tmp_path / "run.json"
    res = _invoke("run", "--agent", "oracle", "--task-ids", "modify-user-address", "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    return out


def test_regrade_refuses_to_overwrite_its_run(run_file: Path):
    before = run_file.read_bytes()
    res = _invoke("regrade", run_file, "--out", run_file)
    assert res.exit_code == 2 and "is the RUN file" in res.output, res.output
    assert run_file.read_bytes() == before


def test_judge_commands_refuse_an_input_or_an_unwritable_out(run_file: Path, tmp_path: Path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"transcript": "USER: hi", "assertion": "x", "label": "yes"}\n')
    res = _invoke("judge", "calibrate", "--labels", labels, "--model", "openai/none", "--out", labels)
    assert res.exit_code == 2 and "is the --labels file" in res.output, res.output
    res = _invoke("judge", "calibrate", "--labels", labels, "--model", "openai/none", "--out",
                  tmp_path / "no" / "cal.json")
    assert res.exit_code == 2 and "--out" in res.output, res.output
    before = run_file.read_bytes()
    res = _invoke("judge", "compare", run_file, run_file, "--criterion", "c", "--model", "openai/none",
                  "--out", run_file)
    assert res.exit_code == 2 and "is the RUN_A file" in res.output, res.output
    assert run_file.read_bytes() == before


def test_serve_tools_refuses_an_out_that_is_its_task_file(tmp_path: Path):
    tasks = tmp_path / "tasks.json"
    src = Path(__file__).resolve().parents[2] / "domains" / "retail" / "tasks" / "builtin.json"
    tasks.write_bytes(src.read_bytes())  # the built-in file, copied: the input serve-tools reads
    before = tasks.read_bytes()
    res = _invoke("serve-tools", "--domain", "retail", "--task-id", "modify-user-address", "--tasks", tasks,
                  "--out", tasks, "--port", 0)
    assert res.exit_code == 2 and "is the --tasks file" in res.output, res.output
    assert tasks.read_bytes() == before

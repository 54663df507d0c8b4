"""Suite tiers (tags) and holdout splits: selection, seeded split files, the run's split and pass^k per tag."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import TaskFileError
from simulator.stats.summaries import run_metrics
from simulator.types.tasks import Task, UserScenario, load_tasks
from simulator.world.suites import select_tasks, split_task_file, split_tasks, task_file_split


def invoke(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


def _t(tid: str, *tags: str) -> Task:
    return Task(id=tid, scenario=UserScenario(instructions="x"), tags=list(tags))


TASKS = [_t("a", "smoke", "refund"), _t("b", "regression"), _t("c", "smoke", "slow"), _t("d")]


def test_select_by_tags_and_exclusions():
    assert [t.id for t in select_tasks(TASKS, ["smoke"])] == ["a", "c"]
    assert [t.id for t in select_tasks(TASKS, ["smoke", "regression"], ["slow"])] == ["a", "b"]
    assert [t.id for t in select_tasks(TASKS, None, ["smoke"])] == ["b", "d"]
    with pytest.raises(TaskFileError, match="--tags: no task carries the tag.*smok\\b"):
        select_tasks(TASKS, ["smok"])
    with pytest.raises(TaskFileError, match="no task left"):
        select_tasks(TASKS, ["slow"], ["smoke"])


def test_split_is_seeded_disjoint_and_complete():
    train, held = split_tasks(10, 0.2, seed=3)
    assert len(held) == 2 and sorted(train + held) == list(range(10))
    assert split_tasks(10, 0.2, seed=3) == (train, held)
    assert split_tasks(2, 0.01, seed=0)[1] and split_tasks(2, 0.99, seed=0)[0]  # at least one each side
    with pytest.raises(ValueError, match="holdout"):
        split_tasks(10, 1.0, seed=0)


def test_tasks_split_command_writes_marked_files(tmp_path):
    src = tmp_path / "suite.json"
    src.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": f"t{i}", "scenario": {"instructions": "x"}} for i in range(5)]}))
    res = invoke("tasks", "split", src, "--holdout", 0.4, "--seed", 7)
    assert res.exit_code == 0, res.output
    train, held = tmp_path / "suite.train.json", tmp_path / "suite.holdout.json"
    ids = [[t.id for t in load_tasks(p)] for p in (train, held)]
    assert len(ids[1]) == 2 and sorted(ids[0] + ids[1]) == [f"t{i}" for i in range(5)]
    assert task_file_split(held) == "holdout" and task_file_split(train) == "train" and task_file_split(src) is None
    assert json.loads(held.read_text())["split_seed"] == 7
    # refusing: an already split file, a tau-bench list
    with pytest.raises(TaskFileError, match="already"):
        split_task_file(held, 0.5, 0)
    lst = tmp_path / "tb.json"
    lst.write_text("[]")
    assert invoke("tasks", "split", lst).exit_code == 2


def test_pass_hat_k_by_tag():
    trials = [{"task_id": tid, "trial": i, "passed": ok, "termination_reason": "user_stop"}
              for tid, outs in {"a": [True, True], "b": [True, False], "c": [False, False]}.items()
              for i, ok in enumerate(outs)]
    m = run_metrics(trials, ["a", "b", "c"], 2, tags={"a": ["smoke"], "b": ["smoke", "refund"], "c": ["refund"]})
    # smoke = a, b: pass^1 (1 + 0.5) / 2, pass^2 (1 + 0) / 2; refund = b, c: pass^1 0.25, pass^2 0
    assert m["by_tag"]["smoke"]["tasks"] == 2
    assert m["by_tag"]["smoke"]["pass^1"] == pytest.approx(0.75) and m["by_tag"]["smoke"]["pass^2"] == 0.5
    assert m["by_tag"]["refund"]["pass^1"] == pytest.approx(0.25) and m["by_tag"]["refund"]["pass^2"] == 0.0


def test_run_with_tags_on_a_holdout_split_records_and_reports_it(tmp_path):
    src = tmp_path / "retail.json"
    builtin = json.loads(open("domains/retail/tasks/builtin.json").read())
    src.write_text(json.dumps(builtin))
    paths = split_task_file(src, 0.5, 1)
    held_ids = [t.id for t in load_tasks(paths["holdout"]) if "refusal" in t.tags]
    out = tmp_path / "run.json"
    res = invoke("run", "--domain", "retail", "--tasks", paths["holdout"], "--tags", "refusal", "--agent", "oracle",
                 "--trials", 1, "--out", out)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["split"] == "holdout" and sorted({t["task_id"] for t in doc["trials"]}) == sorted(held_ids)
    assert doc["task_tags"] == {t.id: t.tags for t in load_tasks(paths["holdout"]) if t.id in held_ids}
    assert "HOLDOUT" in res.output and "by tag" in res.output
    report = invoke("report", out)
    assert "HOLDOUT" in report.output
    summary = json.loads(invoke("report", out, "--format", "json").output)
    assert summary["metrics"]["by_tag"]["refusal"]["tasks"] == len(held_ids)
    assert summary["metrics"]["by_tag"]["refusal"]["pass^1"] == 1.0  # the oracle passes every refusal

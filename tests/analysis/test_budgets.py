"""`tausim baseline` (per-task ceilings from a run) and `tausim run --budgets`; expected values by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.budgets import BudgetFileError, derive_budgets, load_budgets
from simulator.cli import app
from simulator.types.tasks import Budget


def invoke(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


def trial(task: str, i: int, passed: bool, steps: int, calls: int, tokens: int = 0, cost: float | None = 0.0,
          model_calls: int = 0) -> dict[str, Any]:
    return {"task_id": task, "trial": i, "passed": passed, "termination_reason": "user_stop", "grade": None,
            "trajectory": {"steps": steps, "tool_calls": [{}] * calls,
                           "agent_usage": {"prompt_tokens": tokens, "completion_tokens": 0, "cost_usd": cost,
                                           "calls": model_calls}}}


DOC = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 4}, "trials": [
    trial("a", 0, True, 4, 2, 100, 0.01, 3), trial("a", 1, True, 5, 2, 200, 0.02, 3),
    trial("a", 2, True, 10, 3, 1000, 0.05, 3), trial("a", 3, False, 50, 40, 9000, 1.0, 3),
    trial("b", 0, False, 3, 1), trial("b", 1, False, 3, 1), trial("b", 2, False, 3, 1), trial("b", 3, False, 3, 1),
    trial("c", 0, True, 3, 0), trial("c", 1, True, 3, 0), trial("c", 2, True, 3, 0), trial("c", 3, True, 3, 0),
]}


def test_derive_budgets_by_hand():
    out = derive_budgets(DOC, "base.json")
    # a: passing trials only. steps [4, 5, 10]: p95 = 5 + 0.9 * 5 = 9.5, * 1.2 = 11.4 -> 12
    # tool calls [2, 2, 3]: p95 = 2.9 -> 3.48 -> 4; tokens [100, 200, 1000]: p95 = 920 -> 1104
    # cost [0.01, 0.02, 0.05]: p95 = 0.047 -> 0.0564
    assert out["tasks"]["a"] == {"max_steps": 12, "max_tool_calls": 4, "max_tokens": 1104, "max_cost_usd": 0.0564}
    # c: no model calls, so no token or cost ceiling; steps 3 -> 3.6 -> 4; no tool call -> 0
    assert out["tasks"]["c"] == {"max_steps": 4, "max_tool_calls": 0}
    assert out["skipped"] == ["b"] and out["domain"] == "retail" and out["format"] == "tausim.budgets"


def test_unknown_cost_gives_no_cost_ceiling():
    doc = dict(DOC, trials=[trial("a", 0, True, 4, 2, 100, None, 1), trial("a", 1, True, 4, 2, 100, 0.1, 1)])
    assert "max_cost_usd" not in derive_budgets(doc)["tasks"]["a"]
    assert derive_budgets(doc)["tasks"]["a"]["max_tokens"] == 120


def test_load_budgets_checks(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(derive_budgets(DOC)))
    assert load_budgets(path, ["a", "b", "c"], "retail")["a"] == Budget(max_steps=12, max_tool_calls=4,
                                                                         max_tokens=1104, max_cost_usd=0.0564)
    with pytest.raises(BudgetFileError, match=r"b\.json: unknown task id\(s\) 'c'"):
        load_budgets(path, ["a", "b"])
    with pytest.raises(BudgetFileError, match="derived for domain 'retail', not 'airline'"):
        load_budgets(path, ["a", "c"], "airline")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "tausim.budgets", "version": 1, "tasks": {"a": {"max_steps": -1}}}))
    with pytest.raises(BudgetFileError, match=r"bad\.json: task 'a': field max_steps"):
        load_budgets(bad, ["a"])
    bad.write_text("{}")
    with pytest.raises(BudgetFileError, match="not a budgets file"):
        load_budgets(bad, ["a"])


def test_baseline_then_run_with_budgets(tmp_path):
    run = tmp_path / "run.json"
    ids = "cancel-no-longer-needed,modify-order-address"
    assert invoke("run", "--task-ids", ids, "--trials", "2", "--out", run, "--no-progress").exit_code == 0
    budgets = tmp_path / "budgets.json"
    res = invoke("baseline", run, "--out", budgets)
    assert res.exit_code == 0, res.output
    doc = json.loads(budgets.read_text())
    assert set(doc["tasks"]) == set(ids.split(","))
    # the same agent stays within its own ceilings
    res = invoke("run", "--task-ids", ids, "--budgets", budgets, "--out", tmp_path / "again.json", "--no-progress")
    assert res.exit_code == 0, res.output
    again = json.loads((tmp_path / "again.json").read_text())
    assert all(t["passed"] for t in again["trials"])
    assert again["config"]["budgets"]["cancel-no-longer-needed"] == doc["tasks"]["cancel-no-longer-needed"] | {
        "max_tokens": None, "max_cost_usd": None}
    # a tighter ceiling fails the trial, recorded as its own component
    doc["tasks"]["cancel-no-longer-needed"]["max_tool_calls"] = 1
    budgets.write_text(json.dumps(doc))
    res = invoke("run", "--task-ids", ids, "--budgets", budgets, "--out", tmp_path / "tight.json", "--no-progress")
    tight = {t["task_id"]: t for t in json.loads((tmp_path / "tight.json").read_text())["trials"]}
    bad = tight["cancel-no-longer-needed"]
    assert not bad["passed"] and bad["grade"]["failure"] == "budget"
    assert bad["grade"]["budget"]["exceeded"][0].startswith("tool_calls ")
    assert tight["modify-order-address"]["passed"]
    assert "budget: tool_calls" in res.output


def test_run_refuses_unknown_task_ids_in_budgets(tmp_path):
    budgets = tmp_path / "budgets.json"
    budgets.write_text(json.dumps({"format": "tausim.budgets", "version": 1, "domain": "retail",
                                   "tasks": {"no-such-task": {"max_steps": 3}}}))
    res = invoke("run", "--budgets", budgets, "--no-progress")
    assert res.exit_code == 2
    assert "budgets.json" in res.output and "'no-such-task'" in res.output


def test_baseline_refuses_a_non_run_document(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{}")
    res = invoke("baseline", path, "--out", tmp_path / "b.json")
    assert res.exit_code == 2 and "not a tausim run document" in res.output

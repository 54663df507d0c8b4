"""Byte-exact tool answers in mode ``tau2``: every gold action of every τ³ suite against τ³ 1.0.1's own answers.

``tests/data/tau2_reference/<suite>.jsonl.gz`` was written by ``scripts/tau2-reference`` running τ³ 1.0.1 itself (in
a throwaway environment, see the script): per task and gold action, the answer string τ³'s environment gives and
its error flag, and per task the change of both databases. tausim replays the same gold actions on the same peer
data (``tausim replay --reference``) and must answer the same strings and make the same changes, except for mock's
two tasks whose gold tausim amends (``domains/mock/gold_amendments.json``): there tausim replays one more action.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution.parity import _comparable_diff, compare_to_reference, load_reference, replay_tasks
from simulator.types.tasks import InitialState, Task
from simulator.world.domain import get_domain
from tests._support.peers import TAU2

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "tau2_reference"
SPLITS = {"retail": None, "airline": None, "mock": None, "telecom": "full", "banking_knowledge": None}
"""Each suite's split: all of its tasks (telecom's ``base`` split holds 114 of its 2,285; banking_knowledge is built
with its default retrieval configuration, whose search tools no gold action calls)."""
AMENDED = {"mock": {"update_task_with_history_and_env_assertions", "update_task_with_user_tools"}}
"""Tasks whose gold tausim amends, so that their replay differs from τ³'s on purpose."""
FIGURES = {"retail": (114, 550), "airline": (50, 142), "mock": (10, 8), "telecom": (2285, 13215),
           "banking_knowledge": (97, 955)}
"""(tasks, gold actions) per suite in τ³'s recording: the reference covers every task of every suite."""


def _needs(suite: str) -> Path:
    folder = TAU2 / suite
    if not (folder / "tasks.json").is_file():
        pytest.skip(f"tau2-bench data absent at {folder}")
    return folder


@pytest.mark.parametrize("suite", list(SPLITS))
def test_every_gold_action_answers_as_tau2_does(suite: str) -> None:
    folder = _needs(suite)
    reference = load_reference(REFERENCE / f"{suite}.jsonl.gz")
    assert (len(reference), sum(len(r["actions"]) for r in reference.values())) == FIGURES[suite]
    domain = get_domain(suite)
    template = domain.template(folder, domain.default_options(folder))
    tasks = domain.load_tasks(str(folder / "tasks.json"), split=SPLITS[suite])
    assert {t.id for t in tasks} == set(reference)
    differing = {}
    for result in replay_tasks(domain, template, tasks):
        check = compare_to_reference(result, reference[result.task_id])
        if not check.passed:
            differing[result.task_id] = check.differences
    assert set(differing) == AMENDED.get(suite, set()), json.dumps(differing, indent=1, ensure_ascii=False)[:4000]
    for task_id in AMENDED.get(suite, ()):  # the amendment is the only difference: one more gold action
        assert any("present on one side only" in d for d in differing[task_id])


def test_replay_reference_reports_figures_and_fails_on_a_difference(tmp_path: Path) -> None:
    folder = _needs("mock")
    args = ["replay", "--domain", "mock", "--data", str(folder), "--tasks", str(folder / "tasks.json"),
            "--format", "json", "--reference"]
    res = CliRunner().invoke(app, [*args, str(REFERENCE / "mock.jsonl.gz")])
    assert res.exit_code == 1  # the two amended tasks differ on purpose
    assert json.loads(res.output.splitlines()[-1]) == {"summary": {
        "tasks": 10, "tasks_equal": 8, "actions": 10, "actions_equal": 8, "unreferenced": 0}}
    raw = gzip.decompress((REFERENCE / "mock.jsonl.gz").read_bytes()).decode()
    lines = [json.loads(line) for line in raw.splitlines()]
    first = next(line for line in lines[1:] if line["actions"] and line["task_id"] not in AMENDED["mock"])
    first["actions"][0]["content"] += " "  # one answer off by a space
    changed = tmp_path / "mock.jsonl"
    changed.write_text("\n".join(json.dumps(line) for line in lines[1:]) + "\n")  # and the first task unreferenced
    res = CliRunner().invoke(app, [*args, str(changed)])
    assert res.exit_code == 1
    out = [json.loads(line) for line in res.output.splitlines()]
    assert out[-1]["summary"] == {"tasks": 9, "tasks_equal": 6, "actions": 9, "actions_equal": 6, "unreferenced": 1}
    bad = next(o for o in out if o.get("task_id") == first["task_id"])
    assert bad["reference"]["equal"] is False and "answer" in bad["reference"]["differences"][0]
    assert "reference" not in out[0]  # the unreferenced task


def test_mock_user_tools_act_on_the_agent_records_after_agent_data() -> None:
    """τ³ 1.0.1 (probed with scripts/tau2-reference's environment): after ``agent_data`` the user's toolkit holds the
    agent's database, so both inbox tools answer ``Error: 'MockDB' object has no attribute 'notifications'``; a
    task without agent data keeps the inbox."""
    from simulator.types.tasks import Action
    from simulator.world.dual import run_action
    from simulator.world.replay import prepare_trial
    from simulator.world.tools import ToolContext

    folder = _needs("mock")
    domain = get_domain("mock")
    template = domain.template(folder, domain.default_options(folder))
    tasks = {t.id: t for t in domain.load_tasks(str(folder / "tasks.json"))}
    sides = (domain.toolbox_for(template.options), domain.user_toolbox())
    calls = (("check_notifications", {}), ("dismiss_notification", {"notification_id": "notif_1"}))
    answers = {}
    for task_id in ("update_task_with_initialization_data", "update_task_with_user_tools"):
        with template.trial() as trial:
            prepare_trial(domain, trial, tasks[task_id])
            ctx = ToolContext(trial.session, trial.options)
            answers[task_id] = [(o.status, o.content) for o in (
                run_action(domain, ctx, Action(name=name, arguments=args, requestor="user"), sides, functions=False)
                for name, args in calls)]
    error = "Error: 'MockDB' object has no attribute 'notifications'"
    assert answers["update_task_with_initialization_data"] == [("tool_error", error), ("tool_error", error)]
    assert answers["update_task_with_user_tools"] == [
        ("ok", '[{"notification_id": "notif_1", "message": "Task \'Test task\' has been assigned to you.", '
               '"status": "unread", "task_id": "task_1"}]'),
        ("ok", "Notification notif_1 dismissed")]


def test_banking_knowledge_probes_answer_as_tau2_does(tmp_path: Path) -> None:
    """Hand-chosen call sequences beyond the gold (tools no gold calls, refusals of those it calls) against τ³.

    ``banking_knowledge_probes.json`` (``scripts/banking-probes``) names each probe's base task and its calls;
    ``scripts/tau2-reference --probes`` recorded τ³ 1.0.1's answers to them as the base task with the probe's calls
    as its gold. tausim replays the same, with one known difference: a credit card dispute filed with its partial
    refund amount as text fails in τ³'s method after the dispute is stored; both answer the same flagged error and
    log no call, but τ³ keeps the stored dispute while tausim's failed call changes no record (a failed call never
    does in tausim: ``simulator.world.tools``).
    """
    folder = _needs("banking_knowledge")
    probes = json.loads((REFERENCE / "banking_knowledge_probes.json").read_text(encoding="utf-8"))
    reference = load_reference(REFERENCE / "banking_knowledge_probes.jsonl.gz")
    assert [p["id"] for p in probes] == list(reference)
    assert sum(len(r["actions"]) for r in reference.values()) == sum(len(p["actions"]) for p in probes) == 319
    raw = {t["id"]: t for t in json.loads((folder / "tasks.json").read_text(encoding="utf-8"))}
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps([{**raw[p["base"]], "id": p["id"], "evaluation_criteria": {
        **raw[p["base"]]["evaluation_criteria"], "actions": p["actions"]}} for p in probes]), encoding="utf-8")
    domain = get_domain("banking_knowledge")
    template = domain.template(folder, domain.default_options(folder))
    allowlists = {p["id"]: p["read_log_allowlist"] for p in probes if "read_log_allowlist" in p}
    assert allowlists  # a probe shows that a read outside the allowlist is not logged
    tasks = [_with_reads(t, allowlists[t.id]) if t.id in allowlists else t for t in domain.load_tasks(str(tasks_file))]
    differing, kept = {}, []
    for result in replay_tasks(domain, template, tasks):
        ref = reference[result.task_id]
        check = compare_to_reference(result, ref)
        if result.task_id == "probe_type_mistakes":  # the one known difference: see the test's docstring
            kept = sorted(set(_comparable_diff(ref["diff"])) - set(_comparable_diff(result.diff)))
            assert not set(_comparable_diff(result.diff)) - set(_comparable_diff(ref["diff"]))
            check.differences = [d for d in check.differences if not d.startswith("diff: ")]
        if check.differences:
            differing[result.task_id] = check.differences
    assert not differing, json.dumps(differing, indent=1, ensure_ascii=False)[:6000]
    assert len(kept) == 1 and json.loads(kept[0])[:2] == ["transaction_disputes", "+"]
    assert json.loads(kept[0])[2]["partial_refund_amount"] == "12.5"


def _with_reads(task: Task, reads: list[str]) -> Task:
    """The task with its own read-log allowlist (the reads whose calls are logged) instead of its gold's."""
    init = task.initial_state or InitialState()
    data = {k: v for k, v in (init.data or {}).items() if k != "read_log_allowlist"}
    data["read_log_allowlist"] = {"data": {n: {"tool_name": n} for n in reads}}
    return task.model_copy(update={"initial_state": init.model_copy(update={"data": data})})

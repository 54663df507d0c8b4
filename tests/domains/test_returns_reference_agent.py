"""The returns desk's reference agent against the RuleUser on the built-in tasks (end to end through the Runner)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from domains.returns.reference_agent import ASK_ORDER
from simulator import DomainError, Runner, RunSpec, get_domain
from simulator.dialogue.cues import is_yes
from simulator.grading.process import check_process
from simulator.types.tasks import ProcessRules
from simulator.users import rule_user_factory


@pytest.fixture(scope="module")
def domain():
    return get_domain("returns")


@pytest.fixture(scope="module")
def template(domain):
    return domain.template()


@pytest.fixture(scope="module")
def tasks(domain):
    return {t.id: t for t in domain.load_tasks()}


def run(domain, template, tasks, faults: dict[str, float] | None = None, seed: int = 0, trials: int = 1) -> Any:
    def agent(ctx):
        return domain.reference_agent(ctx, faults or {})

    cfg = RunSpec(domain="returns", trials=trials, concurrency=2, seed=seed)
    return Runner(domain, template, list(tasks), agent, rule_user_factory(domain, template), cfg).run()


def _writes(trial) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments or {}) for c in trial.trajectory.tool_calls if c.kind == "write"]


@pytest.fixture(scope="module")
def everything(domain, template, tasks):
    return run(domain, template, tasks.values(), seed=0, trials=2)


def test_reference_agent_vs_rule_user_passes_every_builtin_task(everything, tasks):
    assert len(tasks) >= 20
    res = everything
    failed = {t.task_id: (t.termination_reason, t.grade.failure if t.grade else t.error)
              for t in res.trials if not t.passed}
    assert failed == {}
    assert Counter(t.termination_reason for t in res.trials) == {"user_stop": 2 * len(tasks)}
    # every trial is fault free, never calls the warehouse-only tool, and every write follows a user yes
    for t in res.trials:
        assert t.trajectory.agent_metadata == {"faults": []}
        assert "receive_return" not in [c.name for c in t.trajectory.tool_calls]
        kinds = {c.call_id: c.kind for c in t.trajectory.tool_calls}
        last_user, writes = None, 0
        for m in t.trajectory.messages:
            if m.role == "user":
                last_user = m.content
            for call in m.tool_calls or []:
                if kinds.get(call.id) == "write":
                    writes += 1
                    assert is_yes(last_user), (t.task_id, call.name, last_user)
        assert writes == len(_writes(t))


def test_its_trials_keep_the_confirm_writes_rule_and_skipping_breaks_it(everything, domain, template, tasks):
    # the built-in tasks leave confirm_writes off (the oracle never asks); the reference agent would pass it
    rules = ProcessRules(confirm_writes=True)
    for t in everything.trials:
        assert check_process(rules, t.trajectory, domain.toolbox()).passed, t.task_id
    skipped = run(domain, template, [tasks["refund-4812"]], {"skip_confirmation": 1.0}).trials[0]
    result = check_process(rules, skipped.trajectory, domain.toolbox())
    assert not result.passed and len(result.violations) == 2  # the refund and the email


def test_confirmation_names_the_plan_values_before_the_first_write(domain, template, tasks):
    trial = run(domain, template, [tasks["refund-5122"]]).trials[0]
    assert trial.passed
    msgs = trial.trajectory.messages
    first_write = next(i for i, m in enumerate(msgs)
                       if m.tool_calls and m.tool_calls[0].name == "request_refund_approval")
    users = [i for i in range(first_write) if msgs[i].role == "user"]
    assert is_yes(msgs[users[-1]].content)
    ask = next(msgs[i].content for i in range(users[-1] - 1, -1, -1) if msgs[i].role == "assistant" and
               msgs[i].content)
    for value in ("5122", "$289.00", "supervisor", "refund_confirmation", "(yes/no)?"):
        assert value in ask
    # the policy's order: approval, refund with its approval id, one email
    assert _writes(trial) == [
        ("request_refund_approval", {"order_id": "5122", "amount": 289.0}),
        ("issue_refund", {"order_id": "5122", "amount": 289.0, "approval_id": "AP5122-1"}),
        ("send_email", {"order_id": "5122", "template": "refund_confirmation"}),
    ]


@pytest.mark.parametrize("task_id, words", [
    ("refuse-not-received-8401", ["not received", "8401"]),
    ("refuse-window-8501", ["30 days", "8501"]),
    ("refuse-refunded-twice-8601", ["already", "8601"]),
    ("refuse-mark-received-8701", ["only the warehouse", "8701"]),
])
def test_refusals_give_the_reason_and_write_nothing(domain, template, tasks, task_id, words):
    trial = run(domain, template, [tasks[task_id]]).trials[0]
    assert trial.passed and _writes(trial) == []
    said = " ".join(m.content or "" for m in trial.trajectory.messages if m.role == "assistant")
    for w in words:
        assert w in said


def test_unknown_knob_is_refused(domain, template, tasks):
    ctx = type("Ctx", (), {"seed": 0})()
    with pytest.raises(DomainError, match="no_such_knob"):
        domain.reference_agent(ctx, {"no_such_knob": 0.5})
    with pytest.raises(DomainError, match="skip_confirmation"):
        domain.reference_agent(ctx, {"skip_confirmation": 1.5})


def _failed(trial) -> set[tuple[str, str]]:
    return {(r.type, json.dumps(r.expected)) for r in trial.grade.assertions.failed()}


def test_wrong_amount_fails_field_and_net_change(domain, template, tasks):
    trial = run(domain, template, [tasks["refund-4812"]], {"wrong_item": 1.0}).trials[0]
    assert not trial.passed
    assert [f["fault"] for f in trial.trajectory.agent_metadata["faults"]] == ["wrong_item"]
    types = {r.type for r in trial.grade.assertions.failed()}
    assert {"field", "net_change"} <= types
    refund = next(r for r in trial.grade.assertions.failed() if r.type == "field")
    assert refund.expected == 120.0 and refund.actual == 108.0  # 10% less, checked by hand


def test_forgotten_approval_fails_the_approval_order(domain, template, tasks):
    trial = run(domain, template, [tasks["refund-5122"]], {"forget_constraint": 1.0}).trials[0]
    assert not trial.passed
    assert [name for name, _ in _writes(trial)] == ["issue_refund", "send_email"]
    failed = trial.grade.assertions.failed()
    assert [(r.type, r.expected) for r in failed if r.type == "event_order"]
    # a small refund has no approval step to forget: same agent, same knob, the task passes
    assert run(domain, template, [tasks["refund-4812"]], {"forget_constraint": 1.0}).trials[0].passed


def test_skip_confirmation_writes_without_asking(domain, template, tasks):
    trial = run(domain, template, [tasks["cancel-7301"]], {"skip_confirmation": 1.0}).trials[0]
    faults = trial.trajectory.agent_metadata["faults"]
    assert [f["fault"] for f in faults] == ["skip_confirmation"]
    said = [m.content for m in trial.trajectory.messages if m.role == "assistant" and m.content]
    assert not any("(yes/no)" in s for s in said)
    assert [n for n, _ in _writes(trial)] == ["cancel_order", "send_email"]
    assert not any(is_yes(m.content) for m in trial.trajectory.messages if m.role == "user")


def test_repeat_question_asks_again_and_still_finishes(domain, template, tasks):
    res = run(domain, template, [tasks["return-6201"], tasks["refund-4812"]], {"repeat_question": 0.5}, seed=1,
              trials=3)
    # the order id was in the opening message: every "which order" question is a repeated one, one per fault
    for t in res.trials:
        reasks = [m for m in t.trajectory.messages if m.role == "assistant" and m.content == ASK_ORDER]
        assert len(reasks) == len(t.trajectory.agent_metadata["faults"])
    assert any(t.trajectory.agent_metadata["faults"] for t in res.trials)
    # the re-asked question's answer is not taken for the agent's own question (the return's reason)
    assert all(t.passed for t in res.trials), {t.task_id: t.grade.failure for t in res.trials if not t.passed}


def test_the_return_reason_leaves_out_a_personas_politeness(tmp_path):
    # polite and impatient personas add a sentence after the reason ("It does not fit. Thank you"); the agent
    # used to write it into the return's reason ('does not fit. thank you'), failing the state check
    from typer.testing import CliRunner

    from simulator.cli import app

    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "returns", "--agent", "reference", "--user", "rule",
                                   "--personas", "cooperative,impatient", "--trials", "2", "--no-progress",
                                   "--task-ids", "return-6201,return-6202,return-6203,return-6204",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    trials = json.loads(out.read_text())["trials"]
    assert len(trials) == 4 * 2 * 2
    reasons = {c["arguments"]["reason"] for t in trials for c in t["trajectory"]["tool_calls"]
               if c["name"] == "open_return"}
    assert reasons == {"does not fit"}
    assert all(t["passed"] for t in trials)

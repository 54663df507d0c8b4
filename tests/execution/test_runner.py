import pytest

from simulator.agents import NullAgent, OracleAgent
from simulator.execution.runner import Runner, derive_seed
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import scripted_user_factory
from tests._support.toy import BankDomain, write_data

TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]},
    {"id": "ask", "scenario": {"instructions": "ask your balance"},
     "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "A1"}}], "required_outputs": ["100"]},
    {"id": "chat", "scenario": {"instructions": "say hi"}},
    {"id": "handoff", "scenario": {"instructions": "ask for a human"},
     "gold_actions": [{"name": "transfer_to_human", "arguments": {"summary": "wants a human"}},
                      {"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 99}}]},
]})


@pytest.fixture()
def bank(tmp_path):
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "d"))


def run(bank, agent, trials=2, concurrency=1, seed=0):
    dom, tpl = bank
    cfg = RunSpec(domain="bank", agent="x", trials=trials, concurrency=concurrency, seed=seed)
    return Runner(dom, tpl, TASKS, agent, scripted_user_factory(), cfg).run()


def test_oracle_passes_everything(bank):
    res = run(bank, OracleAgent, trials=3, concurrency=4)
    assert [(t.task_id, t.trial) for t in res.trials] == [(i, k) for i in ("move", "ask", "chat", "handoff")
                                                          for k in range(3)]
    assert all(t.passed for t in res.trials), [t.grade for t in res.trials if not t.passed]
    assert res.metrics["pass^1"] == 1.0 and res.metrics["pass^3"] == 1.0
    # the gold actions after a transfer are not part of the goal: the transfer ends the episode
    assert res.termination_reasons == {"agent_transfer": 3, "user_stop": 9}


def test_null_agent_passes_only_no_change_no_output_tasks(bank):
    res = run(bank, NullAgent, trials=2)
    passed = {t.task_id for t in res.trials if t.passed}
    assert passed == {"chat", "handoff"}
    by_id = {(t.task_id, t.trial): t for t in res.trials}
    move = by_id[("move", 0)].grade
    assert move.failure == "state"
    assert {(d["key"][0], d["field"], d["expected"], d["actual"]) for d in move.state.differences} == {
        ("A1", "balance", 90.0, 100.0), ("B2", "balance", 35.0, 25.0)}
    assert [r["table"] for r in move.state.removed] == ["transfers"]
    assert by_id[("ask", 1)].grade.outputs == {"passed": False, "missing": ["100"]}
    # 2 of 4 tasks pass every trial
    assert res.metrics["pass^1"] == 0.5 and res.metrics["pass^2"] == 0.5 and res.metrics["pass@2"] == 0.5


def test_same_seed_same_trajectories(bank):
    def strip(res):
        return [(t.task_id, t.trial, t.seed, t.termination_reason,
                 [m.model_dump() for m in t.trajectory.messages]) for t in res.trials]

    a = strip(run(bank, OracleAgent, seed=7, concurrency=1))
    b = strip(run(bank, OracleAgent, seed=7, concurrency=4))
    assert a == b
    c = strip(run(bank, OracleAgent, seed=8))
    assert [x[2] for x in a] != [x[2] for x in c]


def test_derive_seed_is_stable_and_distinct():
    import hashlib

    expected = int.from_bytes(hashlib.sha256(b"7/move/1").digest()[:8], "big")
    assert derive_seed(7, "move", 1) == expected
    seeds = {derive_seed(0, t, i) for t in ("a", "b") for i in range(50)}
    assert len(seeds) == 100


def test_crashing_agent_is_recorded_and_run_continues(bank):
    class Crash:
        def __init__(self, ctx):
            self.task = ctx.task.id

        def step(self, messages):
            if self.task == "move":
                raise RuntimeError("boom")
            return NullAgent(None).step(messages)

    res = run(bank, Crash, trials=2)
    assert len(res.trials) == 8
    crashed = [t for t in res.trials if t.termination_reason == "agent_error"]
    assert {t.task_id for t in crashed} == {"move"} and all("boom" in t.error for t in crashed)
    assert not any(t.passed for t in crashed)


def test_gold_tool_bug_is_recorded(bank):
    dom, tpl = bank
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "bad", "scenario": {"instructions": "x"},
         "gold_actions": [{"name": "explode", "arguments": {"account_id": "A1"}}]}]})
    res = Runner(dom, tpl, tasks, OracleAgent, scripted_user_factory(), RunSpec(domain="bank")).run()
    assert res.trials[0].termination_reason == "tool_bug" and not res.trials[0].passed
    assert "goal replay failed" in res.trials[0].error

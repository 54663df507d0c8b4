"""The fault-injection agent: each fault kind at a known rate, each caught by exactly its grading layers.

Run with ``-s`` to see the confusion table (injected fault x failing layer).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from simulator.agents import FAULT_KINDS, FaultyOracleAgent, agent_factory
from simulator.agents._faulty import parse_fault_rates
from simulator.execution.runner import Runner, derive_seed, run_summary_json
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import user_factory
from tests._support.toy import BankDomain, write_data

LAYERS = ("state", "outputs", "process", "loops", "budget")
RATE = 0.1
RATES = dict.fromkeys(FAULT_KINDS, RATE)
TRIALS = 100
SEED = 11


def _move(tid: str, amount: int) -> dict:
    return {
        "id": tid, "scenario": {"instructions": f"move ${amount} from A1 to B2", "opening": f"move ${amount} to B2"},
        "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "A1"}},
                         {"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": amount}}],
        "process": {"confirm_writes": True, "forbidden_tools": ["explode"], "expected_termination": ["user_stop"],
                    "precedence": [{"before": "get_balance", "after": "transfer"}]},
        "loop_threshold": 0, "budget": {"max_tool_calls": 4},
    }


TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    _move("move-10", 10), _move("move-5", 5), _move("move-20", 20),
    {"id": "peek", "scenario": {"instructions": "ask bob's balance", "opening": "what is B2's balance"},
     "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "B2"}}], "required_outputs": ["25"],
     "process": {"no_writes": True, "required_tools": ["get_balance"]}, "loop_threshold": 0,
     "budget": {"max_tool_calls": 2}},
]})

EXPECTED: dict[str | None, frozenset[str]] = {
    None: frozenset(),
    "wrong_argument": frozenset({"state"}),
    "skip_confirmation": frozenset({"process"}),
    "duplicate_write": frozenset({"state", "loops"}),
    "forbidden_tool": frozenset({"process"}),
    "premature_transfer": frozenset({"state", "process"}),
    "over_budget": frozenset({"budget"}),
    "skip_reads": frozenset({"process"}),
}
"""Hand-stated: the layers that must fail for each injected fault (None: a clean trial passes every layer)."""

APPLIES = {"move": set(FAULT_KINDS), "peek": {"forbidden_tool", "over_budget", "skip_reads"}}
"""Faults that apply to each kind of task (a drawn fault that does not apply is not injected)."""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path_factory.mktemp("bank") / "d"))
    cfg = RunSpec(domain="bank", agent="faulty", user="confirming", trials=TRIALS, seed=SEED)
    spec = "faulty:" + ",".join(f"{k}={RATE}" for k in FAULT_KINDS)
    return Runner(dom, tpl, TASKS, agent_factory(spec), user_factory("confirming"), cfg).run()


def _failing(trial) -> frozenset[str]:
    g = trial.grade.model_dump()
    return frozenset(layer for layer in LAYERS if not g[layer]["passed"])


def _table(run) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = {}
    for t in run.trials:
        fault = t.trajectory.agent_metadata["fault"] or "clean"
        row = table.setdefault(fault, Counter())
        row["trials"] += 1
        failing = _failing(t)
        row.update(failing)
        row["passed"] += t.passed
    return table


def _print_table(table: dict[str, Counter[str]]) -> None:
    cols = ("trials", *LAYERS, "passed")
    print("\nconfusion table: injected fault (rows) x failing grading layer (columns)")
    print(f"{'fault':<20}" + "".join(f"{c:>9}" for c in cols))
    for kind in ("clean", *FAULT_KINDS):
        row = table.get(kind, Counter())
        print(f"{kind:<20}" + "".join(f"{row[c]:>9}" for c in cols))


def test_each_grader_catches_exactly_its_fault(run):
    assert len(run.trials) == len(TASKS) * TRIALS
    for t in run.trials:
        fault = t.trajectory.agent_metadata["fault"]
        assert t.termination_reason in ("user_stop", "agent_transfer"), (t.task_id, t.trial, t.error)
        assert _failing(t) == EXPECTED[fault], (t.task_id, t.trial, fault, t.grade.failure)
        assert t.passed == (fault is None)
    table = _table(run)
    _print_table(table)
    # the table, stated by hand: every row fails exactly its expected columns, in every one of its trials
    for kind, row in table.items():
        expected = EXPECTED[None if kind == "clean" else kind]
        for layer in LAYERS:
            assert row[layer] == (row["trials"] if layer in expected else 0), (kind, layer)
        assert row["passed"] == (row["trials"] if kind == "clean" else 0)
    assert set(table) == {"clean", *FAULT_KINDS}


def test_faults_are_drawn_by_the_trial_rng_at_the_given_rates(run):
    injected: Counter[str] = Counter()
    applicable: Counter[str] = Counter()
    for t in run.trials:
        # the same draw, made independently from the trial's seed
        u = np.random.Generator(np.random.PCG64(derive_seed(SEED, t.task_id, t.trial))).random()
        assert t.seed == derive_seed(SEED, t.task_id, t.trial)
        drawn = FAULT_KINDS[int(u // RATE)] if u < RATE * len(FAULT_KINDS) else None
        meta = t.trajectory.agent_metadata
        assert meta["drawn"] == drawn
        family = "peek" if t.task_id == "peek" else "move"
        assert meta["fault"] == (drawn if drawn in APPLIES[family] else None)
        for kind in APPLIES[family]:
            applicable[kind] += 1
        if meta["fault"]:
            injected[meta["fault"]] += 1
    for kind in FAULT_KINDS:
        n = applicable[kind]
        sd = (n * RATE * (1 - RATE)) ** 0.5
        assert abs(injected[kind] - n * RATE) <= 4 * sd, (kind, injected[kind], n)


def test_run_metrics_of_the_faulty_run(run):
    doc = run_summary_json(run)
    m = doc["metrics"]
    table = _table(run)
    n = len(run.trials)
    assert m["success_rate"] == pytest.approx(table["clean"]["trials"] / n)
    lucky = sum(table[k]["trials"] for k in ("skip_confirmation", "forbidden_tool", "over_budget", "skip_reads"))
    assert m["state_pass_other_fail_rate"] == pytest.approx(lucky / n)
    assert m["layers"]["state"]["rate"] == pytest.approx(
        1 - sum(table[k]["trials"] for k in ("wrong_argument", "duplicate_write", "premature_transfer")) / n)
    assert m["loop_rate"] == pytest.approx(table["duplicate_write"]["trials"] / n)
    assert m["layers"]["budget"]["passed"] == n - table["over_budget"]["trials"]
    assert m["termination_reasons"]["agent_transfer"] == table["premature_transfer"]["trials"]
    assert "judge" not in m["layers"]
    # the oracle's own tool calls match the gold; injected calls lower precision or recall
    acc = m["tool_accuracy"]
    assert 0 < acc["name_precision"] < 1 and 0 < acc["argument_accuracy"] < 1


def test_clean_agent_and_confirming_user_pass_everything(tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    res = Runner(dom, tpl, TASKS, agent_factory("faulty"), user_factory("confirming"),
                 RunSpec(domain="bank", trials=3)).run()
    assert all(t.passed for t in res.trials), [t.grade.failure for t in res.trials if not t.passed]
    move = next(t for t in res.trials if t.task_id == "move-10")
    texts = [m.content for m in move.trajectory.messages if m.role in ("user", "assistant") and m.content]
    assert texts[:3] == ["move $10 to B2", 'Shall I transfer with amount=10, dst="B2", src="A1"? (yes/no)',
                         "yes, go ahead"]
    assert move.trajectory.agent_metadata == {"fault": None, "drawn": None}


def test_fault_spec_is_validated():
    assert parse_fault_rates("wrong_argument=0.2, skip_confirmation=0.1") == {
        "wrong_argument": 0.2, "skip_confirmation": 0.1}
    assert parse_fault_rates("") == {}
    for bad in ("nonsense=0.1", "wrong_argument", "wrong_argument=2", "wrong_argument=x",
                "wrong_argument=0.6,over_budget=0.6", "over_budget=0.1,over_budget=0.1"):
        with pytest.raises(ValueError, match="faulty agent"):
            agent_factory("faulty:" + bad)
    assert FaultyOracleAgent.__name__ == "FaultyOracleAgent"


def test_cli_run_with_the_faulty_agent_writes_layered_metrics(tmp_path):
    import json

    from typer.testing import CliRunner

    from simulator.cli import app

    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "faulty:wrong_argument=0.5",
                                   "--user", "confirming", "--trials", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    m = doc["metrics"]
    faulty = [t for t in doc["trials"] if t["trajectory"]["agent_metadata"]["fault"] == "wrong_argument"]
    assert faulty and all(not t["grade"]["state"]["passed"] for t in faulty)
    assert all(t["passed"] for t in doc["trials"] if t["trajectory"]["agent_metadata"]["fault"] is None)
    assert m["layers"]["state"]["passed"] == len(doc["trials"]) - len(faulty)
    assert m["tool_accuracy"]["argument_accuracy"] < 1.0 and m["infra_error_rate"] == 0.0


def test_safety_violations_of_the_faulty_run(run):
    # forbidden_tool and skip_confirmation are safety violations of their own class, and skip_reads breaks the move
    # tasks' precedence (a policy_rule; on peek it misses a required tool, no safety class); the others are not
    expected = {"forbidden_tool": ["forbidden_tool"], "skip_confirmation": ["unconfirmed_write"]}
    for t in run.trials:
        fault = t.trajectory.agent_metadata["fault"]
        want = ["policy_rule"] if fault == "skip_reads" and t.task_id != "peek" else expected.get(fault, [])
        assert [v.kind for v in t.grade.violations] == want, (t.task_id, t.trial, fault)

"""PreparedTask: each task of a run prepared once (gold replayed once, rules and budgets merged once, what the
run's user needs computed once), and read by the runner, the graders, the users, the gold check and regrade.

Gold replays are counted at the tools: every ``Toolbox.dispatch`` call is recorded, and the agents used here
(``NullAgent``, ``--agent null``) call no tool, so every dispatch is a gold replay (or a first-action probe).
Expected counts and merged rules are worked out by hand from the tasks below.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.agents import NullAgent, OracleAgent
from simulator.execution.prepare import prepare_tasks
from simulator.execution.runner import Runner
from simulator.types.grade import TaskRules
from simulator.types.prepared import PreparedTask, user_needs
from simulator.types.protocols import TrialContext
from simulator.types.spec import RunSpec
from simulator.types.tasks import Budget, Intent, Precedence, ProcessRules, Task, UserScenario, parse_tasks
from simulator.users import ScriptedUser, scripted_user_factory
from simulator.world.domain import DomainError
from simulator.world.replay import replay_gold, tasks_not_replaying
from simulator.world.tools import Toolbox
from tests._support.toy import BankDomain, write_data

REPO = Path(__file__).resolve().parents[2]

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


def key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, arguments], sort_keys=True)


@pytest.fixture()
def dispatches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every tool call dispatched from now on, as ``key(name, arguments)``."""
    seen: list[str] = []
    real = Toolbox.dispatch

    def counting(self: Toolbox, ctx: Any, name: str, arguments: Any) -> Any:
        seen.append(key(name, arguments))
        return real(self, ctx, name, arguments)

    monkeypatch.setattr(Toolbox, "dispatch", counting)
    return seen


@pytest.fixture()
def bank(tmp_path: Path) -> tuple[BankDomain, Any]:
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "d"))


def test_a_run_replays_each_tasks_gold_actions_once(bank, dispatches):
    dom, tpl = bank
    cfg = RunSpec(domain="bank", agent="null", trials=3, concurrency=4)
    runner = Runner(dom, tpl, TASKS, NullAgent, scripted_user_factory(), cfg)
    res = runner.run()
    assert len(res.trials) == 12
    # move: 1 action; ask: 1; chat: none; handoff: the transfer to a human ends it, the second is not run
    assert Counter(dispatches) == Counter({
        key("transfer", {"src": "A1", "dst": "B2", "amount": 10}): 1,
        key("get_balance", {"account_id": "A1"}): 1,
        key("transfer_to_human", {"summary": "wants a human"}): 1})
    p = runner.prepared
    assert list(p) == ["move", "ask", "chat", "handoff"]
    assert [(s.name, s.status, s.error) for s in p["move"].gold_statuses] == [("transfer", "ok", None)]
    assert [s.name for s in p["handoff"].gold_statuses] == ["transfer_to_human"]
    assert p["chat"].gold_statuses == () and p["chat"].goal is not None
    runner.run()  # a second run of the same runner: already prepared
    runner.run_trial(TASKS[0], 5)
    assert len(dispatches) == 3


def test_a_gold_tool_bug_is_recorded_once_and_fails_each_trial(bank, dispatches):
    dom, tpl = bank
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "bug", "scenario": {"instructions": "x"},
         "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "ZZ"}},
                          {"name": "explode", "arguments": {"account_id": "A1"}},
                          {"name": "get_balance", "arguments": {"account_id": "A1"}}]}]})
    runner = Runner(dom, tpl, tasks, OracleAgent, scripted_user_factory(),
                    RunSpec(domain="bank", agent="oracle", trials=2))
    res = runner.run()
    assert len(dispatches) == 2  # the replay stops at the bug, and is made once for both trials
    gold = runner.prepared["bug"].gold
    assert gold.goal is None and gold.bug is not None and "explode" in gold.bug and "KeyError" in gold.bug
    assert [(s.name, s.status) for s in gold.statuses] == [("get_balance", "tool_error"), ("explode", "tool_bug")]
    assert "account ZZ not found" in (gold.statuses[0].error or "")
    assert "KeyError" in (gold.statuses[1].error or "")
    assert [t.termination_reason for t in res.trials] == ["tool_bug", "tool_bug"]
    assert all(t.error is not None and t.error.startswith("goal replay failed: gold action explode")
               for t in res.trials)


class RulesBank(BankDomain):
    """The bank with default process rules, loop threshold and volatile arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.default_calls = 0

    def default_process_rules(self) -> ProcessRules:
        self.default_calls += 1
        return ProcessRules(forbidden_tools=["explode"], required_tools=["get_balance"],
                            precedence=[Precedence(before="get_balance", after="transfer")], confirm_writes=True)

    def default_loop_threshold(self) -> int:
        return 5

    def volatile_arguments(self) -> dict[str, list[str]]:
        return {"get_balance": ["request_id"]}


def test_effective_rules_and_budget_are_merged_once_as_by_hand(tmp_path, monkeypatch):
    dom = RulesBank()
    tpl = dom.template(write_data(tmp_path / "d"))
    task = Task(id="t", scenario=UserScenario(instructions="x"),
                gold_actions=[{"name": "get_balance", "arguments": {"account_id": "A1"}}],
                process=ProcessRules(forbidden_tools=["transfer_to_human", "explode"],
                                     required_tools=["get_balance"], expected_termination=["user_stop"],
                                     confirm_writes=False),
                budget=Budget(max_steps=10, max_tool_calls=5, max_cost_usd=0.5))
    plain = Task(id="plain", scenario=UserScenario(instructions="y"), loop_threshold=1)
    run_budgets = {"t": Budget(max_steps=7, max_tokens=1000, max_cost_usd=1.0)}
    cfg = RunSpec(domain="bank", agent="null", trials=3, budgets=run_budgets)
    runner = Runner(dom, tpl, [task, plain], NullAgent, scripted_user_factory(), cfg)
    prepared = runner.prepare()
    # by hand: defaults' lists first then the task's (no duplicates); the task's confirm_writes and expected
    # termination win; each budget ceiling is the smaller of the task's and the run's, or the one set
    assert prepared["t"].rules == TaskRules(
        process=ProcessRules(forbidden_tools=["explode", "transfer_to_human"], required_tools=["get_balance"],
                             no_writes=False, expected_termination=["user_stop"],
                             precedence=[Precedence(before="get_balance", after="transfer")],
                             confirm_writes=False),
        loop_threshold=5, volatile_arguments={"get_balance": ["request_id"]},
        budget=Budget(max_steps=7, max_tool_calls=5, max_tokens=1000, max_cost_usd=0.5))
    assert prepared["t"].budget == Budget(max_steps=7, max_tool_calls=5, max_tokens=1000, max_cost_usd=0.5)
    assert prepared["plain"].rules == TaskRules(
        process=ProcessRules(forbidden_tools=["explode"], required_tools=["get_balance"],
                             precedence=[Precedence(before="get_balance", after="transfer")], confirm_writes=True),
        loop_threshold=1, volatile_arguments={"get_balance": ["request_id"]}, budget=None)
    assert dom.default_calls == 2  # once per task

    def no_merging(*a: Any, **k: Any) -> Any:
        raise AssertionError("rules merged during a trial")

    monkeypatch.setattr("simulator.grading.effective_rules", no_merging)
    res = runner.run()
    assert dom.default_calls == 2  # trials and graders merge nothing
    by_task = {t.task_id: t for t in res.trials if t.trial == 0}
    # the null agent calls no tool: the required look-up is missing (the merged rules were applied) ...
    assert not by_task["t"].passed and "process" in (by_task["t"].grade.failure or "")
    assert "get_balance" in json.dumps(by_task["t"].grade.process.model_dump())
    # ... and the merged budget is the one checked (7 steps, 5 tool calls, 1000 tokens, $0.5)
    assert by_task["t"].grade.budget.passed


class NeedsBank(BankDomain):
    """The bank deriving a scenario for ``move`` only, counting derivations."""

    def __init__(self) -> None:
        super().__init__()
        self.derived: list[str] = []

    def derive_scenario(self, task: Task, template: Any) -> UserScenario:
        self.derived.append(task.id)
        if task.id != "move":
            raise DomainError(f"task {task.id!r}: cannot derive")
        agenda = [Intent(kind="transfer", request=["move $10"], slots={"amount": 10})]
        return task.scenario.model_copy(update={"agenda": agenda})


class Recording:
    """A user factory declaring what it needs; records each trial's prepared task."""

    def __init__(self, needs: Any) -> None:
        if needs is not None:
            self.needs = needs
        self.seen: list[tuple[str, PreparedTask | None]] = []
        self.base = scripted_user_factory()

    def __call__(self, ctx: TrialContext) -> ScriptedUser:
        self.seen.append((ctx.task.id, ctx.prepared))
        return self.base(ctx)


def test_what_the_user_declares_is_computed_once_per_task(tmp_path, monkeypatch):
    import simulator.users._leak as leak

    secrets_for: list[str] = []
    real = leak.task_secrets

    def counting(task: Task, *a: Any, **k: Any) -> Any:
        secrets_for.append(task.id)
        return real(task, *a, **k)

    monkeypatch.setattr(leak, "task_secrets", counting)
    dom = NeedsBank()
    tpl = dom.template(write_data(tmp_path / "d"))
    users = Recording({"scenario", "secrets"})
    res = Runner(dom, tpl, TASKS, NullAgent, users, RunSpec(domain="bank", trials=3, concurrency=3)).run()
    assert len(res.trials) == 12 and len(users.seen) == 12
    assert sorted(dom.derived) == sorted(t.id for t in TASKS) and sorted(secrets_for) == sorted(dom.derived)
    by_task: dict[str, set[int]] = {}
    for task_id, p in users.seen:
        assert p is not None and p.task.id == task_id
        by_task.setdefault(task_id, set()).add(id(p))
    assert all(len(ids) == 1 for ids in by_task.values())  # the task's trials share one PreparedTask
    prepared = {tid: p for tid, p in users.seen}
    assert prepared["move"].scenario is not None and prepared["move"].scenario.agenda[0].kind == "transfer"
    assert prepared["move"].scenario_error is None
    assert prepared["ask"].scenario is None and prepared["ask"].scenario_error == "task 'ask': cannot derive"
    with pytest.raises(DomainError, match="cannot derive"):
        prepared["ask"].derived_scenario()
    tools = dom.toolbox().schemas()
    for task in TASKS:
        matcher = prepared[task.id].secrets
        assert matcher is not None
        assert [str(s) for s in matcher.secrets] == [str(s) for s in real(task, "Be nice.", tools=tools)]
    # "B2", an account id in a gold action, is a secret of `move` (its instruction names it: it is not)
    assert "B2" not in [str(s) for s in prepared["move"].secrets.secrets]

    # a user that declares nothing gets neither (they are expensive); the goal and rules are always prepared
    dom.derived.clear()
    secrets_for.clear()
    bare = Recording(None)
    Runner(dom, tpl, TASKS, NullAgent, bare, RunSpec(domain="bank", trials=2)).run()
    assert dom.derived == [] and secrets_for == []
    assert all(p is not None and p.scenario is None and p.scenario_error is None and p.secrets is None
               and p.gold.task_id == tid for tid, p in bare.seen)

    with pytest.raises(ValueError, match="unknown need"):
        Runner(dom, tpl, TASKS, NullAgent, Recording({"secrets", "weights"}), RunSpec(domain="bank"))
    with pytest.raises(ValueError, match="collection"):
        user_needs(Recording("scenario"))


def retail_tasks(ids: set[str]) -> tuple[Any, Any, list[Task]]:
    from simulator.world.domain import get_domain

    dom = get_domain("retail")
    return dom, dom.template(None), [t for t in dom.load_tasks("builtin") if t.id in ids]


def test_the_rule_user_plays_the_prepared_scenario(monkeypatch):
    from simulator.agents import agent_factory
    from simulator.users import rule_user_factory

    dom, tpl, tasks = retail_tasks({"cancel-no-longer-needed", "modify-order-address"})
    assert len(tasks) == 2
    derived: list[str] = []
    real = dom.derive_scenario

    def counting(task: Task, template: Any) -> UserScenario:
        derived.append(task.id)
        return real(task, template)

    monkeypatch.setattr(dom, "derive_scenario", counting)
    base = rule_user_factory(dom, tpl)
    played: list[bool] = []

    class Checking:  # a wrapper that declares what the factory it wraps needs
        needs = base.needs

        def __call__(self, ctx: TrialContext) -> Any:
            user = base(ctx)
            played.append(ctx.prepared is not None and user.scenario is ctx.prepared.scenario)
            return user

    cfg = RunSpec(domain="retail", agent="reference", user="rule", trials=3, concurrency=3)
    res = Runner(dom, tpl, tasks, agent_factory("reference", domain=dom), Checking(), cfg).run()
    assert len(res.trials) == 6 and played == [True] * 6
    assert sorted(derived) == sorted(t.id for t in tasks)  # once per task, not per trial


def test_the_llm_user_reads_the_prepared_secrets(bank, litellm, monkeypatch):
    import simulator.users._leak as leak
    from simulator.users.llm_user import STOP_TOKEN, LLMUser, llm_user_factory
    from tests._support.fake_llm import register

    dom, tpl = bank
    register(monkeypatch, litellm, {"tausimfakeprep": [STOP_TOKEN] * 8})
    secrets_for: list[str] = []
    real = leak.task_secrets

    def counting(task: Task, *a: Any, **k: Any) -> Any:
        secrets_for.append(task.id)
        return real(task, *a, **k)

    monkeypatch.setattr(leak, "task_secrets", counting)
    base = llm_user_factory("tausimfakeprep/user", max_attempts=1, wait_initial=0.0, wait_max=0.0)
    assert user_needs(base) == {"secrets"}
    shared: list[bool] = []

    class Checking:
        needs = base.needs

        def __call__(self, ctx: TrialContext) -> LLMUser:
            user = base(ctx)
            shared.append(ctx.prepared is not None and user._matcher is ctx.prepared.secrets)
            return user

    tasks = TASKS[:2]
    res = Runner(dom, tpl, tasks, NullAgent, Checking(), RunSpec(domain="bank", trials=4)).run()
    assert [t.termination_reason for t in res.trials] == ["user_stop"] * 8
    assert shared == [True] * 8
    assert sorted(secrets_for) == ["ask", "move"]  # once per task, in the prepare phase


def test_the_gold_check_reads_the_prepared_statuses(bank, dispatches):
    dom, tpl = bank
    tasks = [*TASKS, Task(id="other-data", scenario=UserScenario(instructions="x"),
                          gold_actions=[{"name": "transfer", "arguments": {"src": "ZZ", "dst": "B2", "amount": 1}}])]
    probed = tasks_not_replaying(dom, tpl, tasks)  # no replays given: first actions run (one each)
    assert probed == {"other-data": "transfer: Error: unknown account"}
    assert len(dispatches) == 4
    prepared = prepare_tasks(dom, tpl, tasks)
    assert len(dispatches) == 8  # move, ask, handoff (stops at the transfer to a human), other-data
    dispatches.clear()
    assert tasks_not_replaying(dom, tpl, tasks, {t: p.gold for t, p in prepared.items()}) == probed
    assert dispatches == []  # read from the statuses
    # a replay of other gold actions (the task was changed since) is not used: that task is probed
    changed = tasks[-1].model_copy(update={"gold_actions": TASKS[0].gold_actions})
    assert tasks_not_replaying(dom, tpl, [changed], {"other-data": prepared["other-data"].gold}) == {}
    assert len(dispatches) == 1
    # a runner given the replays does not replay those tasks again
    dispatches.clear()
    runner = Runner(dom, tpl, tasks, NullAgent, scripted_user_factory(), RunSpec(domain="bank"),
                    gold={"move": replay_gold(dom, tpl, tasks[0])})
    assert len(dispatches) == 1
    runner.run()
    assert len(dispatches) == 4  # ask, handoff, other-data: move was given


def gold_run_length(dom: Any, task: Task) -> int:
    """Gold actions the replays of a task run: up to and including the first that ends the conversation (no tool
    bugs), for the task's own gold actions and for each of its alternative outcomes' (prepared once each too)."""
    ends = {n for n, s in dom.toolbox().specs.items() if s.ends_conversation}
    n = 0
    for actions in [task.gold_actions, *(alt.gold_actions for alt in task.alternatives)]:
        for a in actions:
            n += 1
            if a.name in ends:
                break
    return n


def test_cli_run_replays_each_gold_once_and_the_check_reads_it(dispatches, monkeypatch):
    import simulator.cli.run as run_cli
    from simulator.cli import app
    from simulator.world.domain import get_domain

    # the task lint (simulator.authoring.lint, its own tests) analyses gold actions separately: left out here, so
    # that the count is the gold replays shared by the data check and the runner's preparation
    monkeypatch.setattr(run_cli, "refuse_lint_errors", lambda *args: [])

    dom = get_domain("retail")
    tasks = dom.load_tasks("builtin")
    res = CliRunner().invoke(app, ["run", "--agent", "null", "--trials", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert len(dispatches) == sum(gold_run_length(dom, t) for t in tasks)
    dispatches.clear()
    one = tasks[0]
    res = CliRunner().invoke(app, ["run", "--agent", "null", "--trials", "2", "--task-ids", one.id,
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    # the run's task replayed once; every other task with gold actions has its first action probed once
    assert len(dispatches) == gold_run_length(dom, one) + sum(1 for t in tasks[1:] if t.gold_actions)


def test_regrade_prepares_each_task_once(tmp_path, dispatches):
    from simulator.cli import app
    from simulator.execution.regrade import regrade_run
    from simulator.storage.store import ResultsStore

    builtin = json.loads((REPO / "domains" / "retail" / "tasks" / "builtin.json").read_text())
    keep = {"cancel-no-longer-needed", "modify-order-address"}
    builtin["tasks"] = [t for t in builtin["tasks"] if t["id"] in keep]
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(builtin))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    res = CliRunner().invoke(app, ["run", "--tasks", str(task_file), "--agent", "null", "--trials", "3",
                                   "--store", url, "--run-id", "R", "--no-progress"])
    assert res.exit_code == 0, res.output
    dispatches.clear()
    with ResultsStore(url) as st:
        report = regrade_run(st, "R")
    assert report.regraded == 6
    from simulator.world.domain import get_domain

    dom = get_domain("retail")
    tasks = dom.load_tasks(str(task_file))
    assert len(dispatches) == sum(gold_run_length(dom, t) for t in tasks)  # the null agent made no calls

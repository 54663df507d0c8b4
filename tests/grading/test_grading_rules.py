"""Precedence, confirmation before writes, domain default rules, loop detection and budgets (scripted
trajectories, expected values by hand)."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.dialogue.cues import YES_RE
from simulator.grading import check_budget, check_loops, check_process, grade_trial
from simulator.types.messages import Message, ToolCall, Usage
from simulator.types.state import StateDiff
from simulator.types.tasks import Budget, Precedence, ProcessRules, Task, UserScenario
from simulator.types.trajectory import TerminationReason, ToolCallRecord, Trajectory
from tests._support.toy import BankDomain

TB = BankDomain().toolbox()


def build(script: list[Any], reason: str = "user_stop") -> Trajectory:
    """A trajectory from a script of ``("user", text)``, ``("agent", text)`` and
    ``("call", name, arguments, status)`` entries (each call in its own assistant message)."""
    traj = Trajectory(termination_reason=TerminationReason(reason))
    for entry in script:
        if entry[0] in ("user", "agent"):
            traj.messages.append(Message(role="user" if entry[0] == "user" else "assistant", content=entry[1]))
            traj.steps += entry[0] == "agent"
            continue
        _, name, args, status = entry
        cid = f"c{len(traj.tool_calls)}"
        traj.messages.append(Message(role="assistant", tool_calls=[ToolCall(id=cid, name=name, arguments=args)]))
        traj.tool_calls.append(ToolCallRecord(step=traj.steps, call_id=cid, name=name, arguments=args,
                                              kind=TB.kind(name), status=status, content="", duration_s=0.0))
        traj.messages.append(Message(role="tool", content="", tool_call_id=cid, name=name))
        traj.steps += 1
    return traj


READ = ("call", "get_balance", {"account_id": "A1"}, "ok")
WRITE = ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 25}, "ok")


# --- precedence -----------------------------------------------------------------------------------------
PREC = ProcessRules(precedence=[Precedence(before="get_balance", after="transfer")])


def test_precedence_read_before_first_write_passes_with_calls_in_between():
    traj = build([READ, ("call", "get_balance", {"account_id": "B2"}, "ok"), WRITE, WRITE])
    assert check_process(PREC, traj, TB).passed


def test_precedence_write_before_read_fails():
    r = check_process(PREC, build([WRITE, READ, WRITE]), TB)
    assert r.violations == ["precedence: transfer (step 0) called before any successful get_balance"]


def test_precedence_needs_a_successful_read_and_counts_a_failed_write():
    failed_read = ("call", "get_balance", {"account_id": "A1"}, "tool_error")
    assert not check_process(PREC, build([failed_read, WRITE]), TB).passed
    failed_write = ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 25}, "tool_error")
    assert not check_process(PREC, build([failed_write, READ, WRITE]), TB).passed


def test_precedence_skipped_when_the_later_tool_never_happens():
    assert check_process(PREC, build([]), TB).passed
    assert check_process(PREC, build([("agent", "hello")]), TB).passed


def test_precedence_is_a_partial_order():
    rules = ProcessRules(precedence=[Precedence(before="get_balance", after="transfer"),
                                     Precedence(before="get_balance", after="transfer_to_human")])
    ok = build([READ, ("call", "transfer_to_human", {"summary": "x"}, "ok")])
    assert check_process(rules, ok, TB).passed
    bad = build([("call", "transfer_to_human", {"summary": "x"}, "ok")])
    assert len(check_process(rules, bad, TB).violations) == 1


def test_precedence_with_alternatives_any_one_suffices():
    rules = ProcessRules(precedence=[Precedence(before=["get_balance", "transfer_to_human"], after="transfer")])
    assert check_process(rules, build([READ, WRITE]), TB).passed
    r = check_process(rules, build([WRITE]), TB)
    assert r.violations == ["precedence: transfer (step 0) called before any successful get_balance or "
                            "transfer_to_human"]


def test_precedence_after_any_write_leaves_out_the_conversation_enders():
    rules = ProcessRules(precedence=[Precedence(name="identify-first", before="get_balance", after="@write")])
    r = check_process(rules, build([("agent", "hi"), WRITE, READ]), TB)
    assert r.violations == ["precedence (identify-first): transfer (step 1) called before any successful "
                            "get_balance"]
    assert check_process(rules, build([("call", "transfer_to_human", {"summary": "x"}, "ok")]), TB).passed


def test_precedence_at_the_end_needs_the_tool_at_all():
    rules = ProcessRules(precedence=[Precedence(name="identify", before="get_balance", after="@end")])
    assert check_process(rules, build([]), TB).violations == [
        "precedence (identify): the trial ended without any successful get_balance"]
    failed_read = ("call", "get_balance", {"account_id": "A1"}, "tool_error")
    assert not check_process(rules, build([failed_read]), TB).passed
    assert check_process(rules, build([("agent", "hi"), READ]), TB).passed


def test_precedence_on_the_same_record_checks_every_call():
    rules = ProcessRules(precedence=[Precedence(before="get_balance", after="explode", same=["account_id"])])

    def boom(account: str) -> tuple[str, dict[str, str], str]:
        return ("call", "explode", {"account_id": account}, "ok")

    assert check_process(rules, build([READ, boom("A1"), boom("A1")]), TB).passed
    # the read was of A1: changing B2 breaks the rule, and only that call
    r = check_process(rules, build([READ, boom("A1"), boom("B2")]), TB)
    assert r.violations == ["precedence: explode (step 2) on account_id='B2' called before any successful "
                            "get_balance on it"]
    b2 = ("call", "get_balance", {"account_id": "B2"}, "ok")
    assert check_process(rules, build([READ, b2, boom("B2"), boom("A1")]), TB).passed
    assert len(check_process(rules, build([boom("A1"), READ, boom("B2")]), TB).violations) == 2


def test_a_task_file_states_its_policy_rules_once_for_every_task(tmp_path):
    import json

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "process": {"precedence": [
        {"name": "identify-first", "before": "get_balance", "after": ["@write", "@end"]}]}, "tasks": [
        {"id": "t1", "scenario": {"instructions": "x"}},
        {"id": "t2", "scenario": {"instructions": "x"}, "process": {
            "precedence": [{"before": "get_balance", "after": "transfer_to_human"}], "no_writes": True}}]}))
    t1, t2 = BankDomain().load_tasks(str(path))
    file_rule = Precedence(name="identify-first", before="get_balance", after=["@write", "@end"])
    assert t1.process.precedence == [file_rule]
    assert t2.process.precedence == [file_rule, Precedence(before="get_balance", after="transfer_to_human")]
    assert t2.process.no_writes and not t1.process.no_writes


# --- confirmation before writes -------------------------------------------------------------------------
CONFIRM = ProcessRules(confirm_writes=True)


@pytest.mark.parametrize("text", ["yes", "Yes please", "yeah", "sure, go ahead", "Confirm.", "ok, go ahead",
                                  "Yep, do it", "  YES!"])
def test_yes_regex_accepts(text):
    assert YES_RE.search(text)


@pytest.mark.parametrize("text", ["no", "not yet", "what would that cost?", "ok", "I guess", "yesterday I said",
                                  "no, yes"])
def test_yes_regex_refuses(text):
    assert not YES_RE.search(text)


def test_confirmed_write_passes():
    traj = build([("user", "move 25 from A1 to B2"), READ,
                  ("agent", "I will transfer $25 from A1 to B2. Shall I proceed?"), ("user", "yes please"), WRITE])
    assert check_process(CONFIRM, traj, TB).passed


def test_confirmation_by_argument_value_without_the_verb():
    write = ("call", "transfer", {"src": "SAV-001", "dst": "B2", "amount": 25}, "ok")
    traj = build([("agent", "Moving 25 dollars from account #sav-001, ok?"), ("user", "Sure, go ahead"), write])
    assert check_process(CONFIRM, traj, TB).passed
    # values shorter than three characters ("A1", "25") are too common to name the action
    traj = build([("agent", "Moving 25 dollars from account A1, ok?"), ("user", "Sure, go ahead"), WRITE])
    assert not check_process(CONFIRM, traj, TB).passed


def test_skipped_confirmation_fails():
    traj = build([("user", "move 25 from A1 to B2"), READ, WRITE])
    r = check_process(CONFIRM, traj, TB)
    assert r.violations == ["write without an explicit user yes in the preceding user message: transfer (step 1)"]


def test_yes_to_something_else_fails():
    traj = build([("agent", "Anything else I can help with?"), ("user", "yes"), WRITE])
    r = check_process(CONFIRM, traj, TB)
    assert r.violations == ["write confirmed without the agent naming the action before the user's yes: "
                            "transfer (step 1)"]


def test_a_no_is_not_a_yes_and_only_the_last_user_message_counts():
    traj = build([("agent", "Shall I transfer $25?"), ("user", "yes"), ("agent", "Done? Anything else?"),
                  ("user", "no thanks, actually do it again"), WRITE])
    assert not check_process(CONFIRM, traj, TB).passed


def test_confirmation_ignores_reads_failed_writes_and_conversation_enders():
    traj = build([READ, ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 99}, "tool_error"),
                  ("call", "transfer_to_human", {"summary": "x"}, "ok")], reason="agent_transfer")
    assert check_process(CONFIRM, traj, TB).passed


def test_confirmation_off_by_default():
    assert check_process(ProcessRules(), build([WRITE]), TB).passed


# --- domain defaults ------------------------------------------------------------------------------------
class StrictBank(BankDomain):
    def default_process_rules(self) -> ProcessRules:
        return ProcessRules(confirm_writes=True, forbidden_tools=["explode"],
                            precedence=[Precedence(before="get_balance", after="transfer")])

    def volatile_arguments(self) -> dict[str, list[str]]:
        return {"get_balance": ["request_id"]}

    def default_loop_threshold(self) -> int:
        return 0


def _task(**kw: Any) -> Task:
    return Task(id="t", scenario=UserScenario(instructions="x"), **kw)


def _grade(task: Task, traj: Trajectory, **kw: Any):
    return grade_trial(task, traj, StateDiff(), TB, **kw)


def test_merge_rules():
    task_rules = ProcessRules(forbidden_tools=["transfer", "explode"], confirm_writes=False,
                              precedence=[Precedence(before="get_balance", after="transfer_to_human")])
    merged = task_rules.merged_over(StrictBank().default_process_rules())
    assert merged.forbidden_tools == ["explode", "transfer"]
    assert merged.confirm_writes is False
    assert [p.after for p in merged.precedence] == ["transfer", "transfer_to_human"]
    assert ProcessRules().merged_over(StrictBank().default_process_rules()).confirm_writes is True


def test_domain_defaults_apply_under_the_task():
    traj = build([READ, WRITE])
    assert _grade(_task(), traj).passed  # no domain: no defaults
    g = _grade(_task(), traj, domain=StrictBank())
    assert not g.passed and g.failure == "process"
    assert g.process.violations == ["write without an explicit user yes in the preceding user message: "
                                    "transfer (step 1)"]
    assert _grade(_task(process=ProcessRules(confirm_writes=False)), traj, domain=StrictBank()).passed


def test_builtin_domains_do_not_ask_for_confirmation_by_default():
    from simulator.world.domain import get_domain

    for name in ("retail", "airline"):
        assert not get_domain(name).default_process_rules().confirm_writes


# --- loops ----------------------------------------------------------------------------------------------
def _read(account: str, status: str = "ok", **extra: Any) -> tuple[str, str, dict[str, Any], str]:
    return ("call", "get_balance", {"account_id": account, **extra}, status)


def test_loop_threshold_counts_identical_calls():
    three = build([_read("A1"), _read("B2"), _read("A1"), _read("A1")])
    assert check_loops(three, 2).passed  # 2 repeats allowed: 3 calls fine
    r = check_loops(three, 1)
    assert not r.passed and r.repeats == [{"tool": "get_balance", "arguments": {"account_id": "A1"}, "count": 3}]


def test_loop_keys_are_sorted_and_volatile_fields_removed():
    a = ("call", "transfer", {"src": "A1", "dst": "B2", "amount": 5}, "ok")
    b = ("call", "transfer", {"amount": 5, "dst": "B2", "src": "A1"}, "ok")
    assert not check_loops(build([a, b]), 0).passed
    traj = build([_read("A1", request_id="r1"), _read("A1", request_id="r2")])
    assert check_loops(traj, 0).passed
    r = check_loops(traj, 0, {"get_balance": ["request_id"]})
    assert r.repeats == [{"tool": "get_balance", "arguments": {"account_id": "A1"}, "count": 2}]


def test_retry_right_after_an_error_is_not_a_repeat():
    traj = build([_read("A1", "tool_error"), _read("A1")])
    assert check_loops(traj, 0).passed
    # not "right after": another call came in between, so the second A1 counts
    traj = build([_read("A1", "tool_error"), _read("B2"), _read("A1")])
    assert not check_loops(traj, 0).passed
    # a repeat after a success counts
    assert not check_loops(build([_read("A1"), _read("A1")]), 0).passed


def test_loops_is_its_own_component_and_fails_the_trial():
    traj = build([_read("A1")] * 4)
    g = _grade(_task(), traj)
    assert not g.passed and g.failure == "loops" and g.process.passed and g.budget.passed
    assert g.loops.repeats[0]["count"] == 4 and g.loops.threshold == 2
    assert _grade(_task(loop_threshold=3), traj).passed
    g = _grade(_task(), build([_read("A1"), _read("A1")]), domain=StrictBank())  # domain threshold 0
    assert g.failure == "loops"
    g = _grade(_task(loop_threshold=1), build([_read("A1"), _read("A1")]), domain=StrictBank())
    assert g.loops.passed


def test_duplicate_write_is_a_loop_at_threshold_zero():
    traj = build([WRITE, WRITE])
    assert not check_loops(traj, 0).passed
    assert check_loops(traj, 1).passed


# --- budgets --------------------------------------------------------------------------------------------
def _costly(cost: float | None = 0.02, tokens: tuple[int, int] = (900, 100)) -> Trajectory:
    traj = build([READ, READ, ("agent", "done")])
    traj.agent_usage = Usage(prompt_tokens=tokens[0], completion_tokens=tokens[1], cost_usd=cost, calls=2)
    return traj


def test_budget_within_ceilings_passes():
    r = check_budget(_costly(), Budget(max_steps=3, max_tool_calls=2, max_tokens=1000, max_cost_usd=0.02))
    assert r.passed and r.used == {"steps": 3, "tool_calls": 2, "tokens": 1000, "cost_usd": 0.02}


@pytest.mark.parametrize(("budget", "line"), [
    (Budget(max_steps=2), "steps 3 > max_steps 2"),
    (Budget(max_tool_calls=1), "tool_calls 2 > max_tool_calls 1"),
    (Budget(max_tokens=999), "tokens 1000 > max_tokens 999"),
    (Budget(max_cost_usd=0.01), "cost_usd 0.02 > max_cost_usd 0.01"),
])
def test_each_ceiling_fails(budget, line):
    r = check_budget(_costly(), budget)
    assert not r.passed and r.exceeded == [line]


def test_unknown_cost_fails_a_cost_ceiling_only():
    assert check_budget(_costly(cost=None), Budget(max_tokens=1000)).passed
    r = check_budget(_costly(cost=None), Budget(max_cost_usd=1.0))
    assert not r.passed and "unknown" in r.exceeded[0]


def test_budget_component_fails_the_trial_and_the_tighter_ceiling_wins():
    traj = _costly()
    assert _grade(_task(), traj).passed
    g = _grade(_task(budget=Budget(max_tool_calls=5)), traj, budget=Budget(max_tool_calls=1, max_steps=10))
    assert not g.passed and g.failure == "budget" and g.loops.passed
    assert g.budget.limits == {"max_tool_calls": 1, "max_steps": 10}
    g = _grade(_task(budget=Budget(max_tool_calls=1)), traj, budget=Budget(max_tool_calls=5))
    assert g.failure == "budget"
    assert _grade(_task(budget=Budget(max_tool_calls=2)), traj, budget=Budget(max_tool_calls=5)).passed


def test_old_grades_without_loops_or_budget_still_load():
    from simulator.types.grade import Grade

    g = Grade.model_validate({"passed": True, "state": {"passed": True}, "outputs": {"passed": True, "missing": []},
                              "process": {"passed": True}})
    assert g.loops.passed and g.budget.passed


# --- end to end through the runner (scripted agents, the toy bank) ---------------------------------------
class _Scripted:
    """Returns prepared assistant messages in order, then a closing text."""

    def __init__(self, script: list[Message]):
        self.script = list(script)

    def step(self, messages):
        from simulator.types.messages import AgentTurn

        return AgentTurn(message=self.script.pop(0) if self.script else Message(role="assistant", content="Bye."))


def _call(name: str, cid: str, **args: Any) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=cid, name=name, arguments=args)])


def _run_bank(tmp_path, task: Task, script: list[Message], domain=None, budgets=None, replies=("hi",)):
    from simulator.execution.runner import Runner
    from simulator.types.spec import RunSpec
    from simulator.users import ScriptedUser
    from tests._support.toy import write_data

    dom = domain or BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    cfg = RunSpec(domain="bank", trials=1, budgets=budgets)
    res = Runner(dom, tpl, [task], lambda ctx: _Scripted(script), lambda ctx: ScriptedUser(list(replies)), cfg).run()
    return res.trials[0]


MOVE = {"src": "A1", "dst": "B2", "amount": 10}


def test_duplicate_write_fails_state_and_loops(tmp_path):
    from simulator.types.tasks import Action

    task = _task(gold_actions=[Action(name="transfer", arguments=MOVE)], loop_threshold=0)
    once = _run_bank(tmp_path / "1", task, [_call("transfer", "c1", **MOVE), Message(role="assistant", content="ok")])
    assert once.passed, once.grade
    twice = _run_bank(tmp_path / "2", task, [_call("transfer", "c1", **MOVE), _call("transfer", "c2", **MOVE)])
    assert twice.grade.failure == "state, loops"
    assert twice.grade.loops.repeats == [{"tool": "transfer", "arguments": MOVE, "count": 2}]


def test_confirmation_end_to_end_with_a_domain_default(tmp_path):
    from simulator.types.tasks import Action

    task = _task(gold_actions=[Action(name="transfer", arguments=MOVE)])
    plan = [_call("get_balance", "c0", account_id="A1"), Message(role="assistant", content="Transfer $10 to B2?"),
            _call("transfer", "c1", **MOVE), Message(role="assistant", content="Done.")]
    confirmed = _run_bank(tmp_path / "1", task, list(plan), StrictBank(), replies=("move $10 to B2", "yes please"))
    assert confirmed.passed, confirmed.grade
    skipped = [_call("get_balance", "c0", account_id="A1"), _call("transfer", "c1", **MOVE)]
    r = _run_bank(tmp_path / "2", task, skipped, StrictBank())
    assert r.grade.failure == "process" and r.grade.state.passed


def test_run_budget_end_to_end(tmp_path):
    from simulator.types.tasks import Action

    task = _task(gold_actions=[Action(name="transfer", arguments=MOVE)])
    plan = [_call("get_balance", "c0", account_id="A1"), _call("transfer", "c1", **MOVE)]
    assert _run_bank(tmp_path / "1", task, list(plan), budgets={"t": Budget(max_tool_calls=2)}).passed
    r = _run_bank(tmp_path / "2", task, list(plan), budgets={"t": Budget(max_tool_calls=1)})
    assert r.grade.failure == "budget" and r.grade.budget.exceeded == ["tool_calls 2 > max_tool_calls 1"]


def test_volatile_arguments_come_from_the_domain():
    traj = build([_read("A1", request_id="r1"), _read("A1", request_id="r2")])
    assert _grade(_task(loop_threshold=0), traj).passed
    g = _grade(_task(loop_threshold=0), traj, domain=StrictBank())
    assert g.failure == "loops" and g.loops.repeats[0]["arguments"] == {"account_id": "A1"}


# --- task files -----------------------------------------------------------------------------------------
def _task_file(tmp_path, **fields: Any):
    import json

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "t1", "scenario": {"instructions": "x"}, **fields}]}))
    return str(path)


def test_task_file_with_the_new_rules(tmp_path):
    path = _task_file(tmp_path, process={"precedence": [{"before": "get_balance", "after": "transfer"}],
                                         "confirm_writes": True},
                      loop_threshold=1, budget={"max_tool_calls": 5, "max_cost_usd": 0.1})
    (task,) = BankDomain().load_tasks(path)
    assert task.process.precedence == [Precedence(before="get_balance", after="transfer")]
    assert task.process.confirm_writes is True and task.loop_threshold == 1
    assert task.budget == Budget(max_tool_calls=5, max_cost_usd=0.1)


@pytest.mark.parametrize(("fields", "message"), [
    ({"process": {"precedence": [{"before": "get_balanse", "after": "transfer"}]}},
     "task 't1': field process.precedence[0].before: unknown tool 'get_balanse'"),
    ({"process": {"forbidden_tools": ["nope"]}}, "field process.forbidden_tools[0]: unknown tool 'nope'"),
    ({"process": {"precedence": [{"before": "get_balance", "after": "@writes"}]}},
     "field process.precedence[0].after: unknown marker '@writes'"),
    ({"process": {"precedence": [{"before": "get_balance", "after": "transfer", "same": ["account_id"]}]}},
     "field process.precedence[0].same: tool 'transfer' takes no argument 'account_id'"),
    ({"process": {"precedence": [{"before": "get_balance", "after": "@write", "same": ["account_id"]}]}},
     "field process.precedence[0].same: not allowed with '@write'"),
    ({"process": {"precedence": [{"before": "get_balance"}]}}, "field process.precedence.0.after: Field required"),
    ({"budget": {"max_steps": -1}}, "field budget.max_steps"),
    ({"loop_threshold": -1}, "field loop_threshold"),
])
def test_task_file_errors_name_the_field(tmp_path, fields, message):
    from simulator.types.tasks import TaskFileError

    with pytest.raises(TaskFileError, match=message.replace("(", r"\(").replace("[", r"\[").replace("]", r"\]")):
        BankDomain().load_tasks(_task_file(tmp_path, **fields))


# --- loops: bounded retry exemption, volatile fields at any depth -----------------------------------------
def test_unknown_tool_repeated_ten_times_is_a_loop_at_default_settings():
    nope = ("call", "lookup_everything", {"q": "A1"}, "unknown_tool")
    traj = build([nope] * 10)
    g = _grade(_task(), traj)  # default threshold 2, default retry allowance 1
    assert not g.loops.passed and g.failure == "loops"
    # 10 calls, the second is the one exempt retry: 9 counted
    assert g.loops.repeats == [{"tool": "lookup_everything", "arguments": {"q": "A1"}, "count": 9}]
    assert not check_loops(traj, 0).passed


def test_one_retry_after_a_transient_error_is_not_a_loop():
    traj = build([_read("A1", "tool_error"), _read("A1")])
    g = _grade(_task(loop_threshold=0), traj)
    assert g.loops.passed and g.loops.retries == 1
    # a second failure then a second retry: the second retry counts (threshold 0: a loop)
    traj = build([_read("A1", "tool_error"), _read("A1", "tool_error"), _read("A1")])
    assert not check_loops(traj, 0).passed
    assert check_loops(traj, 0, retries=2).passed
    assert not check_loops(build([_read("A1", "tool_error"), _read("A1")]), 0, retries=0).passed


def test_task_retry_allowance_is_applied():
    traj = build([_read("A1", "tool_error")] * 3 + [_read("A1")])
    assert not _grade(_task(loop_threshold=0), traj).loops.passed
    assert _grade(_task(loop_threshold=0, loop_retries=3), traj).loops.passed


def test_volatile_fields_removed_at_any_depth():
    a = ("call", "get_balance", {"account_id": "A1", "meta": {"request_id": "r1", "tags": [{"request_id": "x"}]}},
         "ok")
    b = ("call", "get_balance", {"account_id": "A1", "meta": {"request_id": "r2", "tags": [{"request_id": "y"}]}},
         "ok")
    assert check_loops(build([a, b]), 0).passed
    r = check_loops(build([a, b]), 0, {"get_balance": ["request_id"]})
    assert r.repeats == [{"tool": "get_balance", "arguments": {"account_id": "A1", "meta": {"tags": [{}]}},
                          "count": 2}]
    # a dotted path removes that one field only: meta.tags[].request_id still differs
    assert check_loops(build([a, b]), 0, {"get_balance": ["meta.request_id"]}).passed
    assert not check_loops(build([a, b]), 0, {"get_balance": ["meta.request_id", "meta.tags.request_id"]}).passed

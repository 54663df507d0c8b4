from simulator.grading import check_process
from simulator.types.tasks import ProcessRules
from simulator.types.trajectory import TerminationReason, ToolCallRecord, Trajectory
from tests._support.toy import BankDomain

TB = BankDomain().toolbox()


def traj(calls, reason="user_stop"):
    recs = [ToolCallRecord(step=i, call_id=str(i), name=n, arguments={}, kind=TB.kind(n), status=st, content="",
                           duration_s=0.0) for i, (n, st) in enumerate(calls)]
    return Trajectory(tool_calls=recs, termination_reason=TerminationReason(reason))


def test_empty_rules_pass():
    assert check_process(ProcessRules(), traj([("transfer", "ok")]), TB).passed


def test_forbidden_tool_counts_even_failed_calls():
    r = check_process(ProcessRules(forbidden_tools=["transfer"]), traj([("transfer", "tool_error")]), TB)
    assert not r.passed and r.violations == ["forbidden tool called: transfer"]


def test_required_tool_must_succeed():
    rules = ProcessRules(required_tools=["get_balance"])
    assert not check_process(rules, traj([("get_balance", "tool_error")]), TB).passed
    assert check_process(rules, traj([("get_balance", "tool_error"), ("get_balance", "ok")]), TB).passed
    assert not check_process(rules, traj([]), TB).passed


def test_no_writes_ignores_reads_and_conversation_enders():
    rules = ProcessRules(no_writes=True)
    assert check_process(rules, traj([("get_balance", "ok"), ("transfer_to_human", "ok")]), TB).passed
    r = check_process(rules, traj([("get_balance", "ok"), ("transfer", "tool_error")]), TB)
    assert r.violations == ["write tool(s) called where none is allowed: transfer"]


def test_expected_termination():
    rules = ProcessRules(expected_termination=["agent_transfer"])
    assert check_process(rules, traj([], "agent_transfer"), TB).passed
    r = check_process(rules, traj([], "user_stop"), TB)
    assert r.violations == ["termination user_stop, expected agent_transfer"]

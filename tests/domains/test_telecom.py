"""The telecom and mock worlds (tau2-bench, dual control): the phone's rules, the sync, and the oracle/null sweeps.

The full 2,285-task telecom sweep is in ``scripts/bench-telecom``; here every 20th task (115) is run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains.mock import AMENDED_TAG
from simulator import Action, Runner, RunSpec, Task, ToolContext, UserScenario, get_domain
from simulator.agents import NullAgent, OracleAgent
from simulator.report._html import _transcript
from simulator.users import scripted_user_factory
from simulator.world.replay import prepare_trial

TAU2 = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "tau2-bench"


@pytest.fixture(scope="module")
def telecom():
    if not (TAU2 / "telecom" / "db.toml").exists():
        pytest.skip(f"tau2-bench data not found at {TAU2}")
    return get_domain("telecom")


@pytest.fixture(scope="module")
def telecom_tasks(telecom):
    return telecom.load_tasks(split="full")


def _setup_task(*setup: tuple[str, str, dict]) -> Task:
    return Task.model_validate({"id": "t", "scenario": UserScenario(instructions="x").model_dump(),
                                "initial_state": {"setup": [{"requestor": r, "name": n, "arguments": a}
                                                            for r, n, a in setup]}})


def _call(domain, db, side, name, **args):
    ctx = ToolContext(db.session, db.options)
    tb = domain.user_toolbox() if side == "user" else domain.toolbox()
    out = tb.dispatch(ctx, name, args)
    domain.sync(ctx)
    return out


def _check(domain, db, side, name, **args):
    return domain.assertion_functions(side)[name](ToolContext(db.session, db.options), **args)


def test_loaded_task_counts_and_mapping(telecom_tasks):
    assert len(telecom_tasks) == 2285
    user_actions = sum(1 for t in telecom_tasks for a in t.gold_actions if a.requestor == "user")
    all_actions = sum(len(t.gold_actions) for t in telecom_tasks)
    assert (all_actions, user_actions) == (13215, 10927)  # the spec's counts
    first = telecom_tasks[0]
    assert first.grade == ["env_assertions"]
    assert [(a.requestor, a.name) for a in first.initial_state.setup][:2] == [("user", "set_user_info"),
                                                                             ("user", "set_user_location")]


def test_speed_test_follows_technology_signal_and_saver(telecom):
    task = _setup_task(("user", "set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"}))
    with telecom.template().trial() as db:
        prepare_trial(telecom, db, task)
        # user_db.toml's phone: 5G with good signal: (50 + 500) / 2 * 0.8 = 220 Mbps
        assert "220.00 Mbps (Excellent)" in _call(telecom, db, "user", "run_speed_test").content
        _call(telecom, db, "user", "toggle_data_saver_mode")
        assert "44.00 Mbps (Good)" in _call(telecom, db, "user", "run_speed_test").content  # x 0.2
        _call(telecom, db, "user", "set_network_mode_preference", mode="3g_only")
        # 3G, fair signal, data saver: (1 + 5) / 2 * 0.5 * 0.2 = 0.3
        assert "0.30 Mbps (Very Poor)" in _call(telecom, db, "user", "run_speed_test").content
        assert _check(telecom, db, "user", "assert_internet_speed", expected_speed=0.3) is True
        assert _check(telecom, db, "user", "assert_internet_speed", expected_speed=0.31) is False


def test_broken_apn_needs_reset_and_reboot(telecom):
    task = _setup_task(("user", "set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"}),
                       ("user", "break_apn_settings", {}))
    with telecom.template().trial() as db:
        prepare_trial(telecom, db, task)
        assert _check(telecom, db, "user", "assert_service_status", expected_status="no_service")
        _call(telecom, db, "user", "reset_apn_settings")
        assert _check(telecom, db, "user", "assert_service_status", expected_status="no_service")  # until reboot
        _call(telecom, db, "user", "reboot_device")
        assert _check(telecom, db, "user", "assert_service_status", expected_status="connected")
        assert _check(telecom, db, "user", "assert_mobile_data_status", expected_status=True)


def test_sync_carries_line_status_and_payment(telecom):
    task = _setup_task(("user", "set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"}),
                       ("assistant", "suspend_line_for_overdue_bill",
                        {"customer_id": "C1001", "line_id": "L1002", "new_bill_id": "B9", "contract_ended": False}))
    with telecom.template().trial() as db:
        prepare_trial(telecom, db, task)
        assert telecom.dump(db)["surroundings"]["1"]["line_active"] is False
        assert _check(telecom, db, "agent", "assert_no_overdue_bill", overdue_bill_id="B9") is False
        assert "No payment request" in _call(telecom, db, "user", "check_payment_request").content
        assert _call(telecom, db, "agent", "send_payment_request", customer_id="C1001", bill_id="B9").status == "ok"
        assert "bill B9" in _call(telecom, db, "user", "check_payment_request").content
        _call(telecom, db, "user", "make_payment")
        assert telecom.dump(db)["bills"]["B9"]["status"] == "Paid"
        assert telecom.dump(db)["surroundings"]["1"]["payment_request"] is None
        assert _check(telecom, db, "agent", "assert_no_overdue_bill", overdue_bill_id="B9") is True
        _call(telecom, db, "agent", "resume_line", customer_id="C1001", line_id="L1002")
        assert telecom.dump(db)["surroundings"]["1"]["line_active"] is True


def _run(domain, tasks, agent):
    cfg = RunSpec(domain=domain.name, trials=1, concurrency=1)
    return Runner(domain, domain.template(), tasks, agent, scripted_user_factory(), cfg).run()


def test_oracle_passes_a_sample_through_the_simulated_user(telecom, telecom_tasks):
    sample = telecom_tasks[::20]
    res = _run(telecom, sample, OracleAgent)
    failed = [(t.task_id, t.grade.failure if t.grade else t.error) for t in res.trials if not t.passed]
    assert not failed
    for trial, task in zip(res.trials, sample, strict=True):
        traj = trial.trajectory
        wanted = [a.name for a in task.gold_actions if a.requestor == "user"]
        assert [c.name for c in traj.tool_calls if c.requestor == "user"] == wanted
        assert [c.name for c in traj.tool_calls if c.requestor == "agent"] == [
            a.name for a in task.gold_actions if a.requestor == "assistant"]
    # the user's own calls are marked in the transcript and shown in the HTML
    traj = res.trials[0].trajectory
    assert any(m.requestor == "user" and m.tool_calls for m in traj.messages)
    html = _transcript({"trajectory": traj.model_dump(mode="json")})
    assert "requestor user" in html and "toggle_roaming" in html


def test_null_agent_fails_the_sample(telecom, telecom_tasks):
    res = _run(telecom, telecom_tasks[::20], NullAgent)
    assert [t.task_id for t in res.trials if t.passed] == []


def test_the_agent_never_sees_the_users_own_calls(telecom, telecom_tasks):
    seen: list[list] = []

    class Watching(OracleAgent):
        def step(self, messages):
            seen.append(list(messages))
            return super().step(messages)

    _run(telecom, telecom_tasks[:1], Watching)
    assert seen and all(m.requestor is None and m.role != "user" or not m.tool_calls
                        for msgs in seen for m in msgs)
    assert all(m.requestor is None for msgs in seen for m in msgs)


def test_mock_oracle_and_null():
    if not (TAU2 / "mock" / "db.json").exists():
        pytest.skip("tau2-bench data not found")
    mock = get_domain("mock")
    tasks = mock.load_tasks()
    assert len(tasks) == 10
    # two tasks cannot be passed by their gold actions as shipped: one has none (its history asks for an update
    # the gold does not make), the other needs the user to dismiss a notification outside the gold actions; the
    # domain completes their gold (gold_amendments.json) and tags them
    raw = {t["id"]: t for t in json.loads((TAU2 / "mock" / "tasks.json").read_text())}
    amended = {t.id: t for t in tasks if AMENDED_TAG in t.tags}
    assert sorted(amended) == ["update_task_with_history_and_env_assertions", "update_task_with_user_tools"]
    for tid, task in amended.items():
        shipped = raw[tid]["evaluation_criteria"].get("actions") or []
        assert len(task.gold_actions) == len(shipped) + 1
    assert amended["update_task_with_user_tools"].gold_actions[-1] == Action(
        name="dismiss_notification", arguments={"notification_id": "notif_1"}, requestor="user")
    oracle = _run(mock, tasks, OracleAgent)
    assert [t.task_id for t in oracle.trials if not t.passed] == []
    # the user dismissed the notification itself (its own tool, requestor user)
    user_calls = [c.name for t in oracle.trials if t.task_id == "update_task_with_user_tools"
                  for c in t.trajectory.tool_calls if c.requestor == "user"]
    assert user_calls == ["dismiss_notification"]
    null = _run(mock, tasks, NullAgent)
    # only the task with nothing to do (no gold, DB and COMMUNICATE basis with nothing to say) passes
    assert [t.task_id for t in null.trials if t.passed] == ["create_task_1_nl_eval"]


def test_setup_action_failure_is_reported(telecom):
    task = _setup_task(("user", "lock_sim_card", {"mode": "bogus"}))
    with telecom.template().trial() as db, pytest.raises(Exception, match="setup\\[0\\] user:lock_sim_card"):
        prepare_trial(telecom, db, task)


def test_gold_action_of_unknown_user_tool_is_refused(telecom, tmp_path):
    del tmp_path
    task = Task(id="x", scenario=UserScenario(instructions="x"),
                gold_actions=[Action(name="no_such_tool", requestor="user")])
    with pytest.raises(Exception, match="gold_actions\\[0\\].name: unknown tool 'no_such_tool'"):
        telecom._checked([task], "f.json")

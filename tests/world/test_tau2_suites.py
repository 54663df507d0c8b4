"""The four tau2-bench suites (retail, airline, mock, telecom): one loader, user data, the null agent per task and
the parity harness (``tausim replay`` on tau2 tasks) against our own reading of tau2's semantics.

The peer data is read from ``../shared/peers/tau2-bench`` (tests skip when it is absent). The full telecom sweep
(all 2,285 tasks) is in ``scripts/bench-telecom --parity``; here every 20th task is replayed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator import DomainError, Runner, RunSpec, get_domain
from simulator.agents import NullAgent
from simulator.cli import app
from simulator.execution.parity import replay_tasks
from simulator.users import scripted_user_factory
from simulator.world.replay import GoldToolBug, prepare_trial
from simulator.world.tau2_tasks import parse_tau2_tasks

PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "tau2-bench"
pytestmark = pytest.mark.skipif(not (PEERS / "telecom" / "tasks.json").is_file(), reason="tau2-bench data absent")
EVERY = 20
"""Every EVERY-th telecom task of the full split is swept here."""


def _raw(domain: str) -> list[dict[str, Any]]:
    return json.loads((PEERS / domain / "tasks.json").read_text())


def _replay(domain: str, *extra: str) -> list[dict[str, Any]]:
    res = CliRunner().invoke(app, ["replay", "--domain", domain, "--data", str(PEERS / domain), "--tasks",
                                   str(PEERS / domain / "tasks.json"), "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def _changes(diff: dict[str, Any]) -> set[tuple[str, str]]:
    """``(table, record id)`` of every record a replay diff adds, removes or changes."""
    out = set()
    for table, d in diff.items():
        out |= {(table, k) for k in d["added"]} | {(table, k) for k in d["removed"]} | {
            (table, k) for k in d["changed"]}
    return out


# ------------------------------------------------------------------------------------------------ one loader
def test_all_four_domains_load_tau2_files_through_the_engine_loader():
    expected = {"retail": 114, "airline": 50, "mock": 10, "telecom": 114}  # telecom: tau2's default split "base"
    for name, count in expected.items():
        tasks = get_domain(name).load_tasks(str(PEERS / name / "tasks.json"))
        assert len(tasks) == count, name
        assert {t.suite for t in tasks} == {"tau2"}
        assert all(t.conduct is not None and t.conduct.greeting for t in tasks)
    full = get_domain("telecom").load_tasks(split="full")
    assert len(full) == 2285
    raw = {t["id"]: t for t in _raw("telecom")}
    for task in full[::EVERY]:
        basis = raw[task.id]["evaluation_criteria"]["reward_basis"]
        assert task.grade == [{"ENV_ASSERTION": "env_assertions", "ACTION": "actions"}[b] for b in basis]
        assert len(task.env_assertions) == len(raw[task.id]["evaluation_criteria"]["env_assertions"])
        assert not task.assertions  # no tausim-format assertion stands in for tau2's criteria


def _task(**initial: Any) -> dict[str, Any]:
    return {"id": "u", "user_scenario": {"instructions": "x"}, "initial_state": initial,
            "evaluation_criteria": {"reward_basis": ["DB"]}}


def test_user_data_is_merged_into_the_user_side():
    mock = get_domain("mock")
    (task,) = parse_tau2_tasks([_task(initialization_data={
        "agent_data": {"tasks": {"task_1": {"status": "completed"}}},
        "user_data": {"notifications": {"notif_1": {"status": "read"},
                                        "notif_9": {"notification_id": "notif_9", "message": "m", "status": "unread",
                                                    "task_id": None}}}})])
    with mock.template(PEERS / "mock").trial() as db:
        before = mock.dump(db)
        prepare_trial(mock, db, task)
        after = mock.dump(db)
    want = copy.deepcopy(before)
    want["tasks"]["task_1"]["status"] = "completed"
    want["notifications"]["notif_1"]["status"] = "read"
    want["notifications"]["notif_9"] = {"notification_id": "notif_9", "message": "m", "status": "unread",
                                        "task_id": None}
    assert after == want

    telecom = get_domain("telecom")
    (task,) = parse_tau2_tasks([_task(initialization_data={"user_data": {
        "device": {"airplane_mode": True, "app_statuses": {"messaging": {"permissions": {"sms": False}}}},
        "surroundings": {"is_abroad": True}}})])
    with telecom.template(PEERS / "telecom").trial() as db:
        before = telecom.dump(db)
        prepare_trial(telecom, db, task)
        after = telecom.dump(db)
    assert after["device"]["1"]["airplane_mode"] is True
    assert after["surroundings"]["1"]["is_abroad"] is True
    perms = after["device"]["1"]["app_statuses"]["messaging"]["permissions"]
    assert perms["sms"] is False
    # a nested object is merged key by key: the app's other permissions are kept
    assert {k: v for k, v in perms.items() if k != "sms"} == {
        k: v for k, v in before["device"]["1"]["app_statuses"]["messaging"]["permissions"].items() if k != "sms"}
    for table in ("plans", "customers", "lines", "bills", "devices"):
        assert after[table] == before[table]


@pytest.mark.parametrize(("domain", "data", "message"), [
    ("mock", {"inbox": {}}, r"user_data\.inbox: unknown table \(tables: notifications\)"),
    ("mock", {"notifications": {"notif_1": 3}}, r"user_data\.notifications\.notif_1: expected an object"),
    ("telecom", {"device": [1]}, r"user_data\.device: expected an object, got list"),
    ("retail", {"device": {}}, r"user_data: domain 'retail' has no user side"),
])
def test_bad_user_data_is_refused_naming_the_field(domain, data, message):
    dom = get_domain(domain)
    (task,) = parse_tau2_tasks([_task(initialization_data={"user_data": data})])
    with dom.template(PEERS / domain).trial() as db, pytest.raises(GoldToolBug, match=message):
        prepare_trial(dom, db, task)


def test_telecom_agent_data_replaces_a_list_table_as_tau2_does():
    telecom = get_domain("telecom")
    with telecom.template(PEERS / "telecom").trial() as db:
        plans = telecom.dump(db)["plans"]
        one = next(iter(plans.values()))
        telecom.merge_data(db, {"plans": [dict(one, name="Only plan")]})
        assert telecom.dump(db)["plans"] == {one["plan_id"]: dict(one, name="Only plan")}
        with pytest.raises(DomainError, match=r"agent_data\.plans\[0\]: expected a record with a string 'plan_id'"):
            telecom.merge_data(db, {"plans": [{"name": "x"}]})


# ------------------------------------------------------------------------------------------------ null agent
def _mock_model() -> tuple[dict[str, Any], dict[str, Any]]:
    return (json.loads((PEERS / "mock" / "db.json").read_text()),
            json.loads((PEERS / "mock" / "user_db.json").read_text()))


def _mock_call(agent: dict[str, Any], user: dict[str, Any], name: str, args: dict[str, Any]) -> bool:
    """Our reading of tau2's mock tools on plain dicts; returns whether the call failed."""
    if name == "create_task":
        if args["user_id"] not in agent["users"]:
            return True
        tid = f"task_{len(agent['tasks']) + 1}"
        agent["tasks"][tid] = {"task_id": tid, "title": args["title"], "description": args.get("description"),
                               "status": "pending"}
        agent["users"][args["user_id"]]["tasks"].append(tid)
    elif name == "update_task_status":
        if args["task_id"] not in agent["tasks"]:
            return True
        agent["tasks"][args["task_id"]]["status"] = args["status"]
    elif name == "dismiss_notification":
        if args["notification_id"] not in user["notifications"]:
            return True
        user["notifications"][args["notification_id"]]["status"] = "read"
    elif name == "add_notification":
        user["notifications"][args["notification_id"]] = {"status": "unread", "task_id": None, **args}
    return False


def _mock_expected(raw: dict[str, Any], gold: list[dict[str, Any]]) -> dict[str, Any]:
    """A mock task by our reading of tau2: its start state, gold errors, final state and env assertion values."""
    agent, user = _mock_model()
    st = raw.get("initial_state") or {}
    agent_data = (st.get("initialization_data") or {}).get("agent_data")
    for table, recs in (agent_data or {}).items():
        for key, patch in recs.items():
            agent[table][key] = {**agent[table].get(key, {}), **patch}
    if agent_data:  # τ³ then points the user's tools at the agent's database: the user sees the agent's records
        user = agent
    for a in st.get("initialization_actions") or []:
        _mock_call(agent, user, a["func_name"], a["arguments"])
    for m in st.get("message_history") or []:
        for c in m.get("tool_calls") or []:
            _mock_call(agent, user, c["name"], c["arguments"])
    start = copy.deepcopy((agent, user))
    errors = [_mock_call(agent, user, a["name"], a.get("arguments") or {}) for a in gold]
    values = []
    for e in (raw.get("evaluation_criteria") or {}).get("env_assertions") or []:
        args = e["arguments"]
        if e["func_name"] == "assert_task_status":  # a missing record fails the assertion
            value = (agent["tasks"].get(args["task_id"]) or {}).get("status") == args["expected_status"]
        elif e["func_name"] == "assert_number_of_tasks":
            value = len(agent["users"][args["user_id"]]["tasks"]) == args["expected_number"]
        else:
            value = (user["notifications"].get(args["notification_id"]) or {}).get("status") == args[
                "expected_status"]
        values.append(value)
    return {"start": start, "final": (agent, user), "errors": errors, "values": values}


def _null_needs(domain: str, raw: dict[str, Any], start_fails_env: bool, gold_changes: bool) -> bool:
    """Whether a task's reward basis needs an action or a state change (a do-nothing agent must fail it)."""
    ec = raw.get("evaluation_criteria") or {}
    basis = ec.get("reward_basis") or ["DB", "COMMUNICATE"]
    return (("ACTION" in basis and bool(ec.get("actions"))) or ("COMMUNICATE" in basis and bool(
        ec.get("communicate_info"))) or ("ENV_ASSERTION" in basis and start_fails_env)
        or ("DB" in basis and gold_changes))


def _run(domain: str, tasks: list) -> dict[str, bool]:
    dom = get_domain(domain)
    res = Runner(dom, dom.template(PEERS / domain), tasks, NullAgent, scripted_user_factory(),
                 RunSpec(domain=domain, concurrency=1)).run()
    return {t.task_id: t.passed for t in res.trials}


def test_null_agent_fails_every_mock_task_that_needs_something():
    raws = {t["id"]: t for t in _raw("mock")}
    tasks = get_domain("mock").load_tasks()
    needs = set()
    for task in tasks:
        raw = raws[task.id]
        gold = [a.model_dump() for a in task.gold_actions]
        exp = _mock_expected(raw, gold)
        agent, user = exp["start"]
        start_values = _mock_expected(raw, [])["values"]
        ec = raw.get("evaluation_criteria") or {}
        fails = any(v != e.get("assert_value", True) for v, e in zip(start_values, ec.get("env_assertions") or [],
                                                                      strict=True))
        if _null_needs("mock", raw, fails, exp["final"] != (agent, user)):
            needs.add(task.id)
    assert len(needs) == 9
    passed = _run("mock", tasks)
    assert {t for t, ok in passed.items() if ok} == set(raws) - needs  # passes exactly the others


def test_null_agent_fails_every_sampled_telecom_task():
    telecom = get_domain("telecom")
    tasks = telecom.load_tasks(split="full")[::EVERY]
    raws = {t["id"]: t for t in _raw("telecom")}
    needs = set()
    for task in tasks:
        with telecom.template(PEERS / "telecom").trial() as db:
            prepare_trial(telecom, db, task)
            fns = {s: telecom.assertion_functions(s) for s in ("agent", "user")}
            from simulator import ToolContext

            ctx = ToolContext(db.session, db.options)
            fails = any(fns["user" if e.env_type == "user" else "agent"][e.func_name](ctx, **e.arguments)
                        != e.assert_value for e in task.env_assertions)
        if _null_needs("telecom", raws[task.id], fails, False):
            needs.add(task.id)
    assert needs == {t.id for t in tasks}  # every telecom task starts broken or needs a transfer
    passed = _run("telecom", tasks)
    assert [t for t, ok in passed.items() if ok] == []


# ------------------------------------------------------------------------------------------------ parity
def test_replay_parity_mock_every_task():
    rows = _replay("mock")
    raws = {t["id"]: t for t in _raw("mock")}
    tasks = {t.id: t for t in get_domain("mock").load_tasks()}
    assert [r["task_id"] for r in rows] == list(raws)
    for row in rows:
        task = tasks[row["task_id"]]
        exp = _mock_expected(raws[task.id], [a.model_dump() for a in task.gold_actions])
        assert row["errors"] == exp["errors"], task.id
        assert row["requestors"] == [a.requestor for a in task.gold_actions]
        (a0, u0), (a1, u1) = exp["start"], exp["final"]
        assert _changes(row["diff"]) == {(t, k) for t in a1 for k in set(a0[t]) | set(a1[t])
                                         if a0[t].get(k) != a1[t].get(k)}, task.id
        assert _changes(row["user_diff"]) == {(t, k) for t in u1 for k in set(u0[t]) | set(u1[t])
                                              if u0[t].get(k) != u1[t].get(k)}, task.id
        got = [a["actual"] for a in row.get("env_assertions") or []]
        assert got == exp["values"], task.id
        assert all(a["passed"] for a in row.get("env_assertions") or [])


def test_replay_parity_telecom_every_nth_task():
    small = _replay("telecom", "--split", "small")  # the command on a split; the sample through its function
    assert [r["task_id"] for r in small] == json.loads((PEERS / "telecom" / "split_tasks.json").read_text())["small"]
    telecom = get_domain("telecom")
    sample = telecom.load_tasks(split="full")[::EVERY]
    rows = [r.to_json() for r in replay_tasks(telecom, telecom.template(PEERS / "telecom"), sample)]
    assert len(rows) == 115
    raws = {t["id"]: t for t in _raw("telecom")}
    for row in rows + small:
        raw = raws[row["task_id"]]
        gold = raw["evaluation_criteria"]["actions"]
        assert row["requestors"] == [a.get("requestor", "assistant") for a in gold]
        assert row["errors"] == [False] * len(gold), row["task_id"]  # every gold action of tau2's telecom succeeds
        assertions = row["env_assertions"]
        assert [(a["func_name"], a["expected"]) for a in assertions] == [
            (e["func_name"], e.get("assert_value", True)) for e in raw["evaluation_criteria"]["env_assertions"]]
        assert all(a["passed"] for a in assertions), row["task_id"]
        # the agent's records change only through agent-side gold actions (the user acts on the phone only)
        if all(a.get("requestor") == "user" or a["name"] == "transfer_to_human_agents" for a in gold):
            assert row["diff"] == {} or set(row["diff"]) <= {"bills"}, row["task_id"]  # a paid bill via sync


_RETAIL_LOOKUPS = {"find_user_id_by_email", "find_user_id_by_name_zip", "get_product_details",
                   "get_order_details", "get_user_details"}


def _lookup_fails(db: dict[str, Any], name: str, args: dict[str, Any]) -> bool | None:
    """Our reading of tau2's look-up tools on the data file; None for other tools."""
    if name == "find_user_id_by_email":
        return not any(u["email"] == args["email"] for u in db["users"].values())
    if name == "find_user_id_by_name_zip":
        return not any(u["name"]["first_name"].lower() == args["first_name"].lower()
                       and u["name"]["last_name"].lower() == args["last_name"].lower()
                       and u["address"]["zip"] == args["zip"] for u in db["users"].values())
    for arg, table in (("product_id", "products"), ("order_id", "orders"), ("user_id", "users"),
                       ("reservation_id", "reservations")):
        if name.startswith("get_") and name.endswith("_details") and arg in args and table in db:
            return args[arg] not in db[table]
    return None


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_replay_parity_retail_airline_every_task(domain):
    rows = _replay(domain)
    db = json.loads((PEERS / domain / "db.json").read_text())
    raws = {str(t["id"]): t for t in _raw(domain)}
    assert [r["task_id"] for r in rows] == list(raws)
    toolbox = get_domain(domain).toolbox_for({"mode": "tau2"})
    for row in rows:
        gold = raws[row["task_id"]]["evaluation_criteria"].get("actions") or []
        assert len(row["errors"]) == len(gold)  # tau2 replays every gold action, none ends the replay
        allowed: set[tuple[str, str]] = set()
        for action, failed in zip(gold, row["errors"], strict=True):
            args = action.get("arguments") or {}
            expect = _lookup_fails(db, action["name"], args)
            if expect is not None:
                assert failed == expect, (row["task_id"], action["name"])
            if failed or toolbox.specs[action["name"]].kind != "write":
                continue
            for arg, table in (("order_id", "orders"), ("user_id", "users"), ("reservation_id", "reservations")):
                if arg in args:
                    allowed.add((table, args[arg]))
                    record = db.get(table, {}).get(args[arg]) or {}
                    if record.get("user_id"):
                        allowed.add(("users", record["user_id"]))  # refunds and payments: the owner's record
            for leg in args.get("flights") or []:
                allowed.add(("flights", leg["flight_number"]))  # tau2 takes seats on booked flights
            if action["name"] == "book_reservation":
                allowed.add(("reservations", "*new*"))
        changes = _changes(row["diff"])
        new = {(t, k) for t, k in changes if t == "reservations" and k not in db["reservations"]} if (
            domain == "airline") else set()
        assert changes - new <= allowed, row["task_id"]
        assert len(new) <= sum(a["name"] == "book_reservation" for a in gold)
        ok_writes = [a for a, f in zip(gold, row["errors"], strict=True)
                     if not f and toolbox.specs[a["name"]].kind == "write" and a["name"] != "send_certificate"]
        if ok_writes:
            assert changes, row["task_id"]  # a successful write changes something

"""tau2-bench suites on retail and airline: loading, the tau2 tool mode, grading by reward basis, ending rules.

The peer data is read from ``../shared/peers/tau2-bench`` (tests skip when it is absent).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator import ToolContext
from simulator.cli import app
from simulator.dialogue.conversation import Conversation
from simulator.errors import TaskFileError
from simulator.execution.parity import replay_tasks
from simulator.grading.tau2 import action_matches, check_env_assertions, communicated_tau2
from simulator.types.messages import AgentTurn, Message, ToolCall, UserTurn
from simulator.types.tasks import Action, EnvAssertion
from simulator.types.trajectory import Limits, TerminationReason
from simulator.users.llm_user import parse_user_reply
from simulator.world.domain import get_domain
from simulator.world.tau2_tasks import GREETING, load_tau2_tasks, parse_tau2_tasks

PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "tau2-bench"
pytestmark = pytest.mark.skipif(not (PEERS / "retail" / "tasks.json").is_file(), reason="tau2-bench data absent")


def _raw_tasks(domain: str) -> list[dict]:
    return json.loads((PEERS / domain / "tasks.json").read_text())


def _run(domain: str, agent: str, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / f"{domain}-{agent}.json"
    res = CliRunner().invoke(app, ["run", "--domain", domain, "--data", str(PEERS / domain), "--tasks",
                                   str(PEERS / domain / "tasks.json"), "--agent", agent, "--no-progress",
                                   "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


# ------------------------------------------------------------------------------------------------ must-show
@pytest.mark.parametrize(("domain", "count"), [("retail", 114), ("airline", 50)])
def test_oracle_passes_every_task(domain, count, tmp_path):
    doc = _run(domain, "oracle", tmp_path)
    trials = doc["trials"]
    assert len(trials) == count
    failed = [t["task_id"] for t in trials if not t["passed"]]
    assert failed == []
    assert doc["config"]["options"] == {"mode": "tau2", "communicate": "tausim"}
    policy = (PEERS / domain / "policy.md").read_text(encoding="utf-8")
    assert doc["config"]["policy_sha256"] == hashlib.sha256(policy.encode()).hexdigest()
    # NL_ASSERTION without a judge model: recorded as not graded, not blocking
    with_nl = {str(t["id"]) for t in _raw_tasks(domain) if (t.get("evaluation_criteria") or {}).get("nl_assertions")}
    judged = {t["task_id"] for t in trials if t["grade"]["judge"] is not None}
    assert judged == with_nl
    assert all(t["grade"]["judge"]["status"] == "not_graded" for t in trials if t["grade"]["judge"] is not None)


def _needs_something(domain: str) -> set[str]:
    """Task ids whose reward basis a do-nothing agent cannot meet, computed from the raw files and a replay."""
    dom = get_domain(domain)
    template = dom.template(PEERS / domain)
    tasks = dom.load_tasks(str(PEERS / domain / "tasks.json"))
    changed = {r.task_id for r in replay_tasks(dom, template, tasks) if r.diff}
    out = set()
    for raw in _raw_tasks(domain):
        ec = raw.get("evaluation_criteria") or {}
        basis = ec.get("reward_basis") or ["DB", "COMMUNICATE"]
        tid = str(raw["id"])
        if ("DB" in basis and tid in changed) or ("ACTION" in basis and ec.get("actions")) or (
                "COMMUNICATE" in basis and ec.get("communicate_info")):
            out.add(tid)
    return out


@pytest.mark.parametrize(("domain", "needing"), [("retail", 103), ("airline", 27)])
def test_null_agent_fails_every_task_that_needs_an_action_or_a_change(domain, needing, tmp_path):
    needs = _needs_something(domain)
    assert len(needs) == needing
    doc = _run(domain, "null", tmp_path)
    passed = {t["task_id"] for t in doc["trials"] if t["passed"]}
    assert passed & needs == set()
    assert len(doc["trials"]) - len(passed) >= needing


# ------------------------------------------------------------------------------------------------ loading
def test_split_and_default_split():
    path = PEERS / "retail" / "tasks.json"
    assert len(load_tau2_tasks(path)) == 114  # default split "base": every retail task
    test = load_tau2_tasks(path, split="test")
    assert len(test) == 40
    ids = json.loads((PEERS / "retail" / "split_tasks.json").read_text())["test"]
    assert [t.id for t in test] == [str(i) for i in ids]
    assert len(load_tau2_tasks(PEERS / "airline" / "split_tasks.json", split="train")) == 30
    with pytest.raises(TaskFileError, match=r"split_tasks.json: field nope: no such split"):
        load_tau2_tasks(path, split="nope")


def test_a_task_file_has_its_splits_in_split_of_its_own_name(tmp_path):
    """tasks_small.json is not split by the split_tasks.json beside it; X.json is split by split_X.json."""
    small = PEERS / "telecom" / "tasks_small.json"
    assert len(load_tau2_tasks(small)) == len(json.loads(small.read_text())) == 20
    with pytest.raises(TaskFileError, match=r"--split base: no .*split_tasks_small.json"):
        load_tau2_tasks(small, split="base")
    tasks = json.loads((PEERS / "airline" / "tasks.json").read_text())
    (tmp_path / "mine.json").write_text(json.dumps(tasks))
    (tmp_path / "split_mine.json").write_text(json.dumps({"base": [tasks[3]["id"], tasks[1]["id"]]}))
    assert [t.id for t in load_tau2_tasks(tmp_path / "mine.json")] == [tasks[1]["id"], tasks[3]["id"]]
    assert len(load_tau2_tasks(tmp_path / "split_mine.json", split="base")) == 2


def test_cli_split_option(tmp_path):
    doc = _run("airline", "oracle", tmp_path, "--split", "test")
    assert len(doc["trials"]) == 20


def test_task_conversion():
    raw = _raw_tasks("retail")[0]
    task = load_tau2_tasks(PEERS / "retail" / "tasks.json")[0]
    ins = raw["user_scenario"]["instructions"]
    for part in ("reason_for_call", "known_info", "task_instructions"):
        assert ins[part].strip() in task.scenario.instructions
    assert task.scenario.unknown_info == [ins["unknown_info"]]
    assert [a.name for a in task.gold_actions] == [a["name"] for a in raw["evaluation_criteria"]["actions"]]
    assert task.grade == ["state", "judge"]  # [DB, NL_ASSERTION]
    assert task.suite == "tau2" and task.conduct is not None and task.conduct.greeting == GREETING
    airline = load_tau2_tasks(PEERS / "airline" / "tasks.json")
    comm = [t for t in airline if t.required_outputs]
    assert len(comm) == 6 and all(t.grade == ["state", "outputs"] for t in airline)


def _task(**over):
    base = {"id": "t1", "user_scenario": {"instructions": "You want to cancel order #W1."},
            "evaluation_criteria": {"actions": [{"action_id": "a", "name": "cancel_pending_order",
                                                 "arguments": {"order_id": "#W1", "reason": "no longer needed"}}],
                                    "reward_basis": ["DB"]}}
    base.update(over)
    return base


@pytest.mark.parametrize(("change", "field"), [
    ({"evaluation_criteria": {"reward_basis": ["DB", "VIBES"]}}, "evaluation_criteria.reward_basis[1]"),
    ({"evaluation_criteria": {"actions": [{"arguments": {}}]}}, "evaluation_criteria.actions[0].name"),
    ({"evaluation_criteria": {"actions": [{"name": "x", "requestor": "bot"}]}},
     "evaluation_criteria.actions[0].requestor"),
    ({"evaluation_criteria": {"env_assertions": [{"func_name": ""}]}}, "evaluation_criteria.env_assertions[0]"),
    ({"user_scenario": {"instructions": 7}}, "user_scenario.instructions"),
    ({"user_scenario": {"instructions": {"domain": "retail", "mood": "x"}}}, "user_scenario.instructions.mood"),
    ({"initial_state": {"initialization_actions": [{"env_type": "user"}]}},
     "initial_state.initialization_actions[0].func_name"),
    ({"colour": "red"}, "colour"),
])
def test_loader_errors_name_tau2_fields(change, field):
    with pytest.raises(TaskFileError) as e:
        parse_tau2_tasks([_task(**change)], "tasks.json")
    assert f"tasks.json: task 't1': field {field}" in str(e.value)


def test_domain_check_names_the_action_field(tmp_path):
    bad = _task(evaluation_criteria={"actions": [{"name": "launch_rocket", "arguments": {}}]})
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([bad]))
    with pytest.raises(TaskFileError, match=r"task 't1': field evaluation_criteria.actions\[0\].name: unknown tool "
                                            "'launch_rocket'"):
        get_domain("retail").load_tasks(str(path))


def test_db_json_user_id_must_match_its_key(tmp_path):
    doc = json.loads((PEERS / "retail" / "db.json").read_text())
    uid = next(iter(doc["users"]))
    doc["users"][uid]["user_id"] = "someone_else"
    (tmp_path / "db.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match=rf"db.json#users: record '{uid}': field user_id: 'someone_else' differs"):
        get_domain("retail").template(tmp_path)


def test_db_json_as_a_file_and_v1_folder_unchanged():
    dom = get_domain("airline")
    by_file = dom.template(PEERS / "airline" / "db.json")
    assert by_file.options["mode"] == "tau2"
    with by_file.trial() as t:
        dump = dom.dump(t)
    raw = json.loads((PEERS / "airline" / "db.json").read_text())
    assert dump["flights"] == raw["flights"]
    assert {k: {f: v for f, v in u.items() if f != "user_id"} for k, u in raw["users"].items()} == dump["users"]
    assert dom.default_options(None) == {"mode": "tausim"}
    v1 = PEERS.parent / "tau-bench" / "airline" / "data"
    if v1.is_dir():
        assert dom.default_options(v1) == {"mode": "tau-bench"}


# ------------------------------------------------------------------------------------------------ tool mode tau2
def _call(domain: str, mode: str, calls: list[tuple[str, dict]]) -> list:
    dom = get_domain(domain)
    tpl = dom.template(PEERS / domain, {"mode": mode})
    box = dom.toolbox_for(tpl.options)
    with tpl.trial() as db:
        ctx = ToolContext(db.session, db.options)
        return [box.dispatch(ctx, name, args) for name, args in calls]


def test_tool_sets_per_mode():
    retail, airline = get_domain("retail"), get_domain("airline")
    r2 = set(retail.toolbox_for({"mode": "tau2"}).specs)
    assert len(r2) == 16 and "get_item_details" in r2 and "think" not in r2
    assert "get_item_details" not in retail.toolbox_for({"mode": "tau-bench"}).specs
    a2 = set(airline.toolbox_for({"mode": "tau2"}).specs)
    assert len(a2) == 14 and "get_flight_status" in a2 and "think" not in a2
    assert "get_flight_status" not in airline.toolbox_for({"mode": "tau-bench"}).specs


ORDER, USER = "#W5918442", "sofia_rossi_8776"
ITEMS, NEW = ["1725100896", "5312063289"], ["9007697085", "6843647669"]
NEW_PRICES = {"9007697085": 318.96, "6843647669": 180.1}


def test_modify_items_quirk_gives_every_item_the_last_variant():
    args = {"order_id": ORDER, "item_ids": ITEMS, "new_item_ids": NEW, "payment_method_id": "credit_card_5051208"}
    for mode, prices in (("tau2", [180.1, 180.1]), ("tau-bench", [318.96, 180.1])):
        (out,) = _call("retail", mode, [("modify_pending_order_items", args)])
        assert out.status == "ok", out.content
        items = {i["item_id"]: i["price"] for i in json.loads(out.content)["items"]}
        assert [items[n] for n in NEW] == prices, mode


def test_modify_items_refuses_the_same_item_in_tau2():
    args = {"order_id": ORDER, "item_ids": ITEMS[:1], "new_item_ids": ITEMS[:1],
            "payment_method_id": "credit_card_5051208"}
    (t2,) = _call("retail", "tau2", [("modify_pending_order_items", args)])
    assert t2.status == "tool_error" and t2.content.startswith("Error: ")
    assert "different" in t2.content


def test_pending_status_check_accepts_item_modified_in_tau2():
    modify = ("modify_pending_order_items", {"order_id": ORDER, "item_ids": ITEMS[:1], "new_item_ids": NEW[:1],
                                             "payment_method_id": "credit_card_5051208"})
    address = ("modify_pending_order_address", {"order_id": ORDER, "address1": "1 Main St", "address2": "",
                                                "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"})
    assert [o.status for o in _call("retail", "tau2", [modify, address])] == ["ok", "ok"]
    assert [o.status for o in _call("retail", "tau-bench", [modify, address])] == ["ok", "tool_error"]


def test_retail_rendering_and_item_details():
    user, order, item = _call("retail", "tau2", [("get_user_details", {"user_id": USER}),
                                                  ("get_order_details", {"order_id": ORDER}),
                                                  ("get_item_details", {"item_id": NEW[0]})])
    u = json.loads(user.content)
    assert next(iter(u)) == "user_id" and u["user_id"] == USER
    o = json.loads(order.content)
    assert o["cancel_reason"] is None and o["return_items"] is None and "exchange_items" in o
    assert list(o)[:5] == ["order_id", "user_id", "address", "items", "status"]
    assert json.loads(item.content) == {"item_id": NEW[0], "options": json.loads(item.content)["options"],
                                        "available": True, "price": NEW_PRICES[NEW[0]]}
    (v1_order,) = _call("retail", "tau-bench", [("get_order_details", {"order_id": ORDER})])
    assert "cancel_reason" not in json.loads(v1_order.content)
    (missing,) = _call("retail", "tau2", [("get_item_details", {"item_id": "0"})])
    assert missing.content == "Error: Item not found"


def _seats(out) -> int:
    legs = json.loads(out.content)
    return next(leg for leg in legs if leg["flight_number"] == "HAT001")["available_seats"]["economy"]


def test_booking_takes_seats_in_tau2():
    search = ("search_direct_flight", {"origin": "PHL", "destination": "LGA", "date": "2024-05-16"})
    book = ("book_reservation", {
        "user_id": "mia_li_3668", "origin": "PHL", "destination": "LGA", "flight_type": "one_way",
        "cabin": "economy", "flights": [{"flight_number": "HAT001", "date": "2024-05-16"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"},
                       {"first_name": "Al", "last_name": "Li", "dob": "1991-04-05"}],
        "payment_methods": [{"payment_id": "credit_card_4421486", "amount": 244}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"})
    before, booked, after = _call("airline", "tau2", [search, book, search])
    assert booked.status == "ok", booked.content
    assert (_seats(before), _seats(after)) == (10, 8)
    assert json.loads(before.content)[0]["date"] is None  # tau2's DirectFlight: date present, null
    assert json.loads(booked.content)["status"] is None
    before, booked, after = _call("airline", "tau-bench", [search, book, search])
    assert booked.status == "ok" and _seats(before) == _seats(after) == 10


def test_flight_change_sets_cabin_in_tau2():
    change = ("update_reservation_flights", {
        "reservation_id": "Z7GOZK", "cabin": "economy", "payment_id": "credit_card_9969263",
        "flights": [{"flight_number": "HAT188", "date": "2024-05-28"},
                    {"flight_number": "HAT207", "date": "2024-05-28"}]})
    show = ("get_reservation_details", {"reservation_id": "Z7GOZK"})
    for mode, cabin in (("tau2", "economy"), ("tau-bench", "basic_economy")):
        out, details = _call("airline", mode, [change, show])
        assert out.status == "ok", out.content
        assert json.loads(details.content)["cabin"] == cabin, mode


def test_flight_status_and_certificate_limit():
    status, missing = _call("airline", "tau2", [
        ("get_flight_status", {"flight_number": "HAT002", "date": "2024-05-15"}),
        ("get_flight_status", {"flight_number": "HAT002", "date": "2023-01-01"})])
    assert status.content == "delayed"
    assert missing.content == "Error: Flight HAT002 not found on date 2023-01-01"
    send = ("send_certificate", {"user_id": "mia_li_3668", "amount": 50})
    outs = _call("airline", "tau2", [send] * 4)
    assert [o.status for o in outs] == ["ok", "ok", "ok", "tool_error"]
    assert outs[3].content == "Error: Too many certificates"
    assert [o.status for o in _call("airline", "tau-bench", [send] * 4)] == ["ok"] * 4


def test_onestop_second_leg_date_follows_tau2():
    from domains.airline._modes import tau2_second_date as _tau2_second_date

    assert _tau2_second_date("2024-05-05") == "2024-05-6"  # tau2's unpadded day: finds no flight
    assert _tau2_second_date("2024-05-16") == "2024-05-17"
    (out,) = _call("airline", "tau2", [("search_onestop_flight", {"origin": "LGA", "destination": "PHL",
                                                                  "date": "2024-05-16"})])
    pairs = json.loads(out.content)
    assert pairs, "LGA to PHL via a connection has results on 2024-05-16"
    for first, second in pairs:
        assert first["date"] == "2024-05-16"
        assert second["date"] == ("2024-05-17" if "+1" in first["scheduled_arrival_time_est"] else "2024-05-16")
        assert second["scheduled_departure_time_est"] >= first["scheduled_arrival_time_est"]


# ------------------------------------------------------------------------------------------------ grading rules
def test_communicate_rules():
    assert communicated_tau2(["10"], ["That is $100."]) == []  # tau2's substring rule
    assert communicated_tau2(["1,000"], ["It costs 1000 dollars"]) == []
    assert communicated_tau2(["Refund"], ["no money back"]) == ["Refund"]


def test_action_matching_with_compare_args():
    gold = Action(name="cancel_reservation", arguments={"reservation_id": "X1", "reason": "a"},
                  compare_args=["reservation_id"])
    assert action_matches(gold, "cancel_reservation", {"reservation_id": "X1", "reason": "b"})
    assert not action_matches(gold, "cancel_reservation", {"reservation_id": "X2"})
    assert not action_matches(gold, "cancel_reservation", {"reservation_id": "X1"}, requestor="user")
    every = gold.model_copy(update={"compare_args": None})
    assert not action_matches(every, "cancel_reservation", {"reservation_id": "X1", "reason": "b"})
    name_only = gold.model_copy(update={"compare_args": []})
    assert action_matches(name_only, "cancel_reservation", None)


def test_communicate_option_changes_the_outputs_rule(tmp_path):
    doc = _run("airline", "null", tmp_path, "--option", "communicate=tau2", "--task-ids", "0")
    assert doc["config"]["options"]["communicate"] == "tau2"
    assert doc["trials"][0]["grade"]["outputs"]["rule"] == "tau2"


# ------------------------------------------------------------------------------------------------ ending rules
class _Errors:
    def step(self, messages):
        return AgentTurn(message=Message(role="assistant", tool_calls=[ToolCall(id="c", name="nope", arguments={})]))


class _Talker:
    def __init__(self):
        self.seen = []

    def reply(self, view):
        self.seen.append([m.content for m in view])
        return UserTurn(content="hello")


def test_ten_tool_errors_end_the_trial_and_the_agent_greets_first():
    dom = get_domain("retail")
    tpl = dom.template(PEERS / "retail")
    user = _Talker()
    with tpl.trial() as db:
        traj = Conversation(_Errors(), user, dom.toolbox_for(tpl.options), ToolContext(db.session, db.options),
                                Limits(max_tool_errors=10, greeting=GREETING)).run()
    assert traj.termination_reason == TerminationReason.TOO_MANY_ERRORS
    assert len(traj.tool_calls) == 10
    assert traj.messages[0].role == "assistant" and traj.messages[0].content == GREETING
    assert user.seen[0] == [GREETING]


def test_out_of_scope_token_is_a_stop_only_when_the_suite_says_so():
    assert parse_user_reply("I am not sure. ###OUT-OF-SCOPE###", ("###OUT-OF-SCOPE###",)).stop
    plain = parse_user_reply("I am not sure. ###OUT-OF-SCOPE###")
    assert not plain.stop and "OUT-OF-SCOPE" in plain.content
    assert parse_user_reply("Thanks ###TRANSFER###").stop


def test_initial_state_data_merge_and_message_history_replay(tmp_path):
    """agent_data is deep-merged into the DB; the history's successful mutating calls are replayed."""
    dom = get_domain("retail")
    tpl = dom.template(PEERS / "retail")
    history = [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "h1", "name": "cancel_pending_order",
                         "arguments": {"order_id": ORDER, "reason": "no longer needed"}},
                        {"id": "h2", "name": "modify_user_address",
                         "arguments": {"user_id": USER, "address1": "x", "address2": "", "city": "c", "state": "s",
                                       "country": "USA", "zip": "00000"}}]},
        {"role": "tool", "id": "h1", "content": "{}", "error": False},
        {"role": "tool", "id": "h2", "content": "Error: refused", "error": True},
        {"role": "user", "content": "thanks"},
    ]
    raw = _task(initial_state={"initialization_data": {"agent_data": {"users": {USER: {"email": "new@x.com"}}}},
                               "message_history": history})
    (task,) = parse_tau2_tasks([raw], "tasks.json")
    from simulator.world.replay import prepare_trial

    with tpl.trial() as db:
        prepare_trial(dom, db, task)
        state = dom.dump(db)
    assert state["users"][USER]["email"] == "new@x.com"
    assert state["users"][USER]["name"]["first_name"] == "Sofia"  # the rest of the record kept
    assert state["orders"][ORDER]["status"] == "cancelled"
    assert state["users"][USER]["address"]["city"] != "c"  # the failed call is not replayed
    bad = _task(initial_state={"initialization_data": {"user_data": {"device": {}}}})
    (task,) = parse_tau2_tasks([bad], "tasks.json")
    from simulator.world.replay import GoldToolBug

    with tpl.trial() as db, pytest.raises(GoldToolBug, match="user_data: domain 'retail' has no user side"):
        prepare_trial(dom, db, task)


def test_env_assertions_call_the_domains_assertion_functions():
    """tau2 env_assertions and the ``env`` assertion type share one domain hook: ``assertion_functions``."""
    dom = get_domain("mock")
    checks = [
        EnvAssertion(func_name="assert_number_of_tasks", arguments={"user_id": "user_1", "expected_number": 1}),
        EnvAssertion(func_name="assert_number_of_tasks", arguments={"user_id": "user_1", "expected_number": 2}),
        EnvAssertion(func_name="assert_task_status", arguments={"task_id": "task_1", "expected_status": "done"},
                     assert_value=False),
        EnvAssertion(func_name="assert_number_of_tasks", arguments={"user_id": "nobody", "expected_number": 1}),
        EnvAssertion(env_type="user", func_name="assert_number_of_tasks", arguments={}),
    ]
    with dom.template().trial() as db:
        res = check_env_assertions(dom, db, checks)
    assert [r.passed for r in res.results] == [True, False, True, False, False]
    assert not res.passed
    assert "User nobody not found" in (res.results[3].error or "")
    assert "no user-side assertion function 'assert_number_of_tasks'" in (res.results[4].error or "")

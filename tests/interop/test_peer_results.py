"""Importing peer results (tau-bench, tau2) and regrading them, stored runs and run files; semantic divergence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import PeerResultsError
from simulator.execution.regrade import regrade_document, regrade_run
from simulator.interop.peer_results import read_peer_results
from simulator.storage.store import ResultsStore
from simulator.types.results import PEER_REWARD
from simulator.world.domain import get_domain
from simulator.world.replay import same_observation

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers" / "tau-bench"
RETAIL = PEERS / "retail"
needs_peers = pytest.mark.skipif(not (RETAIL / "data" / "orders.json").exists(),
                                 reason=f"peer data not found at {PEERS}")


def cli(*args: Any) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


# ------------------------------------------------------------------------------------------------ semantics
@pytest.mark.parametrize(("recorded", "replayed", "same"), [
    (("ok", '{"a": 1, "b": [1, 2]}'), ("ok", '{"b":[1,2],"a":1}'), True),  # key order and spacing
    (("ok", '{"a": 1}'), ("ok", '{"a": 2}'), False),
    (("ok", '{"a": 1.0}'), ("ok", '{"a": 1}'), True),  # equal JSON numbers
    (("tool_error", "Error: order not found"), ("tool_error", "Error: unknown order #W1"), True),  # errors as errors
    (("tool_error", "Error: x"), ("invalid_arguments", "Error: invalid arguments"), True),
    (("ok", "Error: x"), ("tool_error", "Error: x"), False),  # the same text, but one is an error
    (("ok", "done "), ("ok", "done"), True),
    (("ok", "done"), ("ok", "Done"), False),
])
def test_same_observation(recorded: tuple[str, str], replayed: tuple[str, str], same: bool) -> None:
    assert same_observation(*recorded, *replayed) is same


# ------------------------------------------------------------------------------------------------ round trip
def test_export_import_regrade_reproduces_every_trial(tmp_path: Path) -> None:
    run_file, exported, url = tmp_path / "run.json", tmp_path / "tb.json", f"sqlite:///{tmp_path / 'runs.db'}"
    cli("run", "--domain", "airline", "--agent", "faulty:wrong_argument=0.3,skip_confirmation=0.3,duplicate_write=0.2",
        "--trials", "2", "--out", run_file, "--no-progress")
    original = {(t["task_id"], t["trial"]): t["passed"] for t in json.loads(run_file.read_text())["trials"]}
    assert len(original) == 50 and 0 < sum(original.values()) < 50  # both outcomes are present
    cli("export", run_file, "--format", "tau-bench", "--out", exported)
    text = cli("import", exported, "--format", "tau-bench", "--domain", "airline", "--store", url, "--run-id", "imp")
    assert "imported 50 conversations of 25 tasks" in text
    with ResultsStore(url) as st:
        imported = st.load_trials("imp")
        assert all(t.grade is None for t in imported)  # stored ungraded, with the peer's reward
        assert {(t.task_id, t.trial): t.trajectory.agent_metadata[PEER_REWARD] == 1.0 for t in imported} == original
        report = regrade_run(st, "imp")
        regraded = {(t.task_id, t.trial): t.passed for t in st.load_trials("imp")}
        assert all(t.grade is not None for t in st.load_trials("imp"))
    assert regraded == original
    assert report.regraded == 50 and report.peer_compared == 50 and report.peer_agreed == 50
    assert report.changed == [] and report.disagreements == [] and report.diverged == []
    # the run file itself, without a store
    out = cli("regrade", run_file, "--out", tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text())
    assert {(t["task_id"], t["trial"]): t["passed"] for t in again["trials"]} == original
    assert len(again["regrades"]) == 1 and "trials changed: 0" in out
    assert again["metrics"]["pass^1"] == pytest.approx(sum(original.values()) / 50)


# ------------------------------------------------------------------------------------------------ hand-written
ORDER, ITEM, WANTED, WRONG = "#W6908222", "8555936349", "4063058357", "9580569596"  # tau-bench retail task 75


def _order_record() -> dict[str, Any]:
    return json.loads((RETAIL / "data" / "orders.json").read_text())[ORDER]


def _exchanged(new_item: str, difference: float) -> dict[str, Any]:
    """The order as tau-bench's exchange tool returns it (written from its documented semantics)."""
    return {**_order_record(), "status": "exchange requested", "exchange_items": [ITEM],
            "exchange_new_items": [new_item], "exchange_payment_method_id": "paypal_4518393",
            "exchange_price_difference": difference}


def _conversation(new_item: str, difference: float) -> list[dict[str, Any]]:
    def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    def result(cid: str, name: str, value: Any) -> dict[str, Any]:
        # the peer's own rendering: another key order and indentation than tausim's
        return {"role": "tool", "tool_call_id": cid, "name": name, "content": json.dumps(value, indent=2,
                                                                                          sort_keys=True)}

    exchange = {"order_id": ORDER, "item_ids": [ITEM], "new_item_ids": [new_item],
                "payment_method_id": "paypal_4518393"}
    return [
        {"role": "system", "content": "the policy"},
        {"role": "user", "content": "Hi, I want to exchange my earbuds from order #W6908222."},
        call("c1", "find_user_id_by_email", {"email": "liam.moore6985@example.com"}),
        {"role": "tool", "tool_call_id": "c1", "name": "find_user_id_by_email", "content": "liam_moore_4057"},
        call("c2", "get_order_details", {"order_id": ORDER}),
        result("c2", "get_order_details", _order_record()),
        {"role": "assistant", "content": "Exchange the blue 8-hour earbuds for the new ones, to PayPal. Confirm?"},
        {"role": "user", "content": "Yes."},
        call("c3", "exchange_delivered_order_items", exchange),
        result("c3", "exchange_delivered_order_items", _exchanged(new_item, difference)),
        {"role": "assistant", "content": "Done: the exchange is requested."},
        {"role": "user", "content": "Thanks! ###STOP###"},
    ]


def _tau_bench_file(tmp_path: Path, rewards: tuple[float, float]) -> Path:
    # trial 0: the requested variant (black, 4 hours, not resistant: 243.34 - 226.49 = 16.85)
    # trial 1: another variant (black, 4 hours, IPX7: 257.38 - 226.49 = 30.89), which the task does not want
    records = [{"task_id": 75, "reward": rewards[0], "info": {}, "traj": _conversation(WANTED, 16.85), "trial": 0},
               {"task_id": 75, "reward": rewards[1], "info": {}, "traj": _conversation(WRONG, 30.89), "trial": 1}]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records))
    return path


@needs_peers
def test_hand_written_tau_bench_results_regrade_to_the_right_outcomes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    cli("import", _tau_bench_file(tmp_path, (1.0, 0.0)), "--format", "tau-bench", "--domain", "retail",
        "--data", RETAIL / "data", "--store", url, "--run-id", "peer")
    text = cli("regrade", "peer", "--store", url)
    with ResultsStore(url) as st:
        trials = st.load_trials("peer")
        assert st.require_run("peer").config.tasks == str(RETAIL / "tasks_test.json")  # found next to --data
    assert [(t.task_id, t.trial, t.passed) for t in trials] == [("75", 0, True), ("75", 1, False)]
    failed = trials[1].grade
    assert failed is not None and not failed.state.passed
    assert {(d["table"], d["field"]) for d in failed.state.differences} == {
        ("orders", "exchange_new_items"), ("orders", "exchange_price_difference")}
    assert any(WRONG in str(d["actual"]) for d in failed.state.differences)
    assert "agreement with the peer's reward: 2/2 (100.0%)" in text
    # every replayed observation means what the peer saw (JSON compared by value, not by text)
    assert "replayed differently" not in text
    first = trials[0].trajectory
    assert [(c.name, c.status) for c in first.tool_calls] == [
        ("find_user_id_by_email", "ok"), ("get_order_details", "ok"), ("exchange_delivered_order_items", "ok")]
    assert first.termination_reason == "user_stop" and first.messages[0].role == "user"  # system prompt dropped


@needs_peers
def test_a_disagreement_is_listed_with_its_state_differences(tmp_path: Path) -> None:
    results = _tau_bench_file(tmp_path, (1.0, 1.0))  # the peer (wrongly) rewarded the wrong variant
    text = cli("regrade", results, "--format", "tau-bench", "--domain", "retail", "--data", RETAIL / "data")
    assert "agreement with the peer's reward: 1/2 (50.0%)" in text
    assert "DISAGREE task 75 trial 1: peer reward 1, tausim fail (state)" in text
    assert f"orders[{ORDER}].exchange_new_items: expected '[\"{WANTED}\"]', actual '[\"{WRONG}\"]'" in text
    assert f"orders[{ORDER}].exchange_price_difference: expected 16.85, actual 30.89" in text


@needs_peers
def test_a_diverging_observation_is_counted_by_tool(tmp_path: Path) -> None:
    records = [{"task_id": 75, "reward": 0.0, "trial": 0, "traj": _conversation(WANTED, 16.85)}]
    tampered = records[0]["traj"][5]
    tampered["content"] = json.dumps({**_order_record(), "status": "pending"})  # not what tausim's tool returns
    records[0]["traj"][3]["content"] = "Error: no such user"  # the peer saw an error: not replayed, not compared
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records))
    domain = get_domain("retail")
    imported = read_peer_results(path, "tau-bench", domain, data_dir=RETAIL / "data",
                                 tasks=str(RETAIL / "tasks_test.json"))
    assert [c.status for c in imported.trials[0].trajectory.tool_calls] == ["tool_error", "ok", "ok"]
    doc = {"format": "tausim.run", "config": imported.config.model_dump(mode="json"),
           "trials": [t.model_dump(mode="json") for t in imported.trials], "task_ids": ["75"]}
    report, new = regrade_document(doc, name=str(path))
    assert report.diverged == [("75", 0, 1)] and report.diverged_by_tool == {"get_order_details": 1}
    assert new["trials"][0]["passed"] is True and report.disagreements[0].peer_reward == 0.0


@needs_peers
def test_tau2_results_are_imported(tmp_path: Path) -> None:
    def tau2(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for m in messages:
            if m["role"] == "system":
                continue
            if m["role"] == "tool":
                out.append({"role": "tool", "id": m["tool_call_id"], "content": m["content"], "requestor": "assistant",
                            "error": False})
            elif m.get("tool_calls"):
                out.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"]),
                     "requestor": "assistant"} for c in m["tool_calls"]]})
            else:
                out.append({"role": m["role"], "content": m["content"]})
        return out

    doc = {"info": {}, "tasks": [], "simulations": [
        {"id": "s0", "task_id": "75", "trial": 0, "termination_reason": "user_stop", "reward_info": {"reward": 1.0},
         "messages": tau2(_conversation(WANTED, 16.85))},
        {"id": "s1", "task_id": "75", "trial": 1, "termination_reason": "max_steps", "reward_info": {"reward": 0.0},
         "messages": tau2(_conversation(WRONG, 30.89))}]}
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(doc))
    imported = read_peer_results(path, "tau2", get_domain("retail"), data_dir=RETAIL / "data",
                                 tasks=str(RETAIL / "tasks_test.json"))
    assert [(t.termination_reason, t.passed) for t in imported.trials] == [("user_stop", True), ("max_steps", False)]
    assert imported.config.trials == 2 and imported.config.options == {"mode": "tau-bench"}
    run_doc = {"format": "tausim.run", "config": imported.config.model_dump(mode="json"),
               "trials": [t.model_dump(mode="json") for t in imported.trials]}
    report, new = regrade_document(run_doc)
    assert [t["passed"] for t in new["trials"]] == [True, False] and report.peer_agreed == 2


@pytest.mark.parametrize(("content", "fmt", "message"), [
    ("{}", "tau-bench", "a JSON list of results"),
    ("[{\"task_id\": 1, \"reward\": \"yes\", \"traj\": []}]", "tau-bench", "result 0: reward must be a number"),
    ("[{\"task_id\": 1, \"reward\": 1, \"traj\": [{\"role\": \"robot\"}]}]", "tau-bench", "message 0: unknown role"),
    ("[{\"task_id\": 1, \"reward\": 1, \"traj\": [{\"role\": \"tool\", \"tool_call_id\": \"x\"}]}]", "tau-bench",
     "which no earlier assistant message made"),
    ("[]", "tau-bench", "no conversations"),
    ("not json", "tau-bench", "not JSON"),
    ("[]", "tau3", "--format 'tau3'"),
    ("{\"simulations\": [{\"task_id\": \"1\", \"messages\": []}]}", "tau2", "simulation 0: reward_info"),
])
def test_malformed_results_are_refused_naming_file_and_record(tmp_path: Path, content: str, fmt: str,
                                                               message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(PeerResultsError, match="bad.json|--format") as e:
        read_peer_results(path, fmt, get_domain("retail"))
    assert message in str(e.value)


@needs_peers
def test_regrade_reviews_the_peer_user(tmp_path: Path) -> None:
    traj = _conversation(WRONG, 30.89)
    traj[7]["content"] = "Thought: the agent wants a yes.\nYes."  # a ReAct user's reasoning reached the agent
    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"task_id": 75, "reward": 0.0, "trial": 0, "traj": traj}]))
    text = cli("regrade", path, "--format", "tau-bench", "--domain", "retail", "--data", RETAIL / "data")
    assert "user-simulator review: reasoning_leak 1 (trials flagged)" in text
    # a weakness: the trial failed on the agent's account (the state), not because of the leaked reasoning
    assert "of 1 failed trials: 0 caused by the simulator; 1 with a simulator weakness only" in text


@needs_peers
def test_regrade_separates_simulator_cause_from_weakness(tmp_path: Path) -> None:
    """One trial of each kind; the counts and pass^k both ways are worked out by hand below."""
    def ask(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": text}

    clean = _conversation(WANTED, 16.85)  # passes
    false_done = _conversation(WRONG, 30.89)  # the wrong variant; the user believes the claim: a weakness
    false_done[-2] = ask("The exchange has been requested successfully.")
    pending = _conversation(WANTED, 16.85)[:7] + [{"role": "user", "content": "###STOP###"}]  # stops at "Confirm?"
    invented = [clean[0], {"role": "user", "content": "Hi, I want to exchange my earbuds from order #W1234567."},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "type": "function", "function": {
                    "name": "get_order_details", "arguments": json.dumps({"order_id": "#W1234567"})}}]},
                {"role": "tool", "tool_call_id": "c9", "name": "get_order_details",
                 "content": "Error: order not found"},
                ask("I could not find that order."), {"role": "user", "content": "Oh well. ###STOP###"}]
    leak = _conversation(WANTED, 16.85)  # the user names the new item's id it was never given: the answer leaked
    leak[1] = {"role": "user", "content": f"Hi, exchange my earbuds from order #W6908222 for item {WANTED}."}
    convs = [(clean, 1.0), (false_done, 0.0), (pending, 0.0), (invented, 0.0), (leak, 1.0)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"task_id": 75, "reward": r, "info": {}, "traj": c, "trial": i}
                                for i, (c, r) in enumerate(convs)]))
    text = cli("regrade", path, "--format", "tau-bench", "--domain", "retail", "--data", RETAIL / "data")
    assert "agreement with the peer's reward: 5/5" in text
    # failures: trials 1, 2, 3; caused: 2 (stop before the write, invented order acted on); weakness only: 1
    assert ("of 3 failed trials: 2 caused by the simulator (stopped_with_pending_write 1 (33.3%), "
            "invented_fact_acted_on 1 (33.3%)); 1 with a simulator weakness only") in text
    assert "1 passed trials set apart too (answer leaked)" in text
    # measured: 2 of 5 passed: pass^1 = 0.4, pass^2 = C(2,2)/C(5,2) = 0.1; set apart (trials 2, 3, 4): trials 0
    # (pass) and 1 (fail) remain: pass^1 = 0.5, pass^2 = C(1,2)/C(2,2) = 0
    assert "pass^1 0.4000 / 0.5000 (1 tasks); pass^2 0.1000 / 0.0000 (1 tasks)" in text
    assert "pass^3 0.0000 / - (0 tasks)" in text  # two trials left: no pass^3


@needs_peers
def test_imported_model_output_is_made_safe_like_live_output(tmp_path: Path) -> None:
    """Half an emoji in a user or tool message and a NaN argument in a peer's file: recorded safely, noted."""
    conv = _conversation(WANTED, 16.85)
    conv[1] = {"role": "user", "content": "Hi \ud83d, I want to exchange my earbuds from order #W6908222."}
    conv[3] = {**conv[3], "content": "liam_moore_4057 \ud83d"}
    conv.insert(4, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "get_order_details", "arguments": '{"order_id": NaN}'}}]})
    conv.insert(5, {"role": "tool", "tool_call_id": "c0", "name": "get_order_details", "content": "Error: bad"})
    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"task_id": 75, "reward": 1.0, "info": {}, "traj": conv, "trial": 0}]))
    imported = read_peer_results(path, "tau-bench", get_domain("retail"), data_dir=RETAIL / "data")
    (trial,) = imported.trials
    traj = trial.trajectory
    assert traj.messages[0].content == "Hi \ufffd, I want to exchange my earbuds from order #W6908222."
    assert traj.tool_calls[0].content == "liam_moore_4057 \ufffd"
    nan_call = traj.tool_calls[1]
    assert nan_call.arguments is None and "NaN" in (nan_call.raw_arguments or "")
    assert any("surrogate" in n for n in traj.notes) and any("non-finite" in n for n in traj.notes)
    trial.model_dump_json()  # encodes: no lone surrogate left

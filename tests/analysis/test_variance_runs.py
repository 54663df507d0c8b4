"""Variance apart, end to end: seeded offline sides whose spread is known, and a cached model agent held fixed.

- a deterministic agent (the retail reference agent) with a rule user playing a persona that answers the wrong
  question half the time and gives up at once: every bit of spread is the simulator's;
- a seeded faulty oracle with the rule user: every bit is the agent's;
- environment faults count on the simulator's side;
- a model agent through the loopback OpenAI-compatible server with ``--vary user`` and a response cache: its model
  is called once per distinct prompt, every other call replays from the cache.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import mean, variance

import numpy as np
import pytest
from typer.testing import CliRunner

from simulator.analysis.variance import run_variance
from simulator.cli import app
from simulator.types.messages import UserTurn
from simulator.types.spec import RunSpec
from tests._support.openai_server import openai_server

IDS = ["cancel-no-longer-needed", "modify-order-address", "return-original-method", "exchange-two-items",
       "multi-cancel-and-return", "refuse-cancel-delivered"]
FLAKY = {"name": "flaky", "description": "Answers the wrong question half the time and gives up at once.",
         "patience": 1, "wrong_answer_rate": 0.5, "abandonment_phrases": ["Forget it."]}


def outcomes(result):
    """cell -> pass/fail list in trial order, read from the run's trials (independently of the module's table)."""
    cells = defaultdict(dict)
    for t in result.trials:
        cells[f"{t.task_id}@{t.persona}" if t.persona else t.task_id][t.trial] = float(t.passed)
    return {c: [v[i] for i in sorted(v)] for c, v in cells.items()}


def hand_spread(result):
    """Mean over tasks of the per-task sample variance, by the standard library."""
    return mean(variance(v) for v in outcomes(result).values())


def test_a_deterministic_agent_with_a_seeded_persona_puts_all_spread_on_the_simulator():
    spec = RunSpec(domain="retail", agent="reference", user="rule", trials=4, task_ids=IDS, personas=["flaky"],
                   persona_defs={"flaky": FLAKY}, seed=3)
    res = run_variance(spec)
    both, user, agent = (outcomes(res.runs[c]) for c in ("both", "user", "agent"))
    assert hand_spread(res.runs["both"]) > 0.1  # the persona's draws do make trials differ
    # the user keeps its seeds when the agent is held: a deterministic agent gives the same trials
    assert user == both
    # the user held: every trial of a task is the same
    assert all(len(set(v)) == 1 for v in agent.values())
    d = res.decomposition
    assert d.spread == pytest.approx({"both": hand_spread(res.runs["both"]), "user": hand_spread(res.runs["user"]),
                                      "agent": 0.0})
    assert d.shares == pytest.approx({"user": 1.0, "agent": 0.0, "interaction": 0.0, "user_main": 1.0,
                                      "agent_main": 0.0})


def test_a_seeded_faulty_agent_with_the_rule_user_puts_all_spread_on_the_agent():
    ids = [i for i in IDS if not i.startswith("multi-")]  # the oracle's plan and the rule user agree on these
    spec = RunSpec(domain="retail", agent="faulty:wrong_argument=0.5", user="rule", trials=4, task_ids=ids)
    res = run_variance(spec)
    both, user, agent = (outcomes(res.runs[c]) for c in ("both", "user", "agent"))
    assert hand_spread(res.runs["both"]) > 0.1
    assert agent == both and all(len(set(v)) == 1 for v in user.values())
    # the faults drawn: the agent's metadata says which trials got one, and only those failed
    for t in res.runs["both"].trials:
        assert t.passed == (t.trajectory.agent_metadata.get("fault") is None)
    assert res.decomposition.shares == pytest.approx({"user": 0.0, "agent": 1.0, "interaction": 0.0,
                                                      "user_main": 0.0, "agent_main": 1.0})


def test_environment_faults_count_on_the_simulators_side():
    spec = RunSpec(domain="retail", agent="reference", user="rule", trials=4, task_ids=IDS,
                   faults="transient=0.3,lost_ack=0.3")
    res = run_variance(spec)
    assert hand_spread(res.runs["both"]) > 0.0
    assert res.decomposition.spread["agent"] == 0.0 and res.decomposition.shares["user"] == pytest.approx(1.0)


def test_the_cli_writes_the_decomposition(tmp_path: Path):
    persona = tmp_path / "flaky.json"
    persona.write_text(json.dumps(FLAKY))
    out = tmp_path / "v.json"
    res = CliRunner().invoke(app, ["variance", "--domain", "retail", "--agent", "reference", "--user", "rule",
                                   "--personas", str(persona), "--trials", "3", "--task-ids", ",".join(IDS[:4]),
                                   "--out", str(out), "--runs-dir", str(tmp_path / "runs"), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["format"] == "tausim.variance" and doc["tasks"] == 4 and doc["trials"] == 3
    assert doc["shares"]["user"] == pytest.approx(1.0) and doc["shares"]["agent"] == 0.0
    assert "share of the spread from the simulator (user only / both): 1.00" in res.output
    runs = {c: json.loads((tmp_path / "runs" / f"variance-{c}.json").read_text()) for c in ("both", "user", "agent")}
    assert [r["config"]["vary"] for r in runs.values()] == ["both", "user", "agent"]
    # a report of the both run is an ordinary run document
    per_task = defaultdict(list)
    for t in runs["both"]["trials"]:
        per_task[t["task_id"]].append(float(t["passed"]))
    expected = mean(variance(v) for v in per_task.values())
    assert doc["spread"]["both"] == pytest.approx(expected)


def test_the_cli_refuses_a_single_trial_and_run_options_beside_a_spec(tmp_path: Path):
    res = CliRunner().invoke(app, ["variance", "--trials", "1"])
    assert res.exit_code == 2
    spec = tmp_path / "spec.json"
    spec.write_text(RunSpec(domain="retail", agent="reference", user="rule", trials=2,
                            task_ids=IDS[:2]).model_dump_json())
    res = CliRunner().invoke(app, ["variance", "--spec", str(spec), "--agent", "oracle", "--seed", "4"])
    assert res.exit_code == 2 and "--agent, --seed: ignored with --spec" in res.output
    out = tmp_path / "v.json"
    res = CliRunner().invoke(app, ["variance", "--spec", str(spec), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    # the reference agent without knobs and the rule user without a persona: no spread anywhere, shares undefined
    assert (doc["tasks"], doc["trials"], doc["spread"]["both"], doc["shares"]["user"]) == (2, 2, 0.0, None)
    assert "user only / both): -" in res.output


class CoinUser:
    """A test user: a fixed opening; then, by a coin drawn from its own seed, it stops or asks once more."""

    def __init__(self, ctx):
        self.again = bool(np.random.Generator(np.random.PCG64(ctx.seed)).random() < 0.5)
        self.turn = 0

    def reply(self, messages):
        self.turn += 1
        if self.turn == 1:
            return UserTurn(content="Hi, I need help with my order.")
        if self.turn == 2 and self.again:
            return UserTurn(content="Can you check it once more?")
        return UserTurn(content="Thanks. ###STOP###", stop=True)


@pytest.fixture()
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def model_run(tmp_path: Path, vary: str, trials: int = 8):
    """``tausim run --vary VARY --cache`` of a model agent on the loopback server; returns (requests, calls, hits)."""
    answers = ["Let me look into that for you."] * 40
    log, out = tmp_path / f"{vary}.log", tmp_path / f"{vary}.json"
    with openai_server({"agent": answers}) as server:
        res = CliRunner().invoke(app, [
            "run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed", "--agent", "litellm:openai/agent",
            "--user", "py:tests.analysis.test_variance_runs:CoinUser", "--api-base", server.api_base, "--trials",
            str(trials), "--vary", vary, "--cache", str(tmp_path / f"{vary}.sqlite"), "--log-file", str(log),
            "--out", str(out), "--no-progress", "--no-preflight"])  # exact call counts: no pre-flight call
        assert res.exit_code == 0, res.output
        requests = list(server.requests.get("agent", []))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [e for e in events if e.get("event") == "model_call"]
    trials_doc = json.loads(out.read_text())["trials"]
    return requests, calls, trials_doc


@pytest.mark.usefixtures("_no_proxy")
def test_a_held_model_agent_replays_from_the_cache(tmp_path: Path):
    requests, calls, trials = model_run(tmp_path, "user")
    agent_turns = sum(t["trajectory"]["agent_usage"]["calls"] for t in trials)
    # the agent's prompts, as the trajectories show them: the user's messages so far (the agent always says the same)
    prompts = {tuple(m["content"] for m in t["trajectory"]["messages"][:i + 1] if m["role"] == "user")
               for t in trials for i, m in enumerate(t["trajectory"]["messages"]) if m["role"] == "user"
               and not m["content"].startswith("Thanks.")}  # the user's stop: no agent turn follows
    again = sum(1 for t in trials if any(m["content"] == "Can you check it once more?"
                                         for m in t["trajectory"]["messages"]))
    assert 0 < again < len(trials)  # the user's coin varies from trial to trial
    assert agent_turns == len(trials) + again
    # one model call per distinct prompt; every other agent turn is a cache hit
    assert len(requests) == len(prompts) == 2
    assert sum(1 for c in calls if c.get("cached")) == agent_turns - 2
    assert len({r["seed"] for r in requests}) == 1  # the held seed, sent with every request

    requests, calls, trials = model_run(tmp_path, "both")
    agent_turns = sum(t["trajectory"]["agent_usage"]["calls"] for t in trials)
    # each trial's own seed: the same prompt in another trial is a new request (no trial replays another's)
    assert len(requests) == agent_turns and not any(c.get("cached") for c in calls)
    assert len({r["seed"] for r in requests}) == len(trials)


@pytest.mark.usefixtures("_no_proxy")
@pytest.mark.parametrize(("vary", "requests_expected"), [("agent", 2), ("both", 8)])
def test_a_held_model_user_replays_from_the_cache(tmp_path: Path, vary: str, requests_expected: int):
    """The reverse: --vary agent holds an LLM user's seed; the oracle says the same each trial, so 2 prompts."""
    script = ["Hi, I no longer need my order, please cancel it.", "Thanks, that is all. ###STOP###"] * 4
    with openai_server({"user": script}) as server:
        res = CliRunner().invoke(app, [
            "run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed", "--agent", "oracle", "--user",
            "llm:openai/user", "--api-base", server.api_base, "--trials", "4", "--vary", vary, "--cache",
            str(tmp_path / "c.sqlite"), "--no-progress", "--no-preflight"])
        assert res.exit_code == 0, res.output
        requests = server.requests["user"]
    # 4 trials x 2 user turns; held: one request per distinct prompt, the rest replayed
    assert len(requests) == requests_expected
    assert len({r["seed"] for r in requests}) == (1 if vary == "agent" else 4)


def test_run_refuses_an_unknown_vary():
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--vary", "sideways", "--no-progress"])
    assert res.exit_code == 2 and "field vary" in res.output

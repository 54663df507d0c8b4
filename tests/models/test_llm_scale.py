"""Running LLM agents and users at scale, offline: response cache, rate limits, API faults, logs, progress.

Models are scripted in-process litellm providers (tests/_support/fake_llm.py), so the real litellm code path runs and
each provider counts the calls it received. No test sleeps for real: retries wait ~1 ms, limiters get a fake
clock.
"""

from __future__ import annotations

import io
import json
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog
from rich.console import Console
from typer.testing import CliRunner

from simulator.agents import agent_factory
from simulator.cli import app
from simulator.dialogue.progress import RunProgress
from simulator.execution.runner import Runner, RunResult, TrialResult
from simulator.models.cache import SQLiteCache
from simulator.models.llm import LLMClient
from simulator.models.ratelimit import RateLimiter, RateLimiterRegistry
from simulator.storage.runlog import open_run_log
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import user_factory
from tests._support.fake_llm import register, tool_calls_response
from tests._support.toy import BankDomain, write_data

FAST = {"wait_initial": 0.001, "wait_max": 0.002}


def bank_tasks(*ids: str) -> list[Any]:
    return parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": i, "scenario": {"instructions": "Move $10 from A1 to B2.", "known_info": {"account": "A1"}},
         "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}],
         "required_outputs": ["90"]} for i in ids]})


def agent_script(litellm: Any) -> list[Any]:
    """One successful trial of the agent: a tool call, then the answer."""
    return [tool_calls_response(litellm, [("c1", "transfer", '{"src": "A1", "dst": "B2", "amount": 10}')]),
            "Done: I moved $10 from A1 to B2. Your new balance is 90."]


USER_SCRIPT = ["Hi, please move $10 from my account A1 to B2.", "Thanks! ###STOP###"]


def bank_run(tmp_path: Path, tasks: list[Any], trials: int, log: Any = None, **client: Any) -> RunResult:
    dom = BankDomain()
    template = dom.template(write_data(tmp_path / "bank"))
    cfg = RunSpec(domain="bank", agent="litellm:fakeagent/m", user="llm:fakeuser/m", trials=trials)
    runner = Runner(dom, template, tasks, agent_factory("litellm:fakeagent/m", **client),
                    user_factory("llm:fakeuser/m", **client), cfg, log=log)
    return runner.run()


def comparable(t: TrialResult) -> dict[str, Any]:
    """A trial without its wall-clock timings."""
    doc = t.model_dump(mode="json", exclude={"duration_s"})
    traj = doc["trajectory"]
    for key in ("agent_seconds", "user_seconds", "tool_seconds"):
        traj.pop(key)
    for call in traj["tool_calls"]:
        call.pop("duration_s")
    return doc


# --- response cache ----------------------------------------------------------------------------------------


def test_cached_rerun_is_identical_and_calls_no_model(litellm, tmp_path, monkeypatch):
    cache_file = tmp_path / "cache.sqlite"
    # seed=None: no model seed is sent, so only the trial seed in the cache key keeps the two trials apart
    first = register(monkeypatch, litellm, {"fakeagent": agent_script(litellm) * 2, "fakeuser": USER_SCRIPT * 2})
    with SQLiteCache(cache_file) as cache:
        r1 = bank_run(tmp_path, bank_tasks("move"), trials=2, cache=cache, seed=None, max_attempts=1)
        assert len(cache) == 8  # 2 trials x (2 agent + 2 user) calls: trials never share entries
    assert [t.termination_reason for t in r1.trials] == ["user_stop", "user_stop"]
    assert all(t.passed for t in r1.trials)
    assert (len(first["fakeagent"].calls), len(first["fakeuser"].calls)) == (4, 4)
    # the two trials sent identical requests: only the trial seed separated their cache entries
    assert first["fakeagent"].calls[0]["messages"] == first["fakeagent"].calls[2]["messages"]

    second = register(monkeypatch, litellm, {"fakeagent": [], "fakeuser": []})  # any call would fail
    with SQLiteCache(cache_file) as cache:  # reopened from disk
        r2 = bank_run(tmp_path, bank_tasks("move"), trials=2, cache=cache, seed=None, max_attempts=1)
    assert second["fakeagent"].calls == [] and second["fakeuser"].calls == []
    assert [comparable(t) for t in r2.trials] == [comparable(t) for t in r1.trials]
    assert r2.metrics == r1.metrics


def test_other_run_seed_misses_the_cache(litellm, tmp_path, monkeypatch):
    providers = register(monkeypatch, litellm, {"fakeagent": agent_script(litellm) * 2, "fakeuser": USER_SCRIPT * 2})
    with SQLiteCache(tmp_path / "c.sqlite") as cache:
        bank_run(tmp_path, bank_tasks("move"), trials=1, cache=cache, seed=None)
        bank_run(tmp_path, bank_tasks("other"), trials=1, cache=cache, seed=None)  # other task id: other seed
        assert len(cache) == 8
    assert len(providers["fakeagent"].calls) == 4


def test_sqlite_cache_mapping_threads_and_persistence(litellm, tmp_path):
    path = tmp_path / "c.sqlite"
    r = LLMClient("openai/gpt-4o-mini").complete([{"role": "user", "content": "hi"}], mock_response="hello")
    with SQLiteCache(path) as cache:
        def put(i: int) -> None:
            for j in range(20):
                cache[f"k{i}-{j}"] = r
        threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cache) == 160 and "k3-7" in cache and "nope" not in cache
        del cache["k0-0"]
        with pytest.raises(KeyError):
            del cache["k0-0"]
    with SQLiteCache(path) as again:
        assert len(again) == 159
        assert again["k7-19"] == r and again.get("missing") is None
        with pickle.loads(pickle.dumps(again)) as copy:  # e.g. sent to a worker process: reopens the file
            assert copy.path == path and len(copy) == 159


# --- API faults ---------------------------------------------------------------------------------------------


def test_transient_faults_are_retried_and_counted(litellm, tmp_path, monkeypatch):
    faults = [litellm.RateLimitError("slow down", "fakeagent", "m"),
              litellm.InternalServerError("boom", "fakeagent", "m"),
              litellm.Timeout("timed out", "m", "fakeagent")]
    providers = register(monkeypatch, litellm, {
        "fakeagent": [*faults, *agent_script(litellm)],
        "fakeuser": [litellm.RateLimitError("slow down", "fakeuser", "m"), *USER_SCRIPT],
    })
    res = bank_run(tmp_path, bank_tasks("move"), trials=1, max_attempts=4, **FAST)
    trial = res.trials[0]
    assert trial.termination_reason == "user_stop" and trial.passed, trial.error
    traj = trial.trajectory
    assert (traj.agent_usage.calls, traj.agent_usage.attempts) == (2, 5)
    assert (traj.user_usage.calls, traj.user_usage.attempts) == (2, 3)
    assert len(providers["fakeagent"].calls) == 5 and len(providers["fakeuser"].calls) == 3


def test_exhausted_retries_record_infra_error_and_the_run_goes_on(litellm, tmp_path, monkeypatch):
    errors = [litellm.InternalServerError("boom", "fakeagent", "m") for _ in range(3)]
    providers = register(monkeypatch, litellm, {
        "fakeagent": [*errors, *agent_script(litellm)],
        "fakeuser": [USER_SCRIPT[0], *USER_SCRIPT],
    })
    buf = io.StringIO()
    from simulator.storage.runlog import run_logger

    res = bank_run(tmp_path, bank_tasks("broken", "fine"), trials=1, log=run_logger(buf, "r-faults"),
                   max_attempts=3, **FAST)
    broken, fine = res.trials
    assert broken.task_id == "broken" and broken.termination_reason == "infra_error" and not broken.passed
    assert "after 3 attempt(s)" in (broken.error or "") and "InternalServerError" in (broken.error or "")
    assert fine.termination_reason == "user_stop" and fine.passed
    assert res.termination_reasons == {"infra_error": 1, "user_stop": 1}
    assert res.metrics["pass^1"] == 0.5  # the failed trial counts against the run, never dropped
    assert len(providers["fakeagent"].calls) == 5
    events = [json.loads(line) for line in buf.getvalue().splitlines()]
    failed = [e for e in events if e["event"] == "model_call" and e.get("error")]
    assert len(failed) == 1 and failed[0]["attempts"] == 3 and failed[0]["task_id"] == "broken"
    assert failed[0]["role"] == "agent" and failed[0]["level"] == "error"


def test_auth_errors_are_not_retried(litellm, tmp_path, monkeypatch):
    providers = register(monkeypatch, litellm, {
        "fakeagent": [litellm.AuthenticationError("bad key", "fakeagent", "m")],
        "fakeuser": [USER_SCRIPT[0]],
    })
    res = bank_run(tmp_path, bank_tasks("move"), trials=1, max_attempts=4, **FAST)
    assert res.trials[0].termination_reason == "setup_error"  # refused credentials: the set-up's, not the agent's
    assert len(providers["fakeagent"].calls) == 1


# --- rate limits --------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)


def test_limiter_allows_rpm_requests_per_sliding_minute():
    clock = FakeClock()
    lim = RateLimiter(3, clock=clock, sleep=clock.sleep)
    assert [lim.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert lim.acquire() == 60.0  # 4th request: a minute after the 1st
    clock.now += 30
    assert lim.reserve() == 30.0  # the 2nd slot frees at 1060
    clock.now += 100  # all old reservations expired
    assert lim.reserve() == 0.0
    assert clock.slept == [60.0]
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_limiter_is_thread_safe():
    clock = FakeClock()
    lim = RateLimiter(10, clock=clock, sleep=clock.sleep)
    waits: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            w = lim.reserve()
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == [60.0 * (i // 10) for i in range(50)]  # exactly 10 slots per minute


def test_registry_shares_one_limiter_per_model_and_clients_use_it(litellm, monkeypatch):
    clock = FakeClock()
    reg = RateLimiterRegistry(2, clock=clock, sleep=clock.sleep)
    assert reg.get("a/m") is reg.get("a/m") and reg.get("a/m") is not reg.get("b/m")
    assert RateLimiterRegistry(None).get("a/m") is None
    only_a = RateLimiterRegistry({"a/m": 5})
    assert only_a.get("b/m") is None and only_a.get("a/m").rpm == 5  # type: ignore[union-attr]
    # agent and user clients of the same model share the limit; a retry is a request too
    register(monkeypatch, litellm, {"fakeagent": ["one", litellm.RateLimitError("rl", "fakeagent", "m"), "two"]})
    c1 = LLMClient("fakeagent/m", limiters=reg, **FAST)
    c2 = LLMClient("fakeagent/m", limiters=reg, **FAST)
    assert c1.rate_limiter is c2.rate_limiter
    c1.complete([{"role": "user", "content": "x"}])
    assert clock.slept == []
    c2.complete([{"role": "user", "content": "y"}])  # 2 requests: the failed try (free slot) and the retry
    assert clock.slept == [60.0]


def test_no_module_level_limiter_state():
    a, b = RateLimiterRegistry(1), RateLimiterRegistry(1)
    assert a.get("m") is not b.get("m")


# --- logs ---------------------------------------------------------------------------------------------------


def test_log_events_carry_run_task_and_trial(litellm, tmp_path, monkeypatch):
    register(monkeypatch, litellm, {"fakeagent": agent_script(litellm) * 2, "fakeuser": USER_SCRIPT * 2})
    config_before = structlog.get_config()
    path = tmp_path / "run.jsonl"
    with open_run_log(path, "run-1") as log:
        bank_run(tmp_path, bank_tasks("move"), trials=2, log=log)
    assert structlog.get_config() == config_before  # no global configuration touched
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert {e["event"] for e in events} == {"trial_start", "model_call", "tool_call", "trial_end"}
    assert all(e["run_id"] == "run-1" and e["task_id"] == "move" and e["trial"] in (0, 1) for e in events)
    for trial in (0, 1):
        names = [e["event"] for e in events if e["trial"] == trial]
        assert names[0] == "trial_start" and names[-1] == "trial_end"
        assert names.count("model_call") == 4 and names.count("tool_call") == 1
    end = next(e for e in events if e["event"] == "trial_end")
    assert end["termination"] == "user_stop" and end["passed"] is True
    call = next(e for e in events if e["event"] == "model_call" and e["role"] == "agent")
    assert call["model"] == "fakeagent/m" and call["attempts"] == 1 and call["cached"] is False
    assert {"prompt_tokens", "completion_tokens", "cost_usd", "latency_s"} <= call.keys()
    tool = next(e for e in events if e["event"] == "tool_call")
    assert (tool["name"], tool["status"], tool["kind"]) == ("transfer", "ok", "write")


# --- progress -----------------------------------------------------------------------------------------------


def test_progress_bar_shows_done_pass_rate_and_cost(litellm, tmp_path, monkeypatch):
    register(monkeypatch, litellm, {"fakeagent": agent_script(litellm) * 2, "fakeuser": USER_SCRIPT * 2})
    res = bank_run(tmp_path, bank_tasks("move"), trials=2)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150)
    with RunProgress(4, console=console) as progress:
        for t in res.trials:
            progress.update(t)
        progress.update(res.trials[0].model_copy(update={"passed": False}))
    assert progress.fields()["pass_rate"] == "66.7%"
    text = out.getvalue()
    assert "3/4" in text and "66.7%" in text and "cost $" in text and "ETA" in text
    quiet = io.StringIO()
    with RunProgress(4, enabled=False, console=Console(file=quiet, force_terminal=True)) as off:
        off.update(res.trials[0])
    assert quiet.getvalue() == "" and off.done == 1


# --- the command line ---------------------------------------------------------------------------------------


def test_cli_cache_log_rpm_rerun_calls_no_model(litellm, tmp_path, monkeypatch):
    args = ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed", "--trials", "2",
            "--agent", "litellm:fakeagent/m", "--user", "llm:fakeuser/m", "--cache", str(tmp_path / "c.sqlite"),
            "--rpm", "1000", "--no-progress"]
    user = ["Hi, I want to cancel an order.", "Never mind. ###STOP###"]
    # one pre-flight call per model first (cached too: the rerun's pre-flight calls no model either)
    first = register(monkeypatch, litellm, {"fakeagent": ["ok"] + ["I can help with that."] * 2,
                                            "fakeuser": ["ok"] + user * 2})
    res1 = CliRunner().invoke(app, [*args, "--log-file", str(tmp_path / "a.jsonl"), "--out",
                                    str(tmp_path / "a.json")], catch_exceptions=False)
    assert res1.exit_code == 0, res1.output
    assert len(first["fakeagent"].calls) == 3 and len(first["fakeuser"].calls) == 5
    assert first["fakeagent"].calls[0]["optional_params"].get("max_tokens") == 1
    second = register(monkeypatch, litellm, {"fakeagent": [], "fakeuser": []})
    res2 = CliRunner().invoke(app, [*args, "--log-file", str(tmp_path / "b.jsonl"), "--out",
                                    str(tmp_path / "b.json")], catch_exceptions=False)
    assert res2.exit_code == 0, res2.output
    assert second["fakeagent"].calls == [] and second["fakeuser"].calls == []
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["trials"] for n in "ab")
    for doc in (*a, *b):
        doc.pop("duration_s")
        for key in ("agent_seconds", "user_seconds", "tool_seconds"):
            doc["trajectory"].pop(key)
    assert a == b
    events = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    run_ids = {e["run_id"] for e in events}
    assert len(run_ids) == 1 and events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    calls = [e for e in events if e["event"] == "model_call"]
    assert len(calls) == 6 and all(e["cached"] for e in calls)
    assert all({"task_id", "trial"} <= e.keys() for e in events[1:-1])
    assert "ETA" not in res2.output  # no progress bar off a terminal


def test_cli_rejects_a_cache_that_is_not_sqlite(tmp_path):
    bad = tmp_path / "cache.txt"
    bad.write_text("not a database" * 100)
    res = CliRunner().invoke(app, ["run", "--task-ids", "cancel-no-longer-needed", "--cache", str(bad)])
    assert res.exit_code == 2 and "--cache" in res.output
    res = CliRunner().invoke(app, ["run", "--log-file", str(tmp_path / "missing" / "x.jsonl")])
    assert res.exit_code == 2 and "--log-file" in res.output


# --- per-call overhead ---------------------------------------------------------------------------------------


def test_cost_comes_from_litellms_own_pricing(litellm, monkeypatch):
    register(monkeypatch, litellm, {"fakeagent": ["a", "b", "c"]})
    real = litellm.completion_cost
    seen: list[str] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("model"))
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion_cost", counting)
    c = LLMClient("fakeagent/m", **FAST)
    costs = [c.complete([{"role": "user", "content": str(i)}]).usage.cost_usd for i in range(3)]
    # litellm prices each response while completing it (hidden response_cost); we reuse that, never re-price,
    # and an unpriced model records None, never $0
    assert costs == [None, None, None] and seen.count("fakeagent/m") == 0
    priced = LLMClient("openai/gpt-4o-mini")
    for _ in range(2):
        r = priced.complete([{"role": "user", "content": "x"}], mock_response="hi")
        assert r.usage.cost_usd is not None and r.usage.cost_usd > 0
    assert seen.count("openai/gpt-4o-mini") == 0

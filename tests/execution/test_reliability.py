"""Issue 17: fail loudly on set-up errors, never hang, never lose a run; each repro of the hostile tour.

Every model here is offline: litellm's key check (``validate_environment``) makes no request, and tests that must
not reach the network replace ``litellm.completion`` with a function that fails the test. Agents that hang sleep a
few seconds at most behind time limits of a fraction of a second.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.agents import OracleAgent
from simulator.cli import app
from simulator.execution.build import build_runner
from simulator.report import analyze_run, render_html, to_tau_bench
from simulator.storage.documents import load_partial, partial_header
from simulator.storage.runlog import run_logger
from simulator.types.messages import UserTurn
from simulator.types.spec import RunSpec
from tests._support import slow_agents
from tests._support.children import restore_sigint

ROOT = Path(__file__).resolve().parents[2]
TASK = "cancel-no-longer-needed"
TWO = "cancel-no-longer-needed,modify-order-address"
HERE = "py:tests.execution.test_reliability"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


# --- components loaded by reference ------------------------------------------------------------------------


def raising_factory(ctx):
    raise RuntimeError("no GPU here")


def exiting_factory(ctx):
    sys.exit(4)


class _Exiting:
    def step(self, messages):
        sys.exit(3)


def exiting_agent(ctx):
    return _Exiting()


class _Erroring:
    def step(self, messages):
        raise RuntimeError("agent bug")


def erroring_agent(ctx):
    return _Erroring()


class _Sleeping:
    def __init__(self, inner, seconds):
        self.inner, self.seconds, self.slept = inner, seconds, False

    def step(self, messages):
        if not self.slept:
            self.slept = True
            time.sleep(self.seconds)
        return self.inner.step(messages)


def slow_erroring_agent(ctx):
    """Fails its first step after 50 ms: one trial at a time, the run sees each error before the next one ends."""
    return _Sleeping(_Erroring(), 0.05)


def hung_agent(ctx):
    """The oracle after a first step that takes 3 s (a hung model call, as the run sees it)."""
    return _Sleeping(OracleAgent(ctx), 3.0)


class _HungUser:
    def reply(self, messages):
        time.sleep(3.0)
        return UserTurn(content="hello")


def hung_user(ctx):
    return _HungUser()


class _DeletesOut:
    def __init__(self, ctx):
        self.inner = OracleAgent(ctx)

    def step(self, messages):
        shutil.rmtree(os.environ["TAUSIM_TEST_DOOMED"], ignore_errors=True)  # the --out folder vanishes mid-run
        return self.inner.step(messages)


def out_deleting_agent(ctx):
    return _DeletesOut(ctx)


# --- 1. a broken set-up fails fast with exit 2 -------------------------------------------------------------


@pytest.fixture
def no_request(litellm, monkeypatch):
    """litellm with ``completion`` replaced: any model request fails the test."""
    def completion(*args, **kwargs):
        raise AssertionError("no model request may be made")

    monkeypatch.setattr(litellm, "completion", completion)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return litellm


@pytest.mark.parametrize("flag,spec", [("--agent", "litellm:openai/gpt-4o-mini"), ("--user", "llm:openai/gpt-4o-mini")])
def test_missing_api_key_exits_2_naming_the_variable_without_a_request(no_request, flag, spec, tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", flag, spec, "--task-ids", TASK, "--out", out, "--no-progress")
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0] and "set-up error (credentials)" in lines[0]
    assert flag.strip("-") in lines[0]  # names the component
    assert not out.exists() and not (tmp_path / "run.json.partial.jsonl").exists()


def test_missing_key_without_preflight_is_a_setup_error_that_stops_the_run(litellm, monkeypatch, tmp_path):
    """Without the pre-flight the first trial meets the missing key: ``setup_error`` (not ``user_error``), exit 2."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run.json"
    res = invoke("run", "--user", "llm:openai/gpt-4o-mini", "--task-ids", TASK, "--trials", 6, "--no-preflight",
                 "--out", out, "--no-progress")
    assert res.exit_code == 2, res.output
    doc = json.loads(out.read_text())
    assert 1 <= len(doc["trials"]) < 6  # stopped: the queued trials never ran
    assert {t["termination_reason"] for t in doc["trials"]} == {"setup_error"}
    assert doc["abort_kind"] == "setup_error" and "OPENAI_API_KEY" in doc["aborted"]
    assert "run stopped" in res.output and "pass^" in res.output  # the summary is printed all the same


def test_unknown_model_exits_2(no_request):
    res = invoke("run", "--agent", "litellm:nosuchprovider-xyz/m", "--task-ids", TASK, "--no-progress")
    assert res.exit_code == 2, res.output
    assert "set-up error (model)" in res.output and "nosuchprovider-xyz/m" in res.output


def test_unreachable_api_base_exits_2(litellm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = invoke("run", "--agent", "litellm:openai/m", "--api-base", f"http://127.0.0.1:{port}/v1", "--task-ids",
                 TASK, "--no-progress")
    assert res.exit_code == 2, res.output
    assert "set-up error (server)" in res.output and f"127.0.0.1:{port}" in res.output


@pytest.mark.parametrize("factory,text", [("raising_factory", "RuntimeError: no GPU here"),
                                          ("exiting_factory", "SystemExit: 4")])
def test_an_agent_factory_that_raises_exits_2(factory, text, tmp_path):
    res = invoke("run", "--agent", f"{HERE}:{factory}", "--task-ids", TASK, "--out", tmp_path / "r.json")
    assert res.exit_code == 2, res.output
    assert "set-up error (factory)" in res.output and factory in res.output and text in res.output


def test_max_error_rate_stops_a_run_of_errors_and_keeps_what_finished(tmp_path):
    out = tmp_path / "run.json"
    # one trial at a time, 50 ms each: instant failures on a loaded machine could all end before the run looked
    res = invoke("run", "--agent", f"{HERE}:slow_erroring_agent", "--task-ids", TASK, "--trials", 16, "--out", out,
                 "--concurrency", 1, "--no-progress")
    assert res.exit_code == 1, res.output
    doc = json.loads(out.read_text())
    assert 10 <= len(doc["trials"]) < 16
    assert {t["termination_reason"] for t in doc["trials"]} == {"agent_error"}
    assert doc["abort_kind"] == "error_rate" and "above max_error_rate 0.5" in doc["aborted"]
    assert "run stopped" in res.output and "pass^" in res.output
    res = invoke("run", "--agent", f"{HERE}:erroring_agent", "--task-ids", TASK, "--trials", 12, "--out", out,
                 "--max-error-rate", 1, "--no-progress")
    assert res.exit_code == 0, res.output
    assert len(json.loads(out.read_text())["trials"]) == 12


def test_a_run_stopped_early_is_reported_over_all_its_planned_tasks(tmp_path):
    """Without --task-ids a stopped run's --out once named no task list: its summary and `tausim report` counted
    only the tasks that had a finished trial (6 of 29, "planned 12") while the store said planned 58."""
    tasks = [t.id for t in build_runner(RunSpec(domain="retail", agent="oracle")).tasks]
    assert len(tasks) > 12
    out = tmp_path / "run.json"
    res = invoke("run", "--agent", f"{HERE}:erroring_agent", "--trials", 2, "--out", out, "--no-progress")
    assert res.exit_code == 1, res.output
    doc = json.loads(out.read_text())
    assert doc["abort_kind"] == "error_rate" and len(doc["trials"]) < 2 * len(tasks)
    assert doc["planned_task_ids"] == tasks
    assert f"planned {2 * len(tasks)}, recorded {len(doc['trials'])}" in res.output
    assert doc["metrics"]["tasks"] == len(tasks) and doc["metrics"]["planned"] == 2 * len(tasks)
    res = invoke("report", out, "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["planned"] == 2 * len(tasks) and report["metrics"]["tasks"] == len(tasks)


# --- 2. time limits ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag,ref", [("--agent", "hung_agent"), ("--user", "hung_user")])
def test_a_hung_agent_or_user_is_abandoned_and_recorded_timeout(flag, ref, tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", flag, f"{HERE}:{ref}", "--task-ids", TWO, "--trial-timeout", 0.3, "--out", out,
                 "--no-progress", "--no-preflight")
    assert res.exit_code == 1, res.output  # recorded; every trial of the run ended on an error (a timeout)
    assert "2 ended on an error (timeout 2)" in " ".join(res.output.split())
    trials = json.loads(out.read_text())["trials"]
    assert [t["termination_reason"] for t in trials] == ["timeout", "timeout"]
    assert all("trial timeout of 0.3 s" in t["error"] and not t["passed"] for t in trials)


def _tool_call_events(trial_timeout):
    from simulator.world.domain import get_domain

    spec = RunSpec(domain="retail", task_ids=[TASK], trial_timeout=trial_timeout)
    runner = build_runner(spec)
    runner.agent_factory = lambda ctx: _Sleeping(OracleAgent(ctx), 0.5)
    assert runner.domain is get_domain("retail") or runner.domain.name == "retail"
    buf = io.StringIO()
    runner.log = run_logger(buf, "r")
    (trial,) = runner.run().trials
    for t in threading.enumerate():  # let the abandoned thread finish: it must not log anything about the trial
        if t.name.startswith("tausim-trial-"):
            t.join(10)
    events = [json.loads(line) for line in buf.getvalue().splitlines()]
    return trial, [e for e in events if e["event"] == "tool_call"]


def test_an_abandoned_trial_writes_nothing_after_it_was_recorded():
    trial, calls = _tool_call_events(0.1)
    assert trial.termination_reason == "timeout" and calls == []
    trial, calls = _tool_call_events(None)  # the same agent, no limit: it does make tool calls
    assert trial.termination_reason != "timeout" and calls


def test_request_timeout_reaches_every_model_client():
    spec = RunSpec(domain="retail", task_ids=[TASK], agent="litellm:openai/gpt-4o-mini",
                   user="llm:openai/gpt-4o-mini", request_timeout=7.5)
    runner = build_runner(spec)
    assert runner.agent_factory.client.timeout == 7.5 and runner.user_factory.client.timeout == 7.5
    default = build_runner(spec.model_copy(update={"request_timeout": RunSpec.model_fields["request_timeout"].default}))
    assert default.agent_factory.client.timeout == 60.0


# --- 4. never lose a run -----------------------------------------------------------------------------------


def test_out_folder_gone_at_the_end_writes_a_fallback_and_prints_the_summary(tmp_path, monkeypatch):
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TAUSIM_TEST_DOOMED", str(doomed))
    res = invoke("run", "--agent", f"{HERE}:out_deleting_agent", "--task-ids", TASK, "--out", doomed / "run.json",
                 "--no-progress")
    assert res.exit_code == 1, res.output
    (fallback,) = cwd.glob("tausim-run-*.json")
    assert str(fallback) in res.output and "cannot write" in res.output
    assert [t["task_id"] for t in json.loads(fallback.read_text())["trials"]] == [TASK]
    assert "pass^" in res.output


def test_ctrl_c_during_the_final_write_finishes_the_write(tmp_path, monkeypatch):
    import simulator.execution.recording as recording

    original = recording.write_text_atomic

    def interrupted_write(path, text):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while the document is being written
        time.sleep(0.05)
        original(path, text)

    monkeypatch.setattr(recording, "write_text_atomic", interrupted_write)
    out = tmp_path / "run.json"
    res = invoke("run", "--task-ids", TASK, "--out", out, "--no-progress")
    assert res.exit_code == 130, res.output
    assert "interrupted" in res.output and str(out) in res.output
    assert [t["task_id"] for t in json.loads(out.read_text())["trials"]] == [TASK]


def test_the_partial_file_is_read_by_report_and_resumed_without_a_store(tmp_path):
    full = tmp_path / "a.json"
    res = invoke("run", "--agent", "py:tests._support.slow_agents:counting_oracle", "--task-ids", TWO, "--trials", 2,
                 "--out", full, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(full.read_text())
    kept = doc["trials"][:2]
    partial = tmp_path / "b.json.partial.jsonl"
    lines = [json.dumps(partial_header(RunSpec.model_validate(doc["config"]), 4)), *map(json.dumps, kept),
             '{"task_id": "modify-order-add']  # the line a kill -9 cut short
    partial.write_text("\n".join(lines))
    spec, trials, planned = load_partial(partial)
    assert planned == 4 and [t.model_dump(mode="json") for t in trials] == kept
    res = invoke("report", partial, "--format", "json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert (summary["planned"], summary["recorded"]) == (4, 2)
    slow_agents.constructed.clear()
    out = tmp_path / "b.json"
    res = invoke("run", "--resume-from", partial, "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    assert "resuming: 2 of 4 trials recorded, running 2" in res.output
    ran = sorted(slow_agents.constructed)
    assert ran == sorted({(t["task_id"], t["trial"]) for t in doc["trials"][2:]})
    resumed = json.loads(out.read_text())
    assert len(resumed["trials"]) == 4 and all(t in resumed["trials"] for t in kept)  # old trials kept as they were
    assert not partial.exists()  # the run is whole in --out now
    res = invoke("run", "--resume-from", tmp_path / "nothing.jsonl")
    assert res.exit_code == 2 and "no such file" in res.output


_BUILT = []


def interrupting_oracle(ctx):
    """The oracle, but the 4th trial's agent sends this process a Ctrl-C (SIGINT) and waits for it.

    (Run with ``--concurrency 1``: the first three trials have ended by then; the pause lets the main thread record
    them before the Ctrl-C, which is what the test is about. With trials at once the 4th agent could be built before
    any trial ended: the file then held none, a flaky failure.)
    """
    _BUILT.append(ctx)
    if len(_BUILT) > 3:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    return OracleAgent(ctx)


def test_the_partial_file_of_an_interrupted_run_is_reported_over_all_planned_tasks(tmp_path):
    """Ctrl-C after 3 trials of a run of every built-in task: the partial file once named no task list, so
    `tausim report` showed a complete-looking run of the tasks it held ("planned 8, recorded 8", 4 of 29 tasks)."""
    tasks = [t.id for t in build_runner(RunSpec(domain="retail", agent="oracle")).tasks]
    out = tmp_path / "run.json"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "simulator.cli", "run", "--agent", f"{HERE}:interrupting_oracle",
                           "--trials", "2", "--concurrency", "1", "--out", str(out), "--no-progress",
                           "--no-preflight"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=restore_sigint)
    assert proc.returncode == 130, proc.stdout[-2000:] + proc.stderr[-2000:]
    partial = tmp_path / "run.json.partial.jsonl"
    header, *lines = partial.read_text().splitlines()
    assert json.loads(header)["planned_task_ids"] == tasks
    held = len({(json.loads(line)["task_id"], json.loads(line)["trial"]) for line in lines})
    assert 0 < held <= 3
    res = invoke("report", partial, "--format", "json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert (summary["planned"], summary["recorded"]) == (2 * len(tasks), held)
    assert summary["metrics"]["tasks"] == len(tasks)
    assert summary["metrics"]["missing_trials"] == 2 * len(tasks) - held


def test_a_file_that_is_not_a_partial_run_is_refused(tmp_path):
    bad = tmp_path / "x.partial.jsonl"
    bad.write_text('{"task_id": "a"}\n')
    res = invoke("run", "--resume-from", bad)
    assert res.exit_code == 2 and "line 1: not a tausim partial run file" in res.output


# --- 5. the hostile tour's odd inputs ----------------------------------------------------------------------


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_in_memory_stores_are_refused(url):
    res = invoke("run", "--task-ids", TASK, "--store", url)
    assert res.exit_code == 2 and "in-memory database keeps nothing" in res.output
    assert "run id" not in res.output


def test_agent_code_calling_sys_exit_is_an_agent_error_not_tausims_exit(tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", "--agent", f"{HERE}:exiting_agent", "--task-ids", TASK, "--out", out, "--no-progress")
    assert res.exit_code == 1, res.output  # the run's error rate (its one trial ended on an error), not the agent's 3
    assert "1 ended on an error (agent_error 1)" in " ".join(res.output.split())
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["termination_reason"] == "agent_error" and "SystemExit: 3" in trial["error"]


def test_a_py_spec_in_the_current_directory_hints_pythonpath(tmp_path, monkeypatch):
    (tmp_path / "my_local_agents.py").write_text("def make(ctx):\n    raise RuntimeError('unused')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".") and Path(p).resolve() != tmp_path])
    res = invoke("run", "--agent", "py:my_local_agents:make")
    assert res.exit_code == 2 and "PYTHONPATH=." in res.output and "my_local_agents" in res.output
    res = invoke("run", "--agent", "py:not_here_at_all:make")
    assert res.exit_code == 2 and "cannot import module" in res.output and "PYTHONPATH" not in res.output


def test_judge_calibrate_bad_label_names_field_and_value_without_markup(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"transcript": "t", "assertion": "a", "label": "maybe"}) + "\n")
    res = invoke("judge", "calibrate", "--labels", labels, "--model", "openai/gpt-4o-mini")
    assert res.exit_code == 2
    assert "line 1: field label" in res.output and '"maybe"' in res.output
    assert "[bold red]" not in res.output and "[/]" not in res.output


def test_tau_bench_export_of_a_persona_run_has_one_entry_per_task_and_trial(tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", "--user", "rule", "--agent", "reference", "--personas", "cooperative,impatient",
                 "--task-ids", TASK, "--trials", 2, "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    entries = to_tau_bench(str(out))
    pairs = [(e["task_id"], e["trial"]) for e in entries]
    assert len(entries) == 4 and len(set(pairs)) == 4
    assert sorted(e["trial"] for e in entries) == [0, 1, 2, 3]
    assert sorted((e["info"]["persona"], e["info"]["tausim_trial"]) for e in entries) == [
        ("cooperative", 0), ("cooperative", 1), ("impatient", 0), ("impatient", 1)]


def test_cut_off_trials_are_not_errors_in_text_or_html(tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", "--task-ids", TASK, "--max-turns", 1, "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["trials"][0]["termination_reason"] == "max_turns"
    assert analyze_run(doc).metrics["errored_trials"] == 0 == doc["metrics"]["errored_trials"]
    # cut off with the state already right (no component failed): the case the HTML showed as an error
    doc["trials"][0]["grade"]["failure"] = "max_turns"
    report = analyze_run(doc)
    assert report.metrics["errored_trials"] == 0 and [c.outcome for c in report.cells] == ["cutoff"]
    html = render_html(report)
    assert 'class="cell o-cutoff"' in html and 'class="cell o-error"' not in html


def test_every_documented_mode_option_names_a_domain_that_accepts_it():
    from simulator.world.domain import get_domain

    root = Path(__file__).resolve().parents[2]
    docs = "".join(p.read_text(encoding="utf-8") for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))])
    uses = re.findall(r"(?:--domain (\w+) )?--option mode=([\w-]+)", docs)
    assert uses and any(d == "retail" for d, _ in uses)
    for domain, mode in uses:
        assert domain, f"--option mode={mode} without --domain in the README or docs/"
        assert mode in get_domain(domain).option_values["mode"], (domain, mode)


def test_a_missing_key_is_reported_before_the_run_is_built(no_request, monkeypatch):
    """The offline credentials check comes first: the data, tasks and gold replays are not loaded for a run that
    cannot work (a run built anyway fails this test)."""
    import simulator.execution.session as session

    def build_runner(*args, **kwargs):
        raise AssertionError("the run was built before its credentials were checked")

    monkeypatch.setattr(session, "build_runner", build_runner)
    res = invoke("run", "--agent", "litellm:openai/gpt-4o-mini", "--task-ids", TASK, "--no-progress")
    assert res.exit_code == 2, res.output
    assert "set-up error (credentials)" in res.output and "OPENAI_API_KEY" in res.output and "agent" in res.output

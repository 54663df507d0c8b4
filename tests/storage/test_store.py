"""Results store: round trip, idempotent records, resume, config checks, regrade, and the kill -9 test.

Every test taking ``store`` or ``store_url`` runs against SQLite and PostgreSQL (see ``tests/_support/store_urls.py``).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import delete, func, select
from typer.testing import CliRunner

from simulator.agents import NullAgent, OracleAgent
from simulator.cli import app
from simulator.execution.runner import Runner, run_summary_json
from simulator.storage.schema import trials
from simulator.storage.store import (
    ConfigMismatchError,
    LeaseHeldError,
    ResultsStore,
    StoreError,
    data_hash,
    tasks_hash,
)
from simulator.types.messages import Message, ToolCall, Usage
from simulator.types.spec import ComponentSpec, RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import scripted_user_factory
from tests._support import slow_agents
from tests._support.toy import BankDomain, write_data

REPO = Path(__file__).resolve().parents[2]

TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]},
    {"id": "ask", "scenario": {"instructions": "ask your balance"},
     "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "A1"}}], "required_outputs": ["100"]},
    {"id": "chat", "scenario": {"instructions": "say hi"}},
]})


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture()
def bank(tmp_path):
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "d"))


@pytest.fixture()
def store(store_url):
    """A fresh store in an empty database: a SQLite file, and a PostgreSQL database (see ``store_url``)."""
    s = ResultsStore(store_url)
    yield s
    s.close()


def bank_run(bank, agent, trials=2, only=None, on_trial=None):
    dom, tpl = bank
    cfg = RunSpec(domain="bank", agent="x", trials=trials)
    runner = Runner(dom, tpl, TASKS, agent, scripted_user_factory(), cfg)
    return runner, runner.run(on_trial=on_trial, only=only)


def test_round_trip_equals_trial_result(bank, store):
    runner, res = bank_run(bank, OracleAgent)
    _, failed = bank_run(bank, NullAgent, trials=1)
    info = store.create_run(runner.config, [t.id for t in TASKS], run_id="r1")
    for t in res.trials:
        assert store.record("r1", t) is True
    # the corners: unknown cost, unparsed arguments, an ungraded trial, fields without a column of their own
    odd = failed.trials[0].model_copy(deep=True)
    odd.trial = 5
    odd.seed = 2**64 - 1
    odd.grade = None
    odd.error = "goal replay failed: boom"
    odd.trajectory.agent_usage = Usage(prompt_tokens=3, completion_tokens=4, cost_usd=None, calls=1)
    odd.trajectory.messages.append(Message(role="assistant", tool_calls=[
        ToolCall(id="c1", name="transfer", arguments=None, raw_arguments="{not json")]))
    odd.side_seeds = {"agent": 2**64 - 2, "user": 2**64 - 1, "faults": 2**64 - 1}  # a run holding a side
    assert store.record("r1", odd) is True
    loaded = store.load_trials("r1")  # planned task order, then trial index
    assert loaded == res.trials[:2] + [odd] + res.trials[2:]
    assert loaded[0].trajectory.tool_calls and loaded[0].grade is not None
    assert store.get_run("r1") == info
    if store.engine.dialect.name == "sqlite":
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() > 0
    assert store.get_run("nope") is None


def test_duplicate_record_is_ignored(bank, store):
    runner, res = bank_run(bank, OracleAgent, trials=1)
    store.create_run(runner.config, [t.id for t in TASKS], run_id="r")
    first = res.trials[0]
    assert store.record("r", first) is True
    changed = first.model_copy(update={"passed": not first.passed})
    assert store.record("r", changed) is False
    assert store.record("r", first) is False
    with store.engine.connect() as conn:
        n = conn.execute(select(func.count()).select_from(trials).where(trials.c.run_id == "r")).scalar_one()
    assert n == 1
    assert store.load_trials("r") == [first]
    assert store.count_duplicates("r") == 0
    with pytest.raises(StoreError, match="already exists"):
        store.create_run(runner.config, ["move"], run_id="r")
    with pytest.raises(StoreError, match="no run 'other'"):
        store.record("other", first)


def test_run_document_has_the_file_shape(bank, store):
    runner, res = bank_run(bank, OracleAgent)
    store.create_run(runner.config, [t.id for t in TASKS], run_id="r")
    for t in res.trials[:-1]:
        store.record("r", t)
    doc = store.load_run_document("r")
    assert (doc["planned"], doc["recorded"], doc["duplicates"], doc["complete"]) == (6, 5, 0, False)
    assert doc["metrics"]["pass^1"] == pytest.approx(5 / 6)  # the missing trial counts as failed
    store.record("r", res.trials[-1])
    doc = store.load_run_document("r")
    file_doc = run_summary_json(res)
    assert (doc["planned"], doc["recorded"], doc["duplicates"], doc["complete"]) == (6, 6, 0, True)
    assert doc["metrics"] == file_doc["metrics"]
    assert {k: file_doc["metrics"][k] for k in res.metrics} == res.metrics  # --out holds the full run metrics
    assert doc["trials"] == file_doc["trials"]
    assert doc["termination_reasons"] == file_doc["termination_reasons"]
    assert set(file_doc) - {"wall_seconds"} <= set(doc)
    json.dumps(doc)


def test_runner_only_runs_the_given_pairs(bank):
    built = []

    def agent(ctx):
        built.append((ctx.task.id, ctx.trial_index))
        return OracleAgent(ctx)

    _, res = bank_run(bank, agent, trials=3, only={("ask", None, 2), ("move", None, 0)})
    assert sorted(built) == [("ask", 2), ("move", 0)]
    assert [(t.task_id, t.trial) for t in res.trials] == [("move", 0), ("ask", 2)]
    assert res.metrics == {} and res.planned == 9
    with pytest.raises(ValueError, match="not planned"):
        bank_run(bank, agent, trials=1, only={("ask", None, 1)})


def test_check_resumable_names_the_field(bank, store):
    runner, _ = bank_run(bank, OracleAgent, trials=1, only=set())
    info = store.create_run(runner.config, ["move"], run_id="r", data_hash="d", tasks_hash="t")
    cfg = runner.config
    for exempt in ({"concurrency": 7}, {"executor": "local:2"}, {"log_file": "x.jsonl"}, {"rpm": 5},
                   {"cache": "c.sqlite"}):
        store.check_resumable(info, cfg.model_copy(update=exempt), data_hash="d", tasks_hash="t")
    agent = cfg.agent
    for update, field, old, new in (
            ({"trials": 2}, "trials", 1, 2), ({"seed": 1}, "seed", 0, 1),
            ({"agent": ComponentSpec(name="y")}, "agent.name", agent.name, "y"),
            ({"agent": agent.model_copy(update={"temperature": 0.7})}, "agent.temperature", None, 0.7),
            ({"max_steps": 3}, "max_steps", 60, 3), ({"options": {"mode": "x"}}, "options.mode", None, "x")):
        with pytest.raises(ConfigMismatchError) as e:
            store.check_resumable(info, cfg.model_copy(update=update), data_hash="d", tasks_hash="t")
        assert e.value.field == field
        assert f"{field}: stored {old!r}, now {new!r}" in str(e.value)
    with pytest.raises(ConfigMismatchError, match="data_hash"):
        store.check_resumable(info, cfg, data_hash="other", tasks_hash="t")
    with pytest.raises(ConfigMismatchError, match="tasks_hash"):
        store.check_resumable(info, cfg, data_hash="d", tasks_hash="other")


def test_hashes_follow_contents(tmp_path):
    a, b = write_data(tmp_path / "a"), write_data(tmp_path / "b")
    assert data_hash(a) == data_hash(b)
    first = sorted(p for p in Path(b).iterdir() if p.is_file())[0]
    first.write_text(first.read_text() + " ")
    assert data_hash(a) != data_hash(b)
    changed = [t.model_copy(update={"required_outputs": ["7"]}) if t.id == "chat" else t for t in TASKS]
    assert tasks_hash(TASKS) == tasks_hash(list(TASKS)) != tasks_hash(changed)


def cli_run(url, run_id, *extra, agent="py:tests._support.slow_agents:counting_oracle"):
    return invoke("run", "--agent", agent, "--task-ids", "cancel-no-longer-needed,modify-order-address",
                  "--trials", 3, "--concurrency", 2, "--store", url, "--run-id", run_id, *extra)


def test_resume_runs_only_missing_trials(tmp_path, store_url):
    db = store_url
    slow_agents.constructed.clear()
    res = cli_run(db, "R")
    assert res.exit_code == 0, res.output
    assert "run id: R (new; 6 trials planned" in res.output
    assert len(slow_agents.constructed) == 6
    with ResultsStore(db) as st:  # lose two trials, as a kill would
        with st.engine.begin() as conn:
            conn.execute(delete(trials).where(trials.c.run_id == "R", trials.c.trial == 1))
        assert len(st.recorded_keys("R")) == 4
    slow_agents.constructed.clear()
    out = tmp_path / "run.json"
    res = cli_run(db, "R", "--out", out)
    assert res.exit_code == 0, res.output
    assert "resuming: 4 of 6 trials recorded, running 2" in res.output
    assert sorted(slow_agents.constructed) == [("cancel-no-longer-needed", 1), ("modify-order-address", 1)]
    doc = json.loads(out.read_text())  # the whole run, not just this session
    assert (doc["run_id"], doc["planned"], doc["recorded"], doc["duplicates"]) == ("R", 6, 6, 0)
    assert doc["metrics"]["pass^3"] == 1.0 and len(doc["trials"]) == 6
    slow_agents.constructed.clear()
    res = cli_run(db, "R")
    assert res.exit_code == 0, res.output
    assert "running 0" in res.output and slow_agents.constructed == []


def test_resume_with_other_config_is_refused(store_url):
    db = store_url
    assert cli_run(db, "R").exit_code == 0
    slow_agents.constructed.clear()
    res = cli_run(db, "R", "--seed", 5)
    assert res.exit_code == 2
    assert "seed: stored 0, now 5" in res.output
    res = invoke("run", "--agent", "py:tests._support.slow_agents:counting_oracle",
                 "--task-ids", "cancel-no-longer-needed", "--trials", 3, "--store", db, "--run-id", "R")
    assert res.exit_code == 2  # the spec names its task ids: the first difference (before the task-set hash)
    assert "task_ids: stored ['cancel-no-longer-needed', 'modify-order-address'], now ['cancel-no-longer-needed']" \
        in res.output
    assert slow_agents.constructed == []


def test_new_run_id_is_printed_and_unknown_run_refused(tmp_path, store_url):
    res = invoke("run", "--task-ids", "cancel-no-longer-needed", "--store", store_url)
    assert res.exit_code == 0, res.output
    run_id = res.output.split("run id: ", 1)[1].split()[0]
    assert len(run_id) == 32
    with ResultsStore(store_url) as st:
        assert st.recorded_keys(run_id) == {("cancel-no-longer-needed", None, 0)}
    res = invoke("regrade", "nope", "--store", store_url)
    assert res.exit_code == 2 and "no run 'nope'" in res.output and run_id in res.output
    res = invoke("regrade", "nope", "--store", f"sqlite:///{tmp_path / 'missing.db'}")
    assert res.exit_code == 2 and "no such database file" in res.output
    # a run file that is not there is named as a missing file, not looked up as a run id in the store
    missing = tmp_path / "run.json"
    res = invoke("regrade", str(missing), "--store", store_url)
    assert res.exit_code == 2 and f"{missing}: no such file" in res.output and "no run" not in res.output


def test_regrade_after_fixing_gold_actions_flips_the_grade(tmp_path, store_url):
    builtin = json.loads((REPO / "domains" / "retail" / "tasks" / "builtin.json").read_text())
    keep = {"cancel-no-longer-needed", "modify-order-address"}
    builtin["tasks"] = [t for t in builtin["tasks"] if t["id"] in keep]
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(builtin))
    url = store_url
    res = invoke("run", "--tasks", task_file, "--trials", 2, "--store", url, "--run-id", "G")
    assert res.exit_code == 0, res.output
    with ResultsStore(url) as st:
        before = st.load_trials("G")
        assert all(t.passed for t in before)
    # "fix" the task: the cancellation is no longer part of the goal, so the recorded trials now fail
    for t in builtin["tasks"]:
        if t["id"] == "cancel-no-longer-needed":
            t["gold_actions"] = [a for a in t["gold_actions"] if a["name"] != "cancel_pending_order"]
    task_file.write_text(json.dumps(builtin))
    res = invoke("regrade", "G", "--store", url)
    assert res.exit_code == 0, res.output
    assert "trials changed: 2 (0 now pass, 2 now fail)" in res.output
    assert "replayed differently" not in res.output  # the replay rebuilt the very states the trials ended in
    with ResultsStore(url) as st:
        after = st.load_trials("G")
        doc = st.load_run_document("G")
        info = st.get_run("G")
    assert [(t.task_id, t.trial, t.passed) for t in after] == [
        ("cancel-no-longer-needed", 0, False), ("cancel-no-longer-needed", 1, False),
        ("modify-order-address", 0, True), ("modify-order-address", 1, True)]
    assert after[0].grade.failure == "state" and after[0].grade.state.differences
    assert [t.trajectory for t in after] == [t.trajectory for t in before]  # only grades change
    assert doc["metrics"]["pass^1"] == 0.5
    assert info.extra["regrades"][-1]["changed"] == 2
    # the run now resumes against the fixed task file (its task-set hash was updated)
    res = invoke("run", "--tasks", task_file, "--trials", 2, "--store", url, "--run-id", "G")
    assert res.exit_code == 0 and "running 0" in res.output, res.output
    # and regrading with the original tasks flips the grades back
    res = invoke("regrade", "G", "--store", url, "--tasks", REPO / "domains" / "retail" / "tasks" / "builtin.json")
    assert res.exit_code == 0, res.output
    assert "trials changed: 2 (2 now pass, 0 now fail)" in res.output


KILL_TASKS = 25
KILL_TRIALS = 8
PLANNED = KILL_TASKS * KILL_TRIALS


def _recorded(url, run_id):
    try:
        with ResultsStore(url, create=False) as st:  # never race the run at creating the tables
            return len(st.recorded_keys(run_id))
    except Exception:  # noqa: BLE001 - the database may not exist yet
        return 0


def test_sigkill_mid_run_then_resume_records_every_trial_once(tmp_path, store_url):
    """Kill -9 a run of 200 trials at concurrency 8, resume it: 200 recorded, none duplicated.

    While the killed run still runs, this process (a second OS process) is refused its lease, in the library
    and by ``tausim run`` resuming the same run id; the lease the killed process leaves behind does not block
    the resume.
    """
    from domains.retail import RetailDomain

    task_ids = [t.id for t in RetailDomain().load_tasks(None)][:KILL_TASKS]
    assert len(task_ids) == KILL_TASKS
    url = store_url
    cmd = [sys.executable, "-m", "simulator.cli", "run", "--domain", "retail",
           "--agent", "py:tests._support.slow_agents:slow_oracle", "--task-ids", ",".join(task_ids),
           "--trials", str(KILL_TRIALS), "--concurrency", "8", "--store", url, "--run-id", "R"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TAUSIM_TEST_STEP_SLEEP": "0.03"}
    log = tmp_path / "killed.log"  # a file, not a pipe: a full pipe could stall the run
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        seen = 0
        while time.monotonic() < deadline and proc.poll() is None:
            seen = _recorded(url, "R")
            if seen >= 40:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be killed ({seen} recorded): " \
                                    f"{log.read_text(errors='replace')[-2000:]}"
        assert seen >= 40, f"only {seen} trials recorded before the deadline"
        with ResultsStore(url) as st:
            with pytest.raises(LeaseHeldError, match=f"run 'R' is being run by another process .*:{proc.pid}:"):
                st.lease("R").acquire()
        contender = invoke(*cmd[3:])  # the same `tausim run` command, resuming the same run id
        assert contender.exit_code == 2, contender.output
        assert "run 'R' is being run by another process" in contender.output, contender.output
        assert "resuming" not in contender.output
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    killed_at = _recorded(url, "R")
    assert 40 <= killed_at < PLANNED, killed_at
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resuming: {killed_at} of {PLANNED} trials recorded, running {PLANNED - killed_at}" in done.stdout
    with ResultsStore(url) as st:
        keys = st.recorded_keys("R")
        doc = st.load_run_document("R")
        with st.engine.connect() as conn:
            rows = conn.execute(select(trials.c.task_id, trials.c.trial).where(trials.c.run_id == "R")).all()
    assert len(rows) == PLANNED and len(set(rows)) == PLANNED
    assert keys == {(t, None, i) for t in task_ids for i in range(KILL_TRIALS)}
    assert (doc["planned"], doc["recorded"], doc["duplicates"], doc["complete"]) == (PLANNED, PLANNED, 0, True)
    assert doc["metrics"]["pass^8"] == 1.0


def test_regrade_with_missing_data_dir_is_a_clear_error(tmp_path, store_url):
    url = store_url
    res = CliRunner().invoke(app, ["run", "--task-ids", "cancel-no-longer-needed", "--store", url, "--run-id", "g"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["regrade", "g", "--store", url, "--data", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "nowhere: not a directory" in res.output

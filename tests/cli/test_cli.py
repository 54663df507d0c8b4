"""`tausim` on the built-in data: custom agents, input checks, output files."""

import json

from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.messages import AgentTurn, Message
from tests._support.slow_agents import interrupt_run


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


class Apologetic:
    """A user-supplied agent loaded with --agent py:tests.cli.test_cli:make_agent."""

    def __init__(self, ctx):
        self.policy = ctx.policy

    def step(self, messages):
        return AgentTurn(message=Message(role="assistant", content="Sorry, I cannot help."))


def make_agent(ctx):
    return Apologetic(ctx)


def test_custom_agent_by_reference(tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", "--agent", "py:tests.cli.test_cli:make_agent", "--task-ids", "cancel-no-longer-needed",
                 "--out", out)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["config"]["agent"]["name"] == "py:tests.cli.test_cli:make_agent"  # the run spec: agent is a component
    assert doc["config"]["format"] == "tausim.runspec" and doc["config"]["version"] == 1
    (trial,) = doc["trials"]
    assert trial["task_id"] == "cancel-no-longer-needed" and trial["passed"] is False
    assert trial["trajectory"]["messages"][1]["content"] == "Sorry, I cannot help."
    # nothing done: the goal state is missed, and the retail policy's identify-first rule (at the trial's end) too
    assert trial["grade"]["failure"] == "state, process"


def test_bad_references_and_out_paths(tmp_path):
    res = invoke("run", "--agent", "py:tests.nowhere:f")
    assert res.exit_code == 2 and "cannot import module 'tests.nowhere'" in res.output
    res = invoke("run", "--agent", "py:tests.cli.test_cli:missing")
    assert res.exit_code == 2 and "no attribute 'missing'" in res.output
    res = invoke("run", "--out", tmp_path)
    assert res.exit_code == 2 and "is a directory" in res.output
    res = invoke("run", "--out", tmp_path / "no" / "run.json")
    assert res.exit_code == 2 and "does not exist" in res.output
    res = invoke("run", "--task-ids", ",")
    assert res.exit_code == 2 and "no task id" in res.output


def write_tasks(tmp_path, actions, domain="retail"):
    p = tmp_path / "tasks.json"
    p.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "domain": domain, "tasks": [
        {"id": "t1", "scenario": {"instructions": "x"}, "gold_actions": actions}]}))
    return p


def test_gold_actions_are_checked_against_the_tools(tmp_path):
    p = write_tasks(tmp_path, [{"name": "refund_everything", "arguments": {}}])
    res = invoke("run", "--tasks", p)
    assert res.exit_code == 2
    assert "task 't1': field gold_actions[0].name: unknown tool 'refund_everything'" in res.output
    p = write_tasks(tmp_path, [{"name": "cancel_pending_order", "arguments": {"order_id": "#W1", "reasn": "x"}}])
    res = invoke("run", "--tasks", p)
    assert res.exit_code == 2 and "gold_actions[0].arguments.reason" in res.output
    p = write_tasks(tmp_path, [{"name": "return_delivered_order_items",
                                "arguments": {"order_id": "#W1", "item_ids": 5, "payment_method_id": "x"}}])
    res = invoke("replay", "--tasks", p)
    assert res.exit_code == 2 and "gold_actions[0].arguments.item_ids" in res.output and "value: 5" in res.output
    p = write_tasks(tmp_path, [], domain="airline")
    res = invoke("run", "--tasks", p)
    assert res.exit_code == 2 and "for domain 'airline', not 'retail'" in res.output


def test_empty_task_file_is_refused(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text("[]")
    res = invoke("run", "--tasks", p)
    assert res.exit_code == 2 and "holds no task" in res.output


def test_domains_lists_retail():
    res = invoke("domains")
    assert res.exit_code == 0 and "retail: splits builtin; tools 16" in res.output


def wrong_type_agent(ctx):
    class Wrong:
        def step(self, messages):
            return "hello"

    return Wrong()


def failing_factory(ctx):
    raise ValueError("cannot build this agent")


def test_user_code_errors_are_recorded_per_trial(tmp_path):
    # a factory that raises is a set-up error for the pre-flight (test_reliability.py); without it, per trial
    for ref, text, extra in (
            ("py:tests.cli.test_cli:wrong_type_agent", "agent.step returned str, expected AgentTurn", []),
            ("py:tests.cli.test_cli:failing_factory", "cannot build this agent", ["--no-preflight"])):
        out = tmp_path / "run.json"
        res = invoke("run", "--agent", ref, "--task-ids", "cancel-no-longer-needed,modify-order-address",
                     "--out", out, *extra)
        # both trials ended on errors: recorded, and the run (too short to be stopped) fails its error rate
        assert res.exit_code == 1, res.output
        assert "2 finished trials: 2 ended on an error (agent_error 2), above max_error_rate 0.5" in " ".join(
            res.output.split())
        trials = json.loads(out.read_text())["trials"]
        assert len(trials) == 2
        assert all(t["termination_reason"] == "agent_error" and not t["passed"] and text in t["error"]
                   for t in trials)
    out = tmp_path / "one.json"
    res = invoke("run", "--agent", "py:tests.cli.test_cli:failing_factory", "--no-preflight", "--max-error-rate", 0.5,
                 "--task-ids", "cancel-no-longer-needed", "--trials", 1, "--out", out)
    assert res.exit_code == 1, res.output  # 1 of 1
    res = invoke("run", "--agent", "py:tests.cli.test_cli:failing_factory", "--no-preflight", "--max-error-rate", 1,
                 "--task-ids", "cancel-no-longer-needed", "--out", out)
    assert res.exit_code == 0, res.output  # 1 never stops


def test_cap_hit_counts_as_failure(tmp_path):
    """The oracle needs more than one step for this task: cut off after one, it fails even though a one-action
    prefix of the gold could match (tau-bench gives no reward without a finished episode)."""
    out = tmp_path / "run.json"
    res = invoke("run", "--task-ids", "cancel-no-longer-needed", "--max-steps", "1", "--out", out)
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["termination_reason"] == "max_steps" and trial["passed"] is False
    assert "max_steps" in trial["grade"]["failure"]


def test_empty_store_url_is_refused():
    res = invoke("run", "--store", "")
    assert res.exit_code == 2 and "--store: empty URL" in res.output


def test_ctrl_c_keeps_finished_trials_and_does_not_wait_for_stuck_ones(tmp_path):
    partial = tmp_path / "run.json.partial.jsonl"
    code, stderr, lines = interrupt_run(
        ["run", "--agent", "py:tests._support.slow_agents:stuck_after_first", "--trials", "2", "--concurrency", "2",
         "--out", str(tmp_path / "run.json")], partial, 1, 60)
    assert code == 130
    assert "interrupted" in stderr and str(partial) in stderr
    assert lines and all(x["trial"] == 0 for x in lines)


def test_unwritable_log_and_html_paths_are_clear_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = invoke("run", "--task-ids", "cancel-no-longer-needed", "--log-file", blocker / "x.log")
    assert res.exit_code == 2 and f"{blocker} is not a directory" in res.output
    out = tmp_path / "run.json"
    assert invoke("run", "--task-ids", "cancel-no-longer-needed", "--out", out).exit_code == 0
    res = invoke("report", out, "--html", blocker / "x.html")
    assert res.exit_code == 2 and f"{blocker} is not a directory" in res.output


def test_version_prints_the_installed_package_version():
    from importlib import metadata

    res = invoke("--version")
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"tausim {metadata.version('tausim')}"


def test_every_command_lives_in_its_own_module_of_the_cli_package():
    import importlib

    import simulator.cli as cli

    assert len(cli.COMMANDS) >= 19
    for name, entry in cli.COMMANDS.items():
        obj = getattr(importlib.import_module(entry.module), entry.attr)
        callbacks = [info.callback for info in getattr(obj, "registered_commands", [])] or [obj]
        for callback in callbacks:
            assert callback.__module__ == entry.module and entry.module.startswith("simulator.cli."), name


def test_a_resumed_session_of_errors_fails_its_error_rate_and_an_empty_run_id_is_refused(tmp_path):
    """A resumed run whose earlier trials passed and whose few new ones (fewer than 10: never checked while they
    ran) all ended on errors exits 1: the check is over this session's trials, as the early stop's is."""
    from simulator.storage.documents import partial_header
    from simulator.types.results import TrialResult
    from simulator.types.spec import RunSpec

    ids = ["cancel-no-longer-needed", "modify-order-address", "exchange-two-items"]
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", ",".join(ids), "--trials", 4, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    passed = [TrialResult.model_validate(t) for t in json.loads(done.read_text())["trials"]]
    assert len(passed) == 12 and all(t.passed for t in passed)
    spec = RunSpec(domain="retail", task_ids=ids, trials=5, agent="py:tests.cli.test_cli:failing_factory",
                   preflight=False)
    partial = tmp_path / "run.json.partial.jsonl"
    partial.write_text("\n".join([json.dumps(partial_header(spec, 15, ids)),
                                  *(t.model_dump_json() for t in passed)]) + "\n")
    res = invoke("run", "--resume-from", partial, "--out", tmp_path / "run.json", "--no-progress")
    assert res.exit_code == 1, res.output  # 3 of 15 on errors over the run, but 3 of 3 in this session
    assert "this session's 3 finished trials: 3 ended on an error (agent_error 3)" in " ".join(res.output.split())
    doc = json.loads((tmp_path / "run.json").read_text())
    assert len(doc["trials"]) == 15 and sum(not t["passed"] for t in doc["trials"]) == 3
    res = invoke("run", "--run-id", " ", "--store", f"sqlite:///{tmp_path / 'runs.db'}")
    assert res.exit_code == 2 and "--run-id: empty" in res.output
    assert not (tmp_path / "runs.db").exists()


def test_resume_from_without_out_writes_the_document_the_stopped_run_would_have_written(tmp_path):
    """``--resume-from run.json.partial.jsonl`` alone writes ``run.json``: the resumed trials were once recorded
    nowhere (a tour's finding: the stop's hint named no --out, and following it lost the session's work)."""
    from simulator.storage.documents import partial_header
    from simulator.types.results import TrialResult
    from simulator.types.spec import RunSpec

    ids = ["cancel-no-longer-needed", "modify-order-address"]
    done = tmp_path / "done.json"
    assert invoke("run", "--task-ids", ",".join(ids), "--trials", 2, "--out", done, "--no-progress").exit_code == 0
    first = [TrialResult.model_validate(t) for t in json.loads(done.read_text())["trials"]][:1]
    spec = RunSpec(domain="retail", task_ids=ids, trials=2, preflight=False)
    partial = tmp_path / "run.json.partial.jsonl"
    partial.write_text("\n".join([json.dumps(partial_header(spec, 4, ids)), first[0].model_dump_json()]) + "\n")
    res = invoke("run", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "run.json").read_text())
    assert len(doc["trials"]) == 4  # 1 from the partial file, 3 run now
    assert not partial.exists()  # the document is written: the partial file is done with

    odd = tmp_path / "stopped.jsonl"
    odd.write_text(partial_header_line(spec, ids) + "\n")
    res = invoke("run", "--resume-from", odd, "--no-progress")
    assert res.exit_code == 2 and "give --out FILE" in " ".join(res.output.split()), res.output


def partial_header_line(spec, ids):
    from simulator.storage.documents import partial_header

    return json.dumps(partial_header(spec, len(ids) * spec.trials, ids))

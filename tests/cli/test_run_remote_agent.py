"""``tausim run --agent http:URL`` through the real command line: a service on 127.0.0.1 passes a retail task; an
endpoint where nothing listens stops the run in its pre-flight (exit 2, one line naming the URL, no trial run)."""

from __future__ import annotations

import json
import socket

from typer.testing import CliRunner

from simulator.cli import app
from simulator.interop.loopback import openai_server, oracle_script
from simulator.world.domain import get_domain

TASK = "cancel-gift-card-balance"


def _task():
    return next(t for t in get_domain("retail").load_tasks(None) if t.id == TASK)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_tausim_run_with_an_http_agent_passes_a_retail_task(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    task = _task()
    out = tmp_path / "run.json"
    with openai_server({"tausim-agent": oracle_script(task)}) as service:
        res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", f"http:{service.api_base}", "--user",
                                       "rule", "--task-ids", TASK, "--trials", "1", "--out", str(out),
                                       "--no-progress"])
        requests = service.requests.get("tausim-agent", [])
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["passed"] and trial["termination_reason"] == "user_stop"
    gold = [(a.name, dict(a.arguments)) for a in task.gold_actions]
    assert [(c["name"], c["arguments"]) for c in trial["trajectory"]["tool_calls"]] == gold
    # the service was sent the conversation and the trial's tools, and asked once per gold action and to close
    assert len(requests) >= len(gold) + 1
    assert {t["function"]["name"] for t in requests[0]["tools"]} >= {name for name, _ in gold}
    assert requests[0]["messages"][0]["role"] == "system" and requests[0]["messages"][-1]["role"] == "user"


def test_an_unreachable_http_agent_stops_the_run_in_its_preflight(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", f"http:{url}", "--user", "rule",
                                   "--task-ids", TASK, "--trials", "1", "--out", str(out), "--no-progress"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if "set-up error" in line]
    assert len(lines) == 1 and url in lines[0] and "unreachable" in lines[0], res.output
    assert not out.exists()  # no trial ran


def test_secrets_of_an_http_agent_are_used_but_never_recorded_or_printed(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    key, header = "sk-SECRET-key-1234", "hdr-SECRET-5678"
    task = _task()
    out, log, db = tmp_path / "run.json", tmp_path / "run.log", tmp_path / "runs.db"
    with openai_server({"tausim-agent": oracle_script(task)}) as service:
        url = service.api_base
        spec = {"format": "tausim.runspec", "version": 1, "domain": "retail", "user": "rule", "task_ids": [TASK],
                "trials": 1, "agent": {"name": f"http:{url}", "args": {
                    "api_key": key, "headers": {"X-Api-Key": header, "Accept": "application/json"}}}}
        (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        res = CliRunner().invoke(app, ["run", "--spec", str(tmp_path / "spec.json"), "--out", str(out),
                                       "--store", f"sqlite:///{db}", "--log-file", str(log), "--no-progress"])
        seen = list(service.authorizations)
        # the stored run is still the same run: resuming it with the real key is accepted
        again = CliRunner().invoke(app, ["run", "--spec", str(tmp_path / "spec.json"), "--store",
                                         f"sqlite:///{db}", "--run-id", json.loads(out.read_text())["run_id"],
                                         "--no-progress"])
    assert again.exit_code == 0 and key not in again.output, again.output
    assert res.exit_code == 0, res.output
    assert seen and all(a == f"Bearer {key}" for a in seen)  # the key was used
    recorded = {"stdout": res.output, "run document": out.read_text(encoding="utf-8"),
                "log": log.read_text(encoding="utf-8"), "store": db.read_bytes().decode("utf-8", "replace")}
    for where, text in recorded.items():
        for secret in (key, header):
            assert secret not in text, (where, secret)  # were all written in clear
    config = json.loads(out.read_text(encoding="utf-8"))["config"]["agent"]
    assert config["args"] == {"api_key": "[redacted]", "headers": {"X-Api-Key": "[redacted]",
                                                                   "Accept": "application/json"}}


def test_a_partial_file_without_its_secrets_is_refused_for_resume_in_one_line(tmp_path):
    from simulator.storage.documents import partial_header
    from simulator.types.spec import RunSpec

    spec = RunSpec(domain="retail", agent={"name": "http:http://127.0.0.1:9/v1", "args": {"api_key": "sk-1"}})
    partial = tmp_path / "run.json.partial.jsonl"
    partial.write_text(json.dumps(partial_header(spec, 1, ["a"])) + "\n", encoding="utf-8")
    assert "sk-1" not in partial.read_text(encoding="utf-8")
    res = CliRunner().invoke(app, ["run", "--resume-from", str(partial), "--no-progress"])
    assert res.exit_code == 2 and "secrets" in res.output and "api_key_env" in res.output, res.output


def test_an_unreachable_endpoint_s_error_does_not_print_the_url_s_password(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent",
                                   f"http:http://me:pw-SECRET-1@127.0.0.1:{_closed_port()}/v1", "--user", "rule",
                                   "--task-ids", TASK, "--no-progress"])
    assert res.exit_code == 2 and "unreachable" in res.output, res.output
    assert "pw-SECRET-1" not in res.output and "me:[redacted]@127.0.0.1" in res.output

"""A trial's tools over MCP: `tausim serve-tools` driven by the official `mcp` SDK client (HTTP and stdio)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from simulator.interop.mcp_server import ToolSession  # noqa: E402
from simulator.types.spec import RunSpec  # noqa: E402
from simulator.world.domain import get_domain  # noqa: E402
from tests._support.children import restore_sigint  # noqa: E402

TASK = "cancel-no-longer-needed"
TAUSIM = [sys.executable, "-m", "simulator.cli"]
ROOT = Path(__file__).resolve().parents[2]


def _gold(task_id: str = TASK) -> list[Any]:
    task = next(t for t in get_domain("retail").load_tasks(None) if t.id == task_id)
    return list(task.gold_actions)


def _schemas() -> dict[str, Any]:
    dom = get_domain("retail")
    tmpl = dom.template(None, dom.default_options(None))
    return {s["function"]["name"]: s["function"] for s in dom.toolbox_for(tmpl.options).schemas()}


def _domain_tools() -> list[str]:
    return sorted(_schemas())


class Served:
    """A `tausim serve-tools` subprocess; its stdout is read by a thread (the URL line, then the grade)."""

    def __init__(self, *extra: str) -> None:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [*TAUSIM, "serve-tools", "--domain", "retail", "--task-id", TASK, "--port", "0", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
            preexec_fn=restore_sigint)
        self.lines: list[str] = []
        self._url = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if " at http://" in line:
                self._url.set()

    def url(self, timeout: float = 90) -> str:
        if not self._url.wait(timeout):
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
            pytest.fail(f"serve-tools did not start: {''.join(self.lines)}\n{err}")
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", "".join(self.lines))
        assert found is not None
        return found.group(0)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        time.sleep(0.2)  # the reader thread drains stdout
        return rc, "".join(self.lines), err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    yield s
    s.kill()


async def _drive(url: str, calls: list[Any]) -> tuple[list[str], list[Any]]:
    with anyio.fail_after(60):
        async with Client(url) as client:
            listed = await client.list_tools()
            results = [await client.call_tool(a.name, dict(a.arguments)) for a in calls]
    schemas = _schemas()
    for t in listed.tools:  # the same descriptions and JSON schemas a native agent gets
        assert (t.description, t.input_schema) == (schemas[t.name]["description"], schemas[t.name]["parameters"])
    return sorted(t.name for t in listed.tools), results


def test_serve_tools_http_gold_actions_pass(served: Served) -> None:
    names, results = anyio.run(_drive, served.url(), _gold())
    assert names == _domain_tools()
    assert all(not r.is_error for r in results)
    assert "W1773282" in results[1].content[0].text
    rc, out, err = served.stop()
    assert rc == 0, out + err
    assert "grade: PASS" in out
    assert "state differences: none" in out
    assert "cancel_pending_order" in out
    assert "\x1b" not in out


def test_serve_tools_http_nothing_called_fails(served: Served) -> None:
    names, _ = anyio.run(_drive, served.url(), [])
    assert names == _domain_tools()
    rc, out, err = served.stop()
    assert rc == 1, out + err
    assert "grade: FAIL" in out
    assert "tool calls (0)" in out
    assert "orders" in out  # the state difference the missing cancellation leaves


def test_serve_tools_stdin_eof_ends_the_session(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    s = Served("--out", str(tmp_path / "trial.json"), "--store", f"sqlite:///{db}", "--run-id", "served")
    try:
        url = s.url()
        _, results = anyio.run(_drive, url, _gold()[:1])  # a read only: state unchanged, task not done
        assert not results[0].is_error
        assert s.proc.stdin is not None
        s.proc.stdin.close()  # end of input ends the session
        rc = s.proc.wait(60)
    finally:
        s.kill()
    assert rc == 1
    trial = json.loads((tmp_path / "trial.json").read_text())
    calls = trial["trajectory"]["tool_calls"]
    assert [(c["name"], c["requestor"], c["status"], c["kind"], c["step"]) for c in calls] == [
        ("find_user_id_by_name_zip", "agent", "ok", "read", 0)]
    assert trial["termination_reason"] == "user_stop" and trial["passed"] is False
    from simulator.storage.store import ResultsStore

    store = ResultsStore(f"sqlite:///{db}")
    try:
        stored = store.load_trials("served")
    finally:
        store.close()
    assert [t.model_dump(mode="json")["trajectory"]["tool_calls"] for t in stored] == [calls]


def test_serve_tools_stdio_gold_actions_pass(tmp_path: Path) -> None:
    out = tmp_path / "trial.json"
    params = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT),
        args=["-m", "simulator.cli", "serve-tools", "--domain", "retail", "--task-id", TASK, "--stdio",
              "--out", str(out)],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})

    async def drive() -> tuple[list[str], list[Any]]:
        with anyio.fail_after(90):
            async with Client(params) as client:
                listed = await client.list_tools()
                results = [await client.call_tool(a.name, dict(a.arguments)) for a in _gold()]
        return sorted(t.name for t in listed.tools), results

    names, results = anyio.run(drive)
    assert names == _domain_tools()
    assert all(not r.is_error for r in results)
    deadline = time.monotonic() + 30  # the server grades after the client closed its stdin
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    trial = json.loads(out.read_text())
    assert trial["passed"] is True
    assert [c["name"] for c in trial["trajectory"]["tool_calls"]] == [a.name for a in _gold()]


def test_tool_session_records_calls_like_native_ones() -> None:
    """In process: invalid arguments and unknown tools are recorded as natively; a transfer ends the trial."""
    spec = RunSpec.model_validate({"domain": "retail", "task_ids": [TASK], "agent": "null", "user": "rule"})
    session = ToolSession.open(spec)
    assert [s["function"]["name"] for s in session.schemas()] == [
        s["function"]["name"] for s in session.runner.domain.toolbox_for(session.runner.template.options).schemas()]
    bad = session.call("get_order_details", {"order": "#W1773282"})
    unknown = session.call("no_such_tool", {})
    ok = session.call("get_order_details", {"order_id": "#W1773282"})
    assert (bad.status, unknown.status, ok.status) == ("invalid_arguments", "unknown_tool", "ok")
    assert [r.step for r in (bad, unknown, ok)] == [0, 1, 2]
    assert all(r.requestor == "agent" and r.duration_s >= 0 for r in (bad, unknown, ok))
    assert ok.kind == "read"
    transfer = next(n for n, s in session.toolbox.specs.items() if s.ends_conversation)
    session.call(transfer, {"summary": "the user wants a person"})
    assert session.ended == "agent_transfer"
    with pytest.raises(RuntimeError, match="ended"):
        session.call("get_order_details", {"order_id": "#W1773282"})
    result = session.finish()
    assert result.termination_reason == "agent_transfer" and not result.passed
    assert result.grade is not None and result.grade.state.differences  # the cancellation is missing
    assert session.finish() is result


@pytest.mark.parametrize("task_id", [TASK, "refuse-cancel-delivered", "exchange-two-items"])
def test_same_trial_natively_and_through_mcp(task_id: str) -> None:
    """The oracle's calls made natively and through a ToolSession: the same records, the same state grade."""
    from simulator.execution.build import build_runner

    spec = RunSpec.model_validate({"domain": "retail", "task_ids": [task_id], "agent": "oracle", "user": "rule"})
    native = build_runner(spec).run().trials[0]
    session = ToolSession.open(spec)
    for c in native.trajectory.tool_calls:
        session.call(c.name, c.arguments, call_id=c.call_id)
    served = session.finish()

    def shape(trial: Any) -> list[tuple[Any, ...]]:
        return [(c.call_id, c.name, c.arguments, c.kind, c.status, c.content, c.requestor, c.bug, c.fault)
                for c in trial.trajectory.tool_calls]

    assert shape(served) == shape(native)
    assert served.grade is not None and native.grade is not None
    assert served.grade.state == native.grade.state
    assert served.grade.assertions == native.grade.assertions
    assert served.grade.process == native.grade.process
    # a task with required outputs needs the agent's messages, which an MCP client does not send
    assert served.passed == (native.passed and not served.grade.outputs.get("missing"))
    assert served.seed == native.seed


def test_printed_grade_escapes_control_characters() -> None:
    import io

    from rich.console import Console

    from simulator.cli.serve_tools import print_trial

    spec = RunSpec.model_validate({"domain": "retail", "task_ids": [TASK], "agent": "null", "user": "rule"})
    session = ToolSession.open(spec)
    rec = session.call("get_order_details", {"order_id": "#W\x1b[2J\x07[red]x[/red]\r"})
    assert rec.status == "tool_error"
    buf = io.StringIO()
    print_trial(session.finish(), Console(file=buf, width=200, force_terminal=False, color_system=None))
    text = buf.getvalue()
    assert not any(c in text for c in "\x1b\x07\r")
    assert "\\x1b[2J" in text and "[red]x[/red]" in text  # shown as text, neither run nor read as markup
    assert "grade: FAIL" in text


def test_hostile_values_over_mcp_are_made_safe_like_native_ones() -> None:
    """A non-finite argument is refused as invalid_arguments and a lone surrogate replaced, both noted."""
    spec = RunSpec.model_validate({"domain": "retail", "task_ids": [TASK], "agent": "null", "user": "rule"})
    session = ToolSession.open(spec)
    nan = session.call("get_order_details", {"order_id": float("nan")})
    half = session.call("get_order_details", {"order_id": "#W17\ud83d73282"})
    assert nan.status == "invalid_arguments" and nan.arguments is None and "NaN" in (nan.raw_arguments or "")
    assert half.arguments == {"order_id": "#W17\ufffd73282"} and half.status == "tool_error"
    notes = session.trajectory.notes
    assert any("non-finite" in n and "order_id" in n for n in notes)
    assert any("surrogate" in n for n in notes)
    result = session.finish()
    assert result.trajectory.tool_calls[0].status == "invalid_arguments"
    result.model_dump_json()  # the record encodes (no lone surrogate left)

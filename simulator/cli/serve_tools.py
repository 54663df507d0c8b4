"""The ``tausim serve-tools`` command: one trial's tools over MCP for an outside agent (or a person) to drive.

The trial's agent-side tools are served at ``http://127.0.0.1:PORT/mcp`` (streamable HTTP, loopback only) or, with
``--stdio``, on stdin/stdout. Every call runs on the trial's own database and is recorded as a native call would be
(:mod:`simulator.interop.mcp_server`). The session ends on Ctrl-C (SIGINT), SIGTERM or stdin EOF (over HTTP: stdin is
watched unless it is ``/dev/null``; over stdio: the client closing the stream); the trial is then graded and the
tool calls, the state differences and the grade are printed (on stderr with ``--stdio``, where stdout carries the
protocol). Exit code 0 when the trial passed, 1 when it failed, 2 on a usage error.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from simulator.cli._common import (
    check_outputs,
    connect_store,
    console,
    domain_options,
    err,
    fail,
    git_revision,
    package_versions,
    write_json_atomic,
)
from simulator.cli._run_options import sqlite_file
from simulator.errors import StoreError
from simulator.report import failure_lines
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain

__all__ = ["clean_text", "print_trial", "serve_tools_command"]


def clean_text(text: str) -> str:
    r"""Return ``text`` with every control or unprintable character escaped (ESC as ``\x1b``, newline as ``\n``)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _short(text: str, limit: int = 200) -> str:
    text = clean_text(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_trial(trial: TrialResult, out: Console) -> None:
    """Print a served trial's tool calls, state differences and grade (data escaped; no rich markup from data).

    Args:
        trial: the graded trial (:meth:`simulator.interop.mcp_server.ToolSession.finish`).
        out: the console to print on.
    """
    calls = trial.trajectory.tool_calls
    out.print(f"[bold]tool calls[/] ({len(calls)})", highlight=False)
    for c in calls:
        args = json.dumps(c.arguments if c.arguments is not None else c.raw_arguments, sort_keys=True, default=str)
        out.print(f"  #{c.step} {_short(c.name, 80)}({_short(args)}) -> {c.status}: {_short(c.content, 120)}",
                  highlight=False, markup=False)
    grade = trial.grade
    state = grade.state if grade is not None else None
    diffs = list(state.differences) if state is not None else []
    added = list(state.added) if state is not None else []
    removed = list(state.removed) if state is not None else []
    if state is None:
        out.print("state differences: not graded", highlight=False)
    elif not (diffs or added or removed):
        out.print("state differences: none (the database matches the goal state)", highlight=False)
    else:
        out.print(f"[bold]state differences[/] ({len(diffs)} fields, {len(added)} rows added, "
                  f"{len(removed)} rows removed)", highlight=False)
        for d in diffs[:20]:
            where = f"{d.get('table')}{d.get('key')}.{d.get('field')}"
            out.print(f"  {_short(where, 120)}: expected {_short(repr(d.get('expected')), 80)}, "
                      f"got {_short(repr(d.get('actual')), 80)}", highlight=False, markup=False)
        for kind, rows in (("added", added), ("removed", removed)):
            for r in rows[:10]:
                out.print(f"  {kind} {_short(str(r.get('table')) + str(r.get('key')), 120)}", highlight=False,
                          markup=False)
    verdict = "[bold green]PASS[/]" if trial.passed else "[bold red]FAIL[/]"
    out.print(f"grade: {verdict} ({clean_text(trial.termination_reason)}; "
              f"{clean_text(grade.failure or 'every component passed') if grade is not None else 'not graded'})",
              highlight=False)
    if not trial.passed:
        for line in failure_lines(trial.model_dump(mode="json"))[1:]:
            out.print(_short(line, 400), highlight=False, markup=False)


def _is_devnull(fd: int) -> bool:
    """True when ``fd`` is ``/dev/null`` (or closed): its EOF says nothing about the session."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return True
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def _watch_stdin(stop: threading.Event) -> None:
    """Set ``stop`` when stdin reaches EOF (a daemon thread reading and dropping it)."""

    def target() -> None:
        try:
            while os.read(sys.stdin.fileno(), 65536):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    threading.Thread(target=target, name="tausim-stdin-eof", daemon=True).start()


def _serve_http(session: Any, port: int) -> None:
    """Serve over HTTP until Ctrl-C, SIGTERM or stdin EOF."""
    from simulator.interop.mcp_server import bind_loopback, serve_http

    try:
        sock = bind_loopback(port)
    except OSError as e:
        session.close()
        raise fail(f"--port {port}: cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from e
    stop = threading.Event()
    if not _is_devnull(0):
        _watch_stdin(stop)
    old = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    n = len(session.schemas())

    def ready(url: str) -> None:
        console.print(f"serving {n} tools of task {clean_text(session.task.id)} "
                      f"(domain {session.runner.domain.name}) at {url}", highlight=False, markup=False)
        console.print("Ctrl-C (or end of input) ends the session and grades the trial", highlight=False)
        console.file.flush()

    try:
        serve_http(session, sock, stop, on_ready=ready)
    except KeyboardInterrupt:
        pass
    except RuntimeError as e:
        session.close()
        raise fail(str(e)) from e
    finally:
        signal.signal(signal.SIGTERM, old)
        sock.close()


def serve_tools_command(
    domain: Annotated[str, typer.Option(help="Domain name.")],
    task_id: Annotated[str, typer.Option("--task-id", help="Id of the task whose trial is served.")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one, printed).")] = 8765,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    seed: Annotated[int, typer.Option(help="Run seed (the trial seed: fault draws).")] = 0,
    trial: Annotated[int, typer.Option(min=0, help="Trial index (with --seed, the trial seed).")] = 0,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE.")] = None,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve over stdin/stdout instead of HTTP.")] = False,
    out: Annotated[Path | None, typer.Option(help="Write the graded trial (JSON) to this file.")] = None,
    store: Annotated[str | None, typer.Option(help="Record the graded trial as a run in this results store "
                                                   "(e.g. sqlite:///tausim.db).")] = None,
    run_id: Annotated[str | None, typer.Option(help="The run id in --store (default: a new one).")] = None,
) -> None:
    """Serve one trial's tools over MCP (http://127.0.0.1:PORT/mcp); on Ctrl-C or end of input, grade the trial."""
    try:
        from simulator.interop.mcp_server import ToolSession
    except ImportError as e:  # pragma: no cover - the mcp extra is part of the documented install
        raise fail(f"serve-tools needs the mcp extra (pip install 'tausim[mcp]'): {e}") from e
    check_outputs([("--out", out)], [("--tasks", tasks), ("--store", sqlite_file(store, run_id))])
    try:
        dom = get_domain(domain)
        if task_id not in [t.id for t in dom.load_tasks(tasks)]:
            raise fail(f"--task-id {task_id!r}: no such task in {tasks or 'the built-in tasks'} of domain {domain}")
        spec = RunSpec.model_validate({
            "domain": domain, "data_dir": str(data) if data else None, "tasks": tasks,
            "options": domain_options(dom, data, option), "task_ids": [task_id], "agent": "null", "user": "rule",
            "seed": seed, "trials": trial + 1})
        session = ToolSession.open(spec, task_id, trial)
    except (DomainError, TaskFileError, ValueError, KeyError) as e:
        raise fail(str(e)) from e
    report = console
    if stdio:
        from simulator.interop.mcp_server import serve_stdio

        report = err
        try:
            serve_stdio(session)
        except KeyboardInterrupt:
            pass
    else:
        _serve_http(session, port)
    result = session.finish()
    print_trial(result, report)
    if out is not None:
        write_json_atomic(out, result.model_dump(mode="json"))
    if store is not None:
        _record(store, run_id, session, result, report)
    raise typer.Exit(0 if result.passed else 1)


def _record(url: str, run_id: str | None, session: Any, result: TrialResult, report: Console) -> None:
    """Record the served trial as a run of one planned task in the results store at ``url``."""
    results = connect_store(url)
    try:
        info = results.create_run(session.runner.config, [session.task.id], run_id=run_id,
                                  git_revision=git_revision(), packages=package_versions())
        results.record(info.run_id, result)
    except StoreError as e:
        raise fail(f"--store: {e}") from e
    finally:
        results.close()
    report.print(f"recorded as run {info.run_id}", highlight=False, markup=False)

"""The ``tausim`` command: one module per command, loaded only when that command runs.

The CLI is the composition root: it may import every engine package, the reports and the shipped personas; no
engine module imports it (an import-linter contract checks this).

Start-up stays cheap (``tausim --version`` and ``tausim --help`` import neither the engine nor SQLAlchemy, litellm,
Dask, OpenTelemetry or MCP): the commands are listed in :data:`COMMANDS` with their one-line help, and a command's
module is imported only when the command is invoked or its own help is asked for (:class:`LazyGroup`, in
:mod:`simulator.cli._app`; typer itself is imported only when ``app`` is first used).
``tests/cli/test_cli_startup.py`` checks both the modules a start-up loads and that the listed help matches each
command's own.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from simulator.cli._app import LazyGroup, app, load_command

__all__ = ["COMMANDS", "CommandEntry", "LazyGroup", "app", "load_command", "main", "version_line"]


class CommandEntry(NamedTuple):
    """Where a ``tausim`` command lives.

    The module, the attribute (a command function or a typer sub-app), and the first paragraph of its help (what
    ``tausim --help`` lists without importing the module).
    """

    module: str
    attr: str
    summary: str


COMMANDS: dict[str, CommandEntry] = {
    "run": CommandEntry("simulator.cli.run", "run_command",
                        "Run trials of tasks with an agent and a simulated user; print pass^k and failures."),
    "play": CommandEntry("simulator.cli.play", "play_command",
                         "Play the simulated user of one task yourself, in the terminal; the trial is graded at "
                         "the end."),
    "serve-tools": CommandEntry("simulator.cli.serve_tools", "serve_tools_command",
        "Serve one trial's tools over MCP (http://127.0.0.1:PORT/mcp); on Ctrl-C or end of input, grade the trial."),
    "hunt": CommandEntry("simulator.cli.hunt", "hunt_command",
                         "Search task x persona x seed x user move for failures; cluster them by signature; "
                         "export regressions."),
    "replay": CommandEntry("simulator.cli.replay", "replay_command",
                           "Replay each task's gold actions on a fresh database; print one JSON line per task."),
    "regrade": CommandEntry("simulator.cli.regrade", "regrade_command",
                            "Grade a run again from its trajectories (after a task or grader fix); no model is "
                            "called."),
    "import": CommandEntry("simulator.cli.imports", "import_command",
                           "Import a peer's results as a run: each conversation becomes a stored trial, ungraded."),
    "calibrate": CommandEntry("simulator.cli.calibrate", "calibrate_command",
                              "Calibrate the simulator: a simulated run against a real one on the same tasks."),
    "domains": CommandEntry("simulator.cli.domains", "domains_command",
                            "List the registered domains and their built-in task splits; a plugin that cannot load "
                            "is reported (exit 1)."),
    "agents": CommandEntry("simulator.cli.registries", "agents_command",
                           "List the agent schemes (--agent SCHEME[:ARG]) registered under the entry-point group "
                           "tausim.agents."),
    "users": CommandEntry("simulator.cli.registries", "users_command",
        'List the user schemes (--user SCHEME[:ARG]) registered under the entry-point group tausim.users.'),
    "report": CommandEntry("simulator.cli.report", "report_command",
                           "Summarise a run: pass^k with confidence intervals, failures, cost and latency; "
                           "optionally an HTML page."),
    "export": CommandEntry("simulator.cli.report", "export_command",
        "Export a run's results in another tool's format: tau-bench, τ³ (tau2) or a τ³ leaderboard "
        "submission."),
    "baseline": CommandEntry("simulator.cli.gate", "baseline_command",
        "Derive per-task budgets from a run's passing trials, to apply with `tausim run --budgets FILE`."),
    "gate": CommandEntry("simulator.cli.gate", "gate_command",
                         "Fail (exit 1) when the candidate run regresses against the baseline beyond the "
                         "thresholds (for CI)."),
    "plan": CommandEntry("simulator.cli.plan", "plan_command",
                         "Print the trials per task a paired comparison on the baseline's tasks needs to detect "
                         "--detect."),
    "variance": CommandEntry("simulator.cli.variance", "variance_command",
                             "Split the trial-to-trial spread of pass/fail into the simulated user's and the agent's "
                             "shares."),
    "judge": CommandEntry("simulator.cli.judge", "judge_app",
                          "The LLM judge: calibration against human labels, pairwise comparison of runs."),
    "personas": CommandEntry("simulator.cli.personas", "personas_command",
                             "List the shipped personas, or validate persona files with --validate FILE."),
    "domain": CommandEntry("simulator.cli.domain", "domain_app", "Check a domain, or scaffold a new one."),
    "tasks": CommandEntry("simulator.cli.tasks", "tasks_app", "Work on task files."),
    "user": CommandEntry("simulator.cli.user", "user_app", "Check a simulated user before it grades anyone."),
}
"""Every ``tausim`` command, in the order ``tausim --help`` lists them."""


def version_line() -> str:
    """``tausim VERSION``: the installed distribution's version (one metadata read, no plug-in scan)."""
    from importlib import metadata

    try:
        return f"tausim {metadata.version('tausim')}"
    except metadata.PackageNotFoundError:
        return "tausim unknown"


BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}
"""Environment the ``tausim`` command sets, unless already set, before anything imports numpy: tausim uses numpy
for random numbers and means, never for linear algebra, and numpy's OpenBLAS otherwise starts a thread per core at
import (on this 2-core machine about a third of numpy's import CPU and a tenth of a one-task run's wall time,
measured with scripts/bench-startup). An agent that wants threaded BLAS in the ``tausim`` process sets the variable
itself; the library (``simulator.run``) changes nothing."""


def main() -> None:
    """Entry point of the ``tausim`` console script."""
    if sys.argv[1:] == ["--version"]:  # the common CI probe: no option parsing needed
        print(version_line())
        return
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)
    try:
        previous = signal.signal(signal.SIGTERM, _terminated_while_starting)  # a command installs its own later
        try:
            _import_quietly(sys.argv[1:2])
            from simulator.cli._app import app
        finally:
            if signal.getsignal(signal.SIGTERM) is _terminated_while_starting:
                signal.signal(signal.SIGTERM, previous)
        app()
    except KeyboardInterrupt:  # Ctrl-C where no command handles it (the imports, the plugins' entry points)
        print("tausim: interrupted", file=sys.stderr)
        raise SystemExit(130) from None


def _terminated_while_starting(signum: int, frame: object) -> None:
    """SIGTERM while the command's module is imported: exit 143 with a message, not killed in silence."""
    print("tausim: terminated while starting: nothing was run", file=sys.stderr)
    raise SystemExit(143)


def _import_quietly(command: list[str]) -> None:
    """Import the command line and ``command``'s module with the garbage collector off, then freeze what they made.

    ``command`` is ``sys.argv[1:2]``: a one-item list when a command is named. Afterwards the collector is back on
    (as it was) and the objects the imports made are permanent to it (:func:`gc.freeze`).

    Importing the engine makes some 150,000 objects that live as long as the process (modules, classes, functions,
    SQLAlchemy's and pydantic's tables), and the collector would walk them again and again while they are made:
    about an eighth of a one-task run's CPU (its full collections alone 70 ms; ``scripts/bench-startup``). Frozen,
    later collections look only at what the command makes. What the imports left as garbage (about 1% of the
    objects) stays in memory: a few hundred kilobytes, once. The library (``import simulator``) changes nothing.
    An import error propagates as before (from the command), the collector back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        import simulator.cli._app  # noqa: F401 - imported here to be frozen with the command's module

        entry = COMMANDS.get(command[0]) if command else None
        if entry is not None:
            try:
                importlib.import_module(entry.module)
            except ImportError:  # (a missing extra) the command imports it again and reports it in its own words
                pass
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def __getattr__(name: str) -> Any:
    """``app``, ``LazyGroup`` and ``load_command`` from :mod:`simulator.cli._app`, imported on first use (PEP 562).

    Raises:
        AttributeError: any other name.
    """
    if name in ("app", "LazyGroup", "load_command"):
        return getattr(importlib.import_module("simulator.cli._app"), name)
    raise AttributeError(f"module 'simulator.cli' has no attribute {name!r}")

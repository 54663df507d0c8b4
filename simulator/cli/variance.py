"""The ``tausim variance`` command: how much of the trial-to-trial spread comes from the simulated user vs the agent.

The command turns its options into a :class:`~simulator.types.spec.RunSpec`, runs it three times
(:func:`simulator.analysis.variance.run_variance`: both sides vary, only the user, only the agent) and prints the
decomposition (:mod:`simulator.stats.variance`).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.cli._common import console, err, fail, option_message, write_output
from simulator.cli._run_options import check_run_paths, refuse_ignored_options, run_spec
from simulator.cli.run import interrupted, run_command
from simulator.errors import OptionError, SetupError, StoreError
from simulator.execution.recording import Interrupts, partial_path
from simulator.stats.variance import CONDITIONS
from simulator.types.results import RunResult
from simulator.types.sanitize import counted
from simulator.types.spec import EXECUTOR_HELP, RunSpec, SpecError, format_validation_error
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError

__all__ = ["runs_dir_document_name", "variance_command"]

_RUN_DEFAULTS = {name: p.default for name, p in inspect.signature(run_command).parameters.items()}


def _spec(o: dict[str, Any]) -> RunSpec:
    """The run the options describe, through ``tausim run``'s own checks (``--spec`` FILE, else the run options).

    Raises:
        typer.Exit: code 2 on what ``tausim run`` refuses (run options beside ``--spec``, ``--task-ids ""``,
            unusable or clashing paths, a bad spec or persona file).
    """
    options = {**_RUN_DEFAULTS, **o, "trials": o["trials"] if o["trials"] is not None else 8, "vary": "both"}
    refuse_ignored_options(options, _DEFAULTS, allowed=("trials",))
    check_run_paths(options)
    spec = run_spec(options)
    if o["spec_file"] is not None and o["trials"] is not None:
        spec = RunSpec.model_validate({**spec.model_dump(), "trials": o["trials"]})
    return spec


def runs_dir_document_name(runs_dir: Path, document: Path) -> str:
    """How messages name a condition's run document in ``--runs-dir`` (the user gave no ``--out`` for it).

    Returns:
        ``--runs-dir DIR: the run document DIR/variance-CONDITION.json`` (``--out`` is the decomposition's file).
    """
    return f"--runs-dir {runs_dir}: the run document {document}"


def _document_name(runs_dir: Path | None, document: Path | None) -> str | None:
    """:func:`runs_dir_document_name` of a condition's document, or None (no ``--runs-dir``: none written)."""
    return None if runs_dir is None or document is None else runs_dir_document_name(runs_dir, document)


def _check_runs_dir(runs_dir: Path | None, out: Path | None) -> None:
    """Refuse (exit 2) a ``--runs-dir`` that is no folder or cannot be made, and ``--out`` on one of its files."""
    if runs_dir is None:
        return
    if runs_dir.exists() and not runs_dir.is_dir():
        raise fail(f"--runs-dir {runs_dir}: exists and is not a folder; give a folder (it is created when missing)")
    for c in CONDITIONS:
        doc = runs_dir / f"variance-{c}.json"
        for own in (doc, partial_path(doc)):
            if out is not None and (out.resolve() == own.resolve()):
                raise fail(f"--out {out}: is the --runs-dir's own {own.name} (the {c} run's document); writing it "
                           "would overwrite that run; give another file name")
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise fail(f"--runs-dir {runs_dir}: cannot create the folder ({e.strerror or e})") from e


def variance_command(
    ctx: typer.Context,
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    agent: Annotated[str, typer.Option(help="Agent spec (as `tausim run --agent`).")] = "reference",
    user: Annotated[str, typer.Option(help="Simulated user spec (as `tausim run --user`).")] = "rule",
    personas: Annotated[str | None, typer.Option(
        help="Personas the user plays (NAME[,NAME...]: shipped names or .json files); a task under one persona "
             "is one unit.")] = None,
    trials: Annotated[int | None, typer.Option(min=2, help="Trials per task in each of the three runs; default "
                                                           "8 (with --spec: the file's).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Run only these task ids (comma-separated).")] = None,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent per trial.")] = 30,
    temperature: Annotated[float | None, typer.Option(help="Model temperature (LLM agent/user).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL for local models.")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    faults: Annotated[str | None, typer.Option(
        help="Environment faults KIND=RATE,... (as `tausim run --faults`); they count on the simulator's side."
    )] = None,
    cache: Annotated[Path | None, typer.Option(
        help="Model response cache (SQLite file): with the agent held, its answers replay from it.")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Trials run at once.")] = None,
    executor: Annotated[str | None, typer.Option(help=f"Where trials run: {EXECUTOR_HELP}.")] = None,
    spec_file: Annotated[Path | None, typer.Option(
        "--spec", help="Run spec file (JSON): the run is the file's (its vary is replaced); --trials, --cache, "
                       "--concurrency and --executor apply besides.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the decomposition as JSON to this file.")] = None,
    runs_dir: Annotated[Path | None, typer.Option(
        help="Also write the three run documents here (variance-both.json, -user, -agent).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="With --runs-dir: keep what an interrupted call left there (each condition's partial or "
                         "finished run, when made with the same settings); only the missing trials run.")] = False,
    bootstrap_seed: Annotated[int, typer.Option(help="Seed of the bootstrap resamples.")] = 0,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live progress bar.")] = False,
) -> None:
    """Split the trial-to-trial spread of pass/fail into the simulated user's and the agent's shares.

    Runs the same tasks three times: both sides vary (as `tausim run`), only the user varies (the agent's seed held
    per task: a cached model agent replays its answers; `tausim run --vary user`), only the agent varies (`--vary
    agent`). Per task, the spread is the unbiased variance of its pass/fail outcomes; the simulator's share is
    the user-only spread over the both spread, the agent's the agent-only spread over it, the interaction their
    overlap (law of total variance), with 95% bootstrap intervals over tasks (simulator.stats.variance).
    Exit 0; 1 when one of the runs stopped early; 2 on bad input or a set-up error.
    """
    from simulator.analysis.variance import run_variance

    o = dict(locals())
    if resume and runs_dir is None:
        raise fail("--resume: resumes the runs kept in --runs-dir; give --runs-dir DIR")
    spec = _spec(o)
    _check_runs_dir(runs_dir, out)
    interrupts = Interrupts()
    hint = "rerun the same command with --resume to keep them" if runs_dir is not None else None
    try:
        if spec.trials < 2:
            raise ValueError(f"--trials: a task's spread needs at least 2 trials, got {spec.trials}")
        with interrupts.handled():
            result = run_variance(spec, out_dir=runs_dir, bootstrap_seed=bootstrap_seed,
                                  on_condition=lambda c, r: _done(c, r, interrupts),
                                  progress=not no_progress, resume=resume,
                                  on_trial=lambda _: interrupts.check(),  # a Ctrl-C a callback dropped
                                  on_interrupt=lambda stop: interrupted(stop, stop.out, interrupts, hint,
                                                                        out_name=_document_name(runs_dir, stop.out)))
            interrupts.check()  # a Ctrl-C a callback dropped
    except KeyboardInterrupt as e:  # between two runs (the runs' own interruptions exit in ``interrupted``)
        err.print(interrupts.said, highlight=False)
        raise typer.Exit(interrupts.code) from e
    except ValidationError as e:
        raise fail(format_validation_error("variance options", e)) from e
    except SetupError as e:
        raise fail(f"set-up error ({e.kind}): {e}") from e
    except OptionError as e:
        raise fail(option_message(e)) from e
    except (SpecError, DomainError, TaskFileError, StoreError, ValueError, OSError) as e:
        raise fail(str(e)) from e
    doc = result.document()
    _print(doc)
    if out is not None:
        write_output(out, json.dumps(doc, indent=2, allow_nan=False) + "\n")
        console.print(f"wrote {escape(str(out))}", highlight=False)
    aborted = {c: r.aborted for c, r in result.runs.items() if r.aborted}
    for c, why in aborted.items():
        err.print(f"[bold red]error:[/] the {c} run stopped early ({escape(why)}); its missing trials count as "
                  "failures", highlight=False)
    if aborted:
        raise typer.Exit(1)


_DEFAULTS = {name: p.default for name, p in inspect.signature(variance_command).parameters.items()}


def _done(condition: str, result: RunResult, interrupts: Interrupts | None = None) -> None:
    """Say that a condition's run finished; then raise a Ctrl-C a callback dropped meanwhile (``interrupts``)."""
    what = {"both": "both sides vary", "user": "only the user varies (agent held)",
            "agent": "only the agent varies (user held)"}[condition]
    p1 = result.metrics.get("pass^1")
    console.print(f"run {condition}: {what}: {len(result.trials)} trials, pass^1 "
                  f"{'-' if p1 is None else f'{p1:.3f}'}", highlight=False, markup=False)
    if interrupts is not None:
        interrupts.check()


def _share(doc: dict[str, Any], name: str) -> str:
    value, ci = doc["shares"].get(name), doc["intervals"].get(name)
    if value is None:
        return "- (no task varied in the 'both' run)"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "")


def _units(doc: dict[str, Any]) -> str:
    """``25 tasks x 3 personas (75 cells)`` with personas, else ``75 tasks``."""
    personas = doc.get("config", {}).get("personas") or []
    cells = doc["tasks"]
    if personas and cells % len(personas) == 0:
        n = len(personas)
        return f"{counted(cells // n, 'task')} x {counted(n, 'persona')} ({counted(cells, 'cell')})"
    return counted(cells, "task")


def _print(doc: dict[str, Any]) -> None:
    """Print a variance document: the spread per task (those with any), then overall and the shares.

    Every value from the runs (task ids, persona names) is printed as text, never as rich markup.
    """
    table = Table(title="trial-to-trial spread per task (variance of pass/fail)")
    for col in ("task", "pass rate (both run)", "both", "user only", "agent only"):
        table.add_column(col, justify="left" if col == "task" else "right")
    quiet = 0
    for task, row in doc["per_task"].items():
        if not any(row[c] for c in ("both", "user", "agent")):
            quiet += 1
            continue
        table.add_row(Text(task), f"{row['mean_both']:.2f}", *(f"{row[c]:.3f}" for c in ("both", "user", "agent")))
    if table.row_count:
        console.print(table)
    spread = doc["spread"]
    say = lambda text: console.print(text, highlight=False, markup=False)  # noqa: E731
    say(f"{_units(doc)} x {counted(doc['trials'], 'trial')} per run ({quiet} without spread in any run); mean "
        f"spread: both {spread['both']:.4f}, user only {spread['user']:.4f}, agent only {spread['agent']:.4f}")
    counts = doc.get("cells_with_spread") or {}
    if counts:
        say("cells with spread: " + ", ".join(f"{c} run {counts.get(c, 0)} of {doc['tasks']}" for c in CONDITIONS))
    say(f"share of the spread from the simulator (user only / both): {_share(doc, 'user')}")
    say(f"share from the agent (agent only / both): {_share(doc, 'agent')}")
    say(f"interaction (in both shares): {_share(doc, 'interaction')}; simulator alone {_share(doc, 'user_main')}, "
        f"agent alone {_share(doc, 'agent_main')}")
    if doc.get("undefined_resamples"):
        say(f"note: {doc['undefined_resamples']} of {doc['resamples']} bootstrap resamples drew only cells without "
            "spread in the 'both' run and define no share; the intervals are over the others")
    if doc.get("warning"):
        err.print(f"warning: {doc['warning']}", highlight=False, markup=False)
    say(f"method: {doc['method']}")

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

from personas.loader import PersonaError, load_personas
from simulator.cli._common import check_outputs, console, domain_options, err, fail, option_message, write_output
from simulator.errors import OptionError, SetupError, StoreError
from simulator.types.results import RunResult
from simulator.types.spec import EXECUTOR_HELP, RunSpec, SpecError, format_validation_error, load_spec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain

__all__ = ["variance_command"]


def _spec(o: dict[str, Any]) -> RunSpec:
    """The run the options describe (``--spec`` FILE, else the run options); raises ValueError and kin."""
    execution = {k: v for k, v in (("concurrency", o["concurrency"]), ("executor", o["executor"]),
                                   ("cache", str(o["cache"]) if o["cache"] else None)) if v is not None}
    if o["spec_file"] is not None:
        given = [f"--{k.replace('_', '-')}" for k in _THE_FILES if o[k] != _DEFAULTS[k]]
        if given:
            raise ValueError(f"{', '.join(given)}: ignored with --spec (the run is the file's); leave "
                             f"{'it' if len(given) == 1 else 'them'} out, or edit the file")
        spec = load_spec(o["spec_file"])
        return RunSpec.model_validate({**spec.model_dump(), **execution, **(
            {"trials": o["trials"]} if o["trials"] is not None else {})})
    dom = get_domain(o["domain"])
    personas = None
    if o["personas"] is not None:
        try:
            personas = load_personas(o["personas"])
        except PersonaError as e:
            raise ValueError(f"--personas {o['personas']}: {e}") from e
    ids = [t.strip() for t in o["task_ids"].split(",") if t.strip()] if o["task_ids"] else None
    model = {k: v for k, v in (("temperature", o["temperature"]), ("api_base", o["api_base"])) if v is not None}
    data: Path | None = o["data"]
    return RunSpec.model_validate({
        "domain": o["domain"], "data_dir": str(data) if data else None, "tasks": o["tasks"], "task_ids": ids,
        "options": domain_options(dom, data, o["option"]), "agent": {"name": o["agent"], **model},
        "user": {"name": o["user"], **model}, "personas": [p.name for p in personas] if personas else None,
        "persona_defs": {p.name: p.model_dump(mode="json") for p in personas} if personas else None,
        "trials": o["trials"] if o["trials"] is not None else 8, "seed": o["seed"], "max_turns": o["max_turns"],
        **({"faults": o["faults"]} if o["faults"] is not None else {}), **execution})


def variance_command(
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
    check_outputs([("--out", out)], [("--tasks", Path(tasks) if tasks else None), ("--cache", cache),
                                     ("--spec", spec_file)])
    try:
        spec = _spec(o)
        if spec.trials < 2:
            raise ValueError(f"--trials: a task's spread needs at least 2 trials, got {spec.trials}")
        if runs_dir is not None:
            runs_dir.mkdir(parents=True, exist_ok=True)
        result = run_variance(spec, out_dir=runs_dir, bootstrap_seed=bootstrap_seed, on_condition=_done,
                              progress=not no_progress)
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


_THE_FILES = ("domain", "agent", "user", "personas", "data", "tasks", "task_ids", "seed", "max_turns", "temperature",
              "api_base", "option", "faults")
"""Options that describe the run: refused with ``--spec`` (the file's values are used)."""

_DEFAULTS = {name: p.default for name, p in inspect.signature(variance_command).parameters.items()}


def _done(condition: str, result: RunResult) -> None:
    what = {"both": "both sides vary", "user": "only the user varies (agent held)",
            "agent": "only the agent varies (user held)"}[condition]
    p1 = result.metrics.get("pass^1")
    console.print(f"run {condition}: {what}: {len(result.trials)} trials, pass^1 "
                  f"{'-' if p1 is None else f'{p1:.3f}'}", highlight=False, markup=False)


def _share(doc: dict[str, Any], name: str) -> str:
    value, ci = doc["shares"].get(name), doc["intervals"].get(name)
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "")


def _print(doc: dict[str, Any]) -> None:
    """Print a variance document: the spread per task (those with any), then overall and the shares."""
    table = Table(title="trial-to-trial spread per task (variance of pass/fail)")
    for col in ("task", "pass rate", "both", "user only", "agent only"):
        table.add_column(col, justify="left" if col == "task" else "right")
    quiet = 0
    for task, row in doc["per_task"].items():
        if not any(row[c] for c in ("both", "user", "agent")):
            quiet += 1
            continue
        table.add_row(task, f"{row['mean_both']:.2f}", *(f"{row[c]:.3f}" for c in ("both", "user", "agent")))
    if table.row_count:
        console.print(table)
    spread = doc["spread"]
    console.print(f"{doc['tasks']} tasks x {doc['trials']} trials per run ({quiet} without spread in any run); mean "
                  f"spread: both {spread['both']:.4f}, user only {spread['user']:.4f}, agent only "
                  f"{spread['agent']:.4f}", highlight=False, markup=False)
    console.print(f"share of the spread from the simulator (user only / both): {_share(doc, 'user')}",
                  highlight=False, markup=False)
    console.print(f"share from the agent (agent only / both): {_share(doc, 'agent')}", highlight=False, markup=False)
    console.print(f"interaction (in both shares): {_share(doc, 'interaction')}; simulator alone "
                  f"{_share(doc, 'user_main')}, agent alone {_share(doc, 'agent_main')}", highlight=False,
                  markup=False)
    console.print(f"method: {doc['method']}", highlight=False, markup=False)

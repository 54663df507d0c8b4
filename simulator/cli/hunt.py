r"""``tausim hunt``: search for failures by forking trials at decision points, cluster them, export regressions.

Example::

    tausim hunt --domain retail --agent reference:wrong_item=0.05,skip_confirmation=0.05 --user rule \\
        --personas all --budget 1000 --seed 7 --export regressions.json
    tausim run --domain retail --tasks regressions.json --user rule --agent reference:...

See :mod:`simulator.hunt.search` for the search, the signatures and the regression cases; the hunt itself is
:func:`simulator.hunt.session.run_hunt`, this command turns options into a spec and renders what it found.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from simulator.cli._common import check_outputs, console, err, fail, load_persona_option, persona_files
from simulator.errors import TausimError
from simulator.execution.recording import Interrupts, WriteOutcome, sigint_deferred, write_with_fallback
from simulator.hunt.search import HuntResult
from simulator.hunt.session import HuntRun, run_hunt
from simulator.report import hunt_clusters, print_clusters, print_recovery, render_hunt_html, transcript_lines
from simulator.stats.faults import recovery_rates
from simulator.types.results import TrialResult
from simulator.types.sanitize import counted
from simulator.types.spec import RunSpec, format_validation_error

__all__ = ["hunt_command"]


def _spec(domain: str, tasks: str | None, task_ids: str | None, agent: str, user: str, personas: str | None,
          seed: int, max_turns: int, max_steps: int, faults: str | None = None, vary: str = "both") -> RunSpec:
    persona_list = load_persona_option(personas) if personas is not None else None
    ids = [t.strip() for t in task_ids.split(",") if t.strip()] if task_ids else None
    return RunSpec.model_validate({
        "domain": domain, "tasks": tasks, "task_ids": ids, "agent": {"name": agent}, "user": {"name": user},
        "personas": [p.name for p in persona_list] if persona_list else None,
        "persona_defs": {p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
        "seed": seed, "vary": vary, "max_turns": max_turns, "max_steps": max_steps, "preflight": False,
        **({"faults": faults} if faults is not None else {})})


def summary(result: HuntResult, *, exported: Collection[str] = (),
            examples: Mapping[str, TrialResult] | None = None, interrupted: str | None = None) -> dict[str, Any]:
    """Return the JSON summary of a hunt: budget spent, turns saved, clusters (signature, count, share, example).

    Args:
        result: the hunt's result.
        exported: ids of the clusters exported as regression cases (their ``case_id``).
        examples: cluster id -> the replayed trial of its shrunk conversation (its transcript is the example's);
            a cluster without one shows its shortest member's transcript.
        interrupted: where a Ctrl-C stopped the hunt (``HuntRun.interrupted``), or None.

    Returns:
        ``{"agent_turns", "saved_turns", "trials", "forks", "signatures", "clusters": [...], "recovery"}``; each
        cluster ``{"id", "case_id" (None when not exported), "signature", "count", "budget_share", "example"}``, its
        example ``{"task_id", "persona", "seed", "moves", "user_turns", "transcript": [[role, text], ...],
        "shrunk"}``; ``recovery`` (:func:`simulator.stats.faults.recovery_rates` over the hunt's trials) only when
        a trial met an environment fault; ``interrupted`` (first) only for a hunt a Ctrl-C stopped.
    """
    spent = max(result.agent_turns, 1)
    examples = examples or {}
    doc: dict[str, Any] = {
        **({"interrupted": interrupted} if interrupted is not None else {}),
        "agent_turns": result.agent_turns, "saved_turns": result.saved_turns, "trials": len(result.trials),
        "forks": sum(1 for t in result.trials if t.parent is not None), "signatures": len(result.clusters),
        "clusters": [{
            "id": c.case_id, "case_id": c.case_id if c.case_id in exported else None,
            "signature": list(c.signature), "count": len(c.trials),
            "budget_share": round(sum(t.fresh_agent_turns for t in c.trials) / spent, 4),
            "example": {"task_id": c.shortest.result.task_id, "persona": c.shortest.result.persona,
                        "seed": c.shortest.result.seed, "moves": {str(k): v for k, v in c.shortest.moves.items()},
                        "user_turns": c.script if c.script is not None else c.shortest.user_turns(),
                        "transcript": [list(line) for line in transcript_lines(
                            (examples.get(c.case_id) or c.shortest.result).trajectory.model_dump(mode="json"))],
                        "shrunk": c.case_id in examples},
        } for c in result.clusters],
    }
    if any(t.result.faults for t in result.trials):
        doc["recovery"] = recovery_rates([t.result.model_dump(include={"passed", "faults"}) for t in result.trials])
    return doc


def hunt_command(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to hunt on.")] = None,
    agent: Annotated[str, typer.Option(help="The agent under test (as for tausim run).")] = "reference",
    user: Annotated[str, typer.Option(help="The simulated user (rule, llm:MODEL, py:...).")] = "rule",
    personas: Annotated[str | None, typer.Option(help="Personas of the root trials: all, or comma-separated.")] = None,
    budget: Annotated[int, typer.Option(min=1, help="Agent turns to spend (forks pay only for their suffix).")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the search (and of the trials); same seed, same hunt.")] = 0,
    vary: Annotated[str, typer.Option(
        help="Only both: a hunt varies both sides of every trial (its cases pin one seed; user moves and agent "
             "reseeds vary each side on its own). user and agent (as for tausim run) are refused.")] = "both",
    max_turns: Annotated[int, typer.Option(min=1, help="Most messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Most agent actions per trial.")] = 60,
    export: Annotated[Path | None, typer.Option(help="Write the clusters as regression cases (task file v2).")] = None,
    prefix: Annotated[bool, typer.Option(help="With --export: also a trajectory-prefix case per cluster (state "
                                              "before the first error, next turn graded).")] = False,
    clean_agent: Annotated[str | None, typer.Option(
        help="Keep only cases this agent passes (default for reference:KNOBS: the clean reference agent).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the hunt's summary (JSON).")] = None,
    faults: Annotated[str | None, typer.Option(
        help="Environment faults in the agent's tool calls (as for tausim run: transient=0.05,timeout=0.02,...), so "
             "that hunting exercises recovery.")] = None,
    html: Annotated[Path | None, typer.Option(help="Write the hunt's page (failure clusters) as HTML.")] = None,
    trial_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds a trial may run (as for tausim run; inf: no limit); past it the trial is a "
                        "`timeout` failure, charged --max-steps agent turns. Default: no limit.")] = None,
    request_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds one model request may take (as for tausim run); default 60.")] = None,
) -> None:
    """Search task x persona x seed x user move for failures; cluster them by signature; export regressions.

    Ctrl-C (or SIGTERM) once the search began: what the hunt found until then is written to the outputs asked for
    (marked ``interrupted``: the trials and clusters so far, the regression cases already made), one line names
    them, exit 130 (143).

    Exit codes: 0 done; 1 an output could not be written (disk full: each output is tried, one that fails goes
    to a fallback file ``tausim-hunt-XXXXXXXX.json`` (``tausim-hunt-cases-...`` for ``--export``, ``.html`` for
    ``--html``) named in a one-line error; the summary is printed); 2 bad input or a set-up that cannot work (a
    missing API key, an unknown model, an unreachable server, a factory that raises: checked before the hunt by
    the run's pre-flight), an output path in a missing directory, ``--prefix`` without ``--export``.
    """
    if prefix and export is None:
        raise fail("--prefix: trajectory-prefix cases are written with the regression cases; add --export FILE")
    check_outputs([("--export", export), ("--out", out), ("--html", html)], [("--tasks", tasks),
                                                                            *persona_files(personas)])
    files = _Files(export, out, html, f"tausim hunt {domain} {agent}")
    kept: list[_Kept] = []

    def keep(found: HuntRun) -> None:  # Ctrl-C: what the hunt found so far is written (a second Ctrl-C held off)
        report = summary(found.result, exported=found.exported, examples=found.examples,
                         interrupted=found.interrupted)
        outputs = files.outputs(found, report)
        kept.append((found, report, outputs, [_save(o) for o in outputs]))

    interrupts = Interrupts()
    with interrupts.handled():  # to the end: a Ctrl-C between the hunt and its outputs is told too
        try:
            spec = _spec(domain, tasks, task_ids, agent, user, personas, seed, max_turns, max_steps, faults, vary)
            spec = RunSpec.model_validate({**spec.model_dump(), **{k: v for k, v in (
                ("trial_timeout", trial_timeout), ("request_timeout", request_timeout)) if v is not None}})
            found = run_hunt(spec, budget, seed=seed, export=export is not None, clean_agent=clean_agent,
                             prefix=prefix, on_interrupt=keep, checkpoint=interrupts.check)
        except KeyboardInterrupt as e:
            raise _interrupted(kept, interrupts) from e
        except ValidationError as e:
            raise fail(format_validation_error("hunt options", e)) from e
        except (TausimError, ValueError, OSError) as e:
            raise fail(str(e)) from e
        _finish(found, files, out is None and export is None, interrupts)


def _finish(found: HuntRun, files: _Files, as_json: bool, interrupts: Interrupts) -> None:
    """Write the finished hunt's outputs (Ctrl-C held off meanwhile), then print what it found and what was written.

    Raises:
        typer.Exit: 130 (143 on SIGTERM) when interrupted: during the writes (finished first) after printing as
            usual, or after them, saying so in one line; else 1 when an output could not be written.
    """
    with interrupts.handled():
        try:
            with sigint_deferred() as held:  # results first, each on its own: one that fails stops no other
                report = summary(found.result, exported=found.exported, examples=found.examples)
                outputs = files.outputs(found, report)
                written = [_save(o) for o in outputs]
            interrupts.check()  # a Ctrl-C a callback dropped meanwhile
            _show(found, report, as_json)
            for o, w in zip(outputs, written, strict=True):
                if w.written is not None:
                    console.print(f"wrote {_named(o, w)}", highlight=False)
        except KeyboardInterrupt as e:
            err.print(f"{interrupts.said} after the outputs were written", highlight=False)
            raise typer.Exit(interrupts.code) from e
    if held or any(w.interrupted for w in written):
        err.print(f"{interrupts.said}: the hunt's outputs were written first", highlight=False)
        raise typer.Exit(interrupts.code)
    if any(w.error is not None for w in written):
        raise typer.Exit(1)


def _show(found: HuntRun, report: Mapping[str, Any], as_json: bool) -> None:
    """Print what the hunt found: its budget, recovery, clusters, notes; with ``as_json`` the summary's figures."""
    result = found.result
    console.print(f"hunt: {result.agent_turns} agent turns, {result.saved_turns} saved by forking, "
                  f"{len(result.trials)} trials", highlight=False)
    print_recovery(report.get("recovery"), console)
    print_clusters(hunt_clusters(report), console)
    for n in found.notes:
        console.print(f"note: {n}", highlight=False, markup=False)
    if as_json:
        console.print_json(json.dumps({k: v for k, v in report.items() if k != "clusters"}))


def _interrupted(kept: list[_Kept], interrupts: Interrupts) -> typer.Exit:
    """Ctrl-C (SIGTERM): print what was found and the one line naming what was written; exit 130 (143)."""
    code, said = interrupts.code, interrupts.said
    if not kept:  # before the search began (the options, the tasks, the pre-flight)
        err.print(f"{said} while the hunt was starting: nothing was run", highlight=False)
        return typer.Exit(code)
    found, report, outputs, written = kept[0]
    _show(found, report, not outputs)
    names = [_named(o, w) for o, w in zip(outputs, written, strict=True) if w.written is not None]
    err.print(escape(f"{said} {found.interrupted}: " + (f"wrote {', '.join(names)}" if names else
                                                         "nothing was written (no --out, --export or --html)")),
              highlight=False)
    sys.stdout.flush()
    return typer.Exit(code)


def _named(o: _Output, w: WriteOutcome) -> str:
    """The file an output went to, with its detail (``(N cases)``) when it is the one asked for."""
    return f"{w.written}{o.detail if w.written == o.path else ''}"


@dataclass(frozen=True)
class _Files:
    """The hunt's output options (each None when not given) and its page's title."""

    export: Path | None
    out: Path | None
    html: Path | None
    title: str

    def outputs(self, found: HuntRun, report: Mapping[str, Any]) -> list[_Output]:
        """The files to write: the regression cases, the summary, the page (those asked for), in that order."""
        doc = found.cases
        if doc is not None and found.interrupted is not None:
            doc = {**doc, "interrupted": found.interrupted}
        return [*([_Output("--export", self.export, json.dumps(doc, indent=1, default=str), "the regression cases",
                           "tausim-hunt-cases", ".json", f" ({counted(len(doc['tasks']), 'case')})")]
                  if self.export is not None and doc is not None else []),
                *([_Output("--out", self.out, json.dumps(report, indent=1, default=str), "the hunt's summary",
                           "tausim-hunt", ".json")] if self.out is not None else []),
                *([_Output("--html", self.html, render_hunt_html(report, title=self.title), "the hunt's page",
                           "tausim-hunt", ".html")] if self.html is not None else [])]


_Kept = tuple[HuntRun, dict[str, Any], list["_Output"], list[WriteOutcome]]
"""What an interrupted hunt kept: what it found, its summary, its outputs and what became of each."""


@dataclass(frozen=True)
class _Output:
    """One file of the hunt's: its option, path, text, what it holds (for the error) and its fallback's name."""

    option: str
    path: Path
    text: str
    what: str
    prefix: str
    suffix: str
    detail: str = ""  # after "wrote PATH"


def _save(o: _Output) -> WriteOutcome:
    """Write one output, or a fallback file (as ``tausim run``'s ``--out``); on failure say so in one line."""
    written = write_with_fallback(o.path, o.text, o.prefix, o.suffix)
    if written.error is not None:
        where = (f"{o.what} went to {written.written} instead" if written.written is not None else
                 "no fallback file could be written either")
        err.print(f"[bold red]error:[/] {escape(f'{o.option} {o.path}: cannot write ({written.error}); {where}')}",
                  highlight=False)
    return written


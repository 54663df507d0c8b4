"""The ``tausim gate`` and ``tausim baseline`` commands: regression gate and budgets for CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.analysis.budgets import derive_budgets
from simulator.analysis.comparability import check_comparable
from simulator.analysis.gate import GateError, evaluate_gate
from simulator.cli._common import check_outputs, write_output
from simulator.cli.report import load_run
from simulator.report import safe_console
from simulator.storage.documents import RunDocumentError, load_run_document

__all__ = ["baseline_command", "gate_command"]


def gate_command(
    baseline: Annotated[str, typer.Option(help="Baseline run (a `tausim run --out` file, or a run id with --store).")],
    candidate: Annotated[str, typer.Option(help="Candidate run (same forms as --baseline).")],
    max_drop_pass1: Annotated[float, typer.Option(min=0.0, max=1.0, help="Largest allowed drop of pass^1.")] = 0.05,
    max_drop_passk: Annotated[float, typer.Option(min=0.0, max=1.0, help="Largest allowed drop of pass^k.")] = 0.05,
    k: Annotated[int, typer.Option(min=1, help="k of pass^k (lowered to the trials per task both runs have).")] = 4,
    min_pass1: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Floor for the candidate's pass^1.")
                         ] = None,
    min_passk: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Floor for the candidate's pass^k.")
                         ] = None,
    max_violations: Annotated[int | None, typer.Option(
        min=0, help="Most safety violations the candidate may have (0 blocks any), whatever its pass rate.")] = None,
    max_cost_increase: Annotated[float | None, typer.Option(
        min=0.0, help="Largest relative increase of the cost per task (0.2 = 20% more than the baseline).")] = None,
    max_abandon_increase: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Largest increase of the abandonment rate (absolute, 0.05 = 5 points).")] = None,
    max_p95_latency_increase: Annotated[float | None, typer.Option(
        min=0.0, help="Largest relative increase of the p95 trial duration (0.5 = 50% slower).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the paired bootstrap intervals.")] = 0,
    store: Annotated[str | None, typer.Option(help="Results store URL; --baseline/--candidate are then run ids.")
                     ] = None,
    allow_incomparable: Annotated[bool, typer.Option(
        help="Compare runs whose comparability fingerprints differ (simulated user, task set, grader, policy, "
             "domain mode); the differences are printed above the result.")] = False,
) -> None:
    """Fail (exit 1) when the candidate run regresses against the baseline beyond the thresholds (for CI).

    Runs are paired by task (same task set required); each pass^k drop gets a 95% paired bootstrap interval (an
    interval above 0: the drop is beyond noise). Exit 0: no regression; 1: regression (any check failed, safety
    violations and ceilings included); 2: unusable input, or runs whose comparability fingerprints differ
    (the message names each differing part) unless --allow-incomparable.
    """
    out = safe_console()
    err = safe_console(stderr=True, soft_wrap=True)
    try:
        base_doc, cand_doc = load_run(baseline, store), load_run(candidate, store)
        notes = check_comparable(base_doc, cand_doc, names=("baseline", "candidate"), allow=allow_incomparable)
        result = evaluate_gate(base_doc, cand_doc, max_drop_pass1=max_drop_pass1, max_drop_passk=max_drop_passk,
                               k=k, min_pass1=min_pass1, min_passk=min_passk, max_violations=max_violations,
                               max_cost_increase=max_cost_increase, max_abandon_increase=max_abandon_increase,
                               max_p95_latency_increase=max_p95_latency_increase, seed=seed)
    except (RunDocumentError, GateError) as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    for note in notes:
        out.print(note, highlight=False, markup=False)
    table = Table(title=f"tausim gate: {candidate} against {baseline}")
    for col in ("metric", "baseline", "candidate", "drop", "95% CI of drop (paired)", "threshold", "verdict"):
        table.add_column(col, justify="left" if col in ("metric", "threshold", "verdict") else "right")
    for r in result.rows:
        fmt = ".0f" if r.metric == "safety violations" else ".4f"
        table.add_row(r.metric, "-" if r.baseline is None else f"{r.baseline:{fmt}}", f"{r.candidate:{fmt}}",
                      "-" if r.drop is None else f"{r.drop:+{fmt}}",
                      "-" if r.ci is None else f"[{r.ci[0]:+.4f}, {r.ci[1]:+.4f}]"
                      + (" beyond noise" if r.ci[0] > 0 else ""), r.threshold,
                      "[green]pass[/]" if r.passed else "[bold red]FAIL[/]")
    out.print(table)
    for note in result.notes:
        out.print(f"note: {note}", highlight=False)
    if result.regressed_tasks:
        out.print(f"tasks whose pass^1 dropped ({len(result.regressed_tasks)}): " + ", ".join(
            f"{t} {b:.2f}->{c:.2f}" for t, b, c in result.regressed_tasks[:20]), highlight=False)
    if not result.passed:
        out.print("[bold red]gate: FAIL[/] (the candidate regressed)")
        raise typer.Exit(1)
    out.print("[green]gate: pass[/]")


def baseline_command(
    run: Annotated[Path, typer.Argument(help="A run document written by `tausim run --out`.")],
    out: Annotated[Path, typer.Option(help="Where to write the budgets file (JSON).")],
) -> None:
    """Derive per-task budgets from a run's passing trials, to apply with `tausim run --budgets FILE`.

    Ceilings: ceil(p95 * 1.2) for steps, tool calls and agent tokens, p95 * 1.2 for agent cost (USD).
    Exceeding one fails the trial.
    """
    err = safe_console(stderr=True, soft_wrap=True)
    check_outputs([("--out", out)], [("RUN", run)])
    try:
        doc = load_run_document(run)
    except RunDocumentError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    budgets = derive_budgets(doc, str(run))
    write_output(out, json.dumps(budgets, indent=1) + "\n")
    safe_console(soft_wrap=True).print(f"wrote {out}: ceilings for {len(budgets['tasks'])} task(s)"
                                  + (f"; no passing trial, no ceiling: {', '.join(budgets['skipped'])}"
                                     if budgets["skipped"] else ""), highlight=False)

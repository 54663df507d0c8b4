"""The ``tausim judge`` commands: calibration of the LLM judge against human labels."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from simulator.cli._common import check_outputs
from simulator.grading.judge import (
    DEFAULT_MIN_KAPPA,
    Calibration,
    Judge,
    compare_runs,
    load_labels,
    run_calibration,
)
from simulator.report import safe_console

__all__ = ["judge_app"]

judge_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="The LLM judge: calibration against human labels, pairwise comparison of runs.")
_console = safe_console()
_err = safe_console(stderr=True, soft_wrap=True)


@judge_app.command("calibrate")
def calibrate_command(
    labels: Annotated[Path, typer.Option(help='JSON lines {"transcript", "assertion", "label": "yes"|"no"}.')],
    model: Annotated[str, typer.Option(help="The judge's litellm model string.")],
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL of the judge.")] = None,
    min_kappa: Annotated[float, typer.Option(help="Minimum Cohen's kappa; below it the exit code is 1.")] =
        DEFAULT_MIN_KAPPA,
    out: Annotated[Path | None, typer.Option(help="Write the calibration (model, kappa, n, date) to this JSON "
                                                  "file; give it to `tausim run --judge-calibration`.")] = None,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per judge call (transient errors).")] = 4,
) -> None:
    """Run the judge on human-labelled examples; report agreement and Cohen's kappa.

    Each line of --labels is {"transcript": TEXT or a list of messages, "assertion": TEXT, "label": "yes"|"no"}
    (optional "rubric", "id"). A judge error or unusable answer counts as its "no". Exit code 0 when kappa >=
    --min-kappa, 1 when it is below or undefined (every label the same), 2 on bad input.
    """
    check_outputs([("--out", out)], [("--labels", labels)])
    try:
        items = load_labels(labels)
    except ValueError as e:
        _err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    judge = Judge(model, api_base=api_base, max_attempts=max_attempts)
    cal = run_calibration(items, judge, min_kappa, labels_file=labels)
    _print_calibration(cal)
    if out is not None:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(cal.model_dump(mode="json"), indent=1), encoding="utf-8")
        os.replace(tmp, out)
        _console.print(f"wrote {out}", highlight=False)
    if not cal.passed:
        raise typer.Exit(1)


def _print_calibration(cal: Calibration) -> None:
    table = Table(title=f"judge calibration: {cal.model} on {cal.n} labelled items")
    table.add_column("human \\ judge")
    table.add_column("yes", justify="right")
    table.add_column("no", justify="right")
    for h in ("yes", "no"):
        table.add_row(h, str(cal.confusion[f"human_{h}_judge_yes"]), str(cal.confusion[f"human_{h}_judge_no"]))
    _console.print(table)
    kappa = "undefined (every label the same)" if cal.kappa is None else f"{cal.kappa:.4f}"
    _console.print(f"agreement: {cal.agreement:.4f}  Cohen's kappa: {kappa}  (minimum {cal.min_kappa}); "
                   f"judge errors/unparsable: {cal.errors}", highlight=False)
    verdict = "[green]PASS[/]: the judge may gate" if cal.passed else "[red]FAIL[/]: the judge may not gate"
    _console.print(verdict)


@judge_app.command("compare")
def compare_command(
    run_a: Annotated[str, typer.Argument(help="Run A (a `tausim run --out` file, or a run id with --store).")],
    run_b: Annotated[str, typer.Argument(help="Run B (same forms).")],
    criterion: Annotated[str, typer.Option(help="What the judge compares, e.g. 'explains the refund policy'.")],
    model: Annotated[str, typer.Option(help="The judge's litellm model string.")],
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL of the judge.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Compare at most this many trial pairs.")] = None,
    store: Annotated[str | None, typer.Option(help="Results store URL; RUN_A/RUN_B are then run ids.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the comparison (tally and per pair) as JSON here.")] = None,
    max_attempts: Annotated[int, typer.Option(min=1, help="Attempts per judge call (transient errors).")] = 4,
    allow_incomparable: Annotated[bool, typer.Option(
        help="Compare runs whose comparability fingerprints differ (simulated user, task set, grader, policy, "
             "domain mode); the differences are printed above the result.")] = False,
) -> None:
    """Compare two runs' paired trials on a criterion, each pair judged twice with the order swapped.

    A pair has a winner only when both orders agree; otherwise it is tie/inconsistent (position bias, error,
    unusable answer). The rubric gives length no credit. Warns when the judge is either run's agent model.
    Exit 0 after comparing, 2 on bad input or on runs whose comparability fingerprints differ (naming each
    differing part) unless --allow-incomparable.
    """
    from simulator.analysis.comparability import check_comparable
    from simulator.cli.report import load_run
    from simulator.report import RunDocumentError

    check_outputs([("--out", out)], [("RUN_A", run_a), ("RUN_B", run_b)])

    try:
        doc_a, doc_b = load_run(run_a, store), load_run(run_b, store)
        notes = check_comparable(doc_a, doc_b, names=("A", "B"), allow=allow_incomparable)
        result = compare_runs(doc_a, doc_b, criterion, Judge(model, api_base=api_base, max_attempts=max_attempts),
                              limit)
    except (RunDocumentError, ValueError) as e:
        _err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    for note in notes:
        _console.print(note, highlight=False, markup=False)
    for w in result["warnings"]:
        _err.print(f"[yellow]warning:[/] {escape(str(w))}", highlight=False)
    table = Table(title=f"judge compare on: {criterion}")
    for col in ("pairs", "A better", "B better", "tie/inconsistent"):
        table.add_column(col, justify="right")
    table.add_row(str(result["pairs"]), str(result["a"]), str(result["b"]), str(result["tie/inconsistent"]))
    _console.print(table)
    if out is not None:
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

"""The ``tausim judge`` commands: calibration of the LLM judge against human labels."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.grading.judge import (
    DEFAULT_MIN_KAPPA,
    Calibration,
    Judge,
    load_labels,
    run_calibration,
)

__all__ = ["judge_app"]

judge_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="The LLM judge: calibration against human labels.")
_console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=not sys.stdout.isatty())
_err = Console(stderr=True, soft_wrap=True)


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
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        _err.print(f"[bold red]error:[/] --out {out}: not a file in an existing directory", highlight=False)
        raise typer.Exit(2)
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

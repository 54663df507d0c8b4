"""``tausim judge calibrate`` and the helpers ``tausim run`` uses for ``--judge``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from simulator.grading.judge import (
    Calibration,
    Judge,
    check_calibration,
    load_calibration,
    load_labels,
    run_calibration,
)

__all__ = ["DEFAULT_MIN_KAPPA", "build_judge", "judge_app", "judge_summary_lines"]

DEFAULT_MIN_KAPPA = 0.6
"""Kappa a calibration must reach before the judge may gate (0.61-0.80 is "substantial" agreement in Landis &
Koch's 1977 scale)."""

judge_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="The LLM judge: calibration against human labels.")
_console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=not sys.stdout.isatty())
_err = Console(stderr=True, soft_wrap=True)


def build_judge(model: str, *, api_base: str | None = None, calibration: Path | None = None,
                min_kappa: float = DEFAULT_MIN_KAPPA, **params: Any) -> Judge:
    """Build the run's judge and decide whether it gates (see :func:`simulator.grading.judge.check_calibration`).

    Args:
        model: the judge's litellm model string (``--judge``).
        api_base: ``--judge-api-base``.
        calibration: ``--judge-calibration`` file, or None (the judge then does not gate).
        min_kappa: ``--judge-min-kappa``.
        **params: further :class:`~simulator.llm.LLMClient` arguments (cache, limiters, max_attempts).

    Raises:
        ValueError: the calibration file cannot be read.
    """
    cal = load_calibration(calibration) if calibration is not None else None
    gating, note = check_calibration(cal, model, min_kappa)
    return Judge(model, api_base=api_base, gating=gating, gating_note=note, **params)


def judge_summary_lines(trials: list[Any]) -> list[str]:
    """Lines for the run summary about the judge component (empty when no trial has one).

    Args:
        trials: the run's :class:`~simulator.runner.TrialResult` objects.
    """
    judged = [t.grade.judge for t in trials if t.grade is not None and t.grade.judge is not None]
    if not judged:
        return []
    not_graded = sum(1 for j in judged if j.status == "not_graded")
    graded = [j for j in judged if j.status != "not_graded"]
    lines = []
    if not_graded:
        lines.append(f"judge: {not_graded} trial(s) have judge assertions NOT GRADED (no --judge model); "
                     "pass^k does not include the judge layer for them")
    if graded:
        failed = sum(1 for j in graded if j.status == "failed")
        errors = sum(1 for j in graded for a in j.assertions if a.error is not None)
        cost: float | None = 0.0
        tokens = 0
        for j in graded:
            tokens += j.usage.prompt_tokens + j.usage.completion_tokens
            cost = None if cost is None or j.usage.cost_usd is None else cost + j.usage.cost_usd
        gating = graded[0].gating
        lines.append(f"judge {graded[0].model}: {len(graded) - failed}/{len(graded)} trials passed, "
                     f"{errors} assertion(s) failed closed (error/unparsable); "
                     f"{'GATING' if gating else 'NOT GATING'}: {graded[0].note}")
        lines.append(f"judge usage: {tokens} tokens, cost {'unknown' if cost is None else f'${cost:.4f}'} "
                     "(not in agent/user cost)")
    return lines


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
        _err.print(f"[bold red]error:[/] {e}", highlight=False, markup=False)
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

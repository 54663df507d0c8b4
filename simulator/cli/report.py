"""The ``tausim report`` and ``tausim export`` commands ."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from simulator.cli._common import check_outputs, write_output
from simulator.report import (
    EXPORT_FORMATS,
    RunDocumentError,
    analyze_run,
    load_run_document,
    load_run_from_store,
    print_summary,
    render_html,
    safe_console,
    to_tau2,
    to_tau2_submission,
    to_tau_bench,
)

__all__ = ["export_command", "load_run", "report_command"]

_RUN_HELP = "Run document (the JSON file of `tausim run --out`), or a run id when --store is given."
_STORE_HELP = "Results store URL (e.g. sqlite:///runs.db); RUN is then a run id."


def _console(stderr: bool = False) -> Console:
    return safe_console(stderr=stderr)


def _fail(message: str) -> typer.Exit:
    _console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(2)


def load_run(run: str, store: str | None) -> dict[str, Any]:
    """Load a run document from a ``tausim run --out`` file, or a run id of the results store at ``store``.

    Raises:
        RunDocumentError: no such file or run, or not a run document.
    """
    if store is not None:
        return load_run_from_store(store, run)
    path = Path(run)
    if not path.exists() and path.suffix.lower() != ".json" and os.sep not in run:
        raise RunDocumentError(f"{run}: no such file; to report a run of the results store give --store URL")
    return load_run_document(path)


def report_command(
    run: Annotated[str, typer.Argument(help=_RUN_HELP)],
    store: Annotated[str | None, typer.Option(help=_STORE_HELP)] = None,
    format: Annotated[str, typer.Option("--format", help="text (rich tables) | json (for scripts)")] = "text",
    html: Annotated[Path | None, typer.Option(help="Also write the self-contained HTML report to this file.")] = None,
    bootstrap_seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    max_failures: Annotated[int, typer.Option(min=0, help="Failed trials listed in the text summary.")] = 10,
) -> None:
    """Summarise a run: pass^k with confidence intervals, failures, cost and latency; optionally an HTML page.

    With --format json prints {"run_id", "planned", "recorded", "duplicates", "metrics"}.
    """
    if format not in ("text", "json"):
        raise _fail(f"--format {format!r}: use text or json")
    check_outputs([("--html", html)], [("RUN", run if store is None else None)])
    try:
        doc = load_run(run, store)
        report = analyze_run(doc, seed=bootstrap_seed)
    except RunDocumentError as e:
        raise _fail(str(e)) from e
    if html is not None:
        write_output(html, render_html(report))
    if format == "json":
        sys.stdout.write(json.dumps(report.summary_json(), indent=1) + "\n")
    else:
        print_summary(report, _console(), max_failures=max_failures)
    if html is not None:
        _console(stderr=format == "json").print(f"wrote {html}", highlight=False)


def export_command(
    run: Annotated[list[str], typer.Argument(help=_RUN_HELP + " tau2-submission: one run per domain.")],
    format: Annotated[str, typer.Option("--format", help="Output format: tau-bench (its result list), tau2 (τ³'s "
                                        "results.json) or tau2-submission (a τ³ leaderboard submission.json).")
                      ] = "tau-bench",
    out: Annotated[Path | None, typer.Option(help="Write to this file (default: standard output).")] = None,
    store: Annotated[str | None, typer.Option(help=_STORE_HELP)] = None,
    model_name: Annotated[str | None, typer.Option(help="tau2-submission: the model (default: the agent's model).")
                          ] = None,
    model_organization: Annotated[str, typer.Option(help="tau2-submission: who made the model.")] = "unknown",
    submitting_organization: Annotated[str, typer.Option(help="tau2-submission: who ran the evaluation.")
                                       ] = "unknown",
    contact_email: Annotated[str | None, typer.Option(help="tau2-submission: contact address.")] = None,
    submission_type: Annotated[str, typer.Option(help="tau2-submission: standard (τ³'s own set-up) or custom.")
                               ] = "custom",
) -> None:
    """Export a run's results in another tool's format: tau-bench, τ³ (tau2) or a τ³ leaderboard submission."""
    if format not in EXPORT_FORMATS:
        raise _fail(f"--format {format!r}: use {', '.join(EXPORT_FORMATS)}")
    if format != "tau2-submission" and len(run) != 1:
        raise _fail(f"--format {format}: give one run (got {len(run)})")
    check_outputs([("--out", out)], [("RUN", r) for r in run if store is None])
    try:
        docs = [load_run(r, store) for r in run]
        result: Any
        if format == "tau-bench":
            result = to_tau_bench(docs[0])
            what = f"{len(result)} trials"
        elif format == "tau2":
            result = to_tau2(docs[0])
            what = f"{len(result['simulations'])} simulations"
        else:
            result = to_tau2_submission(docs, model_name=model_name, model_organization=model_organization,
                                        submitting_organization=submitting_organization,
                                        contact_email=contact_email, submission_type=submission_type)
            what = ", ".join(result["results"])
    except RunDocumentError as e:
        raise _fail(str(e)) from e
    text = json.dumps(result, indent=2, default=str) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        write_output(out, text)
    if out is not None:
        _console(stderr=True).print(f"wrote {out} ({what})", highlight=False)

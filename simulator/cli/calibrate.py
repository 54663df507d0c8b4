"""The ``tausim calibrate`` command: a simulated run against a real one, per task and overall."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from simulator.cli._common import console, err, fail

__all__ = ["calibrate_command"]


def _load(run: str, store: str | None) -> dict[str, Any]:
    from simulator.cli.report import load_run

    return load_run(run, None if Path(run).is_file() else store)


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def calibrate_command(
    real: Annotated[str, typer.Option(help="The run with real users: a run file, or a run id with --store.")],
    sim: Annotated[str, typer.Option(help="The run with simulated users on the same tasks (file or run id).")],
    store: Annotated[str | None, typer.Option(help="Results store URL for run ids.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 2000,
    allow_incomparable: Annotated[bool, typer.Option(
        help="Compare runs whose fingerprints differ beyond the simulated user (task set, grader, policy, domain "
             "mode); the differences are printed above the result.")] = False,
) -> None:
    """Calibrate the simulator: a simulated run against a real one on the same tasks.

    Per task and overall: pass^1, pass^k, mean turns, abandonment rate and mean tool calls of both runs, and the
    simulator's inflation of pass^1 (simulated minus real) with a paired bootstrap interval over tasks. The runs'
    comparability fingerprints must agree except for the user (exit 2 naming each differing part, unless
    --allow-incomparable).
    """
    from simulator.analysis.calibrate import calibrate
    from simulator.analysis.comparability import check_comparable
    from simulator.report import RunDocumentError

    try:
        real_doc, sim_doc = _load(real, store), _load(sim, store)
        # the user is what a calibration varies; everything else must be held equal
        notes = check_comparable(real_doc, sim_doc, names=("real", "simulated"), allow=allow_incomparable,
                                 exempt=("user",))
        result = calibrate(real_doc, sim_doc, seed=seed, n_resamples=resamples)
    except (RunDocumentError, ValueError) as e:
        raise fail(str(e)) from e
    for note in notes:
        console.print(note, highlight=False, markup=False)
    table = Table(title=f"simulated ({sim}) vs real ({real}): {len(result.tasks)} common tasks, k = {result.k}; "
                        f"r = real, s = simulated; calls = tool calls per trial")
    table.add_column("task", justify="left", no_wrap=True)
    for col in ("trials r/s", "pass^1 r", "pass^1 s", "s - r", f"pass^{result.k} r", f"pass^{result.k} s",
                "turns r", "turns s", "abandon r", "abandon s", "calls r", "calls s"):
        table.add_column(col, justify="right")

    # a task id is data: text, never markup
    def row(name: str, r: Any, s: Any) -> list[Any]:
        return [Text(name), f"{r.trials}/{s.trials}", _num(r.pass1), _num(s.pass1), f"{s.pass1 - r.pass1:+.3f}",
                _num(r.pass_k), _num(s.pass_k), _num(r.turns, ".1f"), _num(s.turns, ".1f"), _num(r.abandonment),
                _num(s.abandonment), _num(r.tool_calls, ".1f"), _num(s.tool_calls, ".1f")]

    for tc in result.tasks:
        table.add_row(*row(tc.task_id, tc.real, tc.sim))
    table.add_section()
    table.add_row(*row("overall (mean)", result.overall_real, result.overall_sim))
    console.print(table)
    low, high = result.inflation_ci95
    console.print(f"simulator inflation of pass^1: {result.inflation:+.3f} (95% paired bootstrap CI over "
                  f"{len(result.tasks)} tasks: [{low:+.3f}, {high:+.3f}])", highlight=False)
    for side, ids in (("real", result.only_real), ("simulated", result.only_sim)):
        if ids:
            left = escape(", ".join(ids[:10]))
            err.print(f"[yellow]note:[/] {len(ids)} tasks only in the {side} run, left out: {left}", highlight=False)

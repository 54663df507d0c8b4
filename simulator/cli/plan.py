"""The ``tausim plan`` command: how many trials per task a comparison needs to detect a given difference."""

from __future__ import annotations

from typing import Annotated

import typer

from simulator.cli._common import console, fail
from simulator.types.sanitize import counted

__all__ = ["plan_command"]


def plan_command(
    baseline: Annotated[str, typer.Option(help="The baseline run (a `tausim run --out` file, or a run id with "
                                                "--store): its per-task success rates are the planning guess.")],
    detect: Annotated[float, typer.Option(min=0.0, max=1.0, help="The pass^k difference to detect (0.05 = 5 "
                                                                 "points).")] = 0.05,
    k: Annotated[int, typer.Option(min=1, help="The k of pass^k to plan for (pass^1 is always given).")] = 4,
    store: Annotated[str | None, typer.Option(help="Results store URL; --baseline is then a run id.")] = None,
) -> None:
    """Print the trials per task a paired comparison on the baseline's tasks needs to detect --detect.

    Method: the minimum detectable difference of :mod:`simulator.stats.power` (paired by task, normal approximation,
    two-sided 5% level, 80% power), with each task's success probability estimated from the baseline, solved for
    the trials per task. Also prints the baseline's own noise floor. Exit 2 on unusable input, and on a baseline
    that held one side (``tausim run --vary user|agent``): its trials of a task are correlated, so the normal
    approximation over independent trials would plan too few (or too many) trials; it is refused, not warned about,
    because the figures printed would look like a valid plan.
    """
    from simulator.analysis.gate import GateError, run_reliability
    from simulator.cli.report import load_run
    from simulator.report import RunDocumentError
    from simulator.stats.power import MAX_TRIALS, METHOD, min_detectable_difference, trials_needed
    from simulator.stats.variance import held_side_note

    try:
        doc = load_run(baseline, store)
        held = held_side_note((doc.get("config") or {}).get("vary"))
        if held is not None:  # its per-task rates mix correlated trials: the plan would be for another experiment
            raise ValueError(f"--baseline {baseline}: {held}; rerun the baseline with --vary both to plan from it")
        rel = run_reliability(doc, "baseline", [1])
        if detect <= 0:
            raise ValueError(f"--detect must be above 0, got {detect}")
    except (RunDocumentError, GateError, ValueError) as e:
        raise fail(str(e)) from e
    n = rel.trials_per_task
    successes = [int(v["successes"]) for v in rel.per_cell.values()]
    tasks = len(successes)
    console.print(f"baseline {baseline}: {counted(tasks, 'task')} x {counted(n, 'trial')}", highlight=False,
                  markup=False)
    for kk in sorted({1, k}):
        if kk <= n:
            now = min_detectable_difference(successes, n, kk)
            shown = f"{now:.3f}" if now <= 1.0 else "none (not even 1: too few tasks x trials to estimate it)"
            console.print(f"  pass^{kk}: detectable difference at {n} trials per task: {shown}", highlight=False,
                          markup=False)
        need = trials_needed(successes, n, kk, detect)
        verdict = (f"more than {MAX_TRIALS} (too few tasks)" if need is None else str(need))
        console.print(f"  pass^{kk}: trials per task needed to detect a difference of {detect:g}: {verdict}",
                      highlight=False, markup=False)
    console.print(f"method: {METHOD}", highlight=False, markup=False)

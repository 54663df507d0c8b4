"""Live progress of a run on the terminal: trials done / planned, pass rate so far, cost so far, ETA."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

__all__ = ["RunProgress", "trial_cost"]


def trial_cost(trial: Any) -> float | None:
    """Return a trial's model cost in USD (agent + user), or None when some call was unpriced.

    Args:
        trial: a :class:`~simulator.execution.runner.TrialResult`.

    Returns:
        The cost, or None.
    """
    traj = trial.trajectory
    a, u = traj.agent_usage.cost_usd, traj.user_usage.cost_usd
    return None if a is None or u is None else a + u


class RunProgress:
    """A rich progress bar fed with finished trials; a no-op when disabled.

    Use as a context manager around the run and call :meth:`update` with each finished trial (from the
    thread that collects results).

    Args:
        planned: trials the run will execute.
        enabled: show the bar (callers pass False when stdout is not a terminal or with ``--no-progress``).
        console: where to draw (default: a stdout console).
    """

    def __init__(self, planned: int, *, enabled: bool = True, console: Console | None = None) -> None:
        self.planned = planned
        self.enabled = enabled
        self.done = 0
        self.passed = 0
        self.cost = 0.0
        self.unpriced = 0
        self._progress: Progress | None = None
        self._task: Any = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                TextColumn("pass {task.fields[pass_rate]}"), TextColumn("cost {task.fields[cost]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=console, transient=False,
            )
            self._task = self._progress.add_task("run", total=planned, pass_rate="-", cost="$0.0000")

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()

    def fields(self) -> dict[str, str]:
        """Return the shown figures: ``{"pass_rate": "75.0%", "cost": "$0.0123"}`` (``+?`` marks unpriced)."""
        rate = f"{100.0 * self.passed / self.done:.1f}%" if self.done else "-"
        cost = f"${self.cost:.4f}" + (" +?" if self.unpriced else "")
        return {"pass_rate": rate, "cost": cost}

    def update(self, trial: Any) -> None:
        """Count one finished trial and redraw.

        Args:
            trial: the finished :class:`~simulator.execution.runner.TrialResult`.
        """
        self.done += 1
        self.passed += bool(trial.passed)
        c = trial_cost(trial)
        if c is None:
            self.unpriced += 1
        else:
            self.cost += c
        if self._progress is not None:
            fields = self.fields()
            self._progress.update(self._task, advance=1, pass_rate=fields["pass_rate"], cost=fields["cost"])

"""Live progress of a run: trials done / planned, pass rate so far, cost so far, ETA.

On a terminal a live bar; elsewhere (a CI log, a pipe) one line every N seconds::

    progress: 12/87 trials, pass 75.0%, cost $0.0123, elapsed 1m02s, ETA 6m28s
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
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
        lines_every: instead of a bar (when not ``enabled``), write a progress line (:meth:`line`) every this many
            seconds from a background thread while the run goes on; None or 0: none.
        write: where the lines go (default: stdout, flushed).
    """

    def __init__(self, planned: int, *, enabled: bool = True, console: Console | None = None,
                 lines_every: float | None = None, write: Callable[[str], Any] | None = None) -> None:
        self.planned = planned
        self.enabled = enabled
        self.done = 0
        self.passed = 0
        self.cost = 0.0
        self.unpriced = 0
        self._progress: Progress | None = None
        self._task: Any = None
        self._every = lines_every if lines_every and not enabled else None
        self._write = write or _stdout_line
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = time.monotonic()
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                TextColumn("pass {task.fields[pass_rate]}"), TextColumn("cost {task.fields[cost]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=console, transient=False,
            )
            self._task = self._progress.add_task("run", total=planned, pass_rate="-", cost="$0.0000")

    def __enter__(self) -> RunProgress:
        self._t0 = time.monotonic()
        if self._progress is not None:
            self._progress.start()
        if self._every is not None:
            self._thread = threading.Thread(target=self._lines, name="tausim-progress-lines", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _lines(self) -> None:
        """Write :meth:`line` every ``lines_every`` seconds until the run ends."""
        assert self._every is not None
        while not self._stop.wait(self._every):
            self._write(self.line(time.monotonic() - self._t0))

    def line(self, elapsed: float) -> str:
        """Return the progress line: done/planned, pass rate, cost so far, elapsed time and ETA.

        Args:
            elapsed: seconds since the run started.

        Returns:
            E.g. ``progress: 12/87 trials, pass 75.0%, cost $0.0123, elapsed 1m02s, ETA 6m28s``; the ETA assumes
            the remaining trials take as long on average as the finished ones (``-`` before the first).
        """
        f = self.fields()
        eta = _duration(elapsed / self.done * (self.planned - self.done)) if self.done else "-"
        return (f"progress: {self.done}/{self.planned} trials, pass {f['pass_rate']}, cost {f['cost']}, "
                f"elapsed {_duration(elapsed)}, ETA {eta}")

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


def _duration(seconds: float) -> str:
    """``1h02m03s``, ``4m05s`` or ``7s``."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


def _stdout_line(text: str) -> None:
    """Write one line to stdout and flush it (a CI log shows it at once)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

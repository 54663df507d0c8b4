"""Calibrating the simulator: a simulated run against a real one, task by task.

Simulated users bias scores (rule users are too uniform, LLM users leak answers, both are too patient), so a
success rate measured with them should be calibrated against real conversations: a run whose users were real
(imported peer results, or ``--user replay:RUN`` of recorded real users) on the same tasks. :func:`calibrate`
compares, per task and over the tasks both runs have, pass^1 and pass^k, mean turns, the abandonment rate and the
mean tool calls per trial, and estimates the simulator's *inflation* of pass^1 (simulated minus real, mean over
tasks) with a paired percentile bootstrap interval over tasks (each resample draws tasks with replacement and takes
the mean of their differences, so a task's two runs stay paired).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.stats.estimators import bootstrap_ci, pass_hat_k

__all__ = ["RunSide", "SimCalibration", "TaskCalibration", "calibrate"]


@dataclass(frozen=True)
class RunSide:
    """One run's numbers for one task (or over all common tasks).

    Attributes:
        trials: trials recorded.
        pass1: share of trials passed.
        pass_k: pass^k at the calibration's ``k``.
        turns: mean messages of user and agent per trial (None: no trial).
        abandonment: share of trials the user abandoned.
        tool_calls: mean tool calls per trial.
    """

    trials: int
    pass1: float
    pass_k: float
    turns: float | None
    abandonment: float
    tool_calls: float


@dataclass(frozen=True)
class TaskCalibration:
    """A task's two sides.

    Attributes:
        task_id: the task (``task@persona`` in runs with personas).
        real: the real run's numbers.
        sim: the simulated run's.
    """

    task_id: str
    real: RunSide
    sim: RunSide

    @property
    def inflation(self) -> float:
        """Simulated pass^1 minus real pass^1."""
        return self.sim.pass1 - self.real.pass1


@dataclass
class SimCalibration:
    """The calibration of a simulated run against a real one.

    Attributes:
        k: the k of pass^k (the fewest trials any common task has in either run).
        tasks: per common task, in the real run's order.
        overall_real: the real run's means over the common tasks (pass, turns, ...), trials summed.
        overall_sim: the simulated run's.
        inflation: mean over common tasks of simulated minus real pass^1.
        inflation_ci95: its 95% paired percentile bootstrap interval over tasks.
        only_real: tasks only the real run has (left out).
        only_sim: tasks only the simulated run has (left out).
    """

    k: int
    tasks: list[TaskCalibration]
    overall_real: RunSide
    overall_sim: RunSide
    inflation: float
    inflation_ci95: tuple[float, float]
    only_real: list[str] = field(default_factory=list)
    only_sim: list[str] = field(default_factory=list)


def _cell(trial: Mapping[str, Any]) -> str:
    persona = trial.get("persona")
    return f"{trial['task_id']}@{persona}" if persona else str(trial["task_id"])


def _by_task(doc: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The first record of each (cell, trial), grouped by cell, in document order."""
    seen: set[tuple[str, int]] = set()
    out: dict[str, list[Mapping[str, Any]]] = {}
    for t in doc.get("trials") or []:
        key = (_cell(t), int(t["trial"]))
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(key[0], []).append(t)
    return out


def _side(trials: Sequence[Mapping[str, Any]], k: int) -> RunSide:
    n = len(trials)
    passed = sum(bool(t.get("passed")) for t in trials)
    turns = [(t.get("trajectory") or {}).get("turns") for t in trials]
    numeric = [float(x) for x in turns if isinstance(x, int | float) and not isinstance(x, bool)]
    calls = [len((t.get("trajectory") or {}).get("tool_calls") or []) for t in trials]
    return RunSide(trials=n, pass1=passed / n, pass_k=pass_hat_k(n, passed, k),
                   turns=float(np.mean(numeric)) if numeric else None,
                   abandonment=sum(t.get("termination_reason") == "user_abandon" for t in trials) / n,
                   tool_calls=float(np.mean(calls)))


def _mean_side(sides: Sequence[RunSide]) -> RunSide:
    turns = [s.turns for s in sides if s.turns is not None]
    return RunSide(trials=sum(s.trials for s in sides), pass1=float(np.mean([s.pass1 for s in sides])),
                   pass_k=float(np.mean([s.pass_k for s in sides])), turns=float(np.mean(turns)) if turns else None,
                   abandonment=float(np.mean([s.abandonment for s in sides])),
                   tool_calls=float(np.mean([s.tool_calls for s in sides])))


def calibrate(real: Mapping[str, Any], sim: Mapping[str, Any], *, seed: int = 0,
              n_resamples: int = 2000) -> SimCalibration:
    """Compare a simulated run with a real one on the tasks both have.

    Args:
        real: the real run's document (``tausim run --out`` shape, or a store's run document).
        sim: the simulated run's document.
        seed: seed of the bootstrap's ``numpy.random.Generator(PCG64(seed))``.
        n_resamples: bootstrap resamples.

    Returns:
        The :class:`SimCalibration`.

    Raises:
        ValueError: the runs have no task in common.
    """
    r, s = _by_task(real), _by_task(sim)
    common = [t for t in r if t in s]
    if not common:
        raise ValueError(f"the runs have no task in common (real: {', '.join(list(r)[:5]) or 'none'}; simulated: "
                         f"{', '.join(list(s)[:5]) or 'none'})")
    k = min(min(len(r[t]), len(s[t])) for t in common)
    tasks = [TaskCalibration(t, _side(r[t], k), _side(s[t], k)) for t in common]
    diffs = np.array([tc.inflation for tc in tasks])
    low, high = bootstrap_ci(diffs, rng=np.random.Generator(np.random.PCG64(seed)), n_resamples=n_resamples)
    return SimCalibration(k=k, tasks=tasks, overall_real=_mean_side([tc.real for tc in tasks]),
                          overall_sim=_mean_side([tc.sim for tc in tasks]), inflation=float(diffs.mean()),
                          inflation_ci95=(low, high), only_real=[t for t in r if t not in s],
                          only_sim=[t for t in s if t not in r])

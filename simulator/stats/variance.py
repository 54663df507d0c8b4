"""How much of the trial-to-trial spread of a run comes from the simulated user and how much from the agent.

Model: a trial's outcome ``Y`` (1 pass, 0 fail; any number works) is a function of the task, of the agent's random
draws ``A`` and of the simulator's random draws ``U`` (the simulated user's, with the environment's faults),
``A`` and ``U`` independent. For one task, the Sobol'-Hoeffding (functional ANOVA) decomposition splits the
variance into two main effects and their interaction (Sobol' 1993, "Sensitivity estimates for nonlinear
mathematical models", Math. Model. Comput. Exp. 1; Sobol' 2001, Math. Comput. Simul. 55, 271-280)::

    Var(Y) = V_A + V_U + V_AU,   V_A = Var(E[Y | A]),   V_U = Var(E[Y | U])

Three runs of the same tasks measure it (:mod:`simulator.execution.seeds`, ``RunSpec.vary``):

- ``both`` (both sides vary): the spread within a task estimates ``Var(Y)``;
- ``user`` (the agent's draws held at one value ``a`` per task): ``Var(Y | A = a)``, whose mean over the held
  value is ``E[Var(Y | A)] = Var(Y) - V_A = V_U + V_AU`` by the law of total variance;
- ``agent`` (the user's draws held): ``E[Var(Y | U)] = V_A + V_AU``.

Per task and run, the spread is the unbiased sample variance of the task's ``n`` outcomes (``ddof = 1``; for pass/fail
with ``c`` passes, ``c (n - c) / (n (n - 1))``, the unbiased estimate of the Bernoulli variance ``p (1 - p)``).
Each of the three figures is the mean of those over the tasks (each task holds its own draw of the fixed side,
so the mean over tasks also averages over the held draws). The shares are ratios of those means:

- ``user`` = user-run spread / both-run spread: the simulator's *total* share (main effect and interaction;
  Sobol's total-effect index, Homma & Saltelli 1996, Reliab. Eng. Syst. Saf. 52);
- ``agent`` = agent-run spread / both-run spread: the agent's total share;
- ``interaction`` = (user + agent - both) / both: the part that needs both sides at once (counted in each total);
- ``user_main`` = (both - agent) / both and ``agent_main`` = (both - user) / both: each side alone (first-order
  indices); ``user_main + agent_main + interaction = 1``.

The figures are unbiased estimates, not clipped: with few trials a share may come out above 1 or below 0. 95%
intervals are percentile bootstrap intervals over tasks (tasks resampled with replacement, the three runs' values
of a task kept together; Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13), as
:func:`simulator.stats.estimators.bootstrap_ci`; a share is undefined (None) when the both-run spread is 0. A resample
whose both-run spread is 0 (only cells without spread drawn) defines no share: it is left out of the intervals and
counted (``undefined_resamples``). With few cells varying (:func:`few_cells_warning`) the intervals are narrow
for want of data, not because the share is known: the decomposition carries a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from simulator.stats.estimators import linear_quantiles

__all__ = ["CONDITIONS", "FEW_CELLS", "FEW_CELLS_SHARE", "METHOD", "SHARES", "VarianceDecomposition",
           "decompose_variance", "few_cells_warning", "held_side_note", "task_variance"]

FEW_CELLS: Final = 5
"""Fewer task cells with spread in the 'both' run than this: the shares rest on too few cells (a warning)."""

FEW_CELLS_SHARE: Final = 0.2
"""A smaller share of the task cells with spread in the 'both' run than this: the same warning."""

CONDITIONS: Final = ("both", "user", "agent")
"""The three runs of a decomposition: both sides vary, only the user varies, only the agent varies."""

SHARES: Final = ("user", "agent", "interaction", "user_main", "agent_main")
"""The shares of the both-run spread reported (see the module docstring)."""

METHOD: Final = ("per-task unbiased sample variance of the outcome (ddof=1) in three runs: both sides vary, only the "
                 "user varies (agent seed held), only the agent varies (user seed held); means over tasks; shares "
                 "user = user/both and agent = agent/both (total effects, law of total variance), interaction = "
                 "(user + agent - both)/both; 95% percentile bootstrap over tasks")
"""How :func:`decompose_variance` computes its figures (reported with them)."""


def task_variance(outcomes: Sequence[float]) -> float:
    """Return the unbiased sample variance (``ddof = 1``) of one task's trial outcomes.

    Args:
        outcomes: the task's outcomes (1.0 pass, 0.0 fail, or any finite numbers), at least 2.

    Returns:
        ``sum((y - mean)^2) / (n - 1)``; for pass/fail with ``c`` passes of ``n``, ``c (n - c) / (n (n - 1))``.

    Raises:
        ValueError: fewer than 2 outcomes, or one that is not finite.
    """
    values = np.asarray(outcomes, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"a task's spread needs at least 2 trials, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("outcomes must be finite numbers")
    return float(np.var(values, ddof=1))


@dataclass(frozen=True)
class VarianceDecomposition:
    """The trial-to-trial spread of the three runs, and its shares (see the module docstring).

    Attributes:
        tasks: the tasks (or ``task@persona`` cells), in the order given.
        trials: trials per task in each run.
        per_task: task -> ``{"both": var, "user": var, "agent": var, "mean_both": pass rate of the both run}``.
        spread: ``{"both": mean var, "user": ..., "agent": ...}`` over tasks.
        components: ``{"agent_main": both - user, "user_main": both - agent, "interaction": user + agent - both}``,
            in outcome units squared.
        shares: share name (:data:`SHARES`) -> its value, or None when the both-run spread is 0.
        intervals: share name -> ``(low, high)`` 95% bootstrap interval, or None when no resample defines it.
        method: :data:`METHOD`.
        with_spread: condition -> how many task cells have a non-zero spread in that run.
        undefined_resamples: bootstrap resamples left out of the intervals because their both-run spread is 0
            (every resampled cell without spread).
        resamples: bootstrap resamples drawn.
    """

    tasks: tuple[str, ...]
    trials: int
    per_task: dict[str, dict[str, float]]
    spread: dict[str, float]
    components: dict[str, float]
    shares: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    method: str = METHOD
    with_spread: dict[str, int] = field(default_factory=dict)
    undefined_resamples: int = 0
    resamples: int = 0

    @property
    def warning(self) -> str | None:
        """The few-cells warning (:func:`few_cells_warning`), or None."""
        return few_cells_warning(self.with_spread.get("both", 0), len(self.tasks))

    def as_dict(self) -> dict[str, Any]:
        """Return the decomposition as JSON-ready values (intervals as two-item lists).

        Besides the attributes: ``cells_with_spread`` (condition -> count), ``undefined_resamples``,
        ``resamples`` and ``warning`` (the few-cells warning, or None).
        """
        return {"method": self.method, "tasks": len(self.tasks), "trials": self.trials, "spread": self.spread,
                "components": self.components, "shares": self.shares,
                "intervals": {k: (list(v) if v is not None else None) for k, v in self.intervals.items()},
                "cells_with_spread": self.with_spread, "undefined_resamples": self.undefined_resamples,
                "resamples": self.resamples, "warning": self.warning, "per_task": self.per_task}


def held_side_note(vary: Any) -> str | None:
    """Say what a run that held one side (``RunSpec.vary`` ``user`` or ``agent``) means for its reliability figures.

    Args:
        vary: the run's ``vary`` (``both``, ``user``, ``agent``; None or missing: ``both``).

    Returns:
        None for ``both``; else one sentence: the held side keeps one seed per task, so the trials of a task are
        correlated and pass^k, its intervals and the noise floor are not those of independent trials.
    """
    if vary in (None, "both"):
        return None
    held = {"user": "agent", "agent": "user"}.get(str(vary), "?")
    return (f"vary: {vary} (the {held}'s seed held per task): the trials of a task are correlated, so pass^k, its "
            "intervals and the noise floor are not those of independent trials; compare or plan with a run that "
            "varies both sides")


def few_cells_warning(with_spread: int, cells: int) -> str | None:
    """Warn when the shares rest on few task cells with spread in the 'both' run.

    Args:
        with_spread: task cells whose outcomes differ between trials in the 'both' run.
        cells: all task cells.

    Returns:
        A one-sentence warning when ``with_spread`` < :data:`FEW_CELLS` or < :data:`FEW_CELLS_SHARE` of
        ``cells``; None otherwise (and when no cell varies: the shares are then undefined, said elsewhere).
    """
    if with_spread == 0 or (with_spread >= FEW_CELLS and with_spread >= FEW_CELLS_SHARE * cells):
        return None
    return (f"only {with_spread} of {cells} task cells vary in the 'both' run (fewer than {FEW_CELLS} or "
            f"{FEW_CELLS_SHARE:.0%} of the cells): the shares and their intervals rest on those few cells; run more "
            "trials (--trials) or more tasks")


def _shares(both: Any, user: Any, agent: Any) -> dict[str, Any]:
    """The shares of arrays (or floats) of mean spreads; NaN where ``both`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(np.asarray(both) > 0, both, np.nan)
        return {"user": user / safe, "agent": agent / safe, "interaction": (user + agent - both) / safe,
                "user_main": (both - agent) / safe, "agent_main": (both - user) / safe}


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def decompose_variance(
    outcomes: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    alpha: float = 0.05,
) -> VarianceDecomposition:
    """Split the trial-to-trial spread of a run into the simulator's and the agent's shares.

    Args:
        outcomes: condition (``both``, ``user``, ``agent``) -> task id -> that task's trial outcomes in that run
            (1.0 pass, 0.0 fail). The three runs must have the same tasks and the same number of trials (>= 2).
        rng: draws the bootstrap resamples (the same seed gives the same intervals).
        n_resamples: bootstrap resamples (>= 1).
        alpha: 1 - the intervals' level (0.05: 95% intervals), in (0, 1).

    Returns:
        The :class:`VarianceDecomposition`.

    Raises:
        ValueError: a condition missing, tasks or trial counts that differ between the runs, fewer than 2 trials,
            no task, non-finite outcomes, ``n_resamples < 1`` or ``alpha`` outside (0, 1).
    """
    missing = [c for c in CONDITIONS if c not in outcomes]
    if missing:
        raise ValueError(f"the decomposition needs the runs {', '.join(CONDITIONS)}; missing: {', '.join(missing)}")
    tasks = tuple(outcomes["both"])
    if not tasks:
        raise ValueError("no task to decompose")
    for c in CONDITIONS[1:]:
        if set(outcomes[c]) != set(tasks):
            raise ValueError(f"the {c!r} run's tasks differ from the 'both' run's: "
                             f"{sorted(set(outcomes[c]) ^ set(tasks))[:5]}")
    counts = {len(outcomes[c][t]) for c in CONDITIONS for t in tasks}
    if len(counts) != 1:
        raise ValueError(f"every task needs the same number of trials in every run, got {sorted(counts)}")
    if n_resamples < 1 or not 0.0 < alpha < 1.0:
        raise ValueError(f"need n_resamples >= 1 and 0 < alpha < 1, got {n_resamples}, {alpha}")
    var = {c: np.array([task_variance(outcomes[c][t]) for t in tasks]) for c in CONDITIONS}
    spread = {c: float(var[c].mean()) for c in CONDITIONS}
    b, u, a = spread["both"], spread["user"], spread["agent"]
    point = _shares(b, u, a)
    idx = rng.integers(0, len(tasks), size=(n_resamples, len(tasks)))
    boot = _shares(var["both"][idx].mean(axis=1), var["user"][idx].mean(axis=1), var["agent"][idx].mean(axis=1))
    intervals: dict[str, tuple[float, float] | None] = {}
    undefined = int(np.count_nonzero(~np.isfinite(boot["user"])))
    for name in SHARES:
        values = boot[name][np.isfinite(boot[name])]
        if values.size == 0:
            intervals[name] = None
            continue
        low, high = linear_quantiles(values, [alpha / 2.0, 1.0 - alpha / 2.0])
        intervals[name] = (float(low), float(high))
    per_task = {t: {"both": float(var["both"][i]), "user": float(var["user"][i]), "agent": float(var["agent"][i]),
                    "mean_both": float(np.mean(outcomes["both"][t]))} for i, t in enumerate(tasks)}
    return VarianceDecomposition(
        tasks=tasks, trials=counts.pop(), per_task=per_task, spread=spread,
        components={"agent_main": b - u, "user_main": b - a, "interaction": u + a - b},
        shares={name: _finite(float(point[name])) for name in SHARES}, intervals=intervals,
        with_spread={c: int(np.count_nonzero(var[c] > 0)) for c in CONDITIONS}, undefined_resamples=undefined,
        resamples=n_resamples)

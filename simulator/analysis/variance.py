"""Variance apart: run a spec three times (both sides vary, only the user, only the agent) and split the spread.

:func:`run_variance` runs the spec with ``vary="both"``, ``"user"`` and ``"agent"`` (:mod:`simulator.execution.seeds`:
the held side keeps one seed per task; with a response cache, a held model agent's answers replay from it) through
:func:`simulator.execution.session.run`, the same path as ``tausim run``, and hands each task's outcomes to
:func:`simulator.stats.variance.decompose_variance`. With personas, a task played by one persona (``task@persona``)
is one unit, as in pass^k. A planned trial that did not run (a run stopped early) counts as a failure, as in
pass^k; the condition's ``aborted`` says why.

Example::

    from simulator import RunSpec
    from simulator.analysis.variance import run_variance

    spec = RunSpec(domain="retail", agent="reference:wrong_item=0.3", user="rule", trials=8)
    result = run_variance(spec)
    print(result.decomposition.shares)  # {"user": ..., "agent": ..., "interaction": ..., ...}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.execution.build import agent_policy, policy_sha256
from simulator.execution.recording import partial_path
from simulator.stats.estimators import cell_id
from simulator.stats.variance import CONDITIONS, VarianceDecomposition, decompose_variance
from simulator.storage.documents import load_run_document
from simulator.types.results import RunResult, TrialResult
from simulator.types.sanitize import excerpt
from simulator.types.spec import RunSpec, recorded_config, resume_exempt, spec_differences
from simulator.world.domain import get_domain

__all__ = ["FORMAT", "VarianceRun", "condition_outcomes", "run_variance"]

FORMAT = "tausim.variance"
"""The ``format`` of a variance document (:meth:`VarianceRun.document`)."""


@dataclass(frozen=True)
class VarianceRun:
    """The three runs of a decomposition and the decomposition.

    Attributes:
        spec: the spec as given (its ``vary`` is replaced in each run).
        runs: condition (``both``, ``user``, ``agent``) -> its finished run.
        decomposition: the split of the spread (:class:`~simulator.stats.variance.VarianceDecomposition`).
        files: condition -> the run document written (``out_dir``), for those written.
    """

    spec: RunSpec
    runs: dict[str, RunResult]
    decomposition: VarianceDecomposition
    files: dict[str, str]

    def document(self) -> dict[str, Any]:
        """Return the JSON document of ``tausim variance --out``.

        Returns:
            ``{"format": "tausim.variance", "version": 1, "config": spec (its ``vary``: the three conditions run),
            "conditions": {condition: {"pass^1",
            "termination_reasons", "aborted", "file"}}, **decomposition}`` (see
            :meth:`~simulator.stats.variance.VarianceDecomposition.as_dict`).
        """
        conditions = {c: {"pass^1": r.metrics.get("pass^1"), "termination_reasons": r.termination_reasons,
                          "aborted": r.aborted, "file": self.files.get(c)} for c, r in self.runs.items()}
        config = {**recorded_config(self.spec), "vary": list(CONDITIONS)}  # one run per condition
        return {"format": FORMAT, "version": 1, "config": config,
                "conditions": conditions, **self.decomposition.as_dict()}


def condition_outcomes(result: RunResult, task_ids: Sequence[str], personas: Sequence[str] | None,
                       trials: int) -> dict[str, list[float]]:
    """Return each planned cell's outcomes in trial order: 1.0 passed, 0.0 failed or not run.

    Args:
        result: a finished run.
        task_ids: the planned tasks, in order.
        personas: the run's personas (None: none).
        trials: trials per cell.

    Returns:
        Cell id (:func:`~simulator.stats.estimators.cell_id`) -> ``trials`` outcomes.
    """
    names: list[str | None] = list(personas) if personas else [None]
    cells = {cell_id(t, p): [0.0] * trials for t in task_ids for p in names}
    for r in result.trials:
        row = cells.get(cell_id(r.task_id, r.persona))
        if row is not None and 0 <= r.trial < trials:
            row[r.trial] = 1.0 if r.passed else 0.0
    return cells


def run_variance(
    spec: RunSpec,
    *,
    out_dir: str | Path | None = None,
    bootstrap_seed: int = 0,
    n_resamples: int = 2000,
    on_condition: Callable[[str, RunResult], Any] | None = None,
    run: Callable[..., RunResult] | None = None,
    resume: bool = False,
    **run_options: Any,
) -> VarianceRun:
    """Run ``spec`` in the three conditions and decompose the trial-to-trial spread of pass/fail.

    Args:
        spec: the run (``trials`` >= 2; its ``vary`` is replaced by each condition's). Give it a ``cache`` to
            replay a held model side's answers.
        out_dir: write each condition's run document there as ``variance-CONDITION.json``; None: none written.
        bootstrap_seed: seed of the bootstrap resamples.
        n_resamples: bootstrap resamples.
        on_condition: called with each condition and its run once it finished.
        run: the function running one spec (default :func:`simulator.execution.session.run`).
        resume: with ``out_dir``, reuse what an earlier, interrupted call left there: a condition's partial file
            (``variance-CONDITION.json.partial.jsonl``) is resumed, a condition's finished run document supplies
            its trials (only the trials it lacks run); each only when it was run with the same spec (and vary) and
            the same policy text (a policy file edited since is refused).
            Without it, a partial file left in ``out_dir`` is refused rather than overwritten.
        **run_options: passed to ``run`` (e.g. ``progress=True``).

    Returns:
        The :class:`VarianceRun`.

    Raises:
        ValueError: ``spec.trials < 2`` (a spread needs two trials per task); a partial file in ``out_dir``
            without ``resume``; with ``resume``, a run document of ``out_dir`` made with another spec.
        SpecError: with ``resume``, a partial file of another spec; or what ``run`` raises (see
            :func:`simulator.execution.session.run`).
    """
    if spec.trials < 2:
        raise ValueError(f"trials: a task's spread needs at least 2 trials per task, got {spec.trials}")
    if run is None:
        from simulator.execution.session import run as run_spec

        run = run_spec
    runs: dict[str, RunResult] = {}
    files: dict[str, str] = {}
    for condition in CONDITIONS:
        out = Path(out_dir) / f"variance-{condition}.json" if out_dir is not None else None
        one = spec.model_copy(update={"vary": condition})
        earlier = _earlier(one, out, resume) if out is not None else None
        extra: dict[str, Any] = {"resume": earlier} if earlier is not None else {}
        result = run(one, out=out, **extra, **run_options)
        runs[condition] = result
        if out is not None:
            files[condition] = str(out)
        if on_condition is not None:
            on_condition(condition, result)
    task_ids = _planned_tasks(runs["both"], spec)
    table = {c: condition_outcomes(r, task_ids, spec.personas, spec.trials) for c, r in runs.items()}
    decomposition = decompose_variance(table, rng=np.random.Generator(np.random.PCG64(bootstrap_seed)),
                                       n_resamples=n_resamples)
    return VarianceRun(spec=spec, runs=runs, decomposition=decomposition, files=files)


def _earlier(spec: RunSpec, out: Path, resume: bool) -> Path | list[TrialResult] | None:
    """What an earlier call left for one condition: its partial file, the trials of its document, or None.

    Raises:
        ValueError: a partial file without ``resume``; a document of another spec.
    """
    partial = partial_path(out)
    if partial.exists():
        if not resume:
            raise ValueError(f"{partial}: holds the finished trials of an interrupted run; rerun with --resume to "
                             "keep them, or remove the file")
        return partial  # the session checks that its spec is this one
    if not resume or not out.exists():
        return None
    doc = load_run_document(out)
    stored = RunSpec.model_validate(doc.get("config") or {})
    data = Path(spec.data_dir) if spec.data_dir else None
    dom = get_domain(spec.domain)
    options = {**dom.default_options(data), **spec.options}
    given = spec.model_copy(update={"options": options,  # the policy compared by its text, as a partial file's
                                    "policy_sha256": policy_sha256(agent_policy(spec, dom, data, options))})
    diffs = spec_differences(stored, given, exempt=resume_exempt(stored, given))
    if diffs:
        what = "; ".join(f"{k}: {excerpt(a)} there, {excerpt(b)} now" for k, a, b in diffs[:3])
        raise ValueError(f"--resume: {out} was run with other settings ({what}); remove it or leave out --resume")
    return [TrialResult.model_validate(t) for t in doc.get("trials") or []]


def _planned_tasks(result: RunResult, spec: RunSpec) -> list[str]:
    """The run's planned task ids in order: its document's ``planned_task_ids``, else those of its trials."""
    document: Mapping[str, Any] | None = getattr(result, "document", None)
    planned = (document or {}).get("planned_task_ids")
    if isinstance(planned, list) and planned:
        return [str(t) for t in planned]
    return list(dict.fromkeys(r.task_id for r in result.trials)) if spec.task_ids is None else list(spec.task_ids)

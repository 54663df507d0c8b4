"""A hunt as a library call: :func:`run_hunt` does what ``tausim hunt`` does, without the rendering.

::

    spec = RunSpec(domain="retail", agent="reference:wrong_item=0.05", user="rule", seed=7)
    found = run_hunt(spec, budget=1000, export=True)
    write_json(found.cases)  # regression cases (task file v2), for ``tausim run --tasks``
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.dialogue.actors import call_actor
from simulator.errors import SetupError
from simulator.execution.build import build_runner
from simulator.execution.preflight import check_credentials, preflight
from simulator.execution.recording import sigint_deferred
from simulator.execution.runner import Runner
from simulator.hunt.cases import cases_document, iter_cases
from simulator.hunt.search import HuntResult, hunt
from simulator.hunt.shrink import replay_script
from simulator.hunt.snapshot import check_vary
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

__all__ = ["CASES", "EXAMPLES", "SEARCH", "HuntRun", "run_hunt", "shrunk_examples"]


@dataclass
class HuntRun:
    """What a hunt found.

    Attributes:
        runner: the hunt's runner (its tasks, domain and spec).
        result: the search's result: trials, clusters, agent turns spent and saved.
        cases: the regression cases (a task file document, version 2) when exported, else None.
        exported: ids of the clusters exported as cases.
        notes: why clusters (or prefix cases) were left out of the export.
        examples: cluster id -> the replayed trial of its shrunk conversation (those that still fail).
        interrupted: where a Ctrl-C stopped the hunt (:data:`SEARCH`, :data:`CASES` or :data:`EXAMPLES`: what it
            holds is what was found until then), or None.
    """

    runner: Runner
    result: HuntResult
    cases: dict[str, Any] | None = None
    exported: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    examples: dict[str, TrialResult] = field(default_factory=dict)
    interrupted: str | None = None


SEARCH = "during the search"
"""``HuntRun.interrupted`` of a hunt stopped while it searched: its trials and clusters so far, no case made."""
CASES = "while the regression cases were made"
"""``HuntRun.interrupted`` of a hunt stopped while it made its cases: every trial, the cases made until then."""
EXAMPLES = "while the shrunk examples were replayed"
"""``HuntRun.interrupted`` of a hunt stopped while it replayed its shrunk examples: every case, examples so far."""


def run_hunt(spec: RunSpec, budget: int, *, seed: int = 0, export: bool = False, clean_agent: str | None = None,
             prefix: bool = False, on_interrupt: Callable[[HuntRun], None] | None = None,
             checkpoint: Callable[[], None] | None = None) -> HuntRun:
    """Search task x persona x seed x user move for failures, cluster them, optionally export regression cases.

    Credentials are checked before the data and tasks are loaded, and the run's pre-flight (one agent and one user
    built, one cheap call per model) before the search.

    Args:
        spec: the run searched (agent, user, tasks, personas, faults).
        budget: agent turns to spend (forks pay only for their suffix).
        seed: seed of the search.
        export: write the clusters as regression cases (:func:`~simulator.hunt.cases.export_cases`).
        clean_agent: keep only cases this agent passes; default for ``reference:KNOBS``: the clean ``reference``.
        prefix: with ``export``, also a trajectory-prefix case per cluster.
        on_interrupt: on Ctrl-C once the search began, called with what the hunt found until then (a
            :class:`HuntRun` with ``interrupted`` set; its ``cases`` the cases made so far, when ``export``), a
            further Ctrl-C held off meanwhile (:func:`~simulator.execution.recording.sigint_deferred`): e.g. to write
            it. When it returns, the KeyboardInterrupt goes on.
        checkpoint: called at safe points once the search began (after each trial, each case, the examples); a
            ``KeyboardInterrupt`` it raises (a Ctrl-C a callback dropped,
            :meth:`~simulator.execution.recording.Interrupts.check`) interrupts the hunt as Ctrl-C does.

    Returns:
        The :class:`HuntRun`.

    Raises:
        SetupError: the run cannot work as set up (missing key, unknown model, unreachable server, a factory that
            raises).
        TausimError, ValueError: bad domain, tasks, agent or user; a spec holding one side's seed (``vary`` user or
            agent: a hunt varies both, see :func:`~simulator.hunt.snapshot.check_vary`).
        KeyboardInterrupt: Ctrl-C (after ``on_interrupt``, once the search began).
    """
    check_vary(spec.vary)
    check_credentials(spec)  # a missing key is reported before the data and tasks are loaded
    runner = build_runner(spec)
    preflight(runner)
    refuse_async_agent(runner)

    def searched(partial: HuntResult) -> None:  # Ctrl-C during the search: its trials so far, no case made
        if on_interrupt is not None:
            on_interrupt(HuntRun(runner=runner, result=partial, interrupted=SEARCH,
                                 cases=cases_document(spec.domain) if export else None))

    found: HuntRun | None = None
    try:
        found = HuntRun(runner=runner, result=hunt(runner, budget, seed=seed, on_interrupt=searched,
                                                   on_trial=None if checkpoint is None else lambda _: checkpoint()))
        phase = CASES
        if export:
            found.cases = cases_document(spec.domain)
            clean = clean_agent or ("reference" if spec.agent.name.startswith("reference:") else None)
            clean_runner = build_runner(spec.model_copy(update={"agent": spec.agent.model_copy(
                update={"name": clean})})) if clean else None
            for case, note in iter_cases(runner, found.result, clean=clean_runner, prefix=prefix):
                if case is not None:
                    found.cases["tasks"].append(case)
                    found.exported.add(str(case["id"]))
                if note is not None:
                    found.notes.append(note)
                if checkpoint is not None:
                    checkpoint()
        phase = EXAMPLES
        shrunk_examples(runner, found.result, found.examples)
        if checkpoint is not None:
            checkpoint()
    except KeyboardInterrupt:
        if on_interrupt is not None and found is not None:  # (during the search: told by ``searched``)
            found.interrupted = phase
            with sigint_deferred():  # a second Ctrl-C must not lose what the first one keeps
                on_interrupt(found)
        raise
    return found


def refuse_async_agent(runner: Runner) -> None:
    """Refuse an agent whose factory or ``step`` is ``async def``: the hunt forks and replays trials synchronously.

    Raises:
        SetupError: (``kind="factory"``) naming the agent, before any trial runs.
    """
    plan = runner.planned()
    if not plan:
        return
    task_id, persona, trial = plan[0]
    ctx = runner.trial_context(next(t for t in runner.tasks if t.id == task_id), trial, persona)
    ctx.extra["preflight"] = True  # built to be checked, never run
    built, failed = call_actor(runner.agent_factory, ctx)
    if failed is not None:  # not async as far as can be told: its trials record the failure as their agent_error
        return
    if inspect.iscoroutine(built):
        built.close()  # an async factory: never awaited here
        is_async = True
    else:
        is_async = inspect.iscoroutinefunction(getattr(built, "step", None))
    if is_async:
        raise SetupError(f"--agent {runner.config.agent.name}: tausim hunt drives synchronous agents only (this "
                         "agent's factory or step is async def); hunt a synchronous twin, or test it with tausim run",
                         kind="factory")


def shrunk_examples(runner: Runner, result: HuntResult, into: dict[str, TrialResult] | None = None
                    ) -> dict[str, TrialResult]:
    """Replay each shrunk cluster's conversation once (``Cluster.script``): cluster id -> the replayed trial.

    A replay that no longer fails is left out (the example then shows the cluster's shortest member).

    Args:
        runner: the hunt's runner.
        result: the hunt's result, its clusters shrunk (:func:`~simulator.hunt.cases.export_cases`).
        into: the dict to fill, each replay as soon as it ends (kept when the caller is interrupted); None: a new one.

    Returns:
        ``into`` (or the new dict), filled.
    """
    out: dict[str, TrialResult] = {} if into is None else into
    tasks = {t.id: t for t in runner.tasks}
    for c in result.clusters:
        if c.script is None:
            continue
        short = c.shortest.result
        res = replay_script(runner, tasks[short.task_id], short.trial, c.script)
        if not res.passed:
            out[c.case_id] = res
    return out

"""Building a run from its :class:`~simulator.types.spec.RunSpec`: :func:`build_runner` and the run's model services.

:func:`build_runner` is the one way a run is built: by ``tausim run`` and ``tausim play``, on resume, by
regrade and by every Dask worker (see :mod:`simulator.execution.executors`). A run built twice from the same spec plans
the same trials and gives the same results.

Model services (the response cache and the rate limiters) are owned by a :class:`RunServices`, which closes the
cache file; use it as a context manager around the run::

    with RunServices.open(spec) as services:
        runner = build_runner(spec, services)
        result = runner.run()
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.execution.runner import Runner
from simulator.models.cache import SQLiteCache
from simulator.models.ratelimit import RateLimiterRegistry
from simulator.types.prepared import GoldReplay
from simulator.types.protocols import UserFactory
from simulator.types.spec import MAX_PLANNED_TRIALS, RunSpec
from simulator.types.tasks import Task, TaskFileError
from simulator.world.database import TemplateDatabase
from simulator.world.domain import Domain, DomainError, get_domain
from simulator.world.replay import replay_gold, tasks_not_replaying

__all__ = ["RunServices", "agent_policy", "build_runner", "check_gold", "policy_sha256", "select_tasks"]


@dataclass
class RunServices:
    """A run's model services, shared by every model client of the run (agent, user and judge).

    Attributes:
        cache: the response cache (``spec.cache``), or None.
        limiters: per-model rate limiters (``spec.rpm``), or None.
    """

    cache: SQLiteCache | None = None
    limiters: RateLimiterRegistry | None = None

    @classmethod
    def open(cls, spec: RunSpec, *, rpm_share: int = 1) -> RunServices:
        """Open the services a spec asks for.

        Args:
            spec: the run spec (``cache``, ``rpm``).
            rpm_share: number of processes sharing ``spec.rpm`` (each gets ``rpm // rpm_share``, at least 1).

        Returns:
            The services (close them, or use ``with``).

        Raises:
            ValueError: the cache file is not an SQLite database (the message names it).
        """
        limiters = RateLimiterRegistry(max(1, spec.rpm // rpm_share)) if spec.rpm is not None else None
        cache = None
        if spec.cache is not None:
            try:
                cache = SQLiteCache(spec.cache)
            except sqlite3.DatabaseError as e:
                raise ValueError(f"cache (--cache) {spec.cache}: {e}") from e
        return cls(cache=cache, limiters=limiters)

    def params(self) -> dict[str, Any]:
        """Return ``{"cache": ..., "limiters": ...}`` (those present) for model client factories."""
        return {k: v for k, v in (("cache", self.cache), ("limiters", self.limiters)) if v is not None}

    def close(self) -> None:
        """Close the cache file (idempotent)."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> RunServices:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def select_tasks(tasks: Sequence[Task], task_ids: Sequence[str] | None) -> list[Task]:
    """Return the tasks named by ``task_ids`` in task-set order (all of them for None).

    Raises:
        ValueError: no id given, or an id not in the task set (the message lists them).
    """
    if task_ids is None:
        return list(tasks)
    wanted = {t.strip() for t in task_ids if t.strip()}
    if not wanted:
        raise ValueError("task_ids: no task id given")
    known = {t.id for t in tasks}
    unknown = [t for t in task_ids if t.strip() and t.strip() not in known]
    if unknown:
        raise ValueError(f"task_ids: unknown task id(s) {', '.join(unknown)}")
    return [t for t in tasks if t.id in wanted]


def build_runner(
    spec: RunSpec,
    services: RunServices | None = None,
    *,
    log: Any = None,
    check: Callable[[Domain, TemplateDatabase, list[Task], list[Task]], Mapping[str, GoldReplay] | None] | None = None,
    user_factory_override: UserFactory | None = None,
) -> Runner:
    """Build the :class:`~simulator.execution.runner.Runner` of a run spec.

    Args:
        spec: the run spec.
        services: the run's model services; default: opened from ``spec`` (then the caller may close
            ``runner.services``).
        log: the run's structlog logger (see :mod:`simulator.storage.runlog`), or None.
        check: called with the domain, the template, the *whole* task set and the tasks selected by
            ``spec.task_ids`` (e.g. the CLI's check that gold actions replay on the data); may raise; may return
            the gold replays it made of the selected tasks (task id -> :class:`~simulator.types.prepared.GoldReplay`),
            which the runner then uses instead of replaying them again.
        user_factory_override: a user factory to use instead of ``spec.user`` (``tausim play``: a person).

    Returns:
        The runner; ``runner.services`` holds the services.

    Raises:
        simulator.world.domain.DomainError: unknown domain, split or option; unreadable data.
        simulator.types.tasks.TaskFileError: malformed task file.
        ValueError: unknown task id, agent or user spec; personas without definitions; a bad cache file; more than
            :data:`~simulator.types.spec.MAX_PLANNED_TRIALS` trials planned.
    """
    from simulator.agents import agent_factory
    from simulator.users import user_factory

    dom = get_domain(spec.domain)
    data = Path(spec.data_dir) if spec.data_dir is not None else None
    template = dom.template(data, {**dom.default_options(data), **spec.options})
    all_tasks = dom.load_tasks(spec.tasks, split=spec.split)
    tasks = select_tasks(all_tasks, spec.task_ids)
    if spec.tags or spec.exclude_tags:  # suite tiers
        from simulator.world.suites import select_tasks as select_tagged

        tasks = select_tagged(tasks, spec.tags, spec.exclude_tags)
    planned = len(tasks) * max(1, len(spec.personas or [])) * spec.trials
    if planned > MAX_PLANNED_TRIALS:
        raise ValueError(f"the run plans {planned:,} trials ({len(tasks)} tasks x {max(1, len(spec.personas or []))} "
                         f"personas x {spec.trials} trials); the limit is {MAX_PLANNED_TRIALS:,}")
    gold = check(dom, template, all_tasks, tasks) if check is not None else None
    services = services if services is not None else RunServices.open(spec)
    shared = {**services.params(), "timeout": spec.request_timeout}  # every model client of the run
    agent = agent_factory(spec.agent.name, domain=dom, **{**shared, **spec.agent.model_params()})
    users: UserFactory
    if user_factory_override is not None:
        users = user_factory_override
    else:  # every user builder gets the run's domain and template (the rule user derives its scenarios from them)
        users = user_factory(spec.user.name, domain=dom, template=template, **{**shared, **spec.user.model_params()})
    judge = None
    if spec.judge is not None:
        from simulator.grading.judge import build_judge

        j = spec.judge
        agent_model = spec.agent.name.removeprefix("litellm:") if spec.agent.name.startswith("litellm:") else None
        judge = build_judge(j.name, api_base=j.api_base,
                            calibration=Path(j.calibration) if j.calibration is not None else None,
                            min_kappa=j.min_kappa, anchors=Path(j.anchors) if j.anchors is not None else None,
                            agent_model=agent_model, strict=j.strict,
                            **{**shared, **{k: v for k, v in j.model_params().items() if k != "api_base"}})
    personas = None
    if spec.personas:
        from simulator.types.persona import Persona

        if spec.persona_defs is None:
            raise ValueError("personas need their definitions (persona_defs) in the run spec")
        personas = [Persona.model_validate(spec.persona_defs[name]) for name in spec.personas]
    # the policy the agent gets (a suite's own, e.g. tau2's policy.md) is recorded by its hash
    policy = agent_policy(spec, dom, template.data_dir, template.options)
    spec = spec.model_copy(update={"policy_sha256": policy_sha256(policy)})
    runner = Runner(dom, template, tasks, agent, users, spec, log=log, judge=judge, personas=personas, gold=gold,
                    policy=policy)
    runner.services = services  # type: ignore[attr-defined]
    return runner


def agent_policy(spec: RunSpec, dom: Domain | None = None, data_dir: Path | None = None,
                 options: Mapping[str, Any] | None = None) -> str:
    """Return the policy text a run of ``spec`` gives its agent (its sha256 is the run's ``policy_sha256``).

    Args:
        spec: the run.
        dom: its domain (default: ``spec.domain``'s).
        data_dir: its data (default: ``spec.data_dir``).
        options: its domain options (default: the domain's defaults for the data, updated with ``spec.options``).

    Returns:
        The text of ``spec.policy``'s file, else the suite's own policy next to the data (tau-bench's ``wiki.md``,
        tau2's ``policy.md``), else the domain's.

    Raises:
        DomainError: ``spec.policy`` cannot be read (missing, not UTF-8), or an unknown domain.
    """
    if spec.policy is not None:
        try:
            return Path(spec.policy).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DomainError(f"policy (--policy) {spec.policy}: cannot read: {getattr(e, 'strerror', None) or e}"
                              ) from e
    dom = dom if dom is not None else get_domain(spec.domain)
    data = data_dir if data_dir is not None else Path(spec.data_dir) if spec.data_dir else None
    opts = options if options is not None else {**dom.default_options(data), **spec.options}
    return dom.policy_for(data, opts)


def policy_sha256(policy: str) -> str:
    """Return the hash a run records of its agent's policy text (``RunSpec.policy_sha256``): sha256 of its UTF-8."""
    return hashlib.sha256(policy.encode()).hexdigest()


def check_gold(dom: Domain, template: TemplateDatabase, tasks: list[Task], data: Path | None,
               selected: list[Task] | None = None) -> dict[str, GoldReplay]:
    """Refuse a task set whose gold actions do not replay on the data (tasks written for other data).

    See :func:`simulator.world.replay.tasks_not_replaying`. Some task sets have such tasks on purpose (about one in ten
    of tau-bench's), so the run is refused only when at least half of the tasks with gold actions (of the whole
    task set, not only those selected) are such. The ``selected`` tasks (those the run will run; default all)
    have their gold actions replayed here, once: the check reads their statuses and the replays are returned
    for the runner (``Runner(gold=...)``); the others have only their first gold action run. Use it as
    :func:`build_runner`'s ``check``.

    Args:
        dom: the run's domain.
        template: the run's data.
        tasks: the whole task set.
        data: the data directory (named in the error), or None for the domain's built-in data set.
        selected: the tasks the run will run; None: all.

    Returns:
        Task id -> its :class:`~simulator.types.prepared.GoldReplay`, for the selected tasks.

    Raises:
        TaskFileError: at least half of the tasks with gold actions fail their first gold action on the data (the
            message names one and says to give ``--data`` the data set they belong to).
    """
    toolbox = dom.toolbox()
    replays = {t.id: replay_gold(dom, template, t, toolbox) for t in (tasks if selected is None else selected)}
    broken = tasks_not_replaying(dom, template, tasks, replays)
    with_gold = sum(1 for t in tasks if t.gold_actions)
    if broken and 2 * len(broken) >= with_gold:
        first_id, first = next(iter(broken.items()))
        raise TaskFileError(f"the first gold action of {len(broken)} of {with_gold} tasks fails on the data "
                            f"{data if data is not None else '(the built-in data set)'}, e.g. task {first_id}: "
                            f"{first[:160]}. These tasks were not written for this data: give --data the data set "
                            "they belong to.")
    return replays

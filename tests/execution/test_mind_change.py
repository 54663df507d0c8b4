"""Mind change with its own goal: a task's alternative outcomes, the persona that moves to one, and its grading.

Expected outcomes come from the hand-written alternatives of the built-in retail tasks (cancel the order instead of
changing it) and from what the mind-changer persona means, never from the code's own output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from personas.loader import load_personas
from simulator.agents import agent_factory
from simulator.execution.runner import Runner, RunResult
from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import TrialContext, UserSimulator
from simulator.types.spec import RunSpec
from simulator.types.tasks import Task, parse_tasks
from simulator.users import user_factory
from simulator.world.domain import get_domain

DOMAIN = get_domain("retail")
TEMPLATE = DOMAIN.template(None)
TASKS = DOMAIN.load_tasks("builtin")
WITH_ALTERNATIVES = [t for t in TASKS if t.alternatives]
MIND_CHANGER = load_personas(["mind-changer"])[0]
# the write each built-in alternative ends with, and the writes of the tasks' own goals (none of which may happen)
ALTERNATIVE_WRITE = {"retail": "cancel_pending_order", "airline": "update_reservation_baggages",
                     "returns": "cancel_order"}
DOMAINS = tuple(ALTERNATIVE_WRITE)


def _users(domain: Any = DOMAIN, persona: str | None = "mind-changer",
           wrap: Callable[[UserSimulator], UserSimulator] | None = None) -> Callable[[TrialContext], UserSimulator]:
    base = user_factory("rule", domain=domain, template=domain.template(None) if domain is not DOMAIN else TEMPLATE)
    chosen = load_personas([persona])[0] if persona else None

    def make(ctx: TrialContext) -> UserSimulator:
        ctx.persona = chosen
        user = base(ctx)
        return wrap(user) if wrap is not None else user

    return make


def _run(tasks: Sequence[Task], users: Callable[[TrialContext], UserSimulator], domain: Any = DOMAIN) -> RunResult:
    cfg = RunSpec(domain=domain.name, agent="reference", user="rule", trials=1, seed=0)
    template = domain.template(None) if domain is not DOMAIN else TEMPLATE
    return Runner(domain, template, list(tasks), agent_factory("reference", domain=domain), users, cfg).run()


def _alternative_tasks(name: str) -> tuple[Any, list[Task]]:
    domain = get_domain(name)
    return domain, [t for t in domain.load_tasks("builtin") if t.alternatives]


def _key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, arguments], sort_keys=True)


class _ForgetsOutcome:
    """The rule user, except that its metadata never names the outcome (so the task's own goal is graded)."""

    def __init__(self, inner: UserSimulator):
        self.inner = inner

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        return self.inner.reply(messages)

    def observe_progress(self, progress: Any) -> None:
        self.inner.observe_progress(progress)  # type: ignore[attr-defined]

    @property
    def metadata(self) -> dict[str, Any]:
        return {k: v for k, v in self.inner.metadata.items() if k != "outcome"}  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", DOMAINS)
def test_builtin_tasks_declare_alternatives(name: str) -> None:
    _, tasks = _alternative_tasks(name)
    assert len(tasks) >= 2
    for task in tasks:
        assert task.alternatives[0].gold_actions[-2 if name == "returns" else -1].name == ALTERNATIVE_WRITE[name]


@pytest.mark.parametrize("name", DOMAINS)
def test_mind_changer_is_graded_against_the_alternative(name: str) -> None:
    domain, tasks = _alternative_tasks(name)
    res = _run(tasks, _users(domain), domain)
    assert len(res.trials) == len(tasks)
    fired = 0
    for trial, task in zip(res.trials, tasks, strict=True):
        meta = trial.trajectory.user_metadata
        fired += meta["mind_changed_at_turn"] == MIND_CHANGER.mind_change_turn
        assert meta["outcome"] == task.alternatives[0].name
        assert trial.grade is not None and trial.grade.outcome == task.alternatives[0].name
        assert trial.passed, (trial.task_id, trial.grade.failure)
        calls = {_key(c.name, c.arguments) for m in trial.trajectory.messages for c in (m.tool_calls or [])}
        writes = {n for n, s in domain.toolbox().specs.items() if s.kind == "write"}
        alt = {_key(a.name, a.arguments) for a in task.alternatives[0].gold_actions if a.name in writes}
        own = {_key(a.name, a.arguments) for a in task.gold_actions if a.name in writes} - alt
        assert alt <= calls  # the writes the user ended up wanting ...
        assert own and not own & calls  # ... and not the ones it first asked for
    assert fired == len(tasks)  # the persona fires on every task that declares an alternative


@pytest.mark.parametrize("name", DOMAINS)
def test_same_trials_fail_against_the_original_goal(name: str) -> None:
    domain, tasks = _alternative_tasks(name)
    res = _run(tasks, _users(domain, wrap=_ForgetsOutcome), domain)
    for trial in res.trials:
        assert trial.grade is not None and trial.grade.outcome is None
        assert not trial.passed and not trial.grade.state.passed


@pytest.mark.parametrize("name", DOMAINS)
def test_without_a_mind_change_nothing_changes(name: str) -> None:
    domain, tasks = _alternative_tasks(name)
    res = _run(tasks, _users(domain, persona=None), domain)
    for trial in res.trials:
        assert trial.passed and trial.grade is not None and trial.grade.outcome is None
        assert trial.trajectory.user_metadata["outcome"] is None


def test_a_task_without_alternatives_is_unchanged_for_the_mind_changer() -> None:
    task = next(t for t in TASKS if t.id == "cancel-no-longer-needed")
    assert not task.alternatives
    trial = _run([task], _users()).trials[0]
    assert trial.trajectory.user_metadata["outcome"] is None and trial.trajectory.user_metadata[
        "mind_changed_at_turn"] is None  # no fallback and no alternative: it never changes its mind
    assert trial.grade is not None and trial.grade.outcome is None and trial.passed


def test_for_outcome_swaps_the_goal() -> None:
    task = WITH_ALTERNATIVES[0]
    alt = task.for_outcome("cancel-instead")
    assert alt.gold_actions == task.alternatives[0].gold_actions and alt.alternatives == []
    assert alt.id == task.id and alt.scenario == task.scenario
    with pytest.raises(KeyError, match="no alternative outcome 'nope'.*cancel-instead"):
        task.for_outcome("nope")


def test_metadata_naming_no_alternative_grades_the_task() -> None:
    from simulator.execution.prepare import prepare_task

    prepared = prepare_task(DOMAIN, TEMPLATE, WITH_ALTERNATIVES[0])
    assert set(prepared.alternatives) == {"cancel-instead"}
    for value in ("nope", 3, None, float("nan")):
        assert prepared.outcome_of({"outcome": value}) is None
    assert prepared.outcome_of({"outcome": "cancel-instead"}) == "cancel-instead"


def test_duplicate_alternative_names_are_refused() -> None:
    raw = WITH_ALTERNATIVES[0].model_dump(mode="json")
    raw["alternatives"] = raw["alternatives"] * 2
    from simulator.errors import TaskFileError

    with pytest.raises(TaskFileError, match="alternative name.*'cancel-instead'.*repeat"):
        parse_tasks({"format": "tausim.tasks", "version": 1, "domain": "retail", "tasks": [raw]})


def test_regrade_grades_the_recorded_outcome() -> None:
    from simulator.execution.regrade import regrade_trial

    domain, tasks = _alternative_tasks("returns")
    trial = _run(tasks[:1], _users(domain), domain).trials[0]
    assert trial.passed and trial.grade is not None and trial.grade.outcome
    again, _ = regrade_trial(domain, domain.template(None), tasks[0], trial)
    assert again.passed and again.grade is not None and again.grade.outcome == trial.grade.outcome
    forgot = trial.model_copy(deep=True)
    del forgot.trajectory.user_metadata["outcome"]
    again, _ = regrade_trial(domain, domain.template(None), tasks[0], forgot)
    assert not again.passed and again.grade is not None and again.grade.outcome is None

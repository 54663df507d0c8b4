"""Regression cases: each failure cluster as a runnable task (task format, version 2), and trajectory-prefix cases.

:func:`export_cases` writes a cluster as its task with the failing trial's seed, persona and (shrunk) user moves
pinned; :func:`prefix_case` adds the trajectory-prefix case: the conversation and database state just before the
agent's first error (:func:`first_error`, :func:`prefix_at`) and what its next turn must not do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from simulator.dialogue.prefix import capture_state
from simulator.errors import SnapshotError
from simulator.execution.runner import Runner
from simulator.grading.process import unconfirmed_writes
from simulator.grading.signature import core, signature
from simulator.hunt.clusters import Cluster, tool_kinds
from simulator.hunt.search import HuntResult
from simulator.hunt.shrink import run_case, shrink
from simulator.hunt.snapshot import Harness, HuntTrial, every_turn
from simulator.types.messages import Message
from simulator.types.persona import Persona
from simulator.types.tasks import NextStep, PrefixUser, StepCall, Task, TrialPrefix
from simulator.types.trajectory import Trajectory
from simulator.world.tools import Toolbox

__all__ = ["cases_document", "export_cases", "first_error", "iter_cases", "prefix_at", "prefix_case"]


def _turn_start(messages: Sequence[Message], index: int) -> int | None:
    """The index of the user's text message that opened the agent turn holding message ``index``."""
    return next((j for j in range(index - 1, -1, -1) if messages[j].role == "user" and messages[j].content
                 and not messages[j].tool_calls and messages[j].requestor is None), None)


def first_error(task: Task, trajectory: Trajectory, toolbox: Toolbox, *,
                confirm_writes: bool = False) -> tuple[int, NextStep] | None:
    """Find the agent's first error in a trajectory and what its turn should not have done.

    The errors looked for, the earliest one taken (those of the same turn merged):

    - a successful write (or conversation-ending call) that departs from the gold writes (the first call
      :func:`signature`'s divergence names): the turn must not call that tool with the arguments that differ
      from gold's (all of them when gold has no such call next);
    - with ``confirm_writes``, a write without the user's explicit yes (:func:`unconfirmed_writes`): the turn
      must not call any write tool;
    - an agent message asking again what it already asked (``repeated_question``): the turn must not do so.

    Args:
        task: the task (its gold actions).
        trajectory: the failed trial's trajectory.
        toolbox: the domain's tools (their kinds).
        confirm_writes: the task's process rules ask for confirmation before writes.

    Returns:
        ``(index of the user message that opened the erring turn, expectations of that turn)``, or None when no
        such error is found (a failure of another kind: a missing write, a cap, the user giving up).
    """
    kinds = tool_kinds(toolbox)
    msgs = trajectory.messages
    where = {c.id: i for i, m in enumerate(msgs) for c in m.tool_calls}
    found: list[tuple[int, NextStep]] = []
    gold = [(a.name, a.arguments) for a in task.gold_actions
            if a.requestor == "assistant" and kinds.get(a.name) in ("write", "ending")]
    w = 0
    for c in trajectory.tool_calls:
        if c.requestor != "agent" or kinds.get(c.name) not in ("write", "ending") or c.status != "ok":
            continue
        if w < len(gold) and (c.name, c.arguments) == gold[w]:
            w += 1
            continue
        args = dict(c.arguments or {})
        if kinds.get(c.name) == "ending":
            key: dict[str, Any] = {}
        elif w < len(gold) and gold[w][0] == c.name:
            key = {k: v for k, v in args.items() if gold[w][1].get(k) != v} or args
        else:
            key = args
        found.append((where.get(c.call_id, len(msgs)), NextStep(must_not_call=[StepCall(name=c.name, arguments=key)])))
        break
    if confirm_writes:
        bad = unconfirmed_writes(trajectory, toolbox)
        if bad:
            found.append((where.get(bad[0][0].call_id, len(msgs)), NextStep(must_not_call=[StepCall(kind="write")])))
    closing = [i for i, m in enumerate(msgs) if m.role == "assistant" and m.content and not m.tool_calls]
    for k, p in enumerate(trajectory.progress):
        if "repeated_question" in p.get("signals", []) and k < len(closing):
            found.append((closing[k], NextStep(must_not_say=["repeated_question"])))
            break
    turns = [(u, e) for u, e in ((_turn_start(msgs, i), e) for i, e in found) if u is not None]
    if not turns:
        return None
    first = min(u for u, _ in turns)
    same = [e for u, e in turns if u == first]
    return first, NextStep(must_call=[p for e in same for p in e.must_call],
                           must_not_call=[p for e in same for p in e.must_not_call],
                           must_say=[p for e in same for p in e.must_say],
                           must_not_say=[p for e in same for p in e.must_not_say])


def prefix_at(runner: Runner, played: HuntTrial, index: int, next_step: NextStep) -> TrialPrefix:
    """The trajectory prefix of a played trial up to its user message ``index`` (included).

    Args:
        runner: the runner it was played with (its template's schema).
        played: the trial, played with a snapshot at every user turn (``capture=every_turn``).
        index: the index in its messages of a user text message (the last message of the prefix).
        next_step: what the agent's next turn must and must not do.

    Returns:
        The prefix: the messages, the agent's step points and the user's state of the last snapshot before the
        message, its database as rows written since the template (:func:`capture_state`) and events.

    Raises:
        SnapshotError: no snapshot before that message, or the user's reply called tools (its effect on the
            database is not in the snapshot).
    """
    msgs = played.result.trajectory.messages[:index + 1]
    snap = max((s for s in played.snapshots if len(s.conversation().trajectory.messages) <= index),
               key=lambda s: s.turn, default=None)
    if snap is None:
        raise SnapshotError(f"no snapshot before message {index} of task {played.result.task_id!r}")
    at = len(snap.conversation().trajectory.messages)
    if any(m.requestor is not None for m in msgs[at:]):
        raise SnapshotError("the user's last reply of the prefix called tools (its database effect is not captured)")
    raw = sqlite3.connect(":memory:")
    try:
        raw.deserialize(snap.database)
        rows, deleted, events = capture_state(raw, runner.template.metadata)
    finally:
        raw.close()
    return TrialPrefix(
        messages=list(msgs), agent_steps=[n for kind, n in snap.calls if kind == "a"], rows=rows, deleted=deleted,
        events=events, next_step=next_step,
        user=PrefixUser.model_validate({**snap.user_state, "turn": snap.turn, "moves": dict(snap.moves)}))


def prefix_case(runner: Runner, case: Task, member: HuntTrial) -> tuple[Task | None, str]:
    """Make the trajectory-prefix case of a failing trial: its state just before the agent's first error.

    The trial is played again from its start with its moves pinned, a snapshot at every user turn; the prefix is
    its conversation up to the user's message that opened the erring turn (:func:`first_error`), with the
    trial database as it was then (the snapshot's, as rows written since the template: :func:`capture_state`),
    the agent's step points, the user's state, and the erring turn's expectations.

    Args:
        runner: the hunt's runner (agent, user, template).
        case: the cluster's regression case (:func:`export_cases`): the prefix case is a copy of it, id
            ``CASE-prefix``, tagged ``hunt-prefix``.
        member: the failing trial (not reseeded).

    Returns:
        ``(prefix case, "")`` or ``(None, why not)``.
    """
    task = Harness(runner)._task(member.result.task_id)
    toolbox = runner.domain.toolbox()
    confirm = bool(runner.prepare([task.id])[task.id].rules.process.confirm_writes)
    err = first_error(task, member.result.trajectory, toolbox, confirm_writes=confirm)
    if err is None:
        return None, "no agent error to stop before (a missing write, a cap or the user giving up)"
    u, expect = err
    again = Harness(runner).play(task, member.result.trial, member.result.persona, moves=member.moves,
                                 capture=every_turn)
    msgs = member.result.trajectory.messages[:u + 1]
    if [m.model_dump() for m in again.result.trajectory.messages[:u + 1]] != [m.model_dump() for m in msgs]:
        return None, "the trial does not replay to its prefix from its seed and moves"
    try:
        prefix = prefix_at(runner, again, u, expect)
    except SnapshotError as e:
        return None, str(e)
    return case.model_copy(update={"id": f"{case.id}-prefix", "prefix": prefix,
                                   "tags": [*case.tags, "hunt-prefix"]}), ""


# ---------------------------------------------------------------------------------------------------- export
def _case(task: Task, c: Cluster, member: HuntTrial, moves: Mapping[int, str],
          personas: Mapping[str, Persona]) -> Task:
    named = {m.partition(":")[2] for m in moves.values() if m.startswith("switch_persona:")}
    return task.model_copy(update={
        "id": c.case_id, "seed": member.result.seed,
        "scenario": task.scenario.model_copy(update={
            "persona": personas.get(member.result.persona or ""), "moves": dict(sorted(moves.items())),
            "move_personas": [personas[n] for n in sorted(named)]}),
        "tags": [*task.tags, "hunt", f"hunt:{c.signature[0]}"],
    })


def export_cases(runner: Runner, result: HuntResult, *, clean: Runner | None = None, shrink_tries: int = 20,
                 domain: str | None = None, prefix: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Write each cluster as a regression case (a task of the task format, version 2).

    A case is the cluster's task with the trial's seed (``seed``), persona (``scenario.persona``) and user moves
    (``scenario.moves``, shrunk: each dropped while the case still fails the same way) pinned, tagged ``hunt`` and
    ``hunt:LAYER``; its id is :attr:`Cluster.case_id`. ``tausim run --tasks FILE`` with the agent and the user of
    the hunt replays it. The cluster's shortest conversation is also shrunk as user turns (:func:`shrink`,
    ``Cluster.script``) for the report. A cluster is left out (with a note) when all its trials went through a
    reseeded fork (not replayable from a seed), when its case does not fail the same way, or, when ``clean`` is
    given, when the clean agent fails it too (a regression no agent can pass names no fault of the agent).

    With ``prefix``, each exported case is followed by its trajectory-prefix case (:func:`prefix_case`, id
    ``CASE-prefix``): the conversation and database state just before the agent's first error and what its next
    turn must not do; kept only when the agent fails that next turn and, when ``clean`` is given, the clean agent
    passes it (else a note says why it is missing).

    Args:
        runner: the hunt's runner.
        result: the hunt's result (clusters get their ``script`` set).
        clean: a runner with the clean agent (same tasks and user), or None.
        shrink_tries: most replays per cluster for each shrinking.
        domain: the domain name written in the file (default the runner's).
        prefix: also write trajectory-prefix cases.

    Returns:
        ``(task file document, notes)``: notes say which clusters (or prefix cases) were left out and why.
    """
    doc = cases_document(domain or runner.config.domain)
    notes: list[str] = []
    for case, note in iter_cases(runner, result, clean=clean, shrink_tries=shrink_tries, prefix=prefix):
        if case is not None:
            doc["tasks"].append(case)
        if note is not None:
            notes.append(note)
    return doc, notes


def cases_document(domain: str, cases: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """A task file document (``format`` ``tausim.tasks``, version 2) of ``domain`` holding ``cases`` (copied)."""
    return {"format": "tausim.tasks", "version": 2, "domain": domain, "tasks": list(cases)}


def iter_cases(runner: Runner, result: HuntResult, *, clean: Runner | None = None, shrink_tries: int = 20,
               prefix: bool = False) -> Iterator[tuple[dict[str, Any] | None, str | None]]:
    """Make the regression cases of :func:`export_cases` one at a time, each as soon as it is made.

    For a caller that keeps the cases made before it stops (``tausim hunt`` on Ctrl-C); same arguments as
    :func:`export_cases`.

    Yields:
        ``(case, None)``: a case (its task, as JSON); ``(None, note)``: why a cluster or a prefix case was left
        out. In cluster order; a cluster's prefix case right after its case.
    """
    kinds = tool_kinds(runner.domain.toolbox())
    tasks = {t.id: t for t in runner.tasks}
    personas = dict(Harness(runner).personas)
    for c in result.clusters:
        task = tasks[c.shortest.result.task_id]
        short = c.shortest
        c.script = shrink(runner, task, short.result.trial, short.user_turns(), c.signature, kinds, shrink_tries)
        members = sorted((t for t in c.trials if not t.reseeded), key=lambda t: len(t.user_turns()))
        if not members:
            yield None, f"{c.case_id}: left out: found only by reseeded forks (not replayable from a seed)"
            continue
        member = members[0]
        want = core(c.signature)

        def fails(moves: Mapping[int, str], task: Task = task, c: Cluster = c, member: HuntTrial = member,
                  want: tuple[str, ...] = want) -> bool:
            s = signature(task, run_case(runner, _case(task, c, member, moves, personas)), kinds)
            return s is not None and core(s) == want

        moves = dict(member.moves)
        if not fails(moves):
            yield None, f"{c.case_id}: left out: its pinned replay does not fail the same way"
            continue
        tries = 1
        for i in sorted(moves, reverse=True):
            if tries >= shrink_tries:
                break
            tries += 1
            fewer = {k: v for k, v in moves.items() if k != i}
            if fails(fewer):
                moves = fewer
        case = _case(task, c, member, moves, personas)
        if clean is not None:
            res = run_case(clean, case)
            if not res.passed:
                yield None, f"{c.case_id}: left out: the clean agent fails it too ({res.termination_reason})"
                continue
        yield case.model_dump(mode="json", exclude_defaults=True), None
        if prefix:
            yield _prefix_case(runner, case, member, clean)


def _prefix_case(runner: Runner, case: Task, member: HuntTrial, clean: Runner | None
                 ) -> tuple[dict[str, Any] | None, str | None]:
    """A cluster's trajectory-prefix case (:func:`prefix_case`), checked: ``(case, None)`` or ``(None, note)``."""
    pcase, why = prefix_case(runner, case, member)
    if pcase is None:
        return None, f"{case.id}: no prefix case: {why}"
    res = run_case(runner, pcase)
    step = res.grade.next_step if res.grade is not None else None
    if step is None or step.passed:
        return None, (f"{case.id}: no prefix case: the agent does not fail its next turn there "
                      f"({res.termination_reason})")
    if clean is not None and not run_case(clean, pcase).passed:
        return None, f"{case.id}: no prefix case: the clean agent fails its next turn too"
    return pcase.model_dump(mode="json", exclude_defaults=True), None

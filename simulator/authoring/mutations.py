"""Task-contract mutation testing (``tausim tasks lint --mutations``): is a task's contract too strict or too loose?

A task's contract is what its grade checks (goal state, required outputs, process rules, assertions). Mutation
testing replays altered copies of the gold actions on fresh copies of the task's data and grades each as a trial
that ended with the user stopping and the agent stating the required outputs (as the oracle does). A sound
contract passes the harmless mutations and fails the harmful ones:

- ``oracle``: the gold actions as they are. It must pass, else rule ``mutation-oracle-fails`` (error: no agent
  can pass the task as graded).
- ``extra-reads``: each distinct successful agent-side read repeated once, right after its first call (a careful
  agent's double check). It must
  pass, else ``mutation-over-strict`` (warning: the contract punishes harmless calls).
- ``reordered``: two adjacent independent reads swapped (reads whose order no precedence rule of the task fixes).
  It must pass, else ``mutation-over-strict`` (warning).
- ``drop-write``: one successful gold write left out (conversation-enders excepted). It must fail, else
  ``mutation-under-strict`` (warning: nothing the task grades sees that write).
- ``perturb-write``: the key argument of one successful gold write perturbed (an entity id of the domain when the
  write has one: the last character changed; else the first number + 1 or the first string suffixed). It must
  fail, else ``mutation-under-strict`` (warning) when the key was an entity id, and the note
  ``mutation-free-argument`` otherwise (the argument may legitimately be ungraded, e.g. a free-text reason).

The do-nothing agent is the lint's own ``null-passes`` rule. Each finding names the task, the mutation and the
grade component that decided (a failing component for a pass expected, or ``none failed``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from simulator.authoring.findings import Finding
from simulator.errors import GoldToolBug
from simulator.grading import check_assertions, grade_trial
from simulator.types.grade import Grade
from simulator.types.messages import Message
from simulator.types.tasks import Action, Task
from simulator.types.trajectory import TerminationReason, ToolCallRecord, Trajectory
from simulator.world.database import StateSpec, TemplateDatabase, diff_against
from simulator.world.domain import Domain
from simulator.world.dual import env_caller, run_action, syncer
from simulator.world.events import read_events
from simulator.world.replay import prepare_trial
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["MUTATION_RULES", "mutation_findings"]

MUTATION_RULES = ("mutation-oracle-fails", "mutation-over-strict", "mutation-under-strict", "mutation-free-argument")
"""The rules of the mutation tests (module docstring)."""


def _replay(domain: Domain, toolbox: Toolbox, ctx: ToolContext, actions: Sequence[Action]) -> list[ToolCallRecord]:
    """Run actions in order on the trial database (user-side ones on the user's side), until one ends the talk."""
    sides = (toolbox, domain.user_toolbox())
    sync = syncer(domain, ctx)
    records: list[ToolCallRecord] = []
    for i, action in enumerate(actions):
        user = action.requestor == "user"
        if not user and action.name not in toolbox.specs:
            continue
        res = (run_action(domain, ctx, action, sides, functions=False) if user
               else toolbox.dispatch(ctx, action.name, action.arguments))
        sync()
        records.append(ToolCallRecord(step=i, call_id=f"m-{i}", name=action.name, arguments=action.arguments,
                                      kind=res.kind, status=res.status, content=res.content, duration_s=0.0,
                                      requestor="user" if user else "agent"))
        if res.ends_conversation:
            break
    return records


class _Grader:
    """Grades replayed action lists of one task against its goal state (the gold actions' final state)."""

    def __init__(self, domain: Domain, template: TemplateDatabase, task: Task, toolbox: Toolbox, spec: StateSpec):
        self.domain, self.template, self.task, self.toolbox, self.spec = domain, template, task, toolbox, spec
        self.gold_records: list[ToolCallRecord] = []
        with template.trial() as db:
            prepare_trial(domain, db, task)
            self.initial = db.raw.serialize()
            self.gold_records = _replay(domain, toolbox, ToolContext(db.session, db.options), task.gold_actions)
            self.goal = db.raw.serialize()

    def grade(self, actions: Sequence[Action]) -> Grade:
        """Replay ``actions`` on a fresh trial database and grade the trial (closing message: the outputs)."""
        with self.template.trial() as db:
            prepare_trial(self.domain, db, self.task)
            ctx = ToolContext(db.session, db.options)
            records = _replay(self.domain, self.toolbox, ctx, actions)
            closing = "Your request has been handled. " + " ".join(self.task.required_outputs)
            ended = any(r.requestor == "agent" and r.name in self.toolbox.specs
                        and self.toolbox.specs[r.name].ends_conversation for r in records)
            reason = TerminationReason.AGENT_TRANSFER if ended else TerminationReason.USER_STOP
            traj = Trajectory(tool_calls=records, termination_reason=reason, turns=1,
                              steps=len(records) + 1, messages=[Message(role="assistant", content=closing)])
            checks = check_assertions(self.task.assertions, db.raw, self.initial, read_events(db.raw), traj,
                                      self.spec, env=env_caller(self.domain, ctx)) if self.task.assertions else None
            diff = diff_against(db.raw, self.goal, self.spec)
            return grade_trial(self.task, traj, diff, self.toolbox, domain=self.domain, assertions=checks)


def _deciding(grade: Grade) -> str:
    """The failing grade components (:attr:`Grade.failure`), or ``none failed``."""
    return grade.failure or "none failed"


def _perturb(arguments: dict[str, Any], entities: Any) -> tuple[dict[str, Any], str, bool] | None:
    """Return (perturbed arguments, the key, whether the key is an entity id), or None when nothing can change."""
    out = dict(arguments)
    for key in sorted(out):
        value = out[key]
        if key in entities and isinstance(value, str) and value:
            out[key] = value[:-1] + ("0" if value[-1] != "0" else "1")
            return out, key, True
    for key in sorted(out):
        value = out[key]
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value + 1
            return out, key, False
    for key in sorted(out):
        if isinstance(out[key], str):
            out[key] = out[key] + "-x"
            return out, key, False
    return None


def _independent(task: Task, a: Action, b: Action) -> bool:
    """Whether swapping two adjacent reads can break no precedence rule of the task.

    Neither may be another's ``before`` with the other covered, nor a ``before`` of a rule over markers.
    """
    for rule in task.process.precedence:
        before, after = rule.before_tools(), rule.after_items()
        if (a.name in before and b.name in after) or (b.name in before and a.name in after):
            return False
        if not rule.same and (a.name in before or b.name in before) and any(x.startswith("@") for x in after):
            return False
    return True


def _mutations(task: Task, toolbox: Toolbox, records: Sequence[ToolCallRecord],
               entities: Any) -> Iterator[tuple[str, list[Action], bool, bool]]:
    """Yield ``(name, actions, must_pass, key_is_entity)`` for each mutation of the task's gold actions."""
    gold = list(task.gold_actions)
    ok = {r.step for r in records if r.status == "ok" and r.requestor == "agent"}
    yield "oracle", gold, True, False

    def read(i: int) -> bool:
        spec = toolbox.specs.get(gold[i].name)
        return (gold[i].requestor != "user" and spec is not None and spec.kind == "read"
                and not spec.ends_conversation and i in ok)

    if any(read(i) for i in range(len(gold))):
        seen: set[str] = set()
        extra: list[Action] = []
        for i, a in enumerate(gold):  # each distinct read once more, right after its first call
            key = a.model_dump_json()
            extra += [a, a] if read(i) and key not in seen else [a]
            seen.add(key)
        yield "extra-reads", extra, True, False
    pair = next((i for i in range(len(gold) - 1) if read(i) and read(i + 1) and gold[i].name != gold[i + 1].name
                 and _independent(task, gold[i], gold[i + 1])), None)
    if pair is not None:
        swapped = [*gold[:pair], gold[pair + 1], gold[pair], *gold[pair + 2:]]
        yield f"reordered({gold[pair].name}<->{gold[pair + 1].name})", swapped, True, False
    for i, a in enumerate(gold):
        spec = toolbox.specs.get(a.name)
        if a.requestor == "user" or spec is None or spec.kind != "write" or spec.ends_conversation or i not in ok:
            continue
        yield f"drop-write[{i}]({a.name})", [*gold[:i], *gold[i + 1:]], False, True
        perturbed = _perturb(dict(a.arguments), entities)
        if perturbed is not None:
            args, key, is_entity = perturbed
            changed = a.model_copy(update={"arguments": args})
            yield f"perturb-write[{i}]({a.name}.{key})", [*gold[:i], changed, *gold[i + 1:]], False, is_entity


def mutation_findings(domain: Domain, template: TemplateDatabase, task: Task, toolbox: Toolbox,
                      spec: StateSpec) -> list[Finding]:
    """Mutation-test one task's contract (the module docstring lists the mutations and rules).

    Args:
        domain: the domain.
        template: the data set's template database.
        task: the task.
        toolbox: the domain's agent tools.
        spec: the domain's state spec (with sinks installed).

    Returns:
        The findings of the task, in mutation order; empty for a task whose fixture fails (the lint's ``fixture``
        rule reports it).
    """
    try:
        grader = _Grader(domain, template, task, toolbox, spec)
    except GoldToolBug:
        return []
    out: list[Finding] = []
    for name, actions, must_pass, key_is_entity in _mutations(task, toolbox, grader.gold_records, domain.entities):
        grade = grader.grade(actions)
        if grade.passed == must_pass:
            continue
        if name == "oracle":  # nothing else can be judged against a contract the gold actions fail
            return [Finding("mutation-oracle-fails", "error", f"mutation oracle: the gold actions fail "
                                                              f"({_deciding(grade)})", task_id=task.id)]
        elif must_pass:
            out.append(Finding("mutation-over-strict", "warning", f"mutation {name} fails ({_deciding(grade)}): "
                                                                  "the contract punishes a harmless change",
                               task_id=task.id))
        elif key_is_entity or name.startswith("drop-write"):
            out.append(Finding("mutation-under-strict", "warning", f"mutation {name} still passes: nothing the "
                                                                   "task grades sees it", task_id=task.id))
        else:
            out.append(Finding("mutation-free-argument", "note", f"mutation {name} still passes: the argument is "
                                                                 "not graded", task_id=task.id))
    return out

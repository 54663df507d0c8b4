"""``lint_tasks``: find defects in a task set against a domain and its data, before any trial runs.

Every task's fixture is applied and its gold actions replayed once, on a fresh copy of the data; the rules
(id, severity) are:

errors (a run refuses the task set unless ``--allow-lint-errors``):

- ``fixture``: the task's ``initial_state`` cannot be applied;
- ``gold-tool-bug``: a gold action makes a tool crash;
- ``unknown-user``: the task's ``user_id`` is no row of the domain's :attr:`~simulator.world.domain.Domain.user_entity`;
- ``unknown-id``: a gold write's argument declared as an entity id (:attr:`~simulator.world.domain.Domain.entities`)
  names no row at that point of the replay (a wrong order id in the third gold action, a task written for other
  data); in a gold read action it is a note (it cannot change the goal state);
- ``assertion-fails-oracle``: an assertion fails on the oracle's final state (the gold actions replayed);
- ``prefix``: a trajectory-prefix case (``prefix``, see :mod:`simulator.dialogue.prefix`) names an unknown tool,
  argument or kind in its next-step expectations, has a tool result answering no earlier call, or a database state that
  does not apply to the task's data;

warnings (a defect is likely: the task's contract or data is wrong for what it asks):

- ``forbidden-write``: a gold write the domain's own rules forbid at the task's clock time
  (:meth:`~simulator.world.domain.Domain.forbidden_write`, e.g. cancelling a trip with a flown segment);
- ``no-criteria``: the task grades nothing (a tau2 task without ``evaluation_criteria``, or ``grade: []``): every
  agent passes it (tau2 gives reward 1);
- ``null-passes`` (a task with a gold write): a do-nothing agent passes (no state change, no process rule,
  required output or assertion it fails), graded with the real grader on an empty trajectory;
- ``scenario-contradiction``: the scenario names a value (``known_info``/agenda slot of an argument's name, or an
  entity id in the instructions) that differs from the one the gold writes use;
- with ``--mutations``, ``mutation-oracle-fails`` (an error), ``mutation-over-strict`` and ``mutation-under-strict``
  (:mod:`simulator.authoring.mutations`).

notes (informational, printed apart: worth a look, not a defect by themselves; known quirks of public benchmarks):

- ``gold-error``: a gold action is refused by the tool (tau-bench keeps such calls on purpose; a refused call
  changes nothing, and an oracle that fails is the ``mutation-oracle-fails`` error);
- ``null-passes`` (a task without a gold write: a refusal or information task whose contract cannot tell the
  refusal from doing nothing);
- ``unknown-id`` in a gold read (the user may give a wrong id on purpose);
- ``output-unsourced``: a required output appears in no tool result of the gold trajectory nor the scenario (the
  agent must compute it);
- ``undiscoverable``: a gold argument value appears neither in the scenario nor in what read tools return on the
  ids the scenario and earlier results give (nor in the policy or tool schemas);
- ``duplicate``: another task has the same user and the same gold writes (and pins the same trial seed, user
  moves, persona and trajectory prefix: hunt regression cases of one task differ only there);
- with ``--mutations``, ``mutation-free-argument``.

The severities were set on tau-bench's retail train and dev splits and tau2's train split (what a flag says on
them); held-out splits are only measured.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from simulator.authoring.findings import Finding
from simulator.authoring.mutations import mutation_findings
from simulator.dialogue.prefix import apply_state
from simulator.errors import GoldToolBug
from simulator.grading import check_assertions, grade_trial
from simulator.grading.outputs import find_output
from simulator.types.messages import Message
from simulator.types.tasks import Action, Task
from simulator.types.trajectory import TerminationReason, ToolCallRecord, Trajectory
from simulator.world.database import StateSpec, TemplateDatabase, diff_against
from simulator.world.domain import Domain
from simulator.world.dual import env_caller, run_action, syncer
from simulator.world.events import read_events
from simulator.world.replay import prepare_trial
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["DISCOVERY_CALLS", "lint_tasks"]

DISCOVERY_CALLS = 40
"""Read-tool calls per task at most when looking for where a gold argument value can be learnt."""
_NULL_TEXT = "I understand. Unfortunately I cannot make any changes right now."
_TOKEN = re.compile(r"[#\w][\w.@#-]*\w|\w")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def _leaves(value: Any, key: str | None = None) -> list[tuple[str | None, Any]]:
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in _leaves(v, str(k))]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, key)]
    return [(key, value)]


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("#", " ").replace("_", " ").split())


def _variants(value: str) -> list[str]:
    out = [_norm(value)]
    try:
        d = date.fromisoformat(value)
    except ValueError:
        return out
    month = _MONTHS[d.month - 1]
    return [*out, f"{month} {d.day}", f"{d.day} {month}", f"{month[:3]} {d.day}", f"{d.month}/{d.day}"]


def _mentions(value: str, texts: Iterable[str]) -> bool:
    """Whether a value (or, for an ISO date, a spoken form of it) occurs as whole words in normalized texts."""
    joined = "\n".join(texts)
    pats = [re.compile(rf"(?<![a-z0-9]){re.escape(v)}(?![a-z0-9])") for v in _variants(value) if v and v in joined]
    return any(p.search(joined) for p in pats)


def _exists(raw: Any, table: str, column: str, value: Any) -> bool:
    return raw.execute(f'SELECT 1 FROM "{table}" WHERE "{column}" = ? LIMIT 1', (value,)).fetchone() is not None


def _call(action: Action) -> str:
    return f"{action.name}({json.dumps(action.arguments, sort_keys=True, default=str)[:100]})"


def _scenario_text(task: Task) -> str:
    sc = task.scenario
    parts = [sc.instructions, sc.opening or "", json.dumps(sc.known_info, default=str),
             json.dumps(sc.identity), json.dumps([i.model_dump(mode="json") for i in sc.agenda]), task.user_id or ""]
    return _norm(" ".join(parts))


def _slot_groups(task: Task) -> list[dict[str, set[str]]]:
    """Return the scalar values the scenario gives by name, in groups that must each agree with the gold.

    The groups: ``known_info``, and each agenda intent together with its fallbacks (either may be what the gold
    does).
    """

    def add(group: dict[str, set[str]], mapping: Mapping[str, Any]) -> None:
        for k, v in mapping.items():
            if isinstance(v, str | int | float) and not isinstance(v, bool):
                group.setdefault(k, set()).add(_norm(str(v)))

    known: dict[str, set[str]] = {}
    add(known, task.scenario.known_info)
    groups = [known]
    for intent in task.scenario.agenda:
        group: dict[str, set[str]] = {}
        current: Any = intent
        while current is not None:
            add(group, current.slots)
            current = current.fallback
        groups.append(group)
    return groups


class _Ids:
    """The ids of every declared entity in the template (for finding ids in texts without a query per token)."""

    def __init__(self, domain: Domain, template: TemplateDatabase) -> None:
        self.by_arg: dict[str, set[str]] = {}
        with template.trial() as t:
            for arg, (table, column) in domain.entities.items():
                rows = t.raw.execute(f'SELECT DISTINCT "{column}" FROM "{table}"').fetchall()
                self.by_arg[arg] = {str(r[0]) for r in rows}

    def found(self, text: str) -> dict[str, set[str]]:
        """Return ``{argument name: ids of its entity}`` occurring as tokens in ``text``."""
        tokens = set(_TOKEN.findall(text))
        return {arg: hits for arg, ids in self.by_arg.items() if (hits := tokens & ids)}


class _Discovery:
    """What an agent can learn about a task.

    The scenario, the policy, tool schemas, results of gold calls, and results of read tools called on the ids
    these give (computed only when a value is not found otherwise).
    """

    def __init__(self, base: list[str], ids: _Ids, toolbox: Toolbox, entities: Iterable[str]) -> None:
        self.texts = base
        self.ids = ids
        self.toolbox = toolbox
        self.lookups = [(name, params[0]) for name, spec in toolbox.specs.items()
                        if spec.kind == "read" and not spec.ends_conversation
                        and len(params := list(spec.schema["function"]["parameters"].get("properties", {}))) == 1
                        and params[0] in set(entities)]
        self.called: set[tuple[str, str]] = set()
        self.raw_texts: list[str] = []

    def add(self, text: str) -> None:
        self.raw_texts.append(text)
        self.texts.append(_norm(text))

    def knows(self, value: str, ctx: ToolContext) -> bool:
        if _mentions(value, self.texts):
            return True
        budget = DISCOVERY_CALLS - len(self.called)
        while budget > 0:
            found: dict[str, set[str]] = {}
            for text in self.raw_texts:
                for arg, hits in self.ids.found(text).items():
                    found.setdefault(arg, set()).update(hits)
            todo = [(name, arg, v) for name, arg in self.lookups for v in sorted(found.get(arg, ()))
                    if (name, v) not in self.called]
            if not todo:
                return False
            for name, arg, v in todo[:budget]:
                self.called.add((name, v))
                out = self.toolbox.dispatch(ctx, name, {arg: v})
                if out.status == "ok":
                    self.add(out.content)
            if _mentions(value, self.texts):
                return True
            budget = DISCOVERY_CALLS - len(self.called)
        return False


def _write_key(task: Task, toolbox: Toolbox) -> tuple[Any, ...] | None:
    writes = tuple((a.name, json.dumps(a.arguments, sort_keys=True, default=str)) for a in task.gold_actions
                   if toolbox.kind(a.name) == "write")
    if not writes:
        return None
    # hunt regression cases of one task share its user and writes by construction; what they pin tells them apart
    sc = task.scenario
    pinned = (task.seed, tuple(sorted(sc.moves.items())),
              sc.persona.model_dump_json() if sc.persona is not None else None,
              task.prefix.model_dump_json() if task.prefix is not None else None)
    return (task.user_id, writes, pinned)


def _lint_task(domain: Domain, template: TemplateDatabase, task: Task, toolbox: Toolbox, spec: StateSpec,
               base_texts: list[str], ids: _Ids | None) -> list[Finding]:
    """Lint one task; with ``ids`` None only the rules that can give an error run (see :func:`lint_tasks`)."""
    out: list[Finding] = []
    full = ids is not None

    def add(rule: str, severity: str, message: str, tool: str | None = None) -> None:
        out.append(Finding(rule, severity, message, task_id=task.id, tool=tool))  # type: ignore[arg-type]

    with template.trial() as db:
        try:
            prepare_trial(domain, db, task)
        except GoldToolBug as e:
            add("fixture", "error", str(e).splitlines()[0][:240])
            return out
        raw = db.raw
        if domain.user_entity is not None and task.user_id is not None \
                and not _exists(raw, *domain.user_entity, task.user_id):
            add("unknown-user", "error", f"user {task.user_id!r} is not in the data "
                                         f"({domain.user_entity[0]}.{domain.user_entity[1]})")
        initial = raw.serialize()
        null_traj = Trajectory(messages=[Message(role="assistant", content=_NULL_TEXT)], turns=1, steps=1,
                               termination_reason=TerminationReason.USER_STOP)
        ctx = ToolContext(db.session, db.options)
        null_checks = check_assertions(task.assertions, raw, initial, read_events(raw), null_traj, spec,
                                       env=env_caller(domain, ctx)) if full else None
        now = domain.current_time(db)
        discovery = None
        if ids is not None:
            discovery = _Discovery([_scenario_text(task), *base_texts], ids, toolbox, domain.entities)
            discovery.raw_texts.append(" ".join([task.scenario.instructions, json.dumps(task.scenario.known_info),
                                                 task.user_id or ""]))
        replay = _GoldReplay(domain, task, toolbox, raw, ctx, add, discovery, now, full)
        replay.run()
        if full:
            grade = grade_trial(task, null_traj, diff_against(raw, initial, spec), toolbox, domain=domain,
                                assertions=null_checks)
            _criteria_findings(task, toolbox, grade.passed, add)
        # without ``full`` the warning-only rules (no criteria, null passes, unsourced outputs, contradictions) are
        # skipped
        if task.assertions:
            _oracle_assertion_findings(domain, task, raw, initial, replay.records, spec, ctx, add)
        for o in task.required_outputs if full else ():
            if not find_output(o, [*replay.results, task.scenario.instructions]):
                add("output-unsourced", "note", f"required output {o!r} appears in no tool result of the gold "
                                                   "trajectory nor the scenario (the agent must compute it)")
    if ids is not None:
        out += _contradictions(domain, task, toolbox, ids)
    return out


_Add = Callable[..., None]
"""How the lint of one task records a finding: ``add(rule, severity, message, tool=None)``."""


class _GoldReplay:
    """Replay a task's gold actions on its trial database, noting the findings each action gives.

    Args:
        domain: the domain.
        task: the task.
        toolbox: the agent's tools.
        raw: the trial's raw connection (entity lookups).
        ctx: a tool context on the trial database.
        add: records a finding.
        discovery: where gold argument values can be learnt, or None (the ``undiscoverable`` rule is off).
        now: the task's clock time (:meth:`~simulator.world.domain.Domain.current_time`).
        full: whether the warning-only rules run (``forbidden-write``).
    """

    def __init__(self, domain: Domain, task: Task, toolbox: Toolbox, raw: Any, ctx: ToolContext, add: _Add,
                 discovery: _Discovery | None, now: datetime | None, full: bool):
        self.domain, self.task, self.toolbox, self.raw, self.ctx = domain, task, toolbox, raw, ctx
        self.add, self.discovery, self.now, self.full = add, discovery, now, full
        self.records: list[ToolCallRecord] = []
        """The gold trajectory's tool calls (both sides)."""
        self.results: list[str] = []
        """The agent-side gold calls' results, in order."""

    def run(self) -> None:
        """Replay every gold action in order, until one ends the conversation."""
        sides = (self.toolbox, self.domain.user_toolbox())
        sync = syncer(self.domain, self.ctx)
        for i, action in enumerate(self.task.gold_actions):
            if action.requestor == "user":  # dual control: the user's own call, on the user's side
                user_res = run_action(self.domain, self.ctx, action, sides, functions=False)
                sync()
                self.records.append(ToolCallRecord(
                    step=i, call_id=f"gold-{i}", name=action.name, arguments=action.arguments, kind=user_res.kind,
                    status=user_res.status, content=user_res.content, duration_s=0.0, requestor="user"))
                continue
            tool_spec = self.toolbox.specs.get(action.name)
            if tool_spec is None:
                continue  # refused when the file was loaded
            missing = self._unknown_ids(i, action, tool_spec.kind)
            if self.full and tool_spec.kind == "write" and not tool_spec.ends_conversation:
                self._forbidden_write(i, action)
            self._undiscoverable(i, action)
            res = self.toolbox.dispatch(self.ctx, action.name, action.arguments)
            sync()
            self.records.append(ToolCallRecord(step=i, call_id=f"gold-{i}", name=action.name,
                                               arguments=action.arguments, kind=res.kind, status=res.status,
                                               content=res.content, duration_s=0.0))
            self._outcome(i, action, res, missing)
            self.results.append(res.content)
            if self.discovery is not None:
                self.discovery.add(res.content)
            if res.ends_conversation:
                break

    def _unknown_ids(self, i: int, action: Action, kind: str) -> bool:
        """Note each entity-id argument naming no row (``unknown-id``); return whether there was one."""
        missing = False
        for key, value in _leaves(action.arguments):
            entity = self.domain.entities.get(key or "")
            if entity is not None and isinstance(value, str | int) and not _exists(self.raw, *entity, value):
                missing = True
                self.add("unknown-id", "error" if kind == "write" else "note",
                         f"gold {kind} action {i} {action.name}: {key} {value!r} is not in the data "
                         f"({entity[0]}.{entity[1]})", action.name)
        return missing

    def _forbidden_write(self, i: int, action: Action) -> None:
        """Note a gold write the domain's own rules forbid now (``forbidden-write``)."""
        txn = self.ctx.session.begin()  # the hook only reads; whatever it does is rolled back
        try:
            reason = self.domain.forbidden_write(self.ctx, action, self.now)
        finally:
            txn.rollback()
        if reason:
            self.add("forbidden-write", "warning", f"gold action {i} {action.name}: {reason}", action.name)

    def _undiscoverable(self, i: int, action: Action) -> None:
        """Note each argument value the agent cannot learn from the scenario or its tools (``undiscoverable``)."""
        if self.discovery is None:
            return
        for key, value in _leaves(action.arguments):
            if isinstance(value, str) and value.strip() and key not in self.domain.prose_arguments \
                    and not self.discovery.knows(value, self.ctx):
                self.add("undiscoverable", "note", f"gold action {i} {action.name}: {key} {value!r} is neither "
                                                      "in the scenario nor returned by a tool the agent can call "
                                                      "on what it is told", action.name)

    def _outcome(self, i: int, action: Action, res: CallOutcome, missing: bool) -> None:
        """Note a gold call that crashed (``gold-tool-bug``) or was refused (``gold-error``, ids all known)."""
        if res.status == "tool_bug":
            last = (res.bug or "").strip().splitlines()[-1:] or [""]
            self.add("gold-tool-bug", "error", f"gold action {i} {_call(action)} crashed: {last[0][:160]}",
                     action.name)
        elif res.status != "ok" and not missing:
            self.add("gold-error", "note", f"gold action {i} {_call(action)} fails on the data: "
                                              f"{res.content[:160]}", action.name)


def _criteria_findings(task: Task, toolbox: Toolbox, null_passes: bool, add: _Add) -> None:
    """Note a task that grades nothing (``no-criteria``) or that a do-nothing agent passes (``null-passes``)."""
    if not task.grade_basis():
        where = "no evaluation_criteria" if task.suite == "tau2" else "an empty grade"
        add("no-criteria", "warning", f"the task has nothing to grade ({where}): every agent that ends the "
                                      "conversation passes it")
    elif null_passes:
        # a refusal or information task (no gold write) that grades no output or rule: informational; a task
        # whose gold writes change nothing: a defect is likely
        writes = any(toolbox.kind(a.name) == "write" and a.requestor != "user" for a in task.gold_actions)
        add("null-passes", "warning" if writes else "note",
            "a do-nothing agent passes: the gold actions change nothing and no required output, assertion or "
            "process rule fails it")


def _oracle_assertion_findings(domain: Domain, task: Task, raw: Any, initial: bytes, records: list[ToolCallRecord],
                               spec: StateSpec, ctx: ToolContext, add: _Add) -> None:
    """Note each assertion that fails on the gold final state (``assertion-fails-oracle``)."""
    oracle = Trajectory(tool_calls=records, termination_reason=TerminationReason.USER_STOP,
                        messages=[Message(role="assistant", content=" ".join(task.required_outputs))])
    checks = check_assertions(task.assertions, raw, initial, read_events(raw), oracle, spec,
                              env=env_caller(domain, ctx))
    for r in checks.results if checks is not None else []:
        if not r.passed and not r.skipped:
            add("assertion-fails-oracle", "error", f"assertion {r.index} ({r.type}) fails on the gold final "
                                                   f"state: {r.summary[:160]}")


def _contradictions(domain: Domain, task: Task, toolbox: Toolbox, ids: _Ids) -> list[Finding]:
    out: list[Finding] = []
    writes = [a for a in task.gold_actions if toolbox.kind(a.name) == "write"]
    used: dict[str, set[str]] = {}
    for a in task.gold_actions:
        for key, value in _leaves(a.arguments):
            if key is not None and isinstance(value, str | int | float) and not isinstance(value, bool):
                used.setdefault(key, set()).add(_norm(str(value)))
    written_keys = {k for a in writes for k, _ in _leaves(a.arguments) if k is not None}
    for group in _slot_groups(task):
        for key, values in sorted(group.items()):
            overlap = any(_mentions(u, [v]) or _mentions(v, [u]) for u in used.get(key, set()) for v in values)
            if key in written_keys and key not in domain.prose_arguments and not overlap:
                out.append(Finding("scenario-contradiction", "warning", f"the scenario gives {key} "
                                   f"{', '.join(sorted(values))} but the gold actions use "
                                   f"{', '.join(sorted(used.get(key, set())))}", task_id=task.id))
    named = ids.found(task.scenario.instructions)
    for key in sorted(written_keys & set(named)):
        mentioned = {_norm(v) for v in named[key]}
        in_writes = {_norm(str(v)) for a in writes for k, v in _leaves(a.arguments) if k == key}
        if not mentioned & set().union(*used.values()) and in_writes - mentioned:
            out.append(Finding("scenario-contradiction", "warning", f"the instructions name {key} "
                               f"{', '.join(sorted(named[key]))} but the gold writes use "
                               f"{', '.join(sorted(in_writes - mentioned))}", task_id=task.id))
    return out


def _lint_prefix(domain: Domain, template: TemplateDatabase, task: Task, toolbox: Toolbox) -> list[Finding]:
    """The ``prefix`` rule: a trajectory-prefix case's expectations, messages and state (see the module docstring)."""
    prefix = task.prefix
    assert prefix is not None
    out: list[Finding] = []

    def add(message: str, tool: str | None = None) -> None:
        out.append(Finding("prefix", "error", message, task_id=task.id, tool=tool))

    expect = prefix.next_step
    for field_name, patterns in (("must_call", expect.must_call), ("must_not_call", expect.must_not_call)):
        for i, p in enumerate(patterns):
            where = f"prefix.next_step.{field_name}[{i}]"
            if p.name is None:
                continue
            tool_spec = toolbox.specs.get(p.name)
            if tool_spec is None:
                add(f"{where}.name: unknown tool {p.name!r}", p.name)
                continue
            params = set(tool_spec.arguments_model.model_fields)
            for key in p.arguments:
                if key not in params:
                    add(f"{where}.arguments: {p.name} has no argument {key!r} (its arguments: {sorted(params)})",
                        p.name)
            kind = "ending" if tool_spec.ends_conversation else tool_spec.kind
            if p.kind is not None and p.kind != kind:
                add(f"{where}.kind: {p.name} is a {kind} tool, not {p.kind!r}", p.name)
    calls: set[str] = set()
    for i, m in enumerate(prefix.messages):
        for c in m.tool_calls:
            calls.add(c.id)
            if m.requestor is None and c.name not in toolbox.specs:
                add(f"prefix.messages[{i}]: call of unknown tool {c.name!r}", c.name)
        if m.role == "tool" and m.tool_call_id not in calls:
            add(f"prefix.messages[{i}]: tool result {m.tool_call_id!r} answers no earlier call")
    with template.trial() as db:
        try:
            prepare_trial(domain, db, task)
            apply_state(db.raw, template.metadata, prefix, f"task {task.id!r}")
        except (GoldToolBug, ValueError) as e:
            add(str(e).splitlines()[0][:240])
    return out


def lint_tasks(domain: Domain, tasks: Sequence[Task], *, template: TemplateDatabase | None = None,
               errors_only: bool = False, mutations: bool = False) -> list[Finding]:
    """Lint a task set against a domain and its data (see the module docstring for the rules).

    Args:
        domain: the domain.
        tasks: the tasks (e.g. ``domain.load_tasks(path)``).
        template: the data set's template database; None: the domain's built-in data set.
        errors_only: run only the rules that can give an error (the check before a run, which refuses on errors
            and discards warnings): the same errors, fewer warnings, about a third less time.
        mutations: also mutation-test each task's contract (:mod:`simulator.authoring.mutations`: the oracle must
            pass, harmless changes must pass, a dropped or perturbed write must fail); several replays per task.

    Returns:
        The findings, task by task in task order (duplicates after the task they duplicate); errors mean the task
        set is wrong for this data.
    """
    template = template if template is not None else domain.template()
    toolbox = domain.toolbox()
    spec = domain.install_sinks()
    base = [_norm(domain.policy()), _norm(json.dumps(toolbox.schemas()))]
    ids = None if errors_only else _Ids(domain, template)
    findings: list[Finding] = []
    first_of: dict[tuple[Any, ...], str] = {}
    for task in tasks:
        findings += _lint_task(domain, template, task, toolbox, spec, base, ids)
        if mutations:
            findings += mutation_findings(domain, template, task, toolbox, spec)
        if task.prefix is not None:
            findings += _lint_prefix(domain, template, task, toolbox)
        key = None if errors_only else _write_key(task, toolbox)
        if key is not None:
            if key in first_of:
                findings.append(Finding("duplicate", "note", f"same user and gold writes as task {first_of[key]}",
                                        task_id=task.id))
            else:
                first_of[key] = task.id
    return findings



"""``check_domain``: the conformance suite a domain must pass (shipped, so a third party's CI can call it).

Checks, each finding naming the tool or task:

- ``tool-schema``: every tool has a description, an object schema whose every argument has a description, a
  kind ``read`` or ``write``;
- ``policy``: the policy is a document (error when empty, warning under 500 characters);
- ``round-trip``: the data set dumps back to its files unchanged (for domains whose ``data/`` holds one
  ``<table>.json`` per dumped table; skipped otherwise);
- ``unknown-value``: a column declared with the values it may hold (:func:`simulator.world.kit.one_of`, e.g. an
  order's ``status``) holds another in the data set; the finding names the table, the row's key, the field and the
  value (at most :data:`VALUE_FINDINGS_PER_COLUMN` per column, then how many more);
- ``no-tasks``, ``gold-replay``: every gold action of every task replays without a tool bug;
- ``read-writes``: calling a read tool (on the arguments the tasks' gold actions use and on ids sampled from the
  tables the domain declares in :attr:`~simulator.world.domain.Domain.entities`) changes no table and records no event;
- ``read-tool-bug``: such a call makes the tool crash;
- ``wall-clock``: a tool reads the wall clock (everything is replayed a second time with the domain's modules
  unable to read it, see :mod:`simulator.authoring._clock`);
- ``nondeterministic``: the second replay gives other tool outputs or another final state;
- ``oracle-fails`` / ``null-passes``: the oracle agent fails a task, the do-nothing agent passes one;
- ``trajectory-differs``: the same seed gives another oracle trajectory the second time;
- and, with ``lint``, the task lint's findings (:func:`simulator.authoring.lint.lint_tasks`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.agents import NullAgent, OracleAgent
from simulator.authoring._clock import no_wall_clock
from simulator.authoring.findings import Finding
from simulator.errors import GoldToolBug
from simulator.execution.runner import Runner, RunResult
from simulator.types.sanitize import excerpt
from simulator.types.spec import RunSpec
from simulator.types.tasks import Action, Task
from simulator.users import scripted_user_factory
from simulator.world.data.storage import allowed_values
from simulator.world.database import StateSpec, TemplateDatabase, TrialDatabase, diff_against
from simulator.world.domain import Domain
from simulator.world.events import EVENTS_TABLE
from simulator.world.replay import prepare_trial
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["check_domain", "sample_read_calls"]

SAMPLES_PER_ENTITY = 3
"""Ids sampled from each declared entity table for the read tools' generated arguments."""
GOLD_CALLS_PER_TOOL = 10
"""Distinct gold argument sets of a read tool replayed by the read-tool checks."""
VALUE_FINDINGS_PER_COLUMN = 20
"""Rows of one column named by ``unknown-value`` findings; a further finding counts the rest."""
_DEFAULTS = {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}


def _check_tools(toolbox: Toolbox) -> list[Finding]:
    out = []
    if not toolbox.specs:
        out.append(Finding("tool-schema", "error", "the domain has no tools"))
    for name, spec in toolbox.specs.items():
        fn = spec.schema.get("function", {})
        params = fn.get("parameters", {})
        problems = []
        if fn.get("name") != name:
            problems.append(f"schema name {fn.get('name')!r} differs from the tool name")
        if not str(fn.get("description", "")).strip():
            problems.append("no description")
        if params.get("type") != "object":
            problems.append("parameters are not an object schema")
        problems += [f"argument {p!r} has no description" for p, prop in params.get("properties", {}).items()
                     if not prop.get("description")]
        if spec.kind not in ("read", "write"):
            problems.append(f"kind {spec.kind!r} is neither read nor write")
        out += [Finding("tool-schema", "error", p, tool=name) for p in problems]
    return out


def _check_policy(domain: Domain) -> list[Finding]:
    text = domain.policy()
    if not text.strip():
        return [Finding("policy", "error", "the policy document is empty")]
    if len(text) < 500:
        return [Finding("policy", "warning", f"the policy is {len(text)} characters long; agents need a document "
                                             "stating what they may do")]
    return []


def _check_round_trip(domain: Domain, template: TemplateDatabase, folder: Path) -> list[Finding]:
    with template.trial(memo=False) as t:
        dumped = domain.dump(t)
    files = {table: folder / f"{table}.json" for table in dumped}
    if not all(p.is_file() for p in files.values()):
        return []  # not a {table}.json folder domain: nothing to compare with
    out = []
    for table, records in dumped.items():
        original = json.loads(files[table].read_text(encoding="utf-8"))
        if records != original:
            out.append(Finding("round-trip", "error", f"table {table}: the dump differs from {files[table]}"))
        elif json.dumps(records) != json.dumps(original):
            out.append(Finding("round-trip", "error", f"table {table}: key order or number types differ from "
                                                      f"{files[table]}"))
    return out


def _quoted(name: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def _check_values(template: TemplateDatabase) -> list[Finding]:
    """``unknown-value`` findings: data rows whose value of a column declared with :func:`one_of` is none of them."""
    out: list[Finding] = []
    with template.trial(memo=False) as t:
        for table in template.metadata.sorted_tables:
            keys = list(table.primary_key.columns)
            for column in table.columns:
                values = allowed_values(column)
                if values is None:
                    continue
                names = ", ".join(_quoted(c.name) for c in [*keys, column])
                rows = t.raw.execute(
                    f"SELECT {names} FROM {_quoted(table.name)} WHERE {_quoted(column.name)} IS NOT NULL AND "
                    f"{_quoted(column.name)} NOT IN ({', '.join('?' * len(values))})"
                    + (f" ORDER BY {', '.join(_quoted(c.name) for c in keys)}" if keys else " ORDER BY rowid"),
                    values).fetchall()
                shown = ", ".join(excerpt(v) for v in values)
                for row in rows[:VALUE_FINDINGS_PER_COLUMN]:
                    key = excerpt(row[0]) if len(keys) == 1 else f"({', '.join(excerpt(k) for k in row[:-1])})"
                    key = key if keys else "(a table without a key)"
                    out.append(Finding("unknown-value", "error", f"table {table.name} row {key}: field {column.name}: "
                                                                 f"{excerpt(row[-1])} is not one of its declared "
                                                                 f"values ({shown})"))
                if len(rows) > VALUE_FINDINGS_PER_COLUMN:
                    out.append(Finding("unknown-value", "error", f"table {table.name}: field {column.name}: "
                                                                 f"{len(rows) - VALUE_FINDINGS_PER_COLUMN} more rows "
                                                                 "hold a value that is not one of its declared values"))
    return out


def _leaves(value: Any, key: str | None = None) -> list[tuple[str | None, Any]]:
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in _leaves(v, str(k))]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, key)]
    return [(key, value)]


def _entity_samples(domain: Domain, trial: TrialDatabase) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for arg, (table, column) in domain.entities.items():
        rows = trial.raw.execute(f'SELECT DISTINCT "{column}" FROM "{table}" ORDER BY rowid LIMIT ?',
                                 (SAMPLES_PER_ENTITY,)).fetchall()
        out[arg] = [r[0] for r in rows]
    return out


def sample_read_calls(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task]) -> list[Action]:
    """Return calls of every read tool to exercise it: the tasks' gold read calls, then generated ones.

    Generated arguments take ids sampled from the tables of :attr:`~simulator.world.domain.Domain.entities` (by
    argument name), else a value the gold actions give that argument, else a placeholder of the schema's type.

    Args:
        domain: the domain.
        template: its data.
        tasks: tasks whose gold actions give argument values.

    Returns:
        The calls, grouped by tool in registration order (at most :data:`GOLD_CALLS_PER_TOOL` gold calls and
        :data:`SAMPLES_PER_ENTITY` generated calls per tool).
    """
    toolbox = domain.toolbox()
    with template.trial(memo=False) as t:
        samples = _entity_samples(domain, t)
    seen_values: dict[str, list[Any]] = {}
    for task in tasks:
        for action in task.gold_actions:
            for key, value in _leaves(action.arguments):
                if key is not None and value not in seen_values.setdefault(key, []):
                    seen_values[key].append(value)
    calls: list[Action] = []
    for name, spec in toolbox.specs.items():
        if spec.kind != "read":
            continue
        gold: list[Action] = []
        for task in tasks:
            for a in task.gold_actions:
                if a.name == name and a not in gold and len(gold) < GOLD_CALLS_PER_TOOL:
                    gold.append(a)
        calls += gold
        params = spec.schema["function"]["parameters"]
        required = set(params.get("required", []))
        for i in range(SAMPLES_PER_ENTITY):
            args: dict[str, Any] = {}
            for pname, prop in params.get("properties", {}).items():
                pool = samples.get(pname) or seen_values.get(pname)
                if pool:
                    value = pool[i % len(pool)]
                    args[pname] = [value] if prop.get("type") == "array" and not isinstance(value, list) else value
                elif pname in required:
                    args[pname] = _DEFAULTS.get(str(prop.get("type")), "x")
            action = Action(name=name, arguments=args)
            if action not in calls:
                calls.append(action)
    return calls


def _writes(trial: TrialDatabase) -> tuple[dict[str, int], int]:
    rows = trial.raw.execute('SELECT tbl, count(*) FROM "_tausim_writes" GROUP BY tbl').fetchall()
    (events,) = trial.raw.execute(f'SELECT count(*) FROM "{EVENTS_TABLE}"').fetchone()
    return {str(t): int(n) for t, n in rows}, int(events)


def _call_text(action: Action) -> str:
    return f"{action.name}({json.dumps(action.arguments, sort_keys=True, default=str)[:120]})"


class _Pass:
    """One replay of every task's gold actions and every read-tool sample (outputs, final states)."""

    def __init__(self) -> None:
        self.gold: dict[str, list[CallOutcome]] = {}
        self.goal: dict[str, bytes] = {}
        self.reads: list[CallOutcome] = []
        self.read_writes: list[tuple[dict[str, int], int]] = []
        self.fixture_errors: dict[str, str] = {}


def _replay(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task], reads: Sequence[Action]) -> _Pass:
    toolbox = domain.toolbox()
    res = _Pass()
    for task in tasks:
        with template.trial(memo=False) as t:
            try:
                prepare_trial(domain, t, task)
            except GoldToolBug as e:
                res.fixture_errors[task.id] = str(e)
                continue
            ctx = ToolContext(t.session, t.options)
            outcomes = []
            for action in task.gold_actions:
                out = toolbox.dispatch(ctx, action.name, action.arguments)
                outcomes.append(out)
                if out.ends_conversation:
                    break
            res.gold[task.id] = outcomes
            res.goal[task.id] = t.raw.serialize()
    with template.trial(memo=False) as t:
        ctx = ToolContext(t.session, t.options)
        for action in reads:
            before = _writes(t)
            res.reads.append(toolbox.dispatch(ctx, action.name, action.arguments))
            after = _writes(t)
            changed = {tbl: n - before[0].get(tbl, 0) for tbl, n in after[0].items() if n != before[0].get(tbl, 0)}
            res.read_writes.append((changed, after[1] - before[1]))
    return res


def _is_wall_clock(out: CallOutcome) -> bool:
    return out.status == "tool_bug" and "WallClockRead" in (out.bug or "")


class _Findings:
    """Findings in the order found; :meth:`once` keeps only the first finding of a (rule, tool)."""

    def __init__(self) -> None:
        self.items: list[Finding] = []
        self._flagged: set[tuple[str, str]] = set()

    def add(self, finding: Finding) -> None:
        """Keep a finding."""
        self.items.append(finding)

    def once(self, rule: str, tool: str, finding: Finding) -> None:
        """Keep a finding unless one of the same rule and tool was kept before."""
        if (rule, tool) not in self._flagged:
            self._flagged.add((rule, tool))
            self.items.append(finding)


def _replay_findings(tasks: Sequence[Task], reads: Sequence[Action], first: _Pass, second: _Pass,
                     template: TemplateDatabase, domain: Domain) -> list[Finding]:
    found = _Findings()
    spec = domain.state_spec()
    for task in tasks:
        if task.id in first.fixture_errors:
            found.add(Finding("gold-replay", "error", first.fixture_errors[task.id][:300], task_id=task.id))
            continue
        a, b = first.gold[task.id], second.gold.get(task.id, [])
        _gold_call_findings(task, a, b, found)
        if task.id in second.goal and len(a) == len(b):
            _goal_findings(task, first.goal[task.id], second.goal[task.id], b, spec, found)
    for action, ra, rb, (changed, events) in zip(reads, first.reads, second.reads, first.read_writes, strict=True):
        _read_call_findings(action, ra, rb, changed, events, found)
    return found.items


def _gold_call_findings(task: Task, a: Sequence[CallOutcome], b: Sequence[CallOutcome], found: _Findings) -> None:
    """Compare a task's two gold replays call by call: a crash, a wall-clock read, two different results."""
    for i, (action, oa) in enumerate(zip(task.gold_actions, a, strict=False)):
        ob = b[i] if i < len(b) else None
        if oa.status == "tool_bug":
            last = (oa.bug or "").strip().splitlines()[-1:] or [""]
            found.add(Finding("gold-replay", "error", f"gold action {i} {_call_text(action)} crashed: "
                                                      f"{last[0][:160]}", task_id=task.id, tool=action.name))
        elif ob is not None and _is_wall_clock(ob):
            found.once("wall-clock", action.name, Finding(
                "wall-clock", "error", f"{_call_text(action)} reads the wall clock (time.time, datetime.now "
                "or date.today); take 'now' from the domain's Clock", task_id=task.id, tool=action.name))
        elif ob is not None and (oa.status != ob.status or oa.content != ob.content):
            found.once("nondeterministic", action.name, Finding(
                "nondeterministic", "error", f"{_call_text(action)} returned {oa.content[:60]!r} then "
                f"{ob.content[:60]!r} on the same state", task_id=task.id, tool=action.name))


def _goal_findings(task: Task, first_goal: bytes, second_goal: bytes, b: Sequence[CallOutcome], spec: StateSpec,
                   found: _Findings) -> None:
    """Compare a task's two gold final states (unless a call of the second replay read the wall clock)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(second_goal)
        diff = diff_against(conn, first_goal, spec)
    finally:
        conn.close()
    if not diff.equal and not any(_is_wall_clock(o) for o in b):
        d = (diff.differences or diff.added or diff.removed)[0]
        tools = sorted({x.name for x in task.gold_actions})
        found.add(Finding("nondeterministic", "error", f"replaying the gold actions twice gives two final "
                          f"states (table {d.table}, key {list(d.key)}); tools involved: "
                          f"{', '.join(tools)}", task_id=task.id))


def _read_call_findings(action: Action, ra: CallOutcome, rb: CallOutcome, changed: Mapping[str, int], events: int,
                        found: _Findings) -> None:
    """Check one sampled read call made twice: it wrote, crashed, read the wall clock or answered differently."""
    if changed or events:
        what = ", ".join(f"{n} row(s) of {tbl}" for tbl, n in sorted(changed.items()))
        what = what or f"{events} event(s)"
        found.once("read-writes", action.name, Finding(
            "read-writes", "error", f"read tool call {_call_text(action)} wrote {what}; a read tool must "
            "never change state (declare it @tool('write'))", tool=action.name))
    if ra.status == "tool_bug":
        last = (ra.bug or "").strip().splitlines()[-1:] or [""]
        found.once("read-tool-bug", action.name, Finding(
            "read-tool-bug", "error", f"{_call_text(action)} crashed: {last[0][:160]} (raise ToolError for "
            "bad input)", tool=action.name))
    elif _is_wall_clock(rb):
        found.once("wall-clock", action.name, Finding(
            "wall-clock", "error", f"{_call_text(action)} reads the wall clock (time.time, datetime.now or "
            "date.today); take 'now' from the domain's Clock", tool=action.name))
    elif ra.status != rb.status or ra.content != rb.content:
        found.once("nondeterministic", action.name, Finding(
            "nondeterministic", "error", f"{_call_text(action)} returned {ra.content[:60]!r} then "
            f"{rb.content[:60]!r} on the same state", tool=action.name))


def _run(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task], agent: Any, concurrency: int,
         seed: int) -> RunResult:
    cfg = RunSpec(domain=domain.name, trials=1, concurrency=concurrency, seed=seed)
    return Runner(domain, template, list(tasks), agent, scripted_user_factory(), cfg).run()


def _trace(result: Any) -> list[Any]:
    traj = result.trajectory
    return ([(c.name, c.arguments, c.status, c.content) for c in traj.tool_calls]
            + [(m.role, m.content) for m in traj.messages] + [str(traj.termination_reason)])


def _agent_findings(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task], concurrency: int
                    ) -> list[Finding]:
    out: list[Finding] = []
    first = _run(domain, template, tasks, OracleAgent, concurrency, seed=0)
    for t in first.trials:
        if not t.passed:
            why = t.grade.failure if t.grade is not None else (t.error or "")[:160]
            out.append(Finding("oracle-fails", "error", f"the oracle agent (the gold actions) fails: {why}",
                               task_id=t.task_id))
    second = _run(domain, template, tasks, OracleAgent, concurrency, seed=0)
    by_key = {(t.task_id, t.trial): t for t in second.trials}
    for t in first.trials:
        other = by_key.get((t.task_id, t.trial))
        if other is not None and _trace(t) != _trace(other):
            diverge = next(i for i, (x, y) in enumerate(zip(_trace(t), _trace(other), strict=False)) if x != y) \
                if any(x != y for x, y in zip(_trace(t), _trace(other), strict=False)) else 0
            out.append(Finding("trajectory-differs", "error", f"the same seed gave another oracle trajectory "
                               f"(first difference at item {diverge})", task_id=t.task_id))
    null = _run(domain, template, tasks, NullAgent, concurrency, seed=0)
    for t in null.trials:
        if t.passed:
            out.append(Finding("null-passes", "error", "a do-nothing agent passes: give the task a state change, a "
                               "required output, an assertion or a process rule it fails", task_id=t.task_id))
    return out


def check_domain(domain: Domain, *, data_dir: Path | None = None, tasks: Sequence[Task] | None = None,
                 lint: bool = True, agents: bool = True, concurrency: int = 2) -> list[Finding]:
    """Run the conformance checks on a domain (see the module docstring for the rules).

    Args:
        domain: the domain (e.g. ``get_domain("retail")``).
        data_dir: its data set; None: the built-in one.
        tasks: the tasks to check; None: every built-in split.
        lint: also lint the tasks (:func:`simulator.authoring.lint.lint_tasks`).
        agents: also run the oracle (twice, same seed) and the do-nothing agent on every task.
        concurrency: trials run at once by the agent checks.

    Returns:
        The findings, in check order; the domain conforms when none has severity ``error``.

    Raises:
        DomainError: the data set cannot be loaded, or the built-in tasks cannot be found.
        TaskFileError: a built-in task file is malformed.
    """
    findings = _check_tools(domain.toolbox()) + _check_policy(domain)
    template = domain.template(data_dir)
    folder = Path(data_dir) if data_dir is not None else domain.default_data_dir()
    findings += _check_round_trip(domain, template, folder)
    findings += _check_values(template)
    task_list = list(tasks) if tasks is not None else domain.load_tasks()
    if not task_list:
        findings.append(Finding("no-tasks", "error", "the domain has no tasks"))
    reads = sample_read_calls(domain, template, task_list)
    first = _replay(domain, template, task_list, reads)
    with no_wall_clock(type(domain).__module__.split(".")[0]):
        second = _replay(domain, template, task_list, reads)
    findings += _replay_findings(task_list, reads, first, second, template, domain)
    if agents and task_list:
        findings += _agent_findings(domain, template, task_list, concurrency)
    if lint and task_list:
        from simulator.authoring.lint import lint_tasks

        findings += lint_tasks(domain, task_list, template=template)
    return findings

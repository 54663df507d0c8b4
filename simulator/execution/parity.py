"""The parity harness: replay every task's gold actions and report each action's outcome (``tausim replay``).

With a reference recording (``scripts/tau2-reference`` writes τ³'s answers to every gold action), each task's
replay is compared with it action by action (:func:`compare_to_reference`).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from simulator.types.jsonfile import JSONTextError, decode_json
from simulator.types.tasks import Task
from simulator.world.database import TemplateDatabase, json_diff
from simulator.world.domain import Domain
from simulator.world.dual import has_user_side, run_action, syncer
from simulator.world.replay import apply_actions, gold_calls, prepare_trial
from simulator.world.tools import ToolContext

_log = structlog.get_logger("tausim.replay")


@dataclass
class ReplayResult:
    """The outcome of replaying one task's gold actions.

    Attributes:
        task_index: the task's position in the replayed list.
        task_id: the task.
        responses: each replayed call's response text.
        statuses: each call's status (``ok``, ``tool_error``, ...; see :class:`~simulator.world.tools.CallOutcome`).
        diff: the change of the domain's JSON dump (per table: added, removed, changed); in a dual-control
            domain, of the agent's tables only.
        requestors: each call's side (``assistant`` or ``user``).
        user_diff: the change of the user's tables (dual-control domains), else None.
        env_assertions: the task's environment assertions evaluated on the replayed (synced) state, each
            ``{"func_name", "env_type", "expected", "actual", "passed", "error"}``; None for a task without any.
        changes: of a tau2 task, whether each call (and the sync after it) changed the agent's records; else empty.
        user_changes: likewise the records the user's tools act on (all False without a user side).
    """

    task_index: int
    task_id: str
    responses: list[str]
    statuses: list[str]
    diff: dict[str, Any]
    requestors: list[str] = field(default_factory=list)
    user_diff: dict[str, Any] | None = None
    env_assertions: list[dict[str, Any]] | None = None
    changes: list[bool] = field(default_factory=list)
    user_changes: list[bool] = field(default_factory=list)

    @property
    def errors(self) -> list[bool]:
        """Return each call's error flag (tau2's ``ToolMessage.error``: the call did not succeed)."""
        return [s != "ok" for s in self.statuses]

    def to_json(self) -> dict[str, Any]:
        """Return ``{"task_index", "task_id", "responses", "statuses", "errors", "requestors", "diff"}``.

        With ``"user_diff"`` in a dual-control domain and ``"env_assertions"`` for a task that has some.
        """
        doc: dict[str, Any] = {"task_index": self.task_index, "task_id": self.task_id, "responses": self.responses,
                               "statuses": self.statuses, "errors": self.errors, "requestors": self.requestors,
                               "diff": self.diff}
        if self.user_diff is not None:
            doc["user_diff"] = self.user_diff
        if self.env_assertions is not None:
            doc["env_assertions"] = self.env_assertions
        return doc


def replay_tasks(domain: Domain, template: TemplateDatabase, tasks: Sequence[Task]) -> Iterator[ReplayResult]:
    """Replay each task's gold actions on a fresh copy of the template and diff the native JSON dumps.

    A tau-bench task: the agent's gold actions, stopping after a conversation-ending call; a gold tool bug is
    raised. A tau2 task (and any task of a dual-control domain), as tau2's evaluator replays gold: every gold
    action on its requestor's side (the user's own tools for ``requestor: user``), the domain's sync after each,
    past a conversation-ending call, a tool bug only logged (its status is ``tool_bug``); then the task's
    environment assertions are evaluated on the replayed, synced state.

    Args:
        domain: the domain.
        template: its template database (the initial state).
        tasks: tasks to replay.

    Yields:
        One :class:`ReplayResult` per task, in order.

    Raises:
        GoldToolBug: a gold action of a tau-bench task hit a bug in a tool, or a task's initial state could not
            be applied.
    """
    from simulator.grading.tau2 import check_env_assertions

    toolbox = domain.toolbox_for(template.options)
    sides = (toolbox, domain.user_toolbox())
    user_tables = domain.user_tables()
    dual = has_user_side(domain)
    with template.trial() as trial:
        initial = domain.dump(trial)
    for i, task in enumerate(tasks):
        tau2 = task.suite == "tau2" or dual
        changes: list[tuple[bool, bool]] = []
        with template.trial() as trial:
            prepare_trial(domain, trial, task)
            start = domain.dump(trial) if task.initial_state is not None else initial
            written = trial.raw.total_changes
            if tau2:
                ctx = ToolContext(trial.session, trial.options)
                sync = syncer(domain, ctx)
                actions = list(task.gold_actions)
                outcomes = []
                state = (start, trial.raw.total_changes)
                for action in actions:
                    out = run_action(domain, ctx, action, sides, functions=False)
                    if out.status == "tool_bug":
                        _log.warning("gold_action_bug", action=action.name, bug=(out.bug or "").splitlines()[-1:])
                    outcomes.append(out)
                    sync()
                    state = _note_change(domain, trial, state, user_tables, changes)
                checks = (check_env_assertions(domain, trial, task.env_assertions).results
                          if task.env_assertions else None)
            else:
                actions = gold_calls(task)
                outcomes = apply_actions(toolbox, trial, actions)
                checks = None
            final = domain.dump(trial) if trial.raw.total_changes != written else start  # no row written
            user_diff = None
            if user_tables:  # the records the user's tools act on (τ³'s mock: the agent's, after agent data)
                user_diff = json_diff(domain.user_records(trial, start), domain.user_records(trial, final))
        agent = {t: v for t, v in final.items() if t not in user_tables}
        before = {t: v for t, v in start.items() if t not in user_tables}
        yield ReplayResult(
            i, task.id, [o.content for o in outcomes], [o.status for o in outcomes], json_diff(before, agent),
            requestors=[a.requestor for a in actions[: len(outcomes)]], user_diff=user_diff,
            env_assertions=None if checks is None else [
                {"func_name": c.func_name, "env_type": c.env_type, "expected": c.expected, "actual": c.actual,
                 "passed": c.passed, "error": c.error} for c in checks],
            changes=[a for a, _ in changes], user_changes=[u for _, u in changes],
        )


def _note_change(domain: Domain, trial: Any, state: tuple[dict[str, Any], int], user_tables: frozenset[str],
                 changes: list[tuple[bool, bool]]) -> tuple[dict[str, Any], int]:
    """Append whether the last call changed the agent's and the user's records; return the new (dump, writes).

    The trial is dumped only when a row was written since ``state`` (a write may leave every value as it was).
    """
    before, written = state
    if trial.raw.total_changes == written:
        changes.append((False, False))
        return state
    after = domain.dump(trial)
    agent_changed = any(after.get(t) != before.get(t) for t in set(after) | set(before) if t not in user_tables)
    user_changed = bool(user_tables) and domain.user_records(trial, before) != domain.user_records(trial, after)
    changes.append((agent_changed, user_changed))
    return after, trial.raw.total_changes


@dataclass
class ReferenceCheck:
    """One task's replay compared with a reference recording of the same gold actions (e.g. τ³'s).

    Attributes:
        task_id: the task.
        actions: gold actions compared (the longer of the two sides).
        equal: of those, actions whose name, answer string and error flag are equal on both sides.
        differences: one line per difference: ``action N: ...`` (answer, error flag, name, missing action),
            ``diff: ...`` / ``user_diff: ...`` (the database change over the task differs).
    """

    task_id: str
    actions: int
    equal: int
    differences: list[str]

    @property
    def passed(self) -> bool:
        """Whether every action and both database changes are equal."""
        return not self.differences


def _short(text: Any, limit: int = 160) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _no_nulls(value: Any) -> Any:
    """A JSON value with its null-valued object fields dropped (an absent optional field reads as null)."""
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _comparable_diff(diff: Mapping[str, Any]) -> list[str]:
    """A database change as a sorted list of leaf changes, free of either side's record keys and layout.

    Each changed leaf is ``[table, path, old, new]`` (the path inside its record; a record that is a bare value,
    as in a table that is one object, takes its key as the path), each added record ``[table, "+", record]``,
    each removed one ``[table, "-"]``; null fields count as absent (see :func:`compare_to_reference`).
    """
    out: list[str] = []
    for table, change in diff.items():
        for key, paths in (change.get("changed") or {}).items():
            for path, values in paths.items():
                old, new = _no_nulls(values.get("old")), _no_nulls(values.get("new"))
                if old != new:
                    out.append(json.dumps([table, path or key, old, new], sort_keys=True))
        out.extend(json.dumps([table, "+", _no_nulls(v)], sort_keys=True) for v in (change.get("added") or {}).values())
        out.extend(json.dumps([table, "-"]) for _ in change.get("removed") or [])
    return sorted(out)


_TIMING_TAIL = re.compile(r"\n\n\[Timing: retrieval=\d+ms(?:, reranking=\d+ms)?, total=\d+ms\]\Z")
"""The wall-clock tail τ³'s ``KB_search`` puts on each answer (``[Timing: retrieval=3ms, total=3ms]``)."""


def _reference_answer(content: Any) -> Any:
    """A reference answer without its wall-clock timing tail (a measurement of τ³'s machine, not an answer)."""
    return _TIMING_TAIL.sub("", content) if isinstance(content, str) else content


def compare_to_reference(result: ReplayResult, reference: Mapping[str, Any]) -> ReferenceCheck:
    """Compare a task's replay with its reference line (:func:`load_reference`).

    Answers compare as exact strings (field order, spacing, value types and nulls all count), error flags as
    booleans; the database changes compare as JSON values (``diff``, and ``user_diff`` when the reference has one),
    compared as the multiset of changed leaves (table, path inside the record, old, new) and added or removed
    records, so that each side's record keys (τ³ keeps telecom's lines as a list, tausim keys them by id) and
    layout do not count, and with a field that is absent on one side and null on the other taken as equal: τ³
    dumps its pydantic models, where an optional field the data file leaves out is null, while tausim's dump
    keeps each record's layout as the data file has it. Each action's requestor compares as a string, and whether
    it changed the agent's or the user's database compares with the change of the reference's hashes
    (:func:`_change_differences`; ``db0``/``user_db0`` are the hashes before the first action). Where the
    reference's user tools share the agent's database (equal hashes throughout) and tausim's domain has no user
    side, ``user_diff`` compares with tausim's agent ``diff``. A reference answer's wall-clock timing tail (τ³'s
    ``KB_search``: ``[Timing: retrieval=3ms, total=3ms]``) is left out: tausim's answer has none.

    Args:
        result: the replay.
        reference: ``{"task_id", "actions": [{"name", "content", "error", ...}], "diff", "user_diff"}``.

    Returns:
        The :class:`ReferenceCheck`.
    """
    ref_actions = list(reference.get("actions") or [])
    n = max(len(ref_actions), len(result.responses))
    differences: list[str] = []
    equal = 0
    for i in range(n):
        if i >= len(ref_actions) or i >= len(result.responses):
            differences.append(f"action {i}: present on one side only")
            continue
        ref = ref_actions[i]
        ok = True
        if _reference_answer(ref.get("content")) != result.responses[i]:
            differences.append(f"action {i} ({ref.get('name')}): answer {_short(result.responses[i])}, reference "
                               f"{_short(ref.get('content'))}")
            ok = False
        if bool(ref.get("error")) != result.errors[i]:
            differences.append(f"action {i} ({ref.get('name')}): error flag {result.errors[i]}, reference "
                               f"{bool(ref.get('error'))}")
            ok = False
        if ref.get("requestor") is not None and i < len(result.requestors) \
                and ref["requestor"] != result.requestors[i]:
            differences.append(f"action {i} ({ref.get('name')}): requestor {result.requestors[i]}, reference "
                               f"{ref['requestor']}")
            ok = False
        equal += ok
    shared = _shares_database(ref_actions, reference) and result.user_diff is None
    differences.extend(_change_differences(ref_actions, reference, result, shared))
    if reference.get("diff") is not None and _comparable_diff(reference["diff"]) != _comparable_diff(result.diff):
        differences.append(f"diff: {_short(result.diff, 400)}, reference {_short(reference['diff'], 400)}")
    mine = result.diff if shared else result.user_diff or {}
    if reference.get("user_diff") is not None and _comparable_diff(reference["user_diff"]) != _comparable_diff(mine):
        differences.append(f"user_diff: {_short(result.user_diff, 400)}, reference "
                           f"{_short(reference['user_diff'], 400)}")
    return ReferenceCheck(result.task_id, n, equal, differences)


def _shares_database(ref_actions: Sequence[Mapping[str, Any]], reference: Mapping[str, Any]) -> bool:
    """Whether the reference's user tools act on the agent's database (τ³'s banking_knowledge: equal hashes)."""
    return reference.get("user_db0") is not None and reference.get("user_db0") == reference.get("db0") and all(
        a.get("user_db") == a.get("db") for a in ref_actions)


def _change_differences(ref_actions: Sequence[Mapping[str, Any]], reference: Mapping[str, Any],
                        result: ReplayResult, shared: bool) -> list[str]:
    """The actions where one side's database changed and the other's did not (agent's ``db``, user's ``user_db``).

    The reference holds a hash of τ³'s database after each action (``db``, ``user_db``) and before the first
    (``db0``, ``user_db0``); an action changed it when its hash differs from the one before. The hashes are of τ³'s
    own dump, which tausim's store does not reproduce, so they compare through these change marks only. ``shared``:
    the reference's user tools act on the agent's database and tausim's domain has no user side of its own, so the
    user's marks compare with the agent's.
    """
    out: list[str] = []
    for key, mine in (("db", result.changes), ("user_db", result.changes if shared else result.user_changes)):
        if not mine or f"{key}0" not in reference:
            continue
        prev = reference[f"{key}0"]
        for i, (ref, changed) in enumerate(zip(ref_actions, mine, strict=False)):
            if (ref.get(key) != prev) != changed:
                out.append(f"action {i} ({ref.get('name')}): {'changes' if changed else 'leaves'} the "
                           f"{'agent' if key == 'db' else 'user'}'s database, reference "
                           f"{'leaves it' if changed else 'changes it'}")
            prev = ref.get(key)
    return out


def load_reference(path: str | Path) -> dict[str, dict[str, Any]]:
    """Load a reference recording (``scripts/tau2-reference``'s ``<suite>.jsonl.gz``, or plain ``.jsonl``).

    Returns:
        ``{task id: line}``.

    Raises:
        ValueError: an unreadable file or a line that is not a JSON object with a ``task_id`` (naming the line).
    """
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
    except (OSError, gzip.BadGzipFile) as e:
        raise ValueError(f"{p}: cannot read the reference ({e})") from e
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = decode_json(line, first_line=n)
        except JSONTextError as e:
            raise ValueError(f"{p}: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("task_id"), str):
            raise ValueError(f"{p}: line {n}: expected an object with a task_id")
        out[doc["task_id"]] = doc
    return out

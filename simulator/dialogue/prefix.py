"""Trajectory-prefix regression cases: capture a trial's state at a turn, resume it, grade only the next agent turn.

A task with a :class:`~simulator.types.tasks.TrialPrefix` (written by ``tausim hunt --export FILE --prefix``) is run by
:func:`run_prefix_trial` instead of a whole conversation:

1. the trial database is the task's (template plus fixture, :func:`simulator.world.replay.prepare_trial`) with the
   prefix's database state applied (:func:`apply_state`: the rows the prefix wrote, the rows it removed, the
   event log);
2. the agent is built for the trial (its seed: the task's pinned seed) and brought to the prefix's end: an agent
   that says it resumes from the message history alone (``resumes_from_history = True``, an LLM agent) is given
   the messages as they are; any other (a rule agent, whose state lives in the object) first replays its prefix
   steps (``agent_steps``: the messages it saw at each), its answers discarded;
3. only the agent's next turn is run (tool calls on the trial database, up to and including its next text
   message, within the run's step cap) and graded against ``next_step`` (:func:`check_next_step`); the trial
   ends with ``next_step`` (or the cap or error that stopped the turn) and its grade has a ``next_step``
   component, the only one that decides pass.

:func:`capture_state` is the other way round: the database state of a trial database as a prefix holds it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import MetaData

from simulator.dialogue.actors import actor_traceback, is_actor_failure
from simulator.dialogue.cues import asks_confirmation
from simulator.dialogue.signals import questions
from simulator.dialogue.state import dispatch
from simulator.dialogue.text import clip_long_tokens
from simulator.types.grade import NextStepResult
from simulator.types.messages import AgentTurn, Message
from simulator.types.sanitize import admit_agent_turn, admit_metadata
from simulator.types.tasks import NextStep, StepCall, TrialPrefix
from simulator.types.trajectory import Limits, TerminationReason, ToolCallRecord, Trajectory
from simulator.world.database import OLD_PREFIX, WRITE_LOG
from simulator.world.events import EVENTS_TABLE
from simulator.world.tools import Toolbox, ToolContext

__all__ = ["apply_state", "capture_state", "check_next_step", "message_properties", "run_next_turn", "seen_messages"]

REFUSAL_WORDS = ("can't", "cannot", "can not", "unable to", "not able to", "not allowed", "not possible",
                 "not eligible", "against our policy", "against the policy", "i'm sorry, but")
"""Phrases that make an agent message a ``refusal``."""

_EVENT_COLUMNS = ("seq", "step", "source", "kind", "name", "data")




# ---------------------------------------------------------------------------------------------------- state
def _pk_columns(metadata: MetaData, table: str) -> list[str]:
    return [c.name for c in metadata.tables[table].primary_key.columns]


def capture_state(raw: sqlite3.Connection, metadata: MetaData) -> tuple[dict[str, list[dict[str, Any]]],
                                                                      dict[str, list[dict[str, Any]]],
                                                                      list[dict[str, Any]]]:
    """Capture a trial database's state as a prefix holds it: the rows written since the template, and the events.

    Args:
        raw: a trial database's sqlite3 connection (a copy of a template, with its write log).
        metadata: the template's schema (every table, the sinks' included).

    Returns:
        ``(rows, deleted, events)``: table -> every column of each row written and still present (in rowid
        order); table -> the primary key of each template row removed; the event log's rows, in order.
    """
    written: dict[str, set[int]] = {}
    for tbl, rid in raw.execute(f'SELECT tbl, rid FROM "{WRITE_LOG}"'):
        written.setdefault(tbl, set()).add(rid)
    rows: dict[str, list[dict[str, Any]]] = {}
    deleted: dict[str, list[dict[str, Any]]] = {}
    for table in metadata.sorted_tables:
        rids = written.get(table.name)
        if not rids:
            continue
        ids = json.dumps(sorted(rids))
        cur = raw.execute(f'SELECT rowid, * FROM "{table.name}" WHERE rowid IN (SELECT value FROM json_each(?)) '
                          "ORDER BY rowid", (ids,))
        names = [d[0] for d in cur.description][1:]
        present = [dict(zip(names, r[1:], strict=True)) for r in cur.fetchall()]
        pk = _pk_columns(metadata, table.name)
        keys = {tuple(r[c] for c in pk) for r in present}
        cur = raw.execute(f'SELECT * FROM "{OLD_PREFIX}{table.name}" WHERE "_absent" = 0 AND '
                          '"_rid" IN (SELECT value FROM json_each(?)) ORDER BY "_rid"', (ids,))
        old_names = [d[0] for d in cur.description]
        gone = []
        for r in cur.fetchall():
            old = dict(zip(old_names, r, strict=True))
            key = {c: old[c] for c in pk}
            if tuple(key.values()) not in keys and not _exists(raw, table.name, key):
                gone.append(key)
        if present:
            rows[table.name] = present
        if gone:
            deleted[table.name] = gone
    events = [dict(zip(_EVENT_COLUMNS, r, strict=True)) for r in raw.execute(
        f'SELECT {", ".join(_EVENT_COLUMNS)} FROM "{EVENTS_TABLE}" ORDER BY seq')]
    return rows, deleted, events


def _where(key: Mapping[str, Any]) -> str:
    return " AND ".join(f'"{c}" IS ?' for c in key)


def _exists(raw: sqlite3.Connection, table: str, key: Mapping[str, Any]) -> bool:
    return raw.execute(f'SELECT 1 FROM "{table}" WHERE {_where(key)}', tuple(key.values())).fetchone() is not None


def apply_state(raw: sqlite3.Connection, metadata: MetaData, prefix: TrialPrefix, source: str = "prefix") -> None:
    """Apply a prefix's database state to a trial database prepared for its task (template plus fixture).

    Each row of ``prefix.rows`` replaces the row with its primary key (or is inserted), each key of
    ``prefix.deleted`` is removed, and the event log is replaced by ``prefix.events``; committed.

    Args:
        raw: the trial database's sqlite3 connection (no transaction open).
        metadata: the template's schema.
        prefix: the prefix.
        source: the case, for error messages.

    Raises:
        ValueError: an unknown table or column, or a key missing a primary-key column (the message names the
            case, table and value).
    """
    try:
        for table, keys in prefix.deleted.items():
            pk = _pk_columns(metadata, _table(metadata, table, source))
            for key in keys:
                if sorted(key) != sorted(pk):
                    raise ValueError(f"{source}: prefix.deleted.{table}: {key!r} is not a primary key ({pk})")
                raw.execute(f'DELETE FROM "{table}" WHERE {_where(key)}', tuple(key.values()))
        for table, rows in prefix.rows.items():
            t = metadata.tables[_table(metadata, table, source)]
            cols = {c.name for c in t.columns}
            pk = _pk_columns(metadata, table)
            for row in rows:
                extra = sorted(set(row) - cols)
                if extra or any(c not in row for c in pk):
                    raise ValueError(f"{source}: prefix.rows.{table}: row {json.dumps(row, default=str)[:120]}: "
                                     + (f"unknown column(s) {extra}" if extra else f"missing key column(s) {pk}"))
                key = {c: row[c] for c in pk}
                if _exists(raw, table, key):
                    sets = ", ".join(f'"{c}" = ?' for c in row)
                    raw.execute(f'UPDATE "{table}" SET {sets} WHERE {_where(key)}',
                                (*row.values(), *key.values()))
                else:
                    raw.execute(f'INSERT INTO "{table}" ({", ".join(chr(34) + c + chr(34) for c in row)}) '
                                f'VALUES ({", ".join("?" for _ in row)})', tuple(row.values()))
        raw.execute(f'DELETE FROM "{EVENTS_TABLE}"')
        for i, ev in enumerate(prefix.events):
            if set(ev) != set(_EVENT_COLUMNS):
                raise ValueError(f"{source}: prefix.events[{i}]: expected the columns {list(_EVENT_COLUMNS)}, got "
                                 f"{sorted(ev)}")
            raw.execute(f'INSERT INTO "{EVENTS_TABLE}" ({", ".join(_EVENT_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)',
                        tuple(ev[c] for c in _EVENT_COLUMNS))
        raw.commit()
    except sqlite3.Error as e:
        raw.rollback()
        raise ValueError(f"{source}: prefix state does not apply: {e}") from e
    except ValueError:
        raw.rollback()
        raise


def _table(metadata: MetaData, table: str, source: str) -> str:
    if table not in metadata.tables:
        raise ValueError(f"{source}: prefix: unknown table {table!r} (tables: {sorted(metadata.tables)})")
    return table


# ---------------------------------------------------------------------------------------------------- the turn
def seen_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages an agent sees of a conversation: all but the user's own tool calls and results."""
    return [m for m in messages if m.requestor is None]


def run_next_turn(agent: Any, prefix: TrialPrefix, toolbox: Toolbox, ctx: ToolContext, limits: Limits
                  ) -> Trajectory:
    """Bring the agent to the prefix's end and run its next turn (see the module docstring).

    Args:
        agent: the agent, built for the trial.
        prefix: the prefix (its database state already applied to ``ctx``'s database).
        toolbox: the domain's tools.
        ctx: the trial database's tool context.
        limits: the run's caps (``max_steps`` bounds the turn's tool calls).

    Returns:
        The trajectory: the prefix's messages and the turn's, the turn's tool calls only (``steps`` counted from
        the prefix's agent steps), ``termination_reason`` ``next_step`` (or ``agent_transfer``, ``max_steps``,
        ``agent_error``, ``tool_bug`` when the turn stopped on one). An agent's exception is recorded, never raised.
    """
    messages = list(prefix.messages)
    seen = seen_messages(messages)
    traj = Trajectory(messages=messages, turns=sum(1 for m in messages if m.role in ("user", "assistant")
                                                   and m.content and not m.tool_calls),
                      steps=len(prefix.agent_steps))

    def end(reason: TerminationReason, error: str | None = None) -> Trajectory:
        traj.termination_reason = reason
        traj.error = error
        traj.agent_metadata = admit_metadata(agent, "agent", traj.notes)  # {} without a dict
        return traj

    try:
        if not getattr(agent, "resumes_from_history", False):
            for n in prefix.agent_steps:
                agent.step(list(seen[:n]))
        start = traj.steps
        while True:
            if traj.steps - start >= limits.max_steps:
                return end(TerminationReason.MAX_STEPS)
            at = agent.step(list(seen))
            if not isinstance(at, AgentTurn):
                return end(TerminationReason.AGENT_ERROR, f"agent.step returned {type(at).__name__}, expected "
                                                          "AgentTurn")
            at, notes = admit_agent_turn(at, f"agent step {traj.steps}")
            traj.notes.extend(notes)
            if at.error:
                return end(TerminationReason(at.error_kind or "agent_error"), at.error)
            msg = at.message
            traj.messages.append(msg)
            seen.append(msg)
            traj.agent_usage = traj.agent_usage + at.usage
            if not msg.tool_calls:
                traj.steps += 1
                traj.turns += 1
                return end(TerminationReason.NEXT_STEP)
            for call in msg.tool_calls:
                result, out, _, _ = dispatch(toolbox, ctx, call, traj, "agent")
                seen.append(result)
                if out.status == "tool_bug":
                    return end(TerminationReason.TOOL_BUG, out.bug)
                if out.ends_conversation:
                    return end(TerminationReason.AGENT_TRANSFER)
    except BaseException as e:  # noqa: BLE001 - the agent under test failed: the trial's agent_error, but a Ctrl-C
        if not is_actor_failure(e):
            raise
        return end(TerminationReason.AGENT_ERROR, actor_traceback())


# ---------------------------------------------------------------------------------------------------- grading
def message_properties(text: str, earlier: Sequence[str]) -> set[str]:
    """The :data:`~simulator.types.tasks.MessageProperty` values an agent message has.

    Args:
        text: the message.
        earlier: the agent's earlier messages (for ``repeated_question``).

    Returns:
        The properties among ``confirmation``, ``question``, ``refusal``, ``repeated_question``.
    """
    out: set[str] = set()
    clipped = clip_long_tokens(text)
    if asks_confirmation(clipped):
        out.add("confirmation")
    if "?" in text:
        out.add("question")
    low = " ".join(text.lower().split())
    if any(w in low for w in REFUSAL_WORDS):
        out.add("refusal")
    asked = {q for e in earlier for q in questions(clip_long_tokens(e))}
    if any(q in asked for q in questions(clipped)):
        out.add("repeated_question")
    return out


def _matches(pattern: StepCall, call: ToolCallRecord, kinds: Mapping[str, str | None]) -> bool:
    if pattern.name is not None and call.name != pattern.name:
        return False
    if pattern.kind is not None and kinds.get(call.name) != pattern.kind:
        return False
    args = call.arguments or {}
    return all(k in args and args[k] == v for k, v in pattern.arguments.items())


def _pattern(p: StepCall) -> str:
    what = p.name or f"any {p.kind} tool"
    if p.name is not None and p.kind is not None:
        what += f" ({p.kind})"
    if p.arguments:
        what += " with " + json.dumps(p.arguments, sort_keys=True, default=str)
    return what


def check_next_step(expect: NextStep, prefix: TrialPrefix, trajectory: Trajectory,
                    kinds: Mapping[str, str | None]) -> NextStepResult:
    """Grade the agent's next turn (the part of ``trajectory`` after ``prefix.messages``) against ``expect``.

    Args:
        expect: the expectations.
        prefix: the prefix the turn followed.
        trajectory: the trajectory of :func:`run_next_turn`.
        kinds: tool name -> kind (``read``, ``write``, ``ending``).

    Returns:
        The :class:`NextStepResult`; a turn that ended without a closing message fails ``must_say``
        expectations (it said nothing).
    """
    calls = [c for c in trajectory.tool_calls if c.requestor == "agent"]
    turn = trajectory.messages[len(prefix.messages):]
    closing = next((m for m in reversed(turn) if m.role == "assistant" and not m.tool_calls), None)
    text = closing.content or "" if closing is not None else None
    failures: list[str] = []
    for p in expect.must_call:
        if not any(_matches(p, c, kinds) for c in calls):
            failures.append(f"must_call: {_pattern(p)}: not called")
    for p in expect.must_not_call:
        hit = next((c for c in calls if _matches(p, c, kinds)), None)
        if hit is not None:
            failures.append(f"must_not_call: {_pattern(p)}: called {hit.name}"
                            f"({json.dumps(hit.arguments, sort_keys=True, default=str)})")
    earlier = [m.content or "" for m in prefix.messages if m.role == "assistant" and m.content]
    props = message_properties(text, earlier) if text is not None else set()
    for prop in expect.must_say:
        if prop not in props:
            failures.append(f"must_say: {prop}: " + ("the turn ended without a message" if text is None
                                                     else f"not in {text[:120]!r}"))
    for prop in expect.must_not_say:
        if prop in props:
            failures.append(f"must_not_say: {prop}: said {text[:120]!r}" if text is not None else "")
    return NextStepResult(passed=not failures, failures=failures,
                          calls=[f"{c.name}({json.dumps(c.arguments, sort_keys=True, default=str)})" for c in calls],
                          message=text)

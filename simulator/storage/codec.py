"""Records to rows and back.

A run's header (:class:`RunInfo`) and a trial (:class:`TrialResult`) as rows of the tables of
:mod:`simulator.storage.schema`.

A trial's fields that have a column are written to it; every other field (of the trial, its trajectory and its
two usages) is kept in the row's ``extra`` JSON, so a trial read back is equal to the one written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from simulator.errors import StoreError
from simulator.storage.schema import as_aware, utc_now
from simulator.types.grade import Grade
from simulator.types.messages import Message
from simulator.types.results import TrialKey, TrialResult
from simulator.types.secrets import redact_url
from simulator.types.spec import RunSpec, format_validation_error, recorded_config
from simulator.types.trajectory import ToolCallRecord, Trajectory

__all__ = ["RunInfo", "TrialRows", "decode_trials", "encode_trial", "grade_values", "run_info_from_row", "run_row",
           "trial_key_values"]

_TRIAL_KEYS = ("task_id", "persona", "trial", "seed", "passed", "termination_reason", "grade", "trajectory",
               "duration_s", "error")
_TRAJ_KEYS = ("messages", "tool_calls", "agent_usage", "user_usage", "turns", "steps", "agent_seconds",
              "user_seconds", "tool_seconds", "termination_reason", "error")
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
_CALL_KEYS = ("step", "call_id", "name", "arguments", "raw_arguments", "kind", "status", "content", "duration_s",
              "bug")
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cost_usd", "calls")

_RowKey = tuple[str, str, int]
"""``(task_id, persona or "", trial)``: a trial's key as its rows hold it."""


class RunInfo(BaseModel):
    """A stored run's header: what was planned and with what."""

    run_id: str
    created_at: datetime
    config: RunSpec
    """The run's spec, as stored."""
    task_ids: list[str]
    """Planned task ids, in run order."""
    data_dir: str | None = None
    """The data directory actually used (resolved)."""
    data_hash: str | None = None
    tasks_hash: str | None = None
    git_revision: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    """Wall time of every session of the run together."""
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def planned(self) -> int:
        """Planned trials: tasks x personas x trials per task."""
        return len(self.planned_pairs())

    def planned_pairs(self) -> list[TrialKey]:
        """Return every planned (task id, persona or None, trial index) key in run order."""
        personas: list[str | None] = list(self.config.personas or []) or [None]
        return [(t, p, i) for t in self.task_ids for p in personas for i in range(self.config.trials)]


def run_row(info: RunInfo) -> dict[str, Any]:
    """Return the ``runs`` row of a new run.

    Args:
        info: the run's header.

    Returns:
        Column name -> value (``wall_seconds`` 0).
    """
    config = info.config
    return dict(
        run_id=info.run_id, created_at=info.created_at, domain=config.domain, agent=redact_url(config.agent.name),
        user=redact_url(config.user.name), seed=str(config.seed), trials=config.trials,
        config=recorded_config(config), task_ids=info.task_ids, data_dir=info.data_dir,
        data_hash=info.data_hash, tasks_hash=info.tasks_hash, git_revision=info.git_revision, packages=info.packages,
        wall_seconds=0.0, extra=info.extra,
    )


def run_info_from_row(row: Mapping[Any, Any]) -> RunInfo:
    """Return the header of a stored run.

    Args:
        row: its ``runs`` row.

    Returns:
        The :class:`RunInfo`.

    Raises:
        StoreError: the stored spec does not fit this version's :class:`RunSpec` (a run of an older tausim).
    """
    run_id = row["run_id"]
    try:
        spec = RunSpec.model_validate(row["config"])
    except ValidationError as e:
        raise StoreError(format_validation_error(f"stored spec of run {run_id!r}", e)
                         + " (runs recorded by an older tausim cannot be resumed; start a new run)") from e
    return RunInfo(run_id=run_id, created_at=as_aware(row["created_at"]),
                   config=spec, task_ids=list(row["task_ids"]),
                   data_dir=row["data_dir"], data_hash=row["data_hash"], tasks_hash=row["tasks_hash"],
                   git_revision=row["git_revision"], packages=dict(row["packages"] or {}),
                   wall_seconds=row["wall_seconds"] or 0.0, extra=dict(row["extra"] or {}))


def _split(doc: Mapping[str, Any], keys: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a dumped model into the fields that have columns and the rest (kept as JSON)."""
    known = set(keys)
    return ({k: doc.get(k) for k in known}, {k: v for k, v in doc.items() if k not in known})


def trial_key_values(run_id: str, result: TrialResult) -> dict[str, Any]:
    """Return the key columns naming a trial in every per-trial table.

    Args:
        run_id: the run.
        result: the trial.

    Returns:
        ``{"run_id", "task_id", "persona", "trial"}`` (``persona`` ``""`` in a run without personas).
    """
    return {"run_id": run_id, "task_id": result.task_id, "persona": result.persona or "", "trial": result.trial}


def grade_values(grade: Grade) -> dict[str, Any]:
    """Return a grade's ``grades`` columns (besides the trial key).

    Args:
        grade: the grade.

    Returns:
        ``{"passed", "failure", "components", "graded_at"}``: every other grade field is in ``components``.
    """
    g = grade.model_dump(mode="json")
    passed, failure = g.pop("passed"), g.pop("failure", None)
    return {"passed": passed, "failure": failure, "components": g, "graded_at": utc_now()}


@dataclass(frozen=True)
class TrialRows:
    """One trial as rows: what :func:`encode_trial` gives and the store writes in one transaction."""

    key: dict[str, Any]
    """The trial key columns (:func:`trial_key_values`)."""
    trial: dict[str, Any]
    """The ``trials`` row."""
    messages: list[dict[str, Any]]
    """The ``messages`` rows, in order."""
    tool_calls: list[dict[str, Any]]
    """The ``tool_calls`` rows, in order."""
    grade: dict[str, Any] | None
    """The ``grades`` row, or None for a trial without a grade."""


def encode_trial(run_id: str, result: TrialResult) -> TrialRows:
    """Return the rows of one finished trial.

    Args:
        run_id: the run the trial belongs to.
        result: the trial.

    Returns:
        Its :class:`TrialRows`; ``cost_usd`` is agent + user cost, None when either is unknown (never 0).
    """
    doc = result.model_dump(mode="json")
    top, top_extra = _split(doc, _TRIAL_KEYS)
    traj, traj_extra = _split(top["trajectory"], _TRAJ_KEYS)
    au, au_extra = _split(traj["agent_usage"], _USAGE_KEYS)
    uu, uu_extra = _split(traj["user_usage"], _USAGE_KEYS)
    extra = {"trial": top_extra, "trajectory": traj_extra, "agent_usage": au_extra, "user_usage": uu_extra}
    cost = None if au["cost_usd"] is None or uu["cost_usd"] is None else au["cost_usd"] + uu["cost_usd"]
    key = trial_key_values(run_id, result)
    trial_row = {
        **key, "seed": str(result.seed), "passed": result.passed,
        "termination_reason": result.termination_reason, "error": result.error,
        "duration_s": result.duration_s, "recorded_at": utc_now(), "turns": traj["turns"], "steps": traj["steps"],
        "agent_seconds": traj["agent_seconds"], "user_seconds": traj["user_seconds"],
        "tool_seconds": traj["tool_seconds"], "trajectory_termination_reason": traj["termination_reason"],
        "trajectory_error": traj["error"],
        "agent_prompt_tokens": au["prompt_tokens"], "agent_completion_tokens": au["completion_tokens"],
        "agent_cost_usd": au["cost_usd"], "agent_calls": au["calls"],
        "user_prompt_tokens": uu["prompt_tokens"], "user_completion_tokens": uu["completion_tokens"],
        "user_cost_usd": uu["cost_usd"], "user_calls": uu["calls"], "cost_usd": cost,
        "extra": {k: v for k, v in extra.items() if v},
    }
    msg_rows = []
    for i, m in enumerate(traj["messages"]):
        cols, rest = _split(m, _MESSAGE_KEYS)
        msg_rows.append({**key, "idx": i, **cols, "tool_calls": cols["tool_calls"] or [], "extra": rest})
    call_rows = []
    for i, c in enumerate(traj["tool_calls"]):
        cols, rest = _split(c, _CALL_KEYS)
        call_rows.append({**key, "idx": i, **cols, "extra": rest})
    grade = None if result.grade is None else {**key, **grade_values(result.grade)}
    return TrialRows(key=key, trial=trial_row, messages=msg_rows, tool_calls=call_rows, grade=grade)


def _row_key(r: Mapping[Any, Any]) -> _RowKey:
    return (r["task_id"], r["persona"], r["trial"])


def decode_trials(trial_rows: Sequence[Mapping[Any, Any]], message_rows: Iterable[Mapping[Any, Any]],
                  call_rows: Iterable[Mapping[Any, Any]], grade_rows: Iterable[Mapping[Any, Any]]) -> list[TrialResult]:
    """Return the trials of some rows (one run's), each equal to the one recorded.

    Args:
        trial_rows: ``trials`` rows.
        message_rows: their ``messages`` rows, ordered by trial key then ``idx``.
        call_rows: their ``tool_calls`` rows, ordered by trial key then ``idx``.
        grade_rows: their ``grades`` rows.

    Returns:
        One :class:`TrialResult` per trial row, in the order of ``trial_rows``.

    Raises:
        StoreError: a row holds a value its field cannot take (a store edited by hand: text in a number column);
            one line naming the trial, the field and the value.
    """
    try:
        return _decode_trials(trial_rows, message_rows, call_rows, grade_rows)
    except ValidationError as e:
        raise StoreError(format_validation_error("the store's row of a trial", e)) from None


def _decode_trials(trial_rows: Sequence[Mapping[Any, Any]], message_rows: Iterable[Mapping[Any, Any]],
                   call_rows: Iterable[Mapping[Any, Any]],
                   grade_rows: Iterable[Mapping[Any, Any]]) -> list[TrialResult]:
    """:func:`decode_trials` without the error's translation."""
    msgs: dict[_RowKey, list[Message]] = {}
    for r in message_rows:
        msgs.setdefault(_row_key(r), []).append(Message.model_validate({
            **(r["extra"] or {}), "role": r["role"], "content": r["content"],
            "tool_calls": r["tool_calls"] or [], "tool_call_id": r["tool_call_id"], "name": r["name"]}))
    calls: dict[_RowKey, list[ToolCallRecord]] = {}
    for r in call_rows:
        calls.setdefault(_row_key(r), []).append(ToolCallRecord.model_validate({
            **(r["extra"] or {}), **{k: r[k] for k in _CALL_KEYS}}))
    grades = {_row_key(r): r for r in grade_rows}
    out = []
    for r in trial_rows:
        key = (r["task_id"], r["persona"], int(r["trial"]))
        try:
            out.append(_decode_trial(r, key, msgs.get(key, []), calls.get(key, []), grades.get(key)))
        except ValidationError as e:
            where = f"the store's row of task {key[0]!r} trial {key[2]}"
            raise StoreError(format_validation_error(where, e)) from None
    return out


def _decode_trial(r: Mapping[Any, Any], key: _RowKey, msgs: list[Message], calls: list[ToolCallRecord],
                  g: Mapping[Any, Any] | None) -> TrialResult:
    """One trial from its ``trials`` row, its messages, tool calls and ``grades`` row (None: not graded)."""
    extra = r["extra"] or {}
    grade = None if g is None else Grade.model_validate(
        {**(g["components"] or {}), "passed": g["passed"], "failure": g["failure"]})
    traj = Trajectory.model_validate({
        **extra.get("trajectory", {}),
        "messages": msgs, "tool_calls": calls,
        "agent_usage": {**extra.get("agent_usage", {}), "prompt_tokens": r["agent_prompt_tokens"],
                        "completion_tokens": r["agent_completion_tokens"], "cost_usd": r["agent_cost_usd"],
                        "calls": r["agent_calls"]},
        "user_usage": {**extra.get("user_usage", {}), "prompt_tokens": r["user_prompt_tokens"],
                       "completion_tokens": r["user_completion_tokens"], "cost_usd": r["user_cost_usd"],
                       "calls": r["user_calls"]},
        "turns": r["turns"], "steps": r["steps"], "agent_seconds": r["agent_seconds"],
        "user_seconds": r["user_seconds"], "tool_seconds": r["tool_seconds"],
        "termination_reason": r["trajectory_termination_reason"], "error": r["trajectory_error"],
    })
    return TrialResult.model_validate({
        **extra.get("trial", {}),
        "task_id": key[0], "persona": key[1] or None, "trial": key[2], "seed": int(r["seed"]),
        "passed": r["passed"],
        "termination_reason": r["termination_reason"], "grade": grade, "trajectory": traj,
        "duration_s": r["duration_s"], "error": r["error"],
    })

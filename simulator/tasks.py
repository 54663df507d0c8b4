"""Tasks: the model, and loaders for our own task files and tau-bench v1 task lists.

Our format (``*.json``)::

    {"format": "tausim.tasks", "version": 1, "domain": "retail",
     "tasks": [{"id": "cancel-1", "user_id": "...",
                "scenario": {"instructions": "...", "known_info": {...}, "unknown_info": [...]},
                "gold_actions": [{"name": "cancel_pending_order", "arguments": {...}}],
                "required_outputs": ["..."], "tags": ["cancel"]}]}

tau-bench v1 format: a JSON list of ``{"user_id", "instruction", "actions": [{"name", "kwargs"}], "outputs"}``;
such tasks get ``id`` = their index in the file, as a string.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["Action", "ProcessRules", "Task", "TaskFileError", "UserScenario", "load_tasks", "parse_tasks"]


class TaskFileError(ValueError):
    """A task file is malformed; the message names the file, the task and the field."""


class Action(BaseModel):
    """One gold action: a tool call the correct agent makes."""

    model_config = ConfigDict(extra="forbid")
    name: str
    """Tool name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Tool arguments."""


class UserScenario(BaseModel):
    """Who the simulated user is and what it wants."""

    model_config = ConfigDict(extra="forbid")
    instructions: str
    """Natural-language instruction for the user (what it wants, how it behaves)."""
    known_info: dict[str, Any] = Field(default_factory=dict)
    """Facts the user knows and may give (identity slots, order ids, item descriptions)."""
    unknown_info: list[str] = Field(default_factory=list)
    """Things the user does not know and must not state (e.g. ``"item ids"``)."""
    opening: str | None = None
    """First message of a scripted user; when None one is made from the instructions."""


class ProcessRules(BaseModel):
    """Rules on how the agent reached the end state, checked on the trajectory (grading component ``process``).

    They make tasks whose goal state equals the initial state (refusals, transfers) impossible to pass by doing
    nothing.
    """

    model_config = ConfigDict(extra="forbid")
    forbidden_tools: list[str] = Field(default_factory=list)
    """Tools the agent must never call (any call counts, successful or not)."""
    required_tools: list[str] = Field(default_factory=list)
    """Tools the agent must call successfully at least once (e.g. the look-up that justifies a refusal)."""
    no_writes: bool = False
    """The agent must not call any write tool (tools that end the conversation excepted)."""
    expected_termination: list[str] | None = None
    """Termination reasons that count as correct, e.g. ``["agent_transfer"]``; None: any."""


class Task(BaseModel):
    """One scenario: the user, the gold actions, the required outputs and tags."""

    model_config = ConfigDict(extra="forbid")
    id: str
    """Unique id within its task set (tau-bench tasks: the index in the file)."""
    user_id: str | None = None
    """The domain user the scenario is about, when there is one."""
    scenario: UserScenario
    gold_actions: list[Action] = Field(default_factory=list)
    """Tool calls whose replay on a fresh database yields the goal state."""
    required_outputs: list[str] = Field(default_factory=list)
    """Values the agent must state in its messages (whole-token match, numbers as numbers)."""
    tags: list[str] = Field(default_factory=list)
    process: ProcessRules = Field(default_factory=ProcessRules)
    """Rules on the trajectory (forbidden/required tools, no writes, expected termination)."""
    max_turns: int | None = None
    """Turn cap for this task (overrides the run's default)."""


_V1_FIELDS = frozenset({"user_id", "instruction", "actions", "outputs", "annotator"})


def _loc(err: Any) -> str:
    return ".".join(str(p) for p in err["loc"])


def _validation_message(path: str, where: str, e: ValidationError) -> str:
    problems = "; ".join(
        f"field {_loc(err)!s}: {err['msg']} (value: {json.dumps(err.get('input'), default=str)[:80]})"
        for err in e.errors()
    )
    return f"{path}: {where}: {problems}"


def parse_tasks(data: Any, source: str = "<tasks>", domain: str | None = None) -> list[Task]:
    """Parse task data already read from JSON (our format or a tau-bench v1 list).

    Args:
        data: the decoded JSON document.
        source: file name used in error messages.
        domain: when given, a file of our format that names another domain is refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: the document is neither format, a task is malformed, two tasks share an id, the file
            is for another domain, or it holds no task.
    """
    tasks: list[Task] = []
    if isinstance(data, list):
        for i, raw in enumerate(data):
            if not isinstance(raw, dict):
                raise TaskFileError(f"{source}: task [{i}]: expected an object, got {type(raw).__name__}")
            missing = [k for k in ("user_id", "instruction", "actions") if k not in raw]
            if missing:
                raise TaskFileError(f"{source}: task [{i}]: missing field(s) {', '.join(missing)} "
                                    "(tau-bench task lists need user_id, instruction, actions)")
            unknown = sorted(set(raw) - _V1_FIELDS)
            if unknown:
                raise TaskFileError(f"{source}: task [{i}]: unknown field(s) {', '.join(unknown)} "
                                    f"(tau-bench task fields: {', '.join(sorted(_V1_FIELDS))})")
            if not isinstance(raw.get("outputs", []), list) or not isinstance(raw["actions"], list):
                bad = "outputs" if not isinstance(raw.get("outputs", []), list) else "actions"
                raise TaskFileError(f"{source}: task [{i}]: field {bad}: expected a list, got "
                                    f"{json.dumps(raw[bad])[:60]}")
            try:
                actions = [Action(name=a["name"], arguments=a.get("kwargs", a.get("arguments", {})))
                           for a in raw["actions"]]
                tasks.append(Task(
                    id=str(i), user_id=raw["user_id"],
                    scenario=UserScenario(instructions=raw["instruction"]),
                    gold_actions=actions, required_outputs=[str(o) for o in raw.get("outputs") or []],
                ))
            except (KeyError, TypeError) as e:
                raise TaskFileError(f"{source}: task [{i}]: malformed action: {e}") from e
            except ValidationError as e:
                raise TaskFileError(_validation_message(source, f"task [{i}]", e)) from e
    elif isinstance(data, dict) and data.get("format") == "tausim.tasks":
        if data.get("version") != 1:
            raise TaskFileError(f"{source}: field version: unsupported value {data.get('version')!r} (expected 1)")
        file_domain = data.get("domain")
        if domain is not None and file_domain is not None and file_domain != domain:
            raise TaskFileError(f"{source}: field domain: the file is for domain {file_domain!r}, not {domain!r}")
        raw_tasks = data.get("tasks")
        if not isinstance(raw_tasks, list):
            raise TaskFileError(f"{source}: field tasks: expected a list, got {type(raw_tasks).__name__}")
        for i, raw in enumerate(raw_tasks):
            try:
                tasks.append(Task.model_validate(raw))
            except ValidationError as e:
                tid = raw.get("id") if isinstance(raw, dict) else None
                raise TaskFileError(_validation_message(source, f"task [{i}] (id {tid!r})", e)) from e
    else:
        raise TaskFileError(
            f"{source}: not a task file: expected a tau-bench task list or an object with "
            '"format": "tausim.tasks"'
        )
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise TaskFileError(f"{source}: field id: duplicate task id {t.id!r}")
        seen.add(t.id)
    if not tasks:
        raise TaskFileError(f"{source}: field tasks: the file holds no task")
    return tasks


def load_tasks(path: str | Path, domain: str | None = None) -> list[Task]:
    """Load a task file (our format or tau-bench v1).

    Args:
        path: the JSON file.
        domain: when given, a file of our format that names another domain is refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: the file is missing, not JSON, or malformed (the message names file, task, field).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TaskFileError(f"{p}: cannot read task file: {e.strerror}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TaskFileError(f"{p}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    return parse_tasks(data, str(p), domain)

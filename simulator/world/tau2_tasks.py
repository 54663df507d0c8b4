"""Loading tau2-bench (τ³-bench) task files into tausim tasks.

A tau2 ``tasks.json`` is a JSON list of ``{id, description, user_scenario{persona, instructions}, ticket,
initial_state{initialization_data, initialization_actions, message_history}, evaluation_criteria{actions,
env_assertions, communicate_info, nl_assertions, reward_basis}, ...}``; ``split_tasks.json`` beside it maps
split names to task ids (see ``../shared/spec/tau2-semantics.md``). Each task becomes a :class:`Task` with:

- ``scenario.instructions``: the structured instructions (``domain``, ``reason_for_call``, ``known_info``,
  ``unknown_info``, ``task_instructions``) or the plain string, rendered as text, with the persona first;
- ``initial_state``: ``initialization_data.agent_data`` as ``data`` (deep-merged into the database),
  ``initialization_actions`` as ``setup`` actions (``env_type`` becomes the action's requestor),
  ``message_history`` as ``history`` (its assistant tool calls are replayed before the trial);
- ``gold_actions``: ``evaluation_criteria.actions`` with ``requestor`` and ``compare_args``;
  ``env_assertions``; ``required_outputs`` = ``communicate_info``; ``judge`` = ``nl_assertions``;
- ``grade`` from ``reward_basis`` (DB -> ``state``, ACTION -> ``actions``, COMMUNICATE -> ``outputs``,
  ENV_ASSERTION -> ``env_assertions``, NL_ASSERTION -> ``judge``; default ``[DB, COMMUNICATE]``; no
  ``evaluation_criteria`` -> an empty basis, i.e. reward 1 when the ending is graded);
- ``conduct``: tau2's orchestration rules (:data:`TAU2_CONDUCT`).

User-side data (``initialization_data.user_data``, ``user_tools``) is kept for dual-control domains: a task
that has it is loaded, and its user-side parts are carried by ``requestor``/``env_type`` ``user``.
Errors name the file, the task id and tau2's field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from simulator.errors import TaskFileError
from simulator.types.jsonfile import decode_file_text, not_utf8
from simulator.types.sanitize import clipped, excerpt
from simulator.types.tasks import (
    Action,
    Conduct,
    EnvAssertion,
    GradeComponent,
    InitialState,
    JudgeAssertion,
    Task,
    UserScenario,
    check_task_id,
)

__all__ = ["BASIS", "DEFAULT_SPLIT", "GREETING", "TAU2_CONDUCT", "is_tau2_task_file", "load_tau2_tasks",
           "parse_tau2_tasks", "render_instructions"]

BASIS: dict[str, GradeComponent] = {
    "DB": "state", "ACTION": "actions", "COMMUNICATE": "outputs", "ENV_ASSERTION": "env_assertions",
    "NL_ASSERTION": "judge",
}
"""tau2 reward basis -> the tausim grading component that decides it."""
DEFAULT_BASIS = ("DB", "COMMUNICATE")
"""tau2's reward basis when a task names none."""
DEFAULT_SPLIT = "base"
"""tau2's default split (every retail and airline task; telecom's 114)."""
GREETING = "Hi! How can I help you today?"
"""tau2's fixed first message of the agent."""
TAU2_CONDUCT = Conduct(
    greeting=GREETING, max_tool_errors=10,
    graded_endings=["user_stop", "agent_transfer", "user_abandon"],
    stop_tokens=["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"],
)
"""tau2's rules: the agent greets first; 10 failed tool calls end the trial; only a user stop (any of its stop
tokens) or the agent's transfer is graded, any other ending scores 0."""

_TASK_FIELDS = frozenset({"id", "description", "user_scenario", "ticket", "initial_state", "evaluation_criteria",
                          "issues", "required_documents", "user_tools", "annotations"})
_INSTRUCTION_FIELDS = ("domain", "reason_for_call", "known_info", "unknown_info", "task_instructions")
_CRITERIA_FIELDS = frozenset({"actions", "env_assertions", "communicate_info", "nl_assertions", "reward_basis"})
_ACTION_FIELDS = frozenset({"action_id", "requestor", "name", "arguments", "info", "compare_args"})
_ENV_FIELDS = frozenset({"env_type", "func_name", "arguments", "assert_value", "message"})
_INIT_FIELDS = frozenset({"initialization_data", "initialization_actions", "message_history"})


class _Where:
    """Error messages for one task: ``FILE: task ID: field FIELD: PROBLEM``."""

    def __init__(self, source: str, task_id: Any):
        self.source = source
        self.task_id = task_id

    def fail(self, field: str, problem: str) -> TaskFileError:
        return TaskFileError(f"{self.source}: task {excerpt(self.task_id)}: field {clipped(field)}: {clipped(problem)}")

    def obj(self, value: Any, field: str, allowed: frozenset[str] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected an object, got {_kind(value)}")
        if allowed is not None:
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise self.fail(f"{field}.{unknown[0]}", f"unknown field (tau2 fields: {', '.join(sorted(allowed))})")
        return value

    def array(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {_kind(value)}")
        return value

    def strings(self, value: Any, field: str) -> list[str]:
        items = self.array(value, field)
        for i, v in enumerate(items):
            if not isinstance(v, str) or not v.strip():
                raise self.fail(f"{field}[{i}]", f"expected a non-empty string, got {_kind(v)}")
        return items


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {excerpt(value, 60, as_json=True)}"


def render_instructions(instructions: Any, persona: str | None = None) -> str:
    """Render tau2 user instructions (a string, or the structured object) as the user simulator's text.

    Args:
        instructions: a string, or ``{domain, reason_for_call, known_info, unknown_info, task_instructions}``
            (strings; null parts are left out).
        persona: tau2's free-text persona, put first when given.

    Returns:
        The text: the persona, then one titled paragraph per non-empty part, in tau2's order.
    """
    parts = []
    if persona:
        parts.append(f"Persona:\n{persona.strip()}")
    if isinstance(instructions, str):
        parts.append(instructions.strip())
    else:
        for key in _INSTRUCTION_FIELDS:
            value = instructions.get(key)
            if value:
                parts.append(f"{key.replace('_', ' ').capitalize()}:\n{str(value).strip()}")
    return "\n\n".join(parts)


def _scenario(w: _Where, raw: dict[str, Any]) -> UserScenario:
    us = w.obj(raw.get("user_scenario"), "user_scenario")
    persona = us.get("persona")
    if persona is not None and not isinstance(persona, str):
        raise w.fail("user_scenario.persona", f"expected a string or null, got {_kind(persona)}")
    ins = us.get("instructions")
    if isinstance(ins, dict):
        w.obj(ins, "user_scenario.instructions", frozenset(_INSTRUCTION_FIELDS))
        for key in _INSTRUCTION_FIELDS:
            if ins.get(key) is not None and not isinstance(ins[key], str):
                raise w.fail(f"user_scenario.instructions.{key}", f"expected a string or null, got {_kind(ins[key])}")
        if not ins.get("reason_for_call") and not ins.get("task_instructions"):
            raise w.fail("user_scenario.instructions.reason_for_call", "missing (and no task_instructions)")
    elif not isinstance(ins, str) or not ins.strip():
        raise w.fail("user_scenario.instructions", f"expected a string or an object, got {_kind(ins)}")
    unknown = ins.get("unknown_info") if isinstance(ins, dict) else None
    return UserScenario(instructions=render_instructions(ins, persona), unknown_info=[unknown] if unknown else [])


def _action(w: _Where, raw: Any, field: str) -> Action:
    a = w.obj(raw, field, _ACTION_FIELDS)
    name = a.get("name")
    if not isinstance(name, str) or not name:
        raise w.fail(f"{field}.name", f"expected a tool name, got {_kind(name)}")
    args = a.get("arguments") or {}
    w.obj(args, f"{field}.arguments")
    requestor: Literal["assistant", "user"] = a.get("requestor") or "assistant"
    if requestor not in ("assistant", "user"):
        raise w.fail(f"{field}.requestor", f"expected 'assistant' or 'user', got {_kind(requestor)}")
    compare = a.get("compare_args")
    if compare is not None:
        compare = w.strings(compare, f"{field}.compare_args")
    return Action(name=name, arguments=args, requestor=requestor, compare_args=compare)


def _initial_state(w: _Where, raw: Any) -> InitialState | None:
    if raw is None:
        return None
    st = w.obj(raw, "initial_state", _INIT_FIELDS)
    data = user_data = None
    init = st.get("initialization_data")
    if init is not None:
        init = w.obj(init, "initial_state.initialization_data", frozenset({"agent_data", "user_data"}))
        if init.get("agent_data") is not None:
            data = w.obj(init["agent_data"], "initial_state.initialization_data.agent_data")
        if init.get("user_data") is not None:
            user_data = w.obj(init["user_data"], "initial_state.initialization_data.user_data")
    setup = []
    for i, a in enumerate(w.array(st.get("initialization_actions"), "initial_state.initialization_actions")):
        field = f"initial_state.initialization_actions[{i}]"
        e = w.obj(a, field, _ENV_FIELDS)
        name = e.get("func_name")
        if not isinstance(name, str) or not name:
            raise w.fail(f"{field}.func_name", f"expected a function name, got {_kind(name)}")
        env: Literal["assistant", "user"] = e.get("env_type") or "assistant"
        if env not in ("assistant", "user"):
            raise w.fail(f"{field}.env_type", f"expected 'assistant' or 'user', got {_kind(env)}")
        setup.append(Action(name=name, arguments=w.obj(e.get("arguments") or {}, f"{field}.arguments"),
                            requestor=env))
    history = []
    for i, m in enumerate(w.array(st.get("message_history"), "initial_state.message_history")):
        msg = w.obj(m, f"initial_state.message_history[{i}]")
        if msg.get("role") not in ("assistant", "user", "tool", "system"):
            raise w.fail(f"initial_state.message_history[{i}].role",
                         f"expected assistant, user, tool or system, got {_kind(msg.get('role'))}")
        history.append(msg)
    if data is None and user_data is None and not setup and not history:
        return None
    return InitialState(setup=setup, data=data, user_data=user_data, history=history)


def _task(w: _Where, raw: dict[str, Any]) -> Task:
    unknown = sorted(set(raw) - _TASK_FIELDS)
    if unknown:
        raise w.fail(unknown[0], f"unknown field (tau2 task fields: {', '.join(sorted(_TASK_FIELDS))})")
    scenario = _scenario(w, raw)
    initial = _initial_state(w, raw.get("initial_state"))
    user_tools = None if raw.get("user_tools") is None else w.strings(raw["user_tools"], "user_tools")
    ec = raw.get("evaluation_criteria")
    if ec is None:
        return Task(id=str(raw["id"]), scenario=scenario, initial_state=initial, grade=[], conduct=TAU2_CONDUCT,
                    suite="tau2", user_tools=user_tools)
    ec = w.obj(ec, "evaluation_criteria", _CRITERIA_FIELDS)
    actions = [_action(w, a, f"evaluation_criteria.actions[{i}]")
               for i, a in enumerate(w.array(ec.get("actions"), "evaluation_criteria.actions"))]
    env = []
    for i, a in enumerate(w.array(ec.get("env_assertions"), "evaluation_criteria.env_assertions")):
        field = f"evaluation_criteria.env_assertions[{i}]"
        e = w.obj(a, field, _ENV_FIELDS)
        try:
            env.append(EnvAssertion.model_validate({k: v for k, v in e.items() if v is not None}))
        except ValidationError as err:
            first = err.errors()[0]
            raise w.fail(f"{field}.{'.'.join(str(p) for p in first['loc'])}", first["msg"]) from err
    outputs = w.strings(ec.get("communicate_info"), "evaluation_criteria.communicate_info")
    nl = w.strings(ec.get("nl_assertions"), "evaluation_criteria.nl_assertions")
    basis = ec.get("reward_basis")
    basis = list(DEFAULT_BASIS) if basis is None else w.strings(basis, "evaluation_criteria.reward_basis")
    for i, b in enumerate(basis):
        if b not in BASIS:
            raise w.fail(f"evaluation_criteria.reward_basis[{i}]",
                         f"unknown reward basis {excerpt(b)} (tau2 bases: {', '.join(BASIS)})")
    return Task(
        id=str(raw["id"]), scenario=scenario, gold_actions=actions, required_outputs=outputs,
        judge=[JudgeAssertion(assertion=a) for a in nl], initial_state=initial, env_assertions=env,
        grade=[BASIS[b] for b in basis], conduct=TAU2_CONDUCT, suite="tau2", user_tools=user_tools,
    )

def parse_tau2_tasks(data: Any, source: str = "<tasks>") -> list[Task]:
    """Parse a decoded tau2 ``tasks.json`` (a list of task objects).

    Args:
        data: the decoded JSON.
        source: the file, for messages.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: not a list, a task without ``id`` or ``user_scenario``, a malformed field, a duplicate id
            (the message names file, task id and tau2's field, e.g. ``evaluation_criteria.actions[2].name``).
    """
    if not isinstance(data, list):
        raise TaskFileError(f"{source}: expected a tau2 task list, got {type(data).__name__}")
    tasks = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise TaskFileError(f"{source}: task [{i}]: expected an object, got {_kind(raw)}")
        if not isinstance(raw.get("id"), str | int) or isinstance(raw.get("id"), bool):
            raise TaskFileError(f"{source}: task [{i}]: field id: expected a string, got {_kind(raw.get('id'))}")
        check_task_id(str(raw["id"]), i, source)
        w = _Where(source, str(raw["id"]))
        try:
            task = _task(w, raw)
        except ValidationError as e:
            first = e.errors()[0]
            raise w.fail(".".join(str(p) for p in first["loc"]), first["msg"]) from e
        if task.id in seen:
            raise w.fail("id", "duplicate task id")
        seen.add(task.id)
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{source}: the file holds no task")
    return tasks


def is_tau2_task_file(path: str | Path) -> bool:
    """Return whether a file is a tau2 task file.

    That is a ``split_tasks.json``, or a JSON list whose first task has ``user_scenario`` (only the start of the
    file is read).
    """
    p = Path(path)
    if p.name == "split_tasks.json":
        return True
    if p.suffix != ".json" or not p.is_file():
        return False
    with p.open(encoding="utf-8", errors="replace") as f:  # not UTF-8: load_tasks names the problem
        head = f.read(4096)
    return head.lstrip().startswith("[") and '"user_scenario"' in head


def _read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TaskFileError(f"{path}: cannot read {what}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise TaskFileError(f"{path}: {not_utf8(path.read_bytes(), e)}") from None
    return decode_file_text(text, path, TaskFileError)  # as our task files (simulator.types.tasks.load_tasks)


def load_tau2_tasks(path: str | Path, split: str | None = None) -> list[Task]:
    """Load a tau2 task file, optionally one split of it.

    Args:
        path: ``tasks.json``, or ``split_tasks.json`` (then the ``tasks.json`` beside it); in general a task
            file ``X.json`` has its splits in ``split_X.json`` beside it (a file without one has no splits).
        split: a split name of the split file beside the tasks; None: tau2's default
            (:data:`DEFAULT_SPLIT` when the split file has it, else every task).

    Returns:
        The tasks of the split, in file order.

    Raises:
        TaskFileError: a malformed file, an unknown split, a split naming an unknown task, or a split asked for
            without a split file (the message names the file and the field).
    """
    p = Path(path)
    # a task file X.json has its splits in split_X.json beside it (tau2's tasks.json / split_tasks.json)
    split_file = p if p.name.startswith("split_") else p.with_name(f"split_{p.name}")
    task_file = p.with_name(p.name.removeprefix("split_")) if p.name.startswith("split_") else p
    tasks = parse_tau2_tasks(_read_json(task_file, "tau2 task file"), str(task_file))
    if not split_file.is_file():
        if split is not None:
            raise TaskFileError(f"--split {split}: no {split_file} beside {task_file}")
        return tasks
    splits = _read_json(split_file, "tau2 split file")
    if not isinstance(splits, dict):
        raise TaskFileError(f"{split_file}: expected an object of split name -> task ids, got "
                            f"{type(splits).__name__}")
    name = split if split is not None else (DEFAULT_SPLIT if DEFAULT_SPLIT in splits else None)
    if name is None:
        return tasks
    if name not in splits:
        raise TaskFileError(f"{split_file}: field {name}: no such split (splits: {', '.join(splits)})")
    ids = splits[name]
    if not isinstance(ids, list):
        raise TaskFileError(f"{split_file}: field {name}: expected a list of task ids, got {_kind(ids)}")
    by_id = {t.id: t for t in tasks}
    wanted = [str(i) for i in ids]
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise TaskFileError(f"{split_file}: field {name}: unknown task id {excerpt(missing[0])} (not in {task_file})")
    keep = set(wanted)
    return [t for t in tasks if t.id in keep]

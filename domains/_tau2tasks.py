"""A minimal reader of tau2-bench task files for the dual-control worlds (mock, telecom).

Maps each tau2 task onto our task format version 2 (see :mod:`simulator.tasks`):

- ``user_scenario`` -> :class:`simulator.UserScenario` (instructions as text; the opening line from
  ``reason_for_call``);
- ``initial_state.initialization_actions`` -> setup actions (``env_type`` -> requestor), run by the engine with
  the domain's environment functions; ``initialization_data.agent_data`` -> row updates and inserts of the agent's
  document tables (deep-merged over the data set's records); ``message_history``: its assistant tool calls are
  replayed as setup actions (the prior messages themselves are not shown to the agent);
- ``evaluation_criteria.actions`` -> gold actions (with their requestor) and ``tool_called`` assertions (the
  arguments named by ``compare_args``); ``env_assertions`` -> ``env`` assertions; ``communicate_info`` ->
  required outputs; ``reward_basis`` -> the grade basis (DB -> ``state``, ENV_ASSERTION and ACTION ->
  ``assertions``, COMMUNICATE -> ``outputs``; NL_ASSERTION needs a judge and is left out).

This is the dual-control worlds' stop-gap until the engine's own tau2 loader (issue 13, part A) is on main; the
domains call it only from their ``load_tasks``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from domains._docs import deep_merge
from simulator import Task, TaskFileError

__all__ = ["is_tau2_file", "read_tau2_tasks"]

_BASIS = {"DB": "state", "ENV_ASSERTION": "assertions", "ACTION": "assertions", "COMMUNICATE": "outputs"}


def is_tau2_file(path: str | Path) -> bool:
    """Return whether a JSON file is a tau2-bench task list (objects with ``user_scenario``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "user_scenario" in data[0]


def _text(instr: Any) -> tuple[str, str | None]:
    if instr is None:
        return "", None
    if isinstance(instr, str):
        return instr, None
    parts = [f"{k.replace('_', ' ').capitalize()}: {v}" for k, v in instr.items() if v and k != "domain"]
    return "\n".join(parts), instr.get("reason_for_call")


def read_tau2_tasks(path: str | Path, *, split: str | None = None,
                    records: Callable[[str], Mapping[str, Mapping[str, Any]]] | None = None) -> list[Task]:
    """Read a tau2-bench ``tasks.json`` (optionally one split of the ``split_tasks.json`` beside it).

    Args:
        path: the task file.
        split: a split name of ``split_tasks.json``; None: every task.
        records: table name -> ``{id: record}`` of the data set (for ``initialization_data`` merges); None:
            such tasks are refused.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFileError: the file is malformed, the split is unknown, or a task cannot be mapped (naming tau2's field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise TaskFileError(f"{path}: cannot read tau2 tasks: {e}") from e
    if split is not None:
        split_file = path.parent / f"split_{path.stem}.json"
        try:
            splits = json.loads(split_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise TaskFileError(f"{split_file}: cannot read the splits: {e}") from e
        if split not in splits:
            raise TaskFileError(f"{split_file}: no split {split!r} (splits: {', '.join(splits)})")
        wanted = set(splits[split])
        data = [t for t in data if t.get("id") in wanted]
    return [_task(raw, f"{path}: task {raw.get('id')!r}", records) for raw in data]


def _task(raw: dict[str, Any], where: str,
          records: Callable[[str], Mapping[str, Mapping[str, Any]]] | None) -> Task:
    scenario = raw.get("user_scenario") or {}
    text, reason = _text(scenario.get("instructions"))
    if scenario.get("persona"):
        text = f"Persona: {scenario['persona']}\n{text}"
    setup: list[dict[str, Any]] = []
    update: dict[str, list[dict[str, Any]]] = {}
    insert: dict[str, list[dict[str, Any]]] = {}
    st = raw.get("initial_state") or {}
    agent_data = (st.get("initialization_data") or {}).get("agent_data") or {}
    for table, recs in agent_data.items():
        if records is None:
            raise TaskFileError(f"{where}: field initial_state.initialization_data: needs the data set")
        base = records(table)
        for key, patch in recs.items():
            if key in base:
                merged = deep_merge(json.loads(json.dumps(base[key])), patch)
                update.setdefault(table, []).append({"key": {"id": key}, "set": {"doc": _dumps(merged)}})
            else:
                insert.setdefault(table, []).append({"id": key, "doc": _dumps(patch)})
    if (st.get("initialization_data") or {}).get("user_data"):
        raise TaskFileError(f"{where}: field initial_state.initialization_data.user_data: not supported")
    for m in st.get("message_history") or []:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                setup.append({"name": c["name"], "arguments": c.get("arguments") or {}, "requestor": "assistant"})
    for i, a in enumerate(st.get("initialization_actions") or []):
        if a.get("env_type") not in ("assistant", "user"):
            raise TaskFileError(f"{where}: field initial_state.initialization_actions[{i}].env_type: "
                                f"{a.get('env_type')!r} (assistant or user)")
        setup.append({"name": a["func_name"], "arguments": a.get("arguments") or {}, "requestor": a["env_type"]})
    crit = raw.get("evaluation_criteria") or {}
    gold = []
    assertions: list[dict[str, Any]] = []
    for a in crit.get("actions") or []:
        requestor = a.get("requestor") or "assistant"
        args = a.get("arguments") or {}
        gold.append({"name": a["name"], "arguments": args, "requestor": requestor})
        keys = a.get("compare_args")
        wanted = args if keys is None else {k: args[k] for k in keys if k in args}
        assertions.append({"type": "tool_called", "name": a["name"], "arguments": wanted,
                           "requestor": "user" if requestor == "user" else "agent",
                           "note": f"ACTION {a.get('action_id') or a['name']}"})
    for e in crit.get("env_assertions") or []:
        assertions.append({"type": "env", "side": "user" if e.get("env_type") == "user" else "agent",
                           "function": e["func_name"], "arguments": e.get("arguments") or {},
                           "expected": e.get("assert_value", True), "note": e.get("message")})
    basis = crit.get("reward_basis") or ["DB", "COMMUNICATE"]
    unknown = [b for b in basis if b not in _BASIS and b != "NL_ASSERTION"]
    if unknown:
        raise TaskFileError(f"{where}: field evaluation_criteria.reward_basis: unknown {unknown}")
    grade = list(dict.fromkeys(_BASIS[b] for b in basis if b in _BASIS))
    if "assertions" in grade and not assertions:
        grade.remove("assertions")
    doc = {
        "id": raw["id"], "scenario": {"instructions": text or raw["id"], "opening": reason},
        "gold_actions": gold, "required_outputs": list(crit.get("communicate_info") or []),
        "assertions": assertions, "grade": grade, "tags": ["tau2"],
        "initial_state": {"setup": setup, "update": update, "insert": insert} if (setup or update or insert)
        else None,
    }
    try:
        return Task.model_validate(doc)
    except ValueError as e:
        raise TaskFileError(f"{where}: {e}") from e


def _dumps(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))

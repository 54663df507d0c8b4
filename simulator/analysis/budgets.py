"""Per-task trajectory budgets derived from a run (``tausim baseline``) and read back (``tausim run --budgets``).

Rule (:data:`BASELINE_RULE`): for each task, over its *passing* trials of the baseline run (what success took),
the ceiling is a margin of 20 % above the 95th percentile (numpy's linear interpolation):
``ceil(p95 * 1.2)`` for steps, tool calls and agent tokens, and ``p95 * 1.2`` (rounded up to the micro-dollar)
for the agent's cost in USD. Tokens get a ceiling only when the agent made model calls in every one of those
trials, cost only when moreover every cost is known (an unpriced model has none). A task with no passing trial
gets no ceiling and is listed under ``skipped``.

File format::

    {"format": "tausim.budgets", "version": 1, "domain": "retail", "source": "base.json", "rule": "...",
     "tasks": {"cancel-1": {"max_steps": 9, "max_tool_calls": 5, "max_tokens": 12000, "max_cost_usd": 0.018}},
     "skipped": ["refund-3"]}
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from simulator.errors import BudgetFileError
from simulator.stats.estimators import linear_quantiles
from simulator.types.jsonfile import JSONTextError, decode_json
from simulator.types.tasks import Budget

__all__ = ["BASELINE_RULE", "BUDGETS_FORMAT", "BudgetFileError", "derive_budgets", "load_budgets"]

BUDGETS_FORMAT = "tausim.budgets"
MARGIN = 1.2
BASELINE_RULE = ("per task, over its passing trials: ceil(p95 * 1.2) for steps, tool calls and agent tokens; "
                 "p95 * 1.2 for agent cost (USD); p95 by linear interpolation")





def _p95(values: list[float]) -> float:
    return float(linear_quantiles(np.asarray(values, dtype=np.float64), [0.95])[0])


def _ceil(x: float) -> int:
    """``ceil`` that ignores float noise (``920 * 1.2`` is 1104, not 1105)."""
    return math.ceil(round(x, 9))


def derive_budgets(doc: Mapping[str, Any], source: str = "<run>") -> dict[str, Any]:
    """Derive per-task ceilings from a run document (see the module docstring for the rule).

    Args:
        doc: a run document (``tausim run --out``), already checked by
            :func:`simulator.storage.documents.load_run_document`.
        source: where it came from, recorded in the result.

    Returns:
        The budgets document (``{"format": "tausim.budgets", "version": 1, "tasks": {...}, "skipped": [...]}``).
    """
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for t in doc.get("trials", []):
        by_task.setdefault(str(t["task_id"]), []).append(t)
    order = [str(x) for x in (doc.get("planned_task_ids") or doc.get("task_ids") or by_task)]
    tasks: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for task_id in order:
        passed = [t for t in by_task.get(task_id, []) if t.get("passed")]
        if not passed:
            skipped.append(task_id)
            continue
        trajs = [t.get("trajectory") or {} for t in passed]
        usage = [tr.get("agent_usage") or {} for tr in trajs]
        # a null count (unknown: see simulator.storage.measures) leaves its ceiling out rather than guess it
        steps = [s for s in (tr.get("steps", 0) for tr in trajs) if s is not None]
        entry: dict[str, Any] = {"max_steps": _ceil(_p95(steps) * MARGIN)} if steps else {}
        entry["max_tool_calls"] = _ceil(_p95([len(tr.get("tool_calls") or []) for tr in trajs]) * MARGIN)
        tokens = [(u.get("prompt_tokens", 0), u.get("completion_tokens", 0)) for u in usage]
        if all((u.get("calls", 0) or 0) > 0 for u in usage) and all(None not in pair for pair in tokens):
            entry["max_tokens"] = _ceil(_p95([p + c for p, c in tokens]) * MARGIN)
            costs = [u.get("cost_usd") for u in usage]
            if all(c is not None for c in costs):
                entry["max_cost_usd"] = _ceil(_p95([float(c) for c in costs if c is not None]) * MARGIN * 1e6) / 1e6
        tasks[task_id] = entry
    config = doc.get("config") or {}
    return {"format": BUDGETS_FORMAT, "version": 1, "domain": config.get("domain"), "source": source,
            "run_id": doc.get("run_id"), "rule": BASELINE_RULE, "tasks": tasks, "skipped": skipped}


def load_budgets(path: str | Path, task_ids: Collection[str], domain: str | None = None) -> dict[str, Budget]:
    """Read a budgets file for a run.

    Args:
        path: the file written by ``tausim baseline``.
        task_ids: the task ids of the run's task set; an id in the file that is not among them is an error.
        domain: the run's domain; a file derived for another domain is refused.

    Returns:
        Task id -> :class:`~simulator.types.tasks.Budget`.

    Raises:
        BudgetFileError: unreadable file, not JSON, wrong format, another domain, an unknown task id or a
            malformed entry (the message names the file and the task id).
    """
    p = Path(path)
    try:
        data = decode_json(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise BudgetFileError(f"--budgets {p}: cannot read: {e.strerror}") from e
    except JSONTextError as e:
        raise BudgetFileError(f"--budgets {p}: {e}") from None
    if not isinstance(data, dict) or data.get("format") != BUDGETS_FORMAT or data.get("version") != 1:
        raise BudgetFileError(f"--budgets {p}: not a budgets file (expected \"format\": \"{BUDGETS_FORMAT}\", "
                              "\"version\": 1; write one with `tausim baseline RUN.json --out FILE`)")
    if domain is not None and data.get("domain") not in (None, domain):
        raise BudgetFileError(f"--budgets {p}: derived for domain {data['domain']!r}, not {domain!r}")
    entries = data.get("tasks")
    if not isinstance(entries, dict):
        raise BudgetFileError(f"--budgets {p}: field tasks: expected an object of task id -> ceilings")
    known = set(task_ids)
    unknown = [t for t in entries if t not in known]
    if unknown:
        raise BudgetFileError(f"--budgets {p}: unknown task id(s) {', '.join(map(repr, unknown))} "
                              "(not in the run's task set)")
    out: dict[str, Budget] = {}
    for task_id, raw in entries.items():
        try:
            out[task_id] = Budget.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise BudgetFileError(f"--budgets {p}: task {task_id!r}: field {loc}: {err['msg']}") from e
    return out

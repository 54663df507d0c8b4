"""Export a run in other tools' result formats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from simulator.types.messages import Message
from simulator.types.spec import format_validation_error

from ._analysis import analyze_run
from ._load import RunDocumentError

__all__ = ["EXPORT_FORMATS", "to_tau_bench"]

EXPORT_FORMATS = ("tau-bench", "tau2", "tau2-submission")
"""Formats that ``tausim export`` writes."""


def _openai_messages(trial: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trial's messages as OpenAI chat messages.

    Raises:
        RunDocumentError: a recorded message is not a message (the error names the trial, the message and field).
    """
    traj = trial.get("trajectory") or {}
    out = []
    for i, m in enumerate(traj.get("messages") or []):
        try:
            out.append(Message.model_validate(m).openai())
        except ValidationError as e:
            where = f"trial {trial.get('task_id')!r}/{trial.get('trial')!r}: trajectory.messages[{i}]"
            raise RunDocumentError(format_validation_error(where, e, Message)) from None
    return out


def to_tau_bench(doc_or_path: Mapping[str, Any] | str) -> list[dict[str, Any]]:
    """Convert a run to tau-bench's result JSON: one ``EnvRunResult`` per recorded trial.

    Each entry is ``{"task_id": int, "reward": 1.0 | 0.0, "info": {...}, "traj": [...], "trial": int}``, the shape
    that tau-bench's ``run.py`` writes and its ``display_metrics`` reads. ``task_id`` is the task's index: the
    task id itself when it is a decimal number (tau-bench tasks), else its position in the run's plan (the original
    id is kept in ``info["tausim_task_id"]``). ``traj`` holds the conversation as OpenAI chat messages (the agent's
    system prompt is not recorded by tausim, so it is absent). ``info`` carries the termination reason, the grade
    (as ``reward_info``), the seed, the error and the costs; in a run with personas each trial's ``persona`` too.
    With personas ``task_id`` stays the task's index and ``trial`` is numbered across personas
    (``persona index * trials + trial index``, the original index in ``info["tausim_trial"]``), so each
    ``(task_id, trial)`` pair is one trial, as tau-bench expects. Only the first
    record of a duplicated trial is exported; missing trials are absent (tau-bench counts them as failures when
    it computes pass^k over the trial indices present).

    Args:
        doc_or_path: a run document or the path of one.

    Returns:
        The list, in task then trial order.

    Raises:
        RunDocumentError: the document is malformed.
    """
    report = analyze_run(doc_or_path, n_resamples=1)
    personas = [str(p) for p in report.config.get("personas") or []]
    trials = int(report.config.get("trials") or 1)

    def plain(cell_task_id: str) -> str:  # the task of a cell (task@persona)
        for p in personas:
            if cell_task_id.endswith(f"@{p}"):
                return cell_task_id[: -len(p) - 1]
        return cell_task_id

    task_ids = list(dict.fromkeys(plain(t) for t in report.task_ids))
    numeric = all(t.isdecimal() for t in task_ids)
    index = {tid: (int(tid) if numeric else i) for i, tid in enumerate(task_ids)}
    out = []
    for cell in report.cells:
        trial = cell.record
        if trial is None:
            continue
        traj = trial.get("trajectory") or {}
        reward = 1.0 if trial["passed"] else 0.0
        info = {
            "tausim_task_id": plain(cell.task_id),
            "termination_reason": trial.get("termination_reason"),
            "failure": list(cell.failures),
            "seed": trial.get("seed"),
            "error": trial.get("error"),
            "reward_info": {"reward": reward, "info": trial.get("grade")},
            "agent_cost": (traj.get("agent_usage") or {}).get("cost_usd"),
            "user_cost": (traj.get("user_usage") or {}).get("cost_usd"),
        }
        number = cell.trial
        if trial.get("persona") is not None:
            info["persona"] = trial["persona"]
            info["tausim_trial"] = cell.trial
            if trial["persona"] in personas:
                number = personas.index(trial["persona"]) * trials + cell.trial
        out.append({"task_id": index[plain(cell.task_id)], "reward": reward, "info": info,
                    "traj": _openai_messages(trial), "trial": number})
    return out

"""Export a run in τ³'s (tau2-bench) formats: its results file and a leaderboard submission.

τ³ 1.0.1's results file (``tau2 run`` writes it; ``tau2 view`` and ``tau2 evaluate-trajs`` read it, loaded by
``tau2.data_model.simulation.Results``) is ``{"timestamp", "info", "tasks", "simulations"}``:

- ``info``: ``{"git_commit", "num_trials", "max_steps", "max_errors", "user_info": {"implementation", "llm",
  "llm_args"}, "agent_info": {...}, "environment_info": {"domain_name", "policy", "tool_defs"}, "seed"}``;
- ``tasks``: τ³ task objects (the run's own entries when its task file is a τ³ ``tasks.json``, else built from
  tausim's tasks: instructions, gold actions, required outputs, reward basis);
- ``simulations``: one per trial, ``{"id", "task_id", "timestamp", "start_time", "end_time", "duration",
  "termination_reason", "agent_cost", "user_cost", "reward_info", "messages", "trial", "seed", "info"}``. Messages
  are τ³'s: ``{"role": "assistant" | "user", "content", "tool_calls": [{"id", "name", "arguments",
  "requestor"}] | null, "turn_idx"}`` and ``{"role": "tool", "id": call id, "content", "requestor", "error",
  "turn_idx"}``. ``reward_info`` is ``{"reward": 1.0 | 0.0, "db_check": {"db_match", "db_reward"} | null,
  "reward_basis", "info": {"tausim_grade": grade}}``. tausim's own termination reason, persona and trial index
  are kept in ``info["tausim"]`` so that an import of the file restores them.

τ³'s submission file (``leaderboard/submission.schema.json``) carries, per domain of retail, airline, telecom and
banking_knowledge, pass^1..pass^4 in percent (null where a run has fewer trials than k), the mean agent cost per
trajectory (USD; null when any trial's cost is unknown), and the run's methodology.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.types.jsonfile import decode_json
from simulator.types.sanitize import counted
from simulator.types.tasks import Task
from simulator.world.domain import DomainError, get_domain
from simulator.world.tau2_tasks import is_tau2_task_file

from ._analysis import RunReport, analyze_run
from ._load import RunDocumentError

__all__ = ["SUBMISSION_DOMAINS", "TAU2_VERSION", "to_tau2", "to_tau2_submission"]

TAU2_VERSION = "1.0.1"
"""The τ³ release whose formats these exports follow."""
SUBMISSION_DOMAINS = ("retail", "airline", "telecom", "banking_knowledge")
"""The domains a τ³ leaderboard submission holds."""

_REASONS = {
    "user_stop": "user_stop", "user_abandon": "user_stop", "agent_transfer": "agent_stop",
    "max_turns": "max_steps", "max_steps": "max_steps", "budget_exceeded": "max_steps",
    "agent_error": "agent_error", "user_error": "user_error", "tool_bug": "unexpected_error",
    "infra_error": "infrastructure_error", "context_overflow": "context_window_exceeded",
}
"""tausim termination reason -> τ³'s (``tau2.data_model.simulation.TerminationReason``)."""
_BASIS = {"state": "DB", "actions": "ACTION", "outputs": "COMMUNICATE", "env_assertions": "ENV_ASSERTION",
          "judge": "NL_ASSERTION"}
_SIM_NAMESPACE = uuid.UUID("8f0c7a52-5d1e-4a55-9b1c-3f6f2a9d7e10")


def _number(value: Any) -> float | None:
    """A recorded number as a float; None when it is not a finite number (NaN, inf, a string...)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _count(value: Any) -> int:
    """A recorded count (e.g. ``config.max_steps``) as an int; 0 when it is not a finite number >= 0."""
    number = _number(value)
    return int(number) if number is not None and number >= 0 else 0


def _cost(usage: Any) -> float | None:
    value = usage.get("cost_usd") if isinstance(usage, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _tau2_messages(trial: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A trial's messages as τ³ messages (tool results carry their call's requestor and error flag)."""
    traj = trial.get("trajectory") or {}
    errors = {r.get("call_id"): r.get("status") != "ok" for r in traj.get("tool_calls") or []}
    requestor: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in traj.get("messages") or []:
        role = m.get("role")
        if role == "system":
            continue
        if role == "tool":
            call_id = m.get("tool_call_id") or ""
            out.append({"id": call_id, "role": "tool", "content": m.get("content"),
                        "requestor": requestor.get(call_id, "assistant"), "error": bool(errors.get(call_id, False)),
                        "turn_idx": len(out)})
            continue
        side = "user" if role == "user" else "assistant"
        calls = []
        for c in m.get("tool_calls") or []:
            requestor[c["id"]] = side
            args = c.get("arguments")
            if args is None:  # arguments that did not parse: kept as the text the model produced
                args = {"_raw_arguments": c.get("raw_arguments")}
            calls.append({"id": c["id"], "name": c["name"], "arguments": args, "requestor": side})
        out.append({"role": side, "content": m.get("content"), "tool_calls": calls or None, "turn_idx": len(out)})
    return out


def _task_entry(task: Task) -> dict[str, Any]:
    """A tausim task as a τ³ task object."""
    basis = [_BASIS[c] for c in task.grade if c in _BASIS] if task.grade is not None else ["DB", "COMMUNICATE"]
    instructions = task.scenario.instructions if task.scenario is not None else ""
    return {
        "id": task.id,
        "description": {"purpose": None, "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": None, "instructions": str(instructions or "")},
        "evaluation_criteria": {
            "actions": [{"action_id": f"{task.id}_{i}", "requestor": a.requestor if a.requestor == "user"
                         else "assistant", "name": a.name, "arguments": dict(a.arguments or {})}
                        for i, a in enumerate(task.gold_actions)],
            "communicate_info": [str(o) for o in task.required_outputs],
            "reward_basis": basis,
        },
    }


def _tasks(config: Mapping[str, Any], task_ids: Sequence[str]) -> tuple[list[dict[str, Any]], str]:
    """The run's tasks as τ³ task objects, and the domain's policy text ("" when it cannot be read)."""
    wanted = set(task_ids)
    source = config.get("tasks")
    data_dir = config.get("data_dir")
    candidates = [source] if isinstance(source, str) else []
    if isinstance(data_dir, str):
        candidates.append(str(Path(data_dir) / "tasks.json"))
    for path in candidates:
        if Path(path).is_file() and is_tau2_task_file(path):
            try:
                raw = decode_json(Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise RunDocumentError(f"{path}: cannot read the run's τ³ task file ({e})") from e
            if isinstance(raw, list):
                return [dict(t) for t in raw if isinstance(t, Mapping) and str(t.get("id")) in wanted], _policy(config)
    try:
        domain = get_domain(str(config.get("domain")))
        tasks = domain.load_tasks(source if isinstance(source, str) else None, split=config.get("split"))
    except (DomainError, ValueError) as e:
        raise RunDocumentError(f"the run's tasks cannot be loaded for the τ³ export ({e})") from e
    return [_task_entry(t) for t in tasks if t.id in wanted], _policy(config)


def _policy(config: Mapping[str, Any]) -> str:
    try:
        domain = get_domain(str(config.get("domain")))
        data_dir = config.get("data_dir")
        options = config.get("options")
        return domain.policy_for(Path(data_dir) if isinstance(data_dir, str) else None,
                                 options if isinstance(options, Mapping) else {})
    except (DomainError, OSError, TypeError, ValueError):
        return ""


def _component(spec: Any) -> dict[str, Any]:
    spec = spec if isinstance(spec, Mapping) else {}
    name = str(spec.get("name") or "unknown")
    llm = spec.get("model") or (spec.get("args") or {}).get("model")
    args = {k: spec[k] for k in ("temperature", "api_base", "max_tokens") if spec.get(k) is not None}
    return {"implementation": f"tausim:{name}", "llm": llm if isinstance(llm, str) else None,
            "llm_args": args or None}


def _reward_info(trial: Mapping[str, Any]) -> dict[str, Any]:
    reward = 1.0 if trial.get("passed") else 0.0
    grade = trial.get("grade")
    db_check = None
    basis = ["DB", "COMMUNICATE"]
    if isinstance(grade, Mapping):
        state = grade.get("state")
        if isinstance(state, Mapping) and "passed" in state:
            db_check = {"db_match": bool(state["passed"]), "db_reward": 1.0 if state["passed"] else 0.0}
        if isinstance(grade.get("basis"), list):
            basis = [_BASIS[c] for c in grade["basis"] if c in _BASIS]
    return {"reward": reward, "db_check": db_check, "reward_basis": basis, "info": {"tausim_grade": grade}}


def _timestamps(trial: Mapping[str, Any]) -> tuple[str, str]:
    """Start and end of a trial (ISO 8601); tausim records a duration only, so both anchor on the epoch."""
    seconds = trial.get("duration_s")
    duration = float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0.0
    start = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return start.isoformat(), (start + dt.timedelta(seconds=max(duration, 0.0))).isoformat()


def _numbered_cells(report: RunReport) -> list[tuple[str, int, Mapping[str, Any]]]:
    """``(plain task id, trial number, record)`` per recorded trial; with personas, trials numbered across them."""
    personas = [str(p) for p in report.config.get("personas") or []]
    trials = int(report.config.get("trials") or 1)
    out = []
    for cell in report.cells:
        rec = cell.record
        if rec is None:
            continue
        task_id, number = cell.task_id, cell.trial
        persona = rec.get("persona")
        if persona in personas:
            task_id = task_id[: -len(persona) - 1] if task_id.endswith(f"@{persona}") else task_id
            number = personas.index(persona) * trials + cell.trial
        out.append((task_id, number, rec))
    return out


def to_tau2(doc_or_path: Mapping[str, Any] | str) -> dict[str, Any]:
    """Convert a run to τ³'s results file (see the module docstring).

    Args:
        doc_or_path: a run document or the path of one.

    Returns:
        The results document; ``simulations`` in task then trial order; a trial with a persona is numbered
        ``persona index * trials + trial index`` (τ³ has no personas; the persona is in ``info["tausim"]``).

    Raises:
        RunDocumentError: the document is malformed, or its tasks cannot be loaded.
    """
    report = analyze_run(doc_or_path, n_resamples=1)
    config = report.config
    cells = _numbered_cells(report)
    task_ids = list(dict.fromkeys(t for t, _, _ in cells))
    tasks, policy = _tasks(config, task_ids)
    provenance = report.document.get("provenance")
    git = provenance.get("git_revision") if isinstance(provenance, Mapping) else None
    personas = config.get("personas") or []
    simulations = []
    for task_id, number, rec in cells:
        traj = rec.get("trajectory") or {}
        start, end = _timestamps(rec)
        reason = str(rec.get("termination_reason"))
        run_id = str(report.run_id or "")
        simulations.append({
            "id": str(uuid.uuid5(_SIM_NAMESPACE, f"{run_id}/{task_id}/{rec.get('persona')}/{rec.get('trial')}")),
            "task_id": task_id, "timestamp": start, "start_time": start, "end_time": end,
            "duration": _number(rec.get("duration_s")) or 0.0,
            "termination_reason": _REASONS.get(reason, "unexpected_error"),
            "agent_cost": _cost(traj.get("agent_usage")), "user_cost": _cost(traj.get("user_usage")),
            "reward_info": _reward_info(rec), "messages": _tau2_messages(rec), "trial": number,
            "seed": rec.get("seed"),
            "info": {"tausim": {"termination_reason": reason, "persona": rec.get("persona"),
                                "trial": rec.get("trial"), "error": rec.get("error")}},
        })
    return {
        "timestamp": dt.datetime.now(dt.UTC).isoformat(),
        "info": {
            "git_commit": git if isinstance(git, str) else "",
            "num_trials": int(config.get("trials") or 1) * max(len(personas), 1),
            "max_steps": _count(config.get("max_steps")), "max_errors": 10,
            "user_info": _component(config.get("user")), "agent_info": _component(config.get("agent")),
            "environment_info": {"domain_name": str(config.get("domain")), "policy": policy, "tool_defs": None},
            "seed": config.get("seed"),
        },
        "tasks": tasks,
        "simulations": simulations,
    }


def _pass_percent(metrics: Mapping[str, Any], k: int) -> float | None:
    value = metrics.get(f"pass^{k}")
    return round(float(value) * 100, 4) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _domain_results(report: RunReport) -> dict[str, Any]:
    costs = [_cost((c.record.get("trajectory") or {}).get("agent_usage")) for c in report.cells if c.record]
    known = [c for c in costs if c is not None]
    result: dict[str, Any] = {f"pass_{k}": _pass_percent(report.metrics, k) for k in range(1, 5)}
    result["cost"] = sum(known) / len(known) if known and len(known) == len(costs) else None
    retrieval = (report.config.get("options") or {}).get("retrieval")
    result["retrieval_config"] = str(retrieval) if retrieval is not None else None
    return result


def to_tau2_submission(docs: Sequence[Mapping[str, Any] | str], *, model_name: str | None = None,
                       model_organization: str = "unknown", submitting_organization: str = "unknown",
                       contact_email: str | None = None, submission_type: str = "custom",
                       today: dt.date | None = None) -> dict[str, Any]:
    """Build a τ³ leaderboard ``submission.json`` from one run per domain.

    Args:
        docs: run documents (or paths), each of a domain in :data:`SUBMISSION_DOMAINS`, no domain twice.
        model_name: the model evaluated (default: the first run's agent model, else its agent name).
        model_organization: who made the model.
        submitting_organization: who ran the evaluation.
        contact_email: a contact address, or None.
        submission_type: ``standard`` (τ³'s own evaluation set-up) or ``custom`` (anything else; tausim's
            simulated users, tools or orchestration are custom unless the submitter checked otherwise).
        today: the submission and evaluation date (default: today, UTC).

    Returns:
        The submission document: ``results`` per domain (pass^1..4 in percent, null when the run has fewer
        trials; ``cost`` the mean agent cost per trajectory in USD), ``methodology`` (evaluation date, τ³
        version, user simulator, notes naming tausim and the runs' set-up, whether tasks were omitted: a run
        restricted to task ids or tags, or with missing trials).

    Raises:
        RunDocumentError: a run of another domain, a domain twice, an unknown submission type, no runs.
    """
    if submission_type not in ("standard", "custom"):
        raise RunDocumentError(f"--submission-type {submission_type!r}: use standard or custom")
    if not docs:
        raise RunDocumentError("a submission needs at least one run")
    results: dict[str, Any] = {}
    users: list[str] = []
    notes: list[str] = []
    omitted = False
    first_agent: Mapping[str, Any] = {}
    for doc in docs:
        report = analyze_run(doc, n_resamples=1)
        domain = str(report.config.get("domain"))
        if domain not in SUBMISSION_DOMAINS:
            raise RunDocumentError(f"run {report.run_id or doc!s:.60}: domain {domain!r} is not on the τ³ "
                                   f"leaderboard ({', '.join(SUBMISSION_DOMAINS)})")
        if domain in results:
            raise RunDocumentError(f"domain {domain!r}: two runs; give one run per domain")
        results[domain] = _domain_results(report)
        user = _component(report.config.get("user"))
        users.append(user["llm"] or user["implementation"])
        first_agent = first_agent or _component(report.config.get("agent"))
        notes.append(f"{domain}: {counted(report.metrics.get('tasks') or 0, 'task')} x "
                     f"{counted(report.trials_per_task, 'trial')}, "
                     f"mode {(report.config.get('options') or {}).get('mode', 'default')}")
        config = report.config
        omitted = omitted or bool(report.metrics.get("missing_trials") or config.get("task_ids")
                                  or config.get("tags") or config.get("exclude_tags"))
    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    name = model_name or first_agent.get("llm") or first_agent.get("implementation") or "unknown"
    return {
        "model_name": str(name), "model_organization": model_organization,
        "submitting_organization": submitting_organization, "submission_date": day,
        "submission_type": submission_type, "modality": "text",
        "contact_info": {"email": contact_email, "name": None, "github": None},
        "results": results, "is_new": False, "trajectories_available": False,
        "methodology": {
            "evaluation_date": day, "tau2_bench_version": TAU2_VERSION,
            "user_simulator": ", ".join(dict.fromkeys(users)),
            "notes": "Evaluated with tausim; " + "; ".join(notes),
            "verification": {"modified_prompts": submission_type == "custom", "omitted_questions": omitted,
                             "details": None},
        },
    }

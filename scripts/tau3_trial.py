#!/usr/bin/env python
"""Time τ³'s (tau2-bench 1.0.1) own gold trial per task: its environment replays the gold, its evaluator rewards.

The τ³ side of ``scripts/bench-tau3``. Runs inside a *throwaway* environment that has τ³ installed (never tausim's
own: τ³ is not a dependency of tausim and none of its code is copied into the project; ``scripts/tau2-reference``
says how to set one up). ``bench-tau3`` starts it once with that environment's python and
``TAU2_DATA_DIR`` set, and talks to it over stdin/stdout, one JSON document a line:

1. it writes ``{"suite": "telecom" | "banking_knowledge" | ..., "task_ids": [str, ...], "retrieval": str | null}``
   (``retrieval``: banking_knowledge's retrieval variant, e.g. ``bm25_grep``; null: τ³'s default, ``alltools``,
   whose dense search needs an OpenAI key and the network);
2. the driver loads τ³'s ``tasks.json`` of that suite (``$TAU2_DATA_DIR/tau2/domains/<suite>/``), keeps the tasks
   named, in that order, and answers ``{"ready": n}`` (or ``{"error": message}`` and exits with status 2);
3. for every ``"round"`` line it runs each task once and answers ``{"seconds": [float, ...], "cpu": [float, ...],
   "rewards": [float, ...]}`` (per task, in order: wall and thread CPU seconds, τ³'s reward); end of input ends
   it.

One timed trial is what τ³ does for a task without models: build the domain's environment as its runner does
(``registry.get_env_constructor(suite)(**env_kwargs)``, with banking_knowledge's retrieval variant and
``read_log_allowlist`` from the task's gold, as ``tau2.runner.build`` derives them), apply the task's initial state
(``Environment.set_state``), send each gold action as a tool call from its requestor (``Environment.get_response``),
record the conversation as τ³'s messages (initial history, then per action the requestor's message carrying the tool
call and the tool's answer, then a closing agent message stating the task's ``communicate_info``), and grade it with
τ³'s own evaluator (``evaluate_simulation`` with ``EvaluationType.ALL`` and an ``AGENT_STOP`` termination; its
environment evaluator rebuilds and replays both the predicted and the gold environment and compares the database
hashes).
Seconds are ``time.perf_counter`` wall and ``time.thread_time`` CPU per trial; loading and validating the task
file are outside the clock.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def _env_kwargs(suite: str, task: Any, retrieval: str | None) -> dict[str, Any]:
    """τ³'s runner's environment arguments for a task (as ``tau2.runner.build._build_env_kwargs`` builds them)."""
    if suite != "banking_knowledge":
        return {}
    names = {(a.arguments or {}).get("agent_tool_name") for a in (task.evaluation_criteria.actions or [])
             if a.name == "call_discoverable_agent_tool"} if task.evaluation_criteria else set()
    kwargs: dict[str, Any] = {"read_log_allowlist": {n for n in names if n}}
    if retrieval:
        kwargs.update(retrieval_variant=retrieval, task=task)
    return kwargs


def trial(suite: str, constructor: Any, task: Any, retrieval: str | None = None) -> float:
    """Run one gold trial of ``task`` in τ³ (module docstring); return τ³'s reward (0.0–1.0)."""
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    kwargs = _env_kwargs(suite, task, retrieval)
    env = constructor(**kwargs)
    init = task.initial_state
    history = list(init.message_history or []) if init else []
    env.set_state(initialization_data=init.initialization_data if init else None,
                  initialization_actions=init.initialization_actions if init else None,
                  message_history=history)
    messages: list[Any] = list(history)
    criteria = task.evaluation_criteria
    for i, action in enumerate((criteria.actions if criteria else None) or []):
        call = ToolCall(id=f"gold_{i}", name=action.name, arguments=action.arguments, requestor=action.requestor)
        kind = UserMessage if action.requestor == "user" else AssistantMessage
        messages.append(kind(role=action.requestor, content=None, tool_calls=[call]))
        messages.append(env.get_response(call))
    info = [str(x) for x in ((criteria.communicate_info if criteria else None) or [])]
    messages.append(AssistantMessage(role="assistant", content=" ".join(info) or "Done."))
    sim = SimulationRun(id=f"gold-{task.id}", task_id=task.id, timestamp="", start_time="", end_time="",
                        duration=0.0, termination_reason=TerminationReason.AGENT_STOP, messages=messages)
    reward = evaluate_simulation(simulation=sim, task=task, evaluation_type=EvaluationType.ALL, solo_mode=False,
                                 domain=suite, env_kwargs=kwargs)
    return float(reward.reward)


def _say(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def main() -> int:
    """Serve the protocol of the module docstring on stdin/stdout; return the exit status."""
    try:
        from loguru import logger
        from tau2.data_model.tasks import Task
        from tau2.registry import registry
        from tau2.utils.utils import DATA_DIR
    except ImportError as e:
        _say({"error": f"τ³ is not importable by {sys.executable} ({e})"})
        return 2
    logger.remove()  # τ³ logs every tool answer at debug level
    first = sys.stdin.readline()
    try:
        request = json.loads(first)
        suite, ids = str(request["suite"]), [str(i) for i in request["task_ids"]]
        retrieval = request.get("retrieval")
        source = Path(DATA_DIR) / "tau2" / "domains" / suite / "tasks.json"
        by_id = {t["id"]: t for t in json.loads(source.read_text())}
        tasks = [Task.model_validate(by_id[i]) for i in ids]
        constructor = registry.get_env_constructor(suite)
    except (ValueError, KeyError, OSError) as e:
        _say({"error": f"cannot load the tasks: {type(e).__name__}: {e}"})
        return 2
    _say({"ready": len(tasks)})
    for line in sys.stdin:
        if line.strip() != "round":
            continue
        seconds, cpu, rewards = [], [], []
        for task in tasks:
            t0, c0 = time.perf_counter(), time.thread_time()
            rewards.append(trial(suite, constructor, task, retrieval))
            cpu.append(time.thread_time() - c0)
            seconds.append(time.perf_counter() - t0)
        _say({"seconds": seconds, "cpu": cpu, "rewards": rewards})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Hand-made run documents for the report tests (small enough to check every number by hand)."""

from __future__ import annotations

from typing import Any

INJECTED = "<script>alert(1)</script>"
FAILED_MARKER = "order #W-FAILED-7 looks wrong"


def trial(task: str, index: int, passed: bool, *, failure: str | None = None, reason: str = "user_stop",
          agent_cost: float | None = 0.0, persona: str | None = None, duration: float = 1.0,
          messages: list[dict[str, Any]] | None = None, tool_calls: list[dict[str, Any]] | None = None,
          graded: bool = True) -> dict[str, Any]:
    comps = set((failure or "").replace(" ", "").split(",")) - {""}
    grade = {
        "passed": passed,
        "state": {"passed": "state" not in comps,
                  "differences": ([{"table": "orders", "key": ["#W1"], "field": "status", "expected": "cancelled",
                                    "actual": "pending"}] if "state" in comps else []),
                  "added": [], "removed": []},
        "outputs": {"passed": "outputs" not in comps, "missing": ["180.42"] if "outputs" in comps else []},
        "process": {"passed": "process" not in comps,
                    "violations": ["forbidden tool called: cancel_order"] if "process" in comps else []},
        "failure": failure,
    }
    t: dict[str, Any] = {
        "task_id": task, "trial": index, "seed": 1000 + index, "passed": passed, "termination_reason": reason,
        "grade": grade if graded else None,
        "trajectory": {
            "messages": messages or [
                {"role": "user", "content": f"hello from {task}/{index}", "tool_calls": [], "tool_call_id": None,
                 "name": None},
                {"role": "assistant", "content": "done", "tool_calls": [], "tool_call_id": None, "name": None},
            ],
            "tool_calls": tool_calls or [],
            "agent_usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": agent_cost, "calls": 1},
            "user_usage": {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "calls": 0},
            "turns": 2, "steps": 1, "agent_seconds": duration / 2, "user_seconds": 0.01, "tool_seconds": 0.0,
            "termination_reason": reason, "error": None,
        },
        "duration_s": duration, "error": None,
    }
    if persona is not None:
        t["persona"] = persona
    return t


def failed_messages() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A conversation with a tool call whose texts carry an injected script and a marker."""
    messages = [
        {"role": "user", "content": f"Cancel my order please {INJECTED}", "tool_calls": [], "tool_call_id": None,
         "name": None},
        {"role": "assistant", "content": None, "tool_call_id": None, "name": None,
         "tool_calls": [{"id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W1<b>"},
                         "raw_arguments": None}]},
        {"role": "tool", "content": '{"order_id": "#W1", "status": "pending"}', "tool_calls": [],
         "tool_call_id": "c1", "name": "get_order_details"},
        {"role": "assistant", "content": f"Sorry, {FAILED_MARKER}.", "tool_calls": [], "tool_call_id": None,
         "name": None},
    ]
    calls = [{"step": 0, "call_id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W1<b>"},
              "raw_arguments": None, "kind": "read", "status": "tool_error", "content": "not found",
              "duration_s": 0.001, "bug": None}]
    return messages, calls


def small_document() -> dict[str, Any]:
    """Two tasks x 3 planned trials: one duplicate record (a/1) and one missing trial (b/1).

    Outcomes used by the metrics: a = [pass, pass, fail(state)], b = [fail(outputs), missing, pass].
    """
    messages, calls = failed_messages()
    trials = [
        trial("a", 0, True, agent_cost=0.01, persona="patient", duration=1.0),
        trial("a", 1, True, agent_cost=0.02, persona="patient", duration=2.0),
        trial("a", 1, False, failure="state", agent_cost=0.5, persona="patient"),  # duplicate: ignored
        trial("a", 2, False, failure="state", agent_cost=None, persona="impatient", duration=3.0),
        trial("b", 0, False, failure="outputs", agent_cost=0.03, persona="impatient", duration=4.0,
              messages=messages, tool_calls=calls),
        trial("b", 2, True, agent_cost=0.04, persona="impatient", duration=5.0),
    ]
    return {
        "format": "tausim.run", "version": 1, "run_id": "hand-1", "git_revision": "abc",
        "config": {"domain": "retail", "agent": "null", "user": "scripted", "trials": 3, "seed": 0,
                   "task_ids": ["a", "b"]},
        "trials": trials,
    }

"""Hunt-style cases of the returns domain's task ``return-6201``: the same task pinned to a seed, moves, a persona or
a trajectory prefix (for the lint, prefix-case and message tests)."""

from __future__ import annotations

import json
from pathlib import Path

RETURNS = Path(__file__).resolve().parents[2] / "domains" / "returns" / "tasks" / "builtin.json"
PREFIX = {"messages": [{"role": "user", "content": "I want to return my order."}],
          "next_step": {"must_not_call": [{"kind": "write"}]}}
PERSONA = {"name": "terse", "description": "Short answers."}


def returns_task() -> dict:
    return next(t for t in json.loads(RETURNS.read_text())["tasks"] if t["id"] == "return-6201")


def pin(task: dict, case_id: str, **pins) -> dict:
    out = json.loads(json.dumps(task))
    out["id"] = case_id
    for key, value in pins.items():
        if key in ("moves", "persona"):
            out["scenario"][key] = value
        else:
            out[key] = value
    return out

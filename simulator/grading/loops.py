"""Loop detection: the same tool call made over and over (grading component ``loops``).

Two calls are the same when they name the same tool and have the same arguments once the tool's declared
volatile top-level arguments (:meth:`simulator.domain.Domain.volatile_arguments`, e.g. timestamps or request
ids) are removed; arguments compare as canonical JSON (keys sorted), and unparsable arguments as their raw
text. A call made right after the same call returned an error (any status but ``ok``) is a retry and does not
count. A loop is a call counted more than ``1 + threshold`` times (``threshold`` repeats are allowed), whatever
else happened between the repeats.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from simulator.orchestrator import ToolCallRecord, Trajectory

__all__ = ["LoopsResult", "check_loops", "call_key"]


class LoopsResult(BaseModel):
    """Outcome of loop detection."""

    passed: bool = True
    threshold: int | None = None
    """Identical repeats that were allowed."""
    repeats: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per looping call: ``{"tool", "arguments", "count"}`` (``count`` counted calls, retries after
    an error excluded; ``arguments`` without the volatile fields)."""


def call_key(call: ToolCallRecord, volatile: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """Return the identity of a call for loop detection: ``(tool, canonical JSON of its stable arguments)``."""
    if call.arguments is None:
        return call.name, f"raw:{call.raw_arguments or ''}"
    drop = set(volatile.get(call.name, ()))
    args = {k: v for k, v in call.arguments.items() if k not in drop}
    return call.name, json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


def check_loops(trajectory: Trajectory, threshold: int, volatile: Mapping[str, Sequence[str]] | None = None
                ) -> LoopsResult:
    """Find tool calls repeated more than ``threshold`` times.

    Args:
        trajectory: the trial's trajectory.
        threshold: identical repeats allowed (0: any repeat is a loop).
        volatile: tool name -> argument names to ignore.

    Returns:
        :class:`LoopsResult`; ``passed`` when no call is repeated more than ``threshold`` times. Example with
        threshold 1: ``get(a)``, ``get(a)`` passes; ``get(a)``, ``get(a)``, ``get(a)`` is a loop of count 3;
        ``cancel(x) -> error``, ``cancel(x)`` counts ``cancel(x)`` once.
    """
    counts: dict[tuple[str, str], int] = {}
    shown: dict[tuple[str, str], dict[str, Any]] = {}
    previous: tuple[tuple[str, str], str] | None = None
    for call in trajectory.tool_calls:
        key = call_key(call, volatile or {})
        retry = previous is not None and previous[0] == key and previous[1] != "ok"
        previous = (key, call.status)
        if retry:
            continue
        counts[key] = counts.get(key, 0) + 1
        if key not in shown:
            shown[key] = json.loads(key[1]) if not key[1].startswith("raw:") else {"raw": key[1][4:]}
    repeats = [{"tool": k[0], "arguments": shown[k], "count": n} for k, n in counts.items() if n > threshold + 1]
    return LoopsResult(passed=not repeats, threshold=threshold, repeats=repeats)

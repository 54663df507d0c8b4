"""Loop detection: the same tool call made over and over (grading component ``loops``).

Two calls are the same when they name the same tool and have the same arguments once the tool's declared
volatile arguments (:meth:`simulator.world.domain.Domain.volatile_arguments`, e.g. timestamps or request ids) are
removed; arguments compare as canonical JSON (keys sorted), and unparsable arguments as their raw text.

Volatile arguments are removed at any depth: a plain name (``request_id``) is removed wherever it occurs as a
key, in nested objects and in objects inside lists; a dotted path (``meta.trace.id``) removes that one path
from the top, lists along the way traversed element by element.

A call made right after the same call returned an error (any status but ``ok``) is a retry; each identical call
gets at most ``retries`` such retries over the trial (default :data:`DEFAULT_RETRIES`, one retry after a
transient error), and a retry beyond the allowance counts like any other call. A loop is a call counted more
than ``1 + threshold`` times (``threshold`` repeats are allowed), whatever else happened between the repeats.
So an agent calling a tool that does not exist ten times with the same arguments is a loop at the default
threshold, while one retry after a transient error is not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.types.grade import LoopsResult
from simulator.types.trajectory import ToolCallRecord, Trajectory

__all__ = ["DEFAULT_RETRIES", "call_key", "check_loops", "strip_volatile"]

DEFAULT_RETRIES = 1
"""Retries of a failed call exempt from loop counting when the task does not set ``loop_retries``."""




def _drop_path(value: Any, path: Sequence[str]) -> Any:
    if isinstance(value, list):
        return [_drop_path(v, path) for v in value]
    if not isinstance(value, dict) or not path:
        return value
    head, rest = path[0], path[1:]
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    return {k: (_drop_path(v, rest) if k == head else v) for k, v in value.items()}


def _drop_name(value: Any, name: str) -> Any:
    if isinstance(value, list):
        return [_drop_name(v, name) for v in value]
    if isinstance(value, dict):
        return {k: _drop_name(v, name) for k, v in value.items() if k != name}
    return value


def strip_volatile(arguments: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """Return a copy of call arguments without the volatile fields, at any depth.

    Args:
        arguments: the call's arguments (a JSON object).
        fields: volatile fields: plain names (removed wherever they occur as a key) or dotted paths from the top
            (``"meta.trace.id"``; lists along the path are traversed element by element).

    Returns:
        The arguments without those fields; the input is not modified. Example: ``{"a": 1, "meta": {"request_id":
        "r1", "b": [{"request_id": "r2", "c": 3}]}}`` without ``["request_id"]`` is ``{"a": 1, "meta": {"b":
        [{"c": 3}]}}``.
    """
    out: Any = dict(arguments)
    for name in fields:
        out = _drop_path(out, name.split(".")) if "." in name else _drop_name(out, name)
    return dict(out)


_KEY_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
"""``json.dumps(..., sort_keys=True, separators=(",", ":"), default=str)``'s encoder, made once (settings only)."""


def call_key(call: ToolCallRecord, volatile: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """Return the identity of a call for loop detection: ``(tool, canonical JSON of its stable arguments)``.

    Args:
        call: the recorded call.
        volatile: tool name -> volatile fields (see :func:`strip_volatile`).
    """
    if call.arguments is None:
        return call.name, f"raw:{call.raw_arguments or ''}"
    fields = volatile.get(call.name)
    args = strip_volatile(call.arguments, list(fields)) if fields else call.arguments
    return call.name, _KEY_JSON.encode(args)


def check_loops(trajectory: Trajectory, threshold: int, volatile: Mapping[str, Sequence[str]] | None = None,
                retries: int = DEFAULT_RETRIES) -> LoopsResult:
    """Find tool calls repeated more than ``threshold`` times.

    Args:
        trajectory: the trial's trajectory.
        threshold: identical repeats allowed (0: any repeat is a loop).
        volatile: tool name -> volatile fields to ignore (plain names at any depth, or dotted paths).
        retries: retries right after an error exempt per identical call (0: every retry counts).

    Returns:
        :class:`LoopsResult`; ``passed`` when no call is repeated more than ``threshold`` times. Examples with
        threshold 1: ``get(a)``, ``get(a)`` passes; ``get(a)``, ``get(a)``, ``get(a)`` is a loop of count 3;
        ``cancel(x) -> error``, ``cancel(x)`` counts ``cancel(x)`` once; with threshold 0, ``nope(x) -> error``
        three times counts ``nope(x)`` twice (the second call is the one exempt retry): a loop.

    Raises:
        ValueError: a negative ``threshold`` or ``retries``.
    """
    if threshold < 0 or retries < 0:
        raise ValueError(f"loop threshold and retries must not be negative, got {threshold} and {retries}")
    counts: dict[tuple[str, str], int] = {}
    exempt: dict[tuple[str, str], int] = {}
    previous: tuple[tuple[str, str], str] | None = None
    for call in trajectory.tool_calls:
        key = call_key(call, volatile or {})
        retry = previous is not None and previous[0] == key and previous[1] != "ok"
        previous = (key, call.status)
        if retry and exempt.get(key, 0) < retries:
            exempt[key] = exempt.get(key, 0) + 1
            continue
        counts[key] = counts.get(key, 0) + 1
    repeats = [{"tool": k[0], "arguments": json.loads(k[1]) if not k[1].startswith("raw:") else {"raw": k[1][4:]},
                "count": n} for k, n in counts.items() if n > threshold + 1]
    return LoopsResult(passed=not repeats, threshold=threshold, retries=retries, repeats=repeats)

"""Peer (tau-bench) data for the tests: where a domain's folder is, and comparison of a gold replay with the
outcome tau-bench's own environment recorded for the same task.

The peer recorded, per task, the response of every gold action and the final state diff
(``../shared/peers/tau-bench/gold``). A replay matches when it gives the same diff (numbers at cent
precision) and the same pattern of error/non-error responses (up to a transfer that ends the episode,
``done_at_action``); successful responses are also compared exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.execution.parity import ReplayResult

__all__ = ["cents", "is_error", "mismatch", "peer_domain_dir"]


def cents(x: Any) -> Any:
    """Normalise numbers to cents (``25 == 25.0``, ``0.04999999999999716 == 0.05``), recursively."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int | float):
        return round(float(x), 2) + 0.0
    if isinstance(x, list):
        return [cents(v) for v in x]
    if isinstance(x, dict):
        return {k: cents(v) for k, v in x.items()}
    return x


def is_error(response: str) -> bool:
    """Tell whether a tool response is an error (tau-bench's responses start with ``Error``)."""
    return response.startswith("Error")


def mismatch(ours: ReplayResult, gold: dict[str, Any]) -> str | None:
    """Return why our replay differs from the peer's recorded outcome, or None when it matches.

    Args:
        ours: our replay of one task.
        gold: the peer's record of it: ``diff``, ``responses`` and optionally ``done_at_action``.
    """
    if cents(ours.diff) != cents(gold["diff"]):
        return "diff differs"
    done = gold.get("done_at_action")
    expected = gold["responses"] if done is None else gold["responses"][: done + 1]
    got = ours.responses[: len(expected)]
    if [is_error(r) for r in got] != [is_error(r) for r in expected]:
        return f"error pattern differs: ours {[is_error(r) for r in got]}, gold {[is_error(r) for r in expected]}"
    for i, (r, g) in enumerate(zip(got, expected, strict=True)):
        if not is_error(g) and r != g:
            return f"response {i} differs:\n  ours {r[:300]}\n  gold {g[:300]}"
    return None


def peer_domain_dir(peers_dir: Path, domain: str, *files: str) -> Path:
    """Return the tau-bench folder of ``domain`` (data/, tasks_*.json, wiki.md), or skip the calling test.

    Args:
        peers_dir: the tau-bench peer folder.
        domain: the peer's domain folder name (``retail``, ``airline``).
        files: further files the test needs in that folder (``tasks_test.json``).
    """
    path = peers_dir / domain
    if not (path / "data").is_dir():
        pytest.skip(f"tau-bench {domain} data not found at {path / 'data'}")
    for name in files:
        if not (path / name).is_file():
            pytest.skip(f"tau-bench {domain} {name} not found at {path}")
    return path

"""Honest comparisons: refuse to compare runs whose comparability fingerprints differ.

``tausim gate``, ``tausim calibrate`` and ``tausim judge compare`` call :func:`check_comparable` before they
compare: runs graded with another simulated user, task-set version, grader version or reward basis, policy or
domain mode measure something else, and their difference says nothing about the agent. The check refuses
(:class:`IncomparableRunsError`, exit 2 in the CLI, naming each differing part with both values) unless
``allow`` is set, in which case the differences come back as notes to print above the result. Runs written
before fingerprints existed are compared on what their config tells; the parts it cannot tell are reported as
unknown in a warning (see :mod:`simulator.storage.fingerprint`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import GateError
from simulator.storage.fingerprint import fingerprint_differences

__all__ = ["IncomparableRunsError", "check_comparable", "option_differences"]


class IncomparableRunsError(GateError):
    """Two runs' comparability fingerprints differ; the message names each differing part."""


def check_comparable(first: Mapping[str, Any], second: Mapping[str, Any], *, names: tuple[str, str],
                     allow: bool = False, exempt: Sequence[str] = ()) -> list[str]:
    """Check that two runs may be compared.

    Args:
        first: the first run document (e.g. the baseline).
        second: the second run document.
        names: how messages call the two runs (``("baseline", "candidate")``).
        allow: compare anyway (``--allow-incomparable``): the differences are returned as notes.
        exempt: fingerprint parts the comparison varies on purpose (``user`` for a calibration).

    Returns:
        Lines to print above the result: ``incomparable: <part>: ...`` for each difference (only with ``allow``),
        and a ``fingerprint unknown`` warning when a run predates fingerprints.

    Raises:
        IncomparableRunsError: a part differs and ``allow`` is false.
    """
    cmp = fingerprint_differences(first, second, names=names, exempt=exempt)
    lines = [_readable(line, part, first, second, names) for line, (part, _, _) in
             zip(cmp.describe(names), cmp.differences, strict=True)]
    if lines and not allow:
        raise IncomparableRunsError(
            "the runs are not comparable (their fingerprints differ): " + "; ".join(lines)
            + ". Compare runs made with the same simulated user, task set, grader, policy, domain mode and vary "
            "setting (`tausim run --vary`), or pass --allow-incomparable")
    notes = [f"incomparable: {line}" for line in lines]
    if cmp.unrecorded:
        notes.append(f"warning: {' and '.join(cmp.unrecorded)} recorded no comparability fingerprint (an older run); "
                     f"unknown parts not compared: {', '.join(cmp.unknown) or 'none'}")
    return notes


def option_differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The domain options (``config.options``) two run documents set differently.

    Args:
        first: a run document.
        second: another run document.

    Returns:
        ``[(option, first value, second value), ...]`` sorted by option; a value missing on one side is None.
    """
    a = (first.get("config") or {}).get("options") or {}
    b = (second.get("config") or {}).get("options") or {}
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _readable(line: str, part: str, first: Mapping[str, Any], second: Mapping[str, Any],
              names: tuple[str, str]) -> str:
    """A difference's line; for the domain mode (a hash of the options) also the options that differ."""
    if part != "domain.mode":
        return line
    diffs = option_differences(first, second)
    if not diffs:
        return line
    shown = ", ".join(f"{k}: {names[0]} {json.dumps(a, default=str)}, {names[1]} {json.dumps(b, default=str)}"
                      for k, a, b in diffs[:5])
    return f"domain options differ ({shown}{', ...' if len(diffs) > 5 else ''}; {line})"

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

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import GateError
from simulator.storage.fingerprint import fingerprint_differences

__all__ = ["IncomparableRunsError", "check_comparable"]


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
    lines = cmp.describe(names)
    if lines and not allow:
        raise IncomparableRunsError(
            "the runs are not comparable (their fingerprints differ): " + "; ".join(lines)
            + ". Compare runs made with the same simulated user, task set, grader, policy and domain mode, or "
            "pass --allow-incomparable")
    notes = [f"incomparable: {line}" for line in lines]
    if cmp.unrecorded:
        notes.append(f"warning: {' and '.join(cmp.unrecorded)} recorded no comparability fingerprint (an older run); "
                     f"unknown parts not compared: {', '.join(cmp.unknown) or 'none'}")
    return notes

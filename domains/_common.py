"""What the built-in tau-bench domains (retail, airline) share beyond the public kit: their tau2 user records.

The generic helpers (storage, loading, dumping, table access, the shared tools, :class:`JsonFolderDomain`,
document tables, data generators) are public in :mod:`simulator.world.kit`.
"""

from __future__ import annotations

from typing import Any

from simulator.world.kit import RecordChecker, kind

__all__ = ["strip_user_id"]


def strip_user_id(r: RecordChecker, raw: Any) -> Any:
    """Return a user record without tau2's ``user_id`` key, checking that it equals the record's key.

    tau2-bench adds ``user_id`` to every user of a ``db.json``; the tables store the id once (the key), and
    the tau2 tool mode renders it back. A record that is not an object is returned as it is (the caller's
    check names the problem).

    Args:
        r: the checker bound to the user record (its key is the user id).
        raw: the record as read, e.g. ``{"user_id": "mia_li_3668", "name": {...}, ...}``.

    Returns:
        The record without ``user_id`` (a new dict), or ``raw`` itself when it has no ``user_id``.

    Raises:
        DomainError: ``user_id`` is not a string or differs from the record's key.
    """
    if not isinstance(raw, dict) or "user_id" not in raw:
        return raw
    value = raw["user_id"]
    if not isinstance(value, str):
        r.fail("user_id", f"expected a string, got {kind(value)}")
    r.same_id(value, "user_id", r.key)
    return {k: v for k, v in raw.items() if k != "user_id"}

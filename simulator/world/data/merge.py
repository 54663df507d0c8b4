"""The deep merge of JSON values: objects key by key (recursively), any other value replaced (tau2's merge)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge"]


def deep_merge(base: Any, patch: Any) -> Any:
    """Return ``base`` with ``patch`` merged in: objects key by key (recursively), any other value replaced.

    This is how tau2-bench merges ``initialization_data`` into its database, and how a data set's defaults are
    overlaid with the given values. A list is replaced whole, never merged element by element.

    Args:
        base: the current value, e.g. ``{"sim": {"status": "active", "pin": "1234"}}``; not changed.
        patch: the values to merge, e.g. ``{"sim": {"status": "locked"}}``.

    Returns:
        A new value (``{"sim": {"status": "locked", "pin": "1234"}}``). Parts of ``base`` that ``patch`` does
        not reach, and the values taken from ``patch``, are shared, not copied.
    """
    if isinstance(base, dict) and isinstance(patch, Mapping):
        out = dict(base)
        for k, v in patch.items():
            out[k] = deep_merge(base[k], v) if k in base else v
        return out
    return patch

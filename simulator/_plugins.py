"""Loading user-supplied components named as ``py:package.module:attribute``."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["load_reference"]


def load_reference(spec: str, what: str) -> Any:
    """Import the object named by ``py:package.module:attribute``.

    Args:
        spec: the reference, e.g. ``py:my_agents.retail:make_agent``.
        what: what is being loaded (``agent``, ``user``), for error messages.

    Returns:
        The attribute (for agents and users: a factory ``(TrialContext) -> Agent | UserSimulator``).

    Raises:
        ValueError: malformed reference, module not importable, or attribute missing or not callable.
    """
    ref = spec.removeprefix("py:")
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--{what} {spec!r}: expected py:package.module:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"--{what} {spec!r}: cannot import module {module_name!r}: {e}") from e
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--{what} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"--{what} {spec!r}: {attr!r} is not callable")
    return obj

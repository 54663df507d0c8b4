"""Loading user-supplied components named as ``py:package.module:attribute``."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

__all__ = ["load_reference"]


def _path_hint(module_name: str, error: ImportError) -> str:
    """A hint when the module is in the current directory but that directory is not on the import path."""
    top = module_name.split(".")[0]
    if not isinstance(error, ModuleNotFoundError) or error.name not in (top, module_name):
        return ""
    cwd = Path.cwd()
    here = (cwd / f"{top}.py").is_file() or (cwd / top).is_dir()
    on_path = any(Path(p or ".").resolve() == cwd.resolve() for p in sys.path)
    if not here or on_path:
        return ""
    return (f". {top!r} is in the current directory {cwd}, which is not on Python's import path: run with "
            "PYTHONPATH=. set, e.g. `PYTHONPATH=. tausim run ...`")


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
        raise ValueError(f"--{what} {spec!r}: cannot import module {module_name!r}: {e}{_path_hint(module_name, e)}"
                         ) from e
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--{what} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"--{what} {spec!r}: {attr!r} is not callable")
    return obj

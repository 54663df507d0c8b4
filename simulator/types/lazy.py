"""Lazy public names for a package (PEP 562): a name's home module is imported on first use.

The facade (:mod:`simulator`) and the ``report`` and ``authoring`` packages list each public name with the module
that defines it, so that importing the package costs nothing until a name is read (``tausim --version`` and a run
that needs neither the HTML page nor the conformance suite stay fast). This module imports only the standard
library.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str],
                 public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's module-level ``__getattr__`` and ``__dir__`` that load public names from their homes.

    Args:
        package: the package's ``__name__`` (it must be in ``sys.modules`` when a name is first read).
        homes: public name -> dotted name of the module defining it.
        public: the package's ``__all__`` (what ``dir()`` lists besides what is loaded).

    Returns:
        ``(__getattr__, __dir__)``: ``__getattr__(name)`` imports ``homes[name]``, caches the value in the package's
        namespace (later reads do not come back here) and returns it; ``__dir__()`` is the sorted union of the
        package's namespace and ``public``.

    Raises:
        AttributeError: (from ``__getattr__``) ``name`` is not in ``homes`` (nor already in the namespace).
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module-level hook's name is fixed by PEP 562
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the module-level hook's name is fixed by PEP 562
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__

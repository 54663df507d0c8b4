"""Components from outside tausim: registries read from entry points, and ``py:package.module:attribute`` names.

A :class:`Registry` maps the scheme of a spec string (``oracle``, ``litellm`` in ``litellm:MODEL``) to a builder
registered by any installed package under one entry-point group (``tausim.agents``, ``tausim.users``); tausim's own
schemes are registered the same way, by tausim's ``pyproject.toml``. Registries are lazy: listing reads the names
from the installed packages' metadata and imports nothing; only the entry point of the scheme asked for is loaded,
so a broken registration fails only when it is used, naming its scheme, its package and the error.

The installed packages' metadata is read once per state of the import path (:func:`group_entry_points`): a run
asks for its domain, agent and user and records the plug-in packages' versions, and each read of every installed
distribution's ``entry_points.txt`` costs milliseconds (~15-25 ms with 170 distributions).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from simulator.errors import RegistryError

__all__ = ["Registration", "Registry", "RegistryError", "group_entry_points", "load_reference"]

B = TypeVar("B")


@dataclass(frozen=True)
class Registration:
    """One registered scheme, as its package's metadata states it (nothing imported)."""

    scheme: str
    """The scheme name: the part of a spec before the first ``:``."""
    target: str
    """The entry point's object reference, ``module:attribute``."""
    origin: str
    """The distribution (package) that registers it, or ``?`` when the metadata does not say."""


def _import_path_state() -> tuple[tuple[str, int], ...]:
    """Return ``sys.path`` with each entry's modification time (ns; -1 when missing).

    Installing or removing a package changes its folder's time; adding a folder to the path changes the path.
    """
    state = []
    for entry in sys.path:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except OSError:
            mtime = -1
        state.append((entry, mtime))
    return tuple(state)


@functools.lru_cache(maxsize=1)
def _scan(state: tuple[tuple[str, int], ...]) -> EntryPoints:
    """Every entry point of the installed distributions (``state`` is only the cache key)."""
    every: Any = entry_points()
    if isinstance(every, EntryPoints):  # Python 3.12 on
        return every
    return EntryPoints(ep for group in sorted(every.groups) for ep in every.select(group=group))  # 3.11: groups


def group_entry_points(*, group: str) -> EntryPoints:
    """Return the installed entry points of ``group``, as ``importlib.metadata.entry_points(group=...)`` does.

    The metadata of every installed distribution is read once per state of the import path (``sys.path`` and the
    modification times of its folders, a few microseconds to check) and kept for the next call: a package installed
    or removed since, or a folder put on or taken off the path, is seen at the next call. This memo of what is
    installed is the one cache of this module; nothing else is kept between calls.

    Args:
        group: the entry-point group, e.g. ``tausim.domains``.

    Returns:
        The group's entry points (each with its ``dist``), in the order of the import path.
    """
    return _scan(_import_path_state()).select(group=group)


def _registration(ep: EntryPoint) -> Registration:
    dist = getattr(ep, "dist", None)
    return Registration(ep.name, ep.value, str(dist.name) if dist is not None else "?")


class Registry(Generic[B]):
    """Scheme name -> builder, read lazily from the entry-point group ``group`` at each call.

    The installed packages are read when asked (:func:`group_entry_points`: a package installed since is seen; a
    test's temporary registration leaves nothing behind once removed from ``sys.path``).

    Args:
        group: the entry-point group, e.g. ``tausim.agents``.
        role: what the builders build (``agent``, ``user``), for messages (``--agent ...``).
    """

    def __init__(self, group: str, role: str) -> None:
        self.group = group
        self.role = role

    def registrations(self) -> list[Registration]:
        """Return every registration of the group, sorted by scheme then package; imports nothing."""
        return sorted((_registration(ep) for ep in group_entry_points(group=self.group)),
                      key=lambda r: (r.scheme, r.origin, r.target))

    def schemes(self) -> list[str]:
        """Return the registered scheme names, sorted and unique; imports nothing."""
        return sorted({r.scheme for r in self.registrations()})

    def builder(self, scheme: str, spec: str | None = None) -> B:
        """Load and return the builder registered for ``scheme`` (only that entry point is imported).

        Args:
            scheme: the scheme name.
            spec: the whole spec string, for messages (default: ``scheme``).

        Raises:
            RegistryError: no package registers ``scheme`` (the message lists the registered ones), two packages
                register it, or its entry point cannot be loaded or is not callable (the message names the
                scheme, the package, the entry point and the error).
        """
        spec = scheme if spec is None else spec
        found = [ep for ep in group_entry_points(group=self.group) if ep.name == scheme]
        if not found:
            known = ", ".join(self.schemes()) or "none"
            raise RegistryError(f"--{self.role} {spec!r}: unknown {self.role} {scheme!r}; registered {self.role}s "
                                f"(entry points {self.group}): {known}")
        if len(found) > 1:
            who = "; ".join(sorted(f"{r.origin} ({r.target})" for r in map(_registration, found)))
            raise RegistryError(f"--{self.role} {spec!r}: {self.role} {scheme!r} is registered by more than one "
                                f"package: {who}; uninstall one of them")
        reg = _registration(found[0])
        where = f"{self.role} {scheme!r} (entry point {reg.target!r} of package {reg.origin!r}, group {self.group})"
        try:
            obj = found[0].load()
        except Exception as e:  # noqa: BLE001 - any failure to import a plug-in is that plug-in's, reported as such
            detail = str(e).strip().splitlines()
            raise RegistryError(f"--{self.role} {spec!r}: cannot load {where}: {type(e).__name__}"
                                f"{': ' + detail[0] if detail else ''}") from e
        if not callable(obj):
            raise RegistryError(f"--{self.role} {spec!r}: {where} is not callable")
        return obj  # type: ignore[no-any-return]

    def build(self, spec: str, **options: Any) -> Any:
        """Build what ``spec`` (``SCHEME`` or ``SCHEME:ARG``) names: ``builder(ARG, **options)``.

        Raises:
            RegistryError: see :meth:`builder`.
            Exception: whatever the builder raises for a bad ``ARG`` or missing options (built-ins: ValueError).
        """
        scheme, _, arg = spec.partition(":")
        return self.builder(scheme, spec)(arg, **options)  # type: ignore[operator]


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

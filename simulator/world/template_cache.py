"""Template databases kept on disk between processes, each under a key made of everything that makes it.

Building a domain's template (reading the data files, creating the schema, inserting the rows through SQLAlchemy)
is about a twentieth of a one-task ``tausim run``; the built database is a few hundred kilobytes of serialized
SQLite. :meth:`simulator.world.domain.Domain.template` keeps it in a cache folder and reads it back in a later
process when its key is the same. The key (:func:`template_key`) is a digest of:

- the cache format, Python's, SQLite's and SQLAlchemy's versions;
- the domain class (module and name) and the template's options;
- the code that may build it: every ``.py`` file of ``simulator`` and of the top-level package (or module file) of
  each class the domain's class is made of (path, size and modification time in nanoseconds, as Python's own
  bytecode cache checks a source file); a domain class with a base defined where there is no file to check
  (``__main__``, a notebook) is not cached;
- the data: every file under the data folder (path, size and a digest of its bytes).

A domain takes part only when its :attr:`~simulator.world.domain.Domain.template_cacheable` says that its template
depends on nothing else (the JSON-folder domains say so); data given as a single file, a data folder over
:data:`MAX_DATA_BYTES`, or a file that cannot be read, build the template as before and store nothing. A cache file
holds a digest of its content, checked on every read: a damaged or half-written file is ignored and the template
built again. A folder that cannot be written costs nothing but the build. The folder keeps the
:data:`MAX_FILES` most recently written templates.

Folder: ``$TAUSIM_CACHE_DIR/templates`` when that variable is set (empty: no cache), else
``$XDG_CACHE_HOME/tausim/templates``, else ``~/.cache/tausim/templates``. Removing it is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy

__all__ = ["CACHE_ENV", "MAX_DATA_BYTES", "MAX_FILES", "PLAIN_BASE_MODULES", "cache_dir", "load_template",
           "store_template", "template_key"]

CACHE_ENV = "TAUSIM_CACHE_DIR"
"""Environment variable naming the cache folder (its ``templates`` subfolder is used); set and empty: no cache."""

MAX_FILES = 32
"""Templates kept in the folder; writing one more removes the least recently written."""

MAX_DATA_BYTES = 64 * 2**20
"""Data folders larger than this (bytes, all files) are not cached: hashing them would cost more than it saves."""

PLAIN_BASE_MODULES = frozenset(("builtins", "abc", "typing"))
"""Modules of base classes that build nothing (``object``, ``ABC``, ``Generic``): no code of theirs to check."""

_FORMAT = b"tausim template cache 1\n"
_DIGEST = 32  # hex characters of a blake2b-128 digest


def cache_dir() -> Path | None:
    """Return the templates' cache folder (see the module docstring), or None when the cache is turned off."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return Path(env) / "templates" if env else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tausim" / "templates"


def _code_files(root: Path) -> Iterator[tuple[str, int, int]]:
    """Yield ``(relative path, size, mtime_ns)`` of every ``.py`` file under ``root`` (no ``__pycache__``)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                yield os.path.relpath(os.path.join(folder, name), root), st.st_size, st.st_mtime_ns


def _code_root(module: str) -> Path | None:
    """The folder of ``module``'s top-level package, or the file of a top-level module.

    None when it has neither (a class defined in ``__main__``, a notebook, an interactive session).
    """
    if module == "__main__":
        return None
    top = sys.modules.get(module.partition(".")[0])
    paths = list(getattr(top, "__path__", None) or [])
    if paths:
        return Path(paths[0])
    file = getattr(top, "__file__", None)
    return Path(file) if file else None


def _code_roots(cls: type) -> list[Path] | None:
    """The code roots of ``simulator`` and of every class ``cls`` is made of (builtins aside), sorted.

    None when one of them has no file to check (its code could change unseen: no cache).
    """
    roots = {Path(__file__).resolve().parents[1]}  # simulator
    for klass in cls.__mro__:
        if klass.__module__ in PLAIN_BASE_MODULES:
            continue
        root = _code_root(klass.__module__)
        if root is None:
            return None
        roots.add(root)
    return sorted(roots)


def template_key(domain: Any, folder: Path, options: Mapping[str, Any]) -> str | None:
    """Return the cache key of ``domain``'s template for the data ``folder`` and ``options``, or None (no cache).

    Args:
        domain: the domain instance (its class and package are part of the key).
        folder: the data folder.
        options: the template's options (JSON-encoded with sorted keys into the key).

    Returns:
        32 hex digits; None when the data is not a folder, is larger than :data:`MAX_DATA_BYTES`, or a file of it
        or of the code cannot be read.
    """
    if not folder.is_dir():
        return None
    h = hashlib.blake2b(digest_size=_DIGEST // 2)
    cls = type(domain)
    head = [sys.version, sqlite3.sqlite_version, sqlalchemy.__version__, f"{cls.__module__}.{cls.__qualname__}",
            json.dumps(dict(options), sort_keys=True, default=str)]
    h.update(_FORMAT + json.dumps(head).encode())
    roots = _code_roots(cls)
    if roots is None:
        return None
    try:
        for root in roots:
            h.update(f"\0code {root}\n".encode())
            if root.is_file():
                st = root.stat()
                h.update(f"{root.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            for rel, size, mtime in _code_files(root) if root.is_dir() else ():
                h.update(f"{rel}\0{size}\0{mtime}\n".encode())
        total = 0
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            total += len(data)
            if total > MAX_DATA_BYTES:
                return None
            h.update(f"\0data {path.relative_to(folder).as_posix()}\0{len(data)}\0".encode())
            h.update(hashlib.blake2b(data, digest_size=32).digest())
    except OSError:  # a file gone or unreadable: no key, the template is built as without a cache
        return None
    return h.hexdigest()


def _payload_digest(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_DIGEST // 2).hexdigest().encode()


def load_template(key: str) -> bytes | None:
    """Return the serialized template stored under ``key``, or None (none stored, cache off, damaged file)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        raw = (folder / f"{key}.sqlite").read_bytes()
    except OSError:
        return None
    head = len(_FORMAT)
    if raw[:head] != _FORMAT or raw[head + _DIGEST:head + _DIGEST + 1] != b"\n":
        return None
    payload = raw[head + _DIGEST + 1:]
    if raw[head:head + _DIGEST] != _payload_digest(payload):
        return None
    return payload


def store_template(key: str, data: bytes) -> None:
    """Store a serialized template under ``key`` (atomically: readers see the old file or the whole new one).

    Nothing is stored when the cache is off; a folder that cannot be written is left alone (the cache only
    saves time). Beyond :data:`MAX_FILES` templates, the least recently written are removed.
    """
    folder = cache_dir()
    if folder is None:
        return
    with contextlib.suppress(OSError):  # an unwritable or full cache folder: the next process builds again
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_FORMAT + _payload_digest(data) + b"\n" + data)
            os.replace(tmp, folder / f"{key}.sqlite")
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        kept = sorted(folder.glob("*.sqlite"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[MAX_FILES:]:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()

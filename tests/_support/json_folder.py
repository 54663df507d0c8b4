"""Helpers for the tests of domains whose data set is a folder of ``{key: record}`` JSON files."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from simulator.world.domain import Domain, DomainError

__all__ = [
    "assert_bad_file_refused",
    "assert_load_fails",
    "assert_same_shape",
    "file_bytes",
    "read_files",
    "write_files",
]


def read_files(folder: Path, names: Iterable[str]) -> dict[str, Any]:
    """Return ``{name: parsed JSON of folder/name.json}``."""
    return {name: json.loads((folder / f"{name}.json").read_text()) for name in names}


def file_bytes(folder: Path, names: Iterable[str]) -> dict[str, bytes]:
    """Return ``{file name: its bytes}`` for the named files of ``folder``."""
    return {name: (folder / name).read_bytes() for name in names}


def write_files(folder: Path, data: dict[str, Any], names: Iterable[str]) -> Path:
    """Write ``data[name]`` as ``folder/name.json`` (indent 1) for each name; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.json").write_text(json.dumps(data[name], indent=1))
    return folder


def assert_same_shape(a: Any, b: Any, path: str = "") -> None:
    """Assert equal values, equal types (int stays int, float stays float) and equal key order."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: key order {list(a)} vs {list(b)}"
        for k in a:
            assert_same_shape(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_shape(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def assert_load_fails(domain: Domain, folder: Path, file: str, fragments: Iterable[str]) -> None:
    """Loading ``folder`` raises a DomainError that names ``folder/file`` and contains every fragment."""
    with pytest.raises(DomainError) as err:
        domain.template(folder)
    message = str(err.value)
    assert str(folder / file) in message
    for fragment in fragments:
        assert fragment in message, message


def assert_bad_file_refused(
    make_domain: Callable[[], Domain], folder: Path, file: str, truncated: str, cannot_read: str
) -> None:
    """A missing, truncated or non-object data file is refused with a DomainError naming the file.

    Args:
        make_domain: builds a fresh domain (one per attempt).
        folder: a valid data folder; ``file`` in it is removed, then overwritten.
        file: the data file to break (``orders.json``).
        truncated: JSON text cut short (``'{"#W1": '``).
        cannot_read: the regular expression expected after ``<file>: `` when the file is missing.
    """
    name = re.escape(file)
    (folder / file).unlink()
    with pytest.raises(DomainError, match=rf"{name}: {cannot_read}"):
        make_domain().template(folder)
    (folder / file).write_text(truncated)
    with pytest.raises(DomainError, match=rf"{name}: invalid JSON at line 1"):
        make_domain().template(folder)
    (folder / file).write_text("[]")
    with pytest.raises(DomainError, match=rf"{name}: expected an object"):
        make_domain().template(folder)

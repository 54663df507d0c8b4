"""Building blocks of seeded data generators: one random generator, unique ids, JSON files, the command line.

Every generator draws all its random choices from one ``numpy.random.Generator(PCG64(seed))`` (never the
global ``random`` module or numpy's global state), iterates collections in a fixed order and writes JSON
with the same layout, so the same seed always gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["UPPER_DIGITS", "IdPool", "cli_parser", "money", "new_rng", "pick", "write_data_set", "write_json_files"]

UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
"""Alphabet of tau-bench style ids such as airline reservation ids (``IdPool.chars(6)``)."""


def new_rng(seed: int) -> np.random.Generator:
    """Return the generator that makes every random choice of one data set.

    Args:
        seed: the data set's seed.

    Returns:
        ``numpy.random.Generator(PCG64(seed))``: the same seed always gives the same draws.
    """
    return np.random.Generator(np.random.PCG64(seed))


class IdPool:
    """Draws random ids that are unique within one namespace.

    Args:
        rng: the data set's generator.
        reserved: values never to hand out (e.g. ids a tool creates later).
    """

    def __init__(self, rng: np.random.Generator, reserved: Iterable[str] = ()):
        self._rng = rng
        self._used: set[str] = set(reserved)

    def digits(self, n: int) -> str:
        """Return a new ``n``-digit number (no leading zero) as a string."""
        while True:
            value = str(int(self._rng.integers(10 ** (n - 1), 10**n)))
            if value not in self._used:
                self._used.add(value)
                return value

    def chars(self, n: int, alphabet: str = UPPER_DIGITS) -> str:
        """Return a new string of ``n`` characters drawn from ``alphabet``."""
        while True:
            value = "".join(alphabet[int(i)] for i in self._rng.integers(len(alphabet), size=n))
            if value not in self._used:
                self._used.add(value)
                return value


def pick(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    """Return one element of ``seq``, uniformly (one draw of ``rng``).

    Args:
        rng: the data set's generator.
        seq: a non-empty sequence, e.g. ``("Ana", "Ben")``.

    Returns:
        One of its elements.
    """
    return seq[int(rng.integers(len(seq)))]


def money(x: float) -> float:
    """Round an amount to cents, as a Python float.

    Args:
        x: an amount (a Python or numpy number), e.g. ``12.3456``.

    Returns:
        The amount at cent precision, e.g. ``12.35``.
    """
    return round(float(x), 2)


def write_json_files(out_dir: str | Path, files: Mapping[str, Any]) -> list[Path]:
    """Write each ``{file name: document}`` as JSON (indent 2, newline at the end) into ``out_dir``.

    Args:
        out_dir: the folder; created if missing.
        files: file names and their documents, written in this order.

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, document in files.items():
        path = out / name
        with path.open("w", encoding="utf-8", newline="\n") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        written.append(path)
    return written


def write_data_set(
    out_dir: str | Path, data: Mapping[str, Any], files: Iterable[str], readme: str | None = None
) -> list[Path]:
    """Write a generated data set: one JSON file per table (see :func:`write_json_files`), and a README.

    Args:
        out_dir: the folder; created if missing.
        data: ``{table: {key: record}}``; table ``users`` is written as ``users.json``.
        files: the data file names, in the order to write them.
        readme: when given, the text of ``README.md`` (how to regenerate the data), written last.

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    written = write_json_files(out, {name: data[name.removesuffix(".json")] for name in files})
    if readme is not None:
        path = out / "README.md"
        path.write_text(readme, encoding="utf-8")
        written.append(path)
    return written


def cli_parser(prog: str, description: str, default_seed: int, default_out: Path) -> argparse.ArgumentParser:
    """Return an argument parser with the options every generator has: ``--seed`` and ``--out``.

    Args:
        prog: program name shown in the usage line.
        description: one line on what is generated.
        default_seed: the seed of the shipped data set.
        default_out: the built-in data folder.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--seed", type=int, default=default_seed, help=f"random seed (default {default_seed})")
    parser.add_argument("--out", type=Path, default=default_out,
                        help="output folder (default: the built-in data folder)")
    return parser

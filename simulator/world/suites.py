"""Suite tiers and holdout splits: choose tasks by tag, and keep a holdout split never used for tuning.

Tiers are tags: a task file tags its tasks (``"tags": ["smoke", "refund"]``), and ``tausim run --tags smoke``
runs the tasks carrying any of the tags given, ``--exclude-tags slow`` leaves out the tasks carrying any of
those (smoke / regression / full are a convention: full is no ``--tags``).

``tausim tasks split FILE --holdout 0.2 --seed S`` writes ``FILE.train.json`` and ``FILE.holdout.json`` beside
the file (or in ``--out-dir``): the same header, a seeded random share of the tasks in each (at least one task in
each when the file has two or more), and the top-level fields ``"split"`` (``train``/``holdout``),
``"split_seed"``, ``"split_of"`` (the source file name) and ``"holdout_fraction"``. A run of a split file records
the split (``split`` in its ``--out`` document) and reports mark holdout runs: tune on train, report on holdout.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import TaskFileError
from simulator.types.jsonfile import JSONTextError, decode_json
from simulator.types.tasks import Task, parse_tasks

__all__ = ["SPLITS", "select_tasks", "split_task_file", "split_tasks", "task_file_split"]

SPLITS = ("train", "holdout")
"""The split names ``tausim tasks split`` writes."""


def select_tasks(tasks: Sequence[Task], tags: Sequence[str] | None = None,
                 exclude_tags: Sequence[str] | None = None) -> list[Task]:
    """Return the tasks carrying any of ``tags`` (all when None or empty) and none of ``exclude_tags``.

    Args:
        tasks: the task set, in order.
        tags: wanted tags (a task needs one of them).
        exclude_tags: unwanted tags (a task with one of them is left out).

    Returns:
        The selected tasks, in the original order.

    Raises:
        TaskFileError: a tag that no task carries (a typo would silently select nothing), or nothing selected.
    """
    known = {tag for t in tasks for tag in t.tags}
    for flag, values in (("--tags", tags), ("--exclude-tags", exclude_tags)):
        unknown = sorted(set(values or ()) - known)
        if unknown:
            raise TaskFileError(f"{flag}: no task carries the tag(s) {', '.join(unknown)} (known tags: "
                                f"{', '.join(sorted(known)) or 'none'})")
    want, drop = set(tags or ()), set(exclude_tags or ())
    out = [t for t in tasks if (not want or want & set(t.tags)) and not drop & set(t.tags)]
    if not out:
        raise TaskFileError(f"no task left after --tags {','.join(sorted(want)) or '-'} --exclude-tags "
                            f"{','.join(sorted(drop)) or '-'}")
    return out


def split_tasks(n: int, holdout: float, seed: int) -> tuple[list[int], list[int]]:
    """Split task positions ``0..n-1`` into train and holdout at random (seeded).

    Args:
        n: number of tasks.
        holdout: share of the tasks held out, in (0, 1).
        seed: seed of the ``numpy.random.Generator(PCG64(seed))`` that permutes the tasks.

    Returns:
        ``(train, holdout)`` positions, each ascending; ``round(holdout * n)`` held out, kept between 1 and
        ``n - 1`` when ``n >= 2``.

    Raises:
        ValueError: ``holdout`` outside (0, 1) or ``n < 2``.
    """
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"--holdout must be in (0, 1), got {holdout}")
    if n < 2:
        raise ValueError(f"cannot split {n} task(s): need at least 2")
    size = min(n - 1, max(1, math.floor(holdout * n + 0.5)))
    order = np.random.Generator(np.random.PCG64(seed)).permutation(n)
    held = sorted(int(i) for i in order[:size])
    return [i for i in range(n) if i not in set(held)], held


def split_task_file(path: str | Path, holdout: float, seed: int, out_dir: str | Path | None = None
                    ) -> dict[str, Path]:
    """Write the train and holdout splits of a task file (see the module docstring).

    Args:
        path: a task file of our format (``"format": "tausim.tasks"``).
        holdout: share held out, in (0, 1).
        seed: the split seed.
        out_dir: where to write (default: beside the file).

    Returns:
        ``{"train": path, "holdout": path}``.

    Raises:
        TaskFileError: unreadable or malformed file, a tau-bench list (its ids are positions: splitting would
            renumber them), an already split file, a bad ``holdout``, or a missing ``out_dir``.
    """
    src = Path(path)
    try:
        data = decode_json(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFileError(f"{src}: cannot read task file: {e}") from e
    except JSONTextError as e:
        raise TaskFileError(f"{src}: {e}") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{src}: a tau-bench task list cannot be split (its task ids are positions); "
                            "convert it to a tausim task file first")
    parse_tasks(data, str(src))  # refuse a malformed file before writing anything
    if data.get("split") is not None:
        raise TaskFileError(f"{src}: field split: the file is already the {data['split']!r} split of "
                            f"{data.get('split_of')!r}")
    raw: list[Any] = data["tasks"]
    try:
        train, held = split_tasks(len(raw), holdout, seed)
    except ValueError as e:
        raise TaskFileError(f"{src}: {e}") from e
    where = Path(out_dir) if out_dir is not None else src.parent
    if not where.is_dir():
        raise TaskFileError(f"--out-dir {where}: not an existing directory")
    out: dict[str, Path] = {}
    for name, positions in (("train", train), ("holdout", held)):
        doc = {**data, "split": name, "split_seed": seed, "split_of": src.name, "holdout_fraction": holdout,
               "tasks": [raw[i] for i in positions]}
        target = where / f"{src.stem}.{name}.json"
        target.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        out[name] = target
    return out


def task_file_split(path: str | Path | None) -> str | None:
    """Return the split a task file is (``train``/``holdout``, written by :func:`split_task_file`), or None.

    Args:
        path: a task file, or None (built-in tasks: no split).
    """
    if path is None or not Path(path).is_file():
        return None
    try:
        data = decode_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # JSONTextError, UnicodeDecodeError
        return None  # the task loader reports an unreadable file with its own message
    split = data.get("split") if isinstance(data, dict) else None
    return str(split) if split is not None else None

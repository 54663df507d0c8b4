"""Where a run came from: the code's git revision, the package versions, Python, the split and the planned tasks.

Recorded with every run: by the results store when the run is created (:meth:`ResultsStore.open_run`) and in the
run document :func:`simulator.execution.session.run` writes without a store.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from email.message import Message
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path
from typing import Any

from simulator.grading import GRADER_VERSION
from simulator.storage.fingerprint import make_fingerprint
from simulator.storage.store import tasks_hash
from simulator.types.spec import RunSpec
from simulator.types.tasks import Task
from simulator.world.plugins import group_entry_points
from simulator.world.suites import task_file_split

__all__ = ["PLUGIN_GROUPS", "git_revision", "package_versions", "python_version", "run_fingerprint",
           "run_provenance"]


def git_revision() -> str | None:
    """Return the git revision (40 hex digits) of the tausim checkout, or None outside a checkout (5 s timeout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parents[2], check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


PLUGIN_GROUPS = ("tausim.domains", "tausim.agents", "tausim.users")
"""The entry-point groups other packages register domains, agents and users under."""


def package_versions() -> dict[str, str]:
    """Return ``{package: version}`` of tausim, its main dependencies and every package registering plug-ins.

    Plug-in packages are those with an entry point in :data:`PLUGIN_GROUPS` (read from their metadata, nothing
    imported), so a run records the versions of the packages its domain, agent and user may come from.
    """
    out = {}
    for name in ("tausim", "litellm", "sqlalchemy", "pydantic", "numpy"):
        try:
            out[name] = _headers(metadata.distribution(name))["Version"]
        except metadata.PackageNotFoundError:
            continue
    seen: list[Any] = []  # each distribution once: its name and version parse its METADATA header block again
    for group in PLUGIN_GROUPS:  # the run's registries read the same scan of the installed distributions
        for ep in group_entry_points(group=group):
            dist = getattr(ep, "dist", None)
            if dist is None or any(dist is d for d in seen):
                continue
            seen.append(dist)
            meta = _headers(dist)
            if meta["Name"] not in out:
                out[meta["Name"]] = meta["Version"]
    return out


def _headers(dist: metadata.Distribution) -> Message:
    """The header block of a distribution's metadata file, read as ``Distribution.metadata`` reads the whole file.

    ``metadata.version`` and ``Distribution.metadata`` parse the long description too (litellm's is most of a
    run's metadata reading); the ``Name`` and ``Version`` headers are the same from the header block alone.
    """
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("")
    return HeaderParser().parsestr(text)  # type: ignore[arg-type]  # None raises, as metadata does


def python_version() -> str:
    """Return the running Python's version, e.g. ``"3.11.7"``."""
    return sys.version.split()[0]


def run_fingerprint(spec: RunSpec, tasks: Sequence[Task], users: Any = None) -> dict[str, Any]:
    """Return a run's comparability fingerprint (:mod:`simulator.storage.fingerprint`).

    Args:
        spec: the run's spec as built (with its ``policy_sha256``).
        tasks: every task of the plan.
        users: the run's user factory; an LLM user's ``prompt_template`` is hashed (sha256) when it has one.

    Returns:
        The fingerprint (see :func:`simulator.storage.fingerprint.make_fingerprint`); the reward basis is the
        union of the planned tasks' grade components, plus ``judge`` when a calibrated judge gates.
    """
    template = getattr(users, "prompt_template", None)
    prompt = hashlib.sha256(template.encode("utf-8")).hexdigest() if isinstance(template, str) else None
    basis = {str(c) for t in tasks for c in t.grade_basis()}
    if spec.judge is not None and spec.judge.calibration is not None:
        basis.add("judge")
    return make_fingerprint(spec.model_dump(mode="json"), tasks_hash=tasks_hash(list(tasks)),
                            user_prompt_sha256=prompt, grader_version=GRADER_VERSION, reward_basis=sorted(basis))


def run_provenance(spec: RunSpec, tasks: Sequence[Task], users: Any = None) -> dict[str, Any]:
    """Return the provenance fields of a run document written without a store.

    Args:
        spec: the run's spec (its ``tasks``: the split a task file is of).
        tasks: every task of the plan, in plan order.
        users: the run's user factory (its prompt is part of the fingerprint).

    Returns:
        ``{"git_revision": str | None, "packages": {name: version}, "python": "3.11.7", "split": str | None,
        "task_tags": {task id: [tag, ...]}, "planned_task_ids": [task id, ...]}``: every task of the plan, so that
        a run stopped early is reported over all of them, not only those with a finished trial; and
        ``"fingerprint"``, the run's comparability fingerprint (:func:`run_fingerprint`, ``users`` its user factory).
    """
    return {"fingerprint": run_fingerprint(spec, tasks, users),
            "git_revision": git_revision(), "packages": package_versions(), "python": python_version(),
            "split": task_file_split(spec.tasks), "task_tags": {t.id: list(t.tags) for t in tasks},
            "planned_task_ids": [t.id for t in tasks]}

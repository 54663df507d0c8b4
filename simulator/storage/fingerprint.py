"""The comparability fingerprint of a run: what must be equal for two runs' scores to be compared.

Two pass^k figures compare agents only when everything else was held fixed. A run records, in its document's
``fingerprint`` field, the parts that change a score without the agent changing:

- ``user``: the simulated user's ``kind`` (``rule``, ``llm``, ``scripted``, ...), its ``model``, its ``prompt``
  (sha256 of an LLM user's prompt template; None for users without one) and its persona set (``personas``, the
  names, and ``persona_defs``, sha256 of their definitions);
- ``tasks``: the task ``source`` (file or split) and ``hash``, the content hash of the planned task set
  (:func:`simulator.storage.store.tasks_hash`);
- ``grader``: the grader ``version`` (:data:`simulator.grading.GRADER_VERSION`, raised whenever a grading rule changes
  what passes), the ``reward_basis`` (the grade components deciding pass, over the planned tasks) and the gating
  ``judge`` model, if any;
- ``policy``: sha256 of the policy text the agent got;
- ``domain``: its ``name`` and ``mode`` (sha256 of the domain options, e.g. tau2 mode or dual control);
- ``vary``: the side whose seed varies when the other is held per task (``user`` or ``agent``, see
  :mod:`simulator.execution.seeds`; its trials are then correlated, which changes pass^k); absent (None) for the
  default, where both vary.

:func:`fingerprint_of` reads a run document's fingerprint; a document written before fingerprints existed gets
the parts its ``config`` still tells (user kind, model, personas, task source, policy hash, domain), every other
part ``None`` (unknown). :func:`fingerprint_differences` compares two fingerprints part by part; an unknown value on
either side is not a difference but is listed apart (:attr:`FingerprintComparison.unknown`) so that callers warn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FINGERPRINT_PARTS", "FingerprintComparison", "fingerprint_differences", "fingerprint_of",
           "make_fingerprint"]

FINGERPRINT_PARTS = ("user", "tasks", "grader", "policy", "domain", "vary")
"""The parts of a fingerprint, in report order."""


def _sha(value: Any) -> str | None:
    """sha256 hex digest of a JSON value (keys sorted); None for None."""
    if value is None:
        return None
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _user_kind_model(name: str) -> tuple[str, str | None]:
    """``"llm:openai/gpt-4o"`` -> ``("llm", "openai/gpt-4o")``; ``"rule"`` -> ``("rule", None)``."""
    kind, _, rest = name.partition(":")
    return kind, (rest or None)


def make_fingerprint(config: Mapping[str, Any], *, tasks_hash: str | None, user_prompt_sha256: str | None,
                     grader_version: str | None, reward_basis: Sequence[str] | None) -> dict[str, Any]:
    """Return a run's fingerprint from its spec (as JSON) and what only the built run knows.

    Args:
        config: the run spec as JSON (``RunSpec.model_dump(mode="json")``): ``user``, ``personas``,
            ``persona_defs``, ``tasks``, ``split``, ``policy_sha256``, ``domain``, ``options``, ``judge``, ``vary``
            are read.
        tasks_hash: content hash of the planned task set, or None when unknown.
        user_prompt_sha256: sha256 of the simulated user's prompt template, or None (no prompt, or unknown).
        grader_version: the grader version, or None when unknown.
        reward_basis: the grade components deciding pass over the planned tasks (sorted, distinct), or None.

    Returns:
        ``{"version": 1, "user": {...}, "tasks": {...}, "grader": {...}, "policy": str | None, "domain": {...}}``,
        and ``"vary"`` when a side was held (``config["vary"]`` other than ``both``).
    """
    user = config.get("user") or {}
    kind, model = _user_kind_model(str(user.get("name", "") if isinstance(user, Mapping) else user))
    judge = config.get("judge")
    judge_gates = isinstance(judge, Mapping) and judge.get("calibration") is not None
    vary = config.get("vary")
    return {
        "version": 1,
        "user": {"kind": kind, "model": model, "prompt": user_prompt_sha256,
                 "personas": list(config.get("personas") or []), "persona_defs": _sha(config.get("persona_defs"))},
        "tasks": {"source": config.get("tasks") or config.get("split"), "hash": tasks_hash},
        "grader": {"version": grader_version,
                   "reward_basis": sorted(set(reward_basis)) if reward_basis is not None else None,
                   "judge": str(judge.get("name")) if judge_gates and isinstance(judge, Mapping) else None},
        "policy": config.get("policy_sha256"),
        "domain": {"name": config.get("domain"), "mode": _sha(dict(config.get("options") or {}))},
        **({"vary": str(vary)} if vary not in (None, "both") else {}),
    }


def fingerprint_of(doc: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """Return a run document's fingerprint and whether it was recorded.

    Args:
        doc: a run document (``tausim run --out``, or a results-store run as a document).

    Returns:
        ``(fingerprint, recorded)``: the recorded ``fingerprint`` field, or for an older document one derived from
        its ``config`` (and its ``tasks_hash`` when the store recorded one) with the parts no document field tells
        (user prompt, grader version, reward basis, and a file run's task hash) set to None (unknown).
    """
    recorded = doc.get("fingerprint")
    if isinstance(recorded, Mapping):
        return dict(recorded), True
    config = doc.get("config") or {}
    return make_fingerprint(config, tasks_hash=doc.get("tasks_hash"), user_prompt_sha256=None,
                            grader_version=None, reward_basis=None), False


def _flatten(fp: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in FINGERPRINT_PARTS:
        value = fp.get(part, "both" if part == "vary" else None)  # absent: both sides varied (every older run)
        if isinstance(value, Mapping):
            for key, sub in value.items():
                out[f"{part}.{key}"] = sub
        else:
            out[part] = value
    return out


@dataclass
class FingerprintComparison:
    """Two runs' fingerprints compared.

    Attributes:
        differences: ``(part, first value, second value)`` of each part known on both sides that differs, e.g.
            ``("user.kind", "rule", "llm")``.
        unknown: the parts unknown in one run or both (not compared), e.g. ``user.prompt``.
        unrecorded: the names of the runs whose document carries no fingerprint (written before they existed).
    """

    differences: list[tuple[str, Any, Any]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        """True when no known part differs."""
        return not self.differences

    def describe(self, names: tuple[str, str]) -> list[str]:
        """One line per differing part, naming both runs: ``user.kind: baseline 'rule', candidate 'llm'``."""
        return [f"{part}: {names[0]} {_short(a)}, {names[1]} {_short(b)}" for part, a, b in self.differences]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def fingerprint_differences(first: Mapping[str, Any], second: Mapping[str, Any], *, names: tuple[str, str],
                            exempt: Sequence[str] = ()) -> FingerprintComparison:
    """Compare two run documents' fingerprints.

    Args:
        first: the first run document (e.g. the baseline).
        second: the second run document (e.g. the candidate).
        names: how messages call the two runs.
        exempt: parts (``user``) or sub-parts (``user.kind``) not to compare: what the comparison itself varies
            (calibration compares real with simulated users).

    Returns:
        The :class:`FingerprintComparison`.
    """
    (fa, ra), (fb, rb) = fingerprint_of(first), fingerprint_of(second)
    out = FingerprintComparison(unrecorded=[n for n, r in zip(names, (ra, rb), strict=True) if not r])
    flat_a, flat_b = _flatten(fa), _flatten(fb)
    for key in dict.fromkeys([*flat_a, *flat_b]):
        if key in exempt or key.split(".")[0] in exempt:
            continue
        a, b = flat_a.get(key), flat_b.get(key)
        # in a recorded fingerprint None is a value (no judge, no prompt); in a derived one it means unknown
        if (a is None and not ra) or (b is None and not rb):
            out.unknown.append(key)
        elif a != b:
            out.differences.append((key, a, b))
    return out

"""Trial seeds, and the seed of each side of a trial (agent, simulated user) when one side is held fixed.

A trial's seed is :func:`derive_seed` ``(run seed, task id, trial index)`` (a task's pinned ``seed`` wins, see
:meth:`simulator.execution.runner.Runner.trial_seed`). By default (``RunSpec.vary == "both"``) the agent and the
simulated user of a trial are built with that one seed and share one generator, as they always were.

To tell the agent's share of the trial-to-trial spread from the simulator's (``tausim variance``,
:mod:`simulator.analysis.variance`), a run may hold one side fixed across a task's trials:

- ``vary="user"``: the user (and the environment's faults, part of the simulation) keeps the trial seed; the agent
  gets the task's *held* agent seed, the same in every trial of the task. A model agent then sends the same
  sampling ``seed`` and has the same response-cache key in every trial: given the same conversation so far, its
  answer replays from the cache (:mod:`simulator.models.cache`).
- ``vary="agent"``: the reverse; the agent keeps the trial seed, the user and the faults get the task's held user
  seed.

The held seed of side ``S`` is :func:`side_seed` ``(s0, S)``: the first 8 bytes of ``sha256("{s0}/{S}")`` as an
int, where ``s0`` is the task's trial-0 seed. The side that varies keeps exactly the seed it has in a ``both`` run,
so the three conditions share their draws of the varying side (common random numbers), and a side that never
draws at random (a deterministic agent) gives a ``user`` run identical to the ``both`` run. With one side held,
each side gets a generator of its own (``numpy.random.Generator(PCG64(side seed))``).

An LLM judge's seed stays the trial seed in every condition (grading noise is neither side's).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["VARY", "Side", "TrialSeeds", "Vary", "derive_seed", "side_seed", "trial_seeds"]

Vary = Literal["both", "user", "agent"]
"""Which side of a trial varies from trial to trial (``RunSpec.vary``)."""

Side = Literal["agent", "user"]
"""A side of a trial: the agent under test, or the simulated user (with the environment's faults)."""

VARY: Final = ("both", "user", "agent")
"""Every ``RunSpec.vary`` value, the default first."""


def derive_seed(run_seed: int, task_id: str, trial_index: int) -> int:
    """Derive a trial's seed: the first 8 bytes of ``sha256("run_seed/task_id/trial_index")`` as an int.

    Args:
        run_seed: the run's seed.
        task_id: the task id.
        trial_index: 0-based trial index.

    Returns:
        A non-negative int below 2**64; independent of process, platform and Python's hash salt.
    """
    digest = hashlib.sha256(f"{run_seed}/{task_id}/{trial_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def side_seed(seed: int, side: Side) -> int:
    """Return the held seed of one side of a task: the first 8 bytes of ``sha256("{seed}/{side}")`` as an int.

    Args:
        seed: the task's trial-0 seed.
        side: ``"agent"`` or ``"user"``.

    Returns:
        A non-negative int below 2**64.

    Raises:
        ValueError: another side.
    """
    if side not in ("agent", "user"):
        raise ValueError(f"side must be 'agent' or 'user', got {side!r}")
    return int.from_bytes(hashlib.sha256(f"{seed}/{side}".encode()).digest()[:8], "big")


@dataclass(frozen=True)
class TrialSeeds:
    """The seeds of one trial's sides.

    Attributes:
        trial: the trial seed (recorded as ``TrialResult.seed``; the judge's seed).
        agent: the agent's seed (``TrialContext.seed`` of the agent).
        user: the simulated user's seed (``TrialContext.seed`` of the user).
        faults: the seed of the environment's faults (:mod:`simulator.world.faults`), the user's side.
        shared: True when both sides are built with one context and one generator (``vary="both"``).
    """

    trial: int
    agent: int
    user: int
    faults: int
    shared: bool


def trial_seeds(trial: int, first: int, vary: Vary) -> TrialSeeds:
    """Return the seeds of a trial's sides (see the module docstring).

    Args:
        trial: the trial seed.
        first: the seed of the task's trial 0 (the held seeds derive from it).
        vary: ``"both"``, ``"user"`` or ``"agent"``.

    Returns:
        ``both``: every seed is ``trial``; ``user``: the agent's is ``side_seed(first, "agent")``, the others
        ``trial``; ``agent``: the user's and the faults' are ``side_seed(first, "user")``, the agent's ``trial``.

    Raises:
        ValueError: another ``vary``.
    """
    if vary == "both":
        return TrialSeeds(trial, trial, trial, trial, shared=True)
    if vary == "user":
        return TrialSeeds(trial, side_seed(first, "agent"), trial, trial, shared=False)
    if vary == "agent":
        held = side_seed(first, "user")
        return TrialSeeds(trial, trial, held, held, shared=False)
    raise ValueError(f"vary must be one of {', '.join(VARY)}, got {vary!r}")

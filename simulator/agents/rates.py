"""Fault rates of agents: parsing and checking ``NAME -> RATE`` (a probability in [0, 1]).

:func:`parse_rates` parses ``NAME=RATE[,NAME=RATE...]`` lists (the ``faulty:`` and ``reference:`` agent specs);
:func:`check_fault_rates` checks rates given as a mapping (a domain's reference agent built in Python).

:class:`FaultDraws` draws an agent's faults at its opportunities. These three are exported by :mod:`simulator`
for domains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["REFERENCE_KNOBS", "FaultDraws", "check_fault_rates", "parse_knob_rates", "parse_rates"]


def parse_rates(text: str, who: str, what: str, known: Sequence[str] | None = None,
                example: str = "repeat_question=0.5") -> dict[str, float]:
    """Parse ``NAME=RATE[,NAME=RATE...]`` into name -> rate.

    Args:
        text: the list (the part of a spec after its colon); empty parts are skipped.
        who: the agent named in error messages (e.g. ``"faulty agent"``).
        what: what a name is, in messages (``"kind"``, ``"knob"``).
        known: the allowed names; None: any name (checked later by whoever uses the rates).
        example: an example pair shown when a part is malformed.

    Returns:
        Name -> rate (a probability), in the order given; empty for an empty text.

    Raises:
        ValueError: a part without ``=`` or with an unknown name, a name given twice, or a rate that is not a
            number in [0, 1]; the message names the part.
    """
    rates: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not name or (known is not None and name not in known):
            allowed = f" with {what.upper()} one of {', '.join(known)}" if known is not None else f", e.g. {example}"
            raise ValueError(f"{who}: {part!r}: expected {what.upper()}=RATE{allowed}")
        if name in rates:
            raise ValueError(f"{who}: fault {what} {name} given twice")
        try:
            rate = float(value)
        except ValueError:
            raise ValueError(f"{who}: {part!r}: the rate of {name} must be a number in [0, 1]") from None
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"{who}: {part!r}: the rate of {name} must be in [0, 1]")
        rates[name] = rate
    return rates


REFERENCE_KNOBS = ("skip_confirmation", "wrong_item", "repeat_call", "early_transfer", "forget_constraint",
                   "repeat_question")
"""The fault knobs every domain's reference agent knows (see :meth:`simulator.world.domain.Domain.reference_agent`)."""


def parse_knob_rates(text: str) -> dict[str, float]:
    """Parse ``KNOB=RATE[,KNOB=RATE...]`` (the part of a ``reference:`` spec after the colon).

    Knob names are checked by the domain's reference agent; here only the form and the rates.

    Returns:
        Knob -> rate, in the order given; empty for an empty text (no faults).

    Raises:
        ValueError: a part without ``=``, a knob given twice, or a rate that is not a number in [0, 1].
    """
    return parse_rates(text, "reference agent", "knob")


def check_fault_rates(rates: Mapping[str, float], known: Sequence[str], who: str) -> dict[str, float]:
    """Validate fault rates given as a mapping (e.g. to a reference agent built in Python).

    Args:
        rates: name -> rate.
        known: the allowed names.
        who: the agent named in error messages.

    Returns:
        A copy with the rates as floats.

    Raises:
        ValueError: an unknown name, or a rate that is not a number in [0, 1]; the message names it.
    """
    out: dict[str, float] = {}
    for name, rate in rates.items():
        if name not in known:
            raise ValueError(f"{who}: unknown fault knob {name!r} (knobs: {', '.join(known)})")
        try:
            value = float(rate)
        except (TypeError, ValueError):
            raise ValueError(f"{who}: fault knob {name}: rate {rate!r} is not a number in [0, 1]") from None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{who}: fault knob {name}: rate {value:g} is outside [0, 1]")
        out[name] = value
    return out


class FaultDraws:
    """An agent's fault knobs: a seeded draw at each opportunity, and the record of the faults injected.

    Each knob is drawn only where the agent has an opportunity for it, from the agent's own generator (a stream
    apart from the simulated user's ``ctx.rng``, so that the agent's draws do not shift the user's), so one trial
    seed gives the same faults at the same points.

    Args:
        rates: knob -> rate, a probability in [0, 1] (checked with :func:`check_fault_rates`).
        known: the knobs the agent knows.
        who: the agent named in error messages.
        seed: the trial seed (``ctx.seed``).
        salt: the agent's own constant, mixed with the seed into a ``numpy.random.SeedSequence``.

    Attributes:
        rates: the checked rates.
        rng: the agent's ``numpy.random.Generator`` (PCG64).
        injected: one record per injected fault, ``{"fault": knob, **details}``, in order; agents expose it as
            ``metadata["faults"]``.

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """

    def __init__(self, rates: Mapping[str, float], known: Sequence[str], who: str, seed: int, salt: int):
        self.rates = check_fault_rates(rates, known, who)
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, salt])))
        self.injected: list[dict[str, Any]] = []

    def draw(self, knob: str, **details: Any) -> bool:
        """Draw one opportunity of ``knob``; record the fault and return True when it is injected.

        A knob at rate 0 (or not given) draws nothing, so a clean agent's generator is never advanced.

        Args:
            knob: the fault knob.
            **details: what is recorded with the fault (e.g. ``step=3, detail="asked again"``).

        Returns:
            True when the fault is injected at this opportunity.
        """
        rate = self.rates.get(knob, 0.0)
        if rate <= 0.0 or not self.rng.random() < rate:
            return False
        self.injected.append({"fault": knob, **details})
        return True

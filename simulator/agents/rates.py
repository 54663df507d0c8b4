"""Fault rates of agents: parsing and checking ``NAME -> RATE`` (a probability in [0, 1]).

:func:`parse_rates` parses ``NAME=RATE[,NAME=RATE...]`` lists (the ``faulty:`` and ``reference:`` agent specs);
:func:`check_fault_rates` checks rates given as a mapping (a domain's reference agent built in Python).

:data:`REFERENCE_KNOBS` and :func:`check_fault_rates` are exported by :mod:`simulator` for domains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["REFERENCE_KNOBS", "check_fault_rates", "parse_rates"]


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
"""The fault knobs every domain's reference agent knows (see :meth:`simulator.domain.Domain.reference_agent`)."""


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

"""Parsing ``NAME=RATE[,NAME=RATE...]`` lists: the fault rates of agent specs such as ``faulty:`` and ``reference:``."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["parse_rates"]


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

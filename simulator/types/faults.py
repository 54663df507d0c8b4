"""Environment fault rates (a run spec field) and the fault kinds."""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

FAULT_KINDS: Final = ("transient", "timeout", "partial_write", "slow", "lost_ack")
"""The fault kinds, in the order :func:`draw_fault` cuts the unit interval."""


FAULT_STREAM: Final = 0xFA017
"""The first word of every fault generator's seed sequence (keeps fault draws apart from other streams)."""


TIMEOUT_SECONDS: Final = 30.0
"""Recorded latency of a call that timed out, in seconds."""


SLOW_SECONDS: Final = (2.0, 12.0)
"""Range of the latency a ``slow`` fault adds to a call, in seconds (uniform)."""


class FaultRates(BaseModel):
    """Per-call probabilities of each fault kind (``RunSpec.faults``); their sum is at most 1.

    ``partial_write`` and ``lost_ack`` are probabilities per call of a write tool (reads never meet them).

    Example::

        FaultRates.parse("transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02")
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transient: float = Field(default=0.0, ge=0.0, le=1.0)
    timeout: float = Field(default=0.0, ge=0.0, le=1.0)
    partial_write: float = Field(default=0.0, ge=0.0, le=1.0)
    slow: float = Field(default=0.0, ge=0.0, le=1.0)
    lost_ack: float = Field(default=0.0, ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return cls._parse_items(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_sum(self) -> FaultRates:
        total = sum(self.rates().values())
        if total > 1.0 + 1e-12:
            raise ValueError(f"fault rates add up to {total:g}, more than 1 ({self.text()})")
        return self

    @staticmethod
    def _parse_items(text: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for item in (x.strip() for x in text.split(",")):
            if not item:
                continue
            name, sep, rate = item.partition("=")
            name = name.strip()
            if not sep or name not in FAULT_KINDS:
                raise ValueError(f"--faults {text!r}: item {item!r}: expected KIND=RATE with KIND one of "
                                 f"{', '.join(FAULT_KINDS)}")
            if name in out:
                raise ValueError(f"--faults {text!r}: {name} given twice")
            try:
                out[name] = float(rate)
            except ValueError:
                raise ValueError(f"--faults {text!r}: {name}: rate {rate.strip()!r} is not a number") from None
        return out

    @classmethod
    def parse(cls, text: str) -> FaultRates:
        """Parse ``KIND=RATE,...`` (kinds of :data:`FAULT_KINDS`, rates in [0, 1]).

        Raises:
            ValueError: an unknown kind, a rate that is not a number in [0, 1], a kind given twice, or rates
                adding up to more than 1 (the message names the item).
        """
        return cls.model_validate(text)

    def rates(self) -> dict[str, float]:
        """Return ``{kind: rate}`` in :data:`FAULT_KINDS` order."""
        return {k: float(getattr(self, k)) for k in FAULT_KINDS}

    def active(self) -> bool:
        """True when any rate is above 0."""
        return any(v > 0 for v in self.rates().values())

    def text(self) -> str:
        """The ``KIND=RATE,...`` form of the non-zero rates (``none`` when all are 0)."""
        return ",".join(f"{k}={v:g}" for k, v in self.rates().items() if v > 0) or "none"

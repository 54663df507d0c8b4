"""Environment faults: tool-side failures injected at seeded rates, and the agent's recovery rate.

``tausim run --faults transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02`` (``RunSpec.faults``, a
:class:`FaultRates`) wraps the agent's toolbox of every trial in a :class:`FaultyToolbox`. Each call to a known tool
with parsed arguments may meet one fault, drawn from its own generator
``Generator(PCG64(SeedSequence([FAULT_STREAM, trial seed, step])))`` (:func:`draw_fault`): the draw depends only on
the trial seed (itself from the run seed, task and trial index) and the agent step of the call, so a run is
reproducible, a forked trial (:mod:`simulator.hunt`) meets the same faults as its original, and no generator of the
agent or user is touched. The kinds, in the order the unit interval is cut:

- ``transient``: the service refuses the call for now; the tool does not run, the agent gets a retryable error.
- ``timeout``: the call times out; the tool does not run, the agent gets an error after :data:`TIMEOUT_SECONDS`
  of recorded latency.
- ``partial_write`` (write tools only; on a read tool the draw is no fault): the tool runs and its writes reach the
  trial database, then it fails; its transaction is rolled back, so the database is exactly as before, and the agent
  gets an error. A call the tool itself refuses is reported as the tool's own error, without a fault.
- ``slow``: the call succeeds but its recorded latency (``duration_s``) grows by a drawn number of seconds in
  :data:`SLOW_SECONDS` (simulated time: nothing sleeps).

A faulted call has status ``tool_error`` (``slow``: its real status) and its kind in ``ToolCallRecord.fault``; the
trial's counts are ``TrialResult.faults``. :func:`recovery_rates` gives, of the trials where a fault was injected,
the share that still passed, overall and per kind (in the run document's ``recovery`` and the reports).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from simulator.errors import ToolError
from simulator.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["FAULT_KINDS", "FAULT_STREAM", "SLOW_SECONDS", "TIMEOUT_SECONDS", "FaultOutcome", "FaultRates",
           "FaultyToolbox", "draw_fault", "fault_counts", "recovery_rates"]

FAULT_KINDS: Final = ("transient", "timeout", "partial_write", "slow")
"""The fault kinds, in the order :func:`draw_fault` cuts the unit interval."""

FAULT_STREAM: Final = 0xFA017
"""The first word of every fault generator's seed sequence (keeps fault draws apart from other streams)."""

TIMEOUT_SECONDS: Final = 30.0
"""Recorded latency of a call that timed out, in seconds."""

SLOW_SECONDS: Final = (2.0, 12.0)
"""Range of the latency a ``slow`` fault adds to a call, in seconds (uniform)."""


class FaultRates(BaseModel):
    """Per-call probabilities of each fault kind (``RunSpec.faults``); their sum is at most 1.

    ``partial_write`` is the probability per call of a write tool (reads never meet it).

    Example::

        FaultRates.parse("transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02")
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transient: float = Field(default=0.0, ge=0.0, le=1.0)
    timeout: float = Field(default=0.0, ge=0.0, le=1.0)
    partial_write: float = Field(default=0.0, ge=0.0, le=1.0)
    slow: float = Field(default=0.0, ge=0.0, le=1.0)

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


def draw_fault(rates: FaultRates, trial_seed: int, step: int, tool_kind: str | None) -> tuple[str | None, float]:
    """Draw the fault of one tool call (see the module docstring).

    The generator is ``Generator(PCG64(SeedSequence([FAULT_STREAM, trial_seed, step])))``; its first uniform
    ``u`` picks the kind: ``transient`` when ``u < t``, ``timeout`` when ``t <= u < t + o``, then
    ``partial_write`` (on a ``write`` tool only; a read tool meets no fault in that interval), then ``slow``;
    no fault above the sum. The second uniform gives a slow call's added latency in :data:`SLOW_SECONDS`.

    Args:
        rates: the fault rates.
        trial_seed: the trial's seed.
        step: the agent step of the call (``ToolContext.step``), >= 0.
        tool_kind: ``read`` or ``write``.

    Returns:
        ``(kind or None, added latency in seconds)``: :data:`TIMEOUT_SECONDS` for a timeout, the drawn latency for
        a slow call, else 0.
    """
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([FAULT_STREAM, int(trial_seed), int(step)])))
    u, v = gen.random(2)
    edge = 0.0
    for kind, rate in rates.rates().items():
        if edge <= u < edge + rate:
            if kind == "partial_write" and tool_kind != "write":
                return None, 0.0
            if kind == "timeout":
                return kind, TIMEOUT_SECONDS
            if kind == "slow":
                return kind, float(SLOW_SECONDS[0] + v * (SLOW_SECONDS[1] - SLOW_SECONDS[0]))
            return kind, 0.0
        edge += rate
    return None, 0.0


@dataclasses.dataclass
class FaultOutcome(CallOutcome):
    """A :class:`~simulator.tools.CallOutcome` carrying the injected fault (copied to ``ToolCallRecord.fault``).

    Attributes:
        fault: the fault kind (:data:`FAULT_KINDS`), or None.
    """

    fault: str | None = None


def _partial_message(name: str) -> str:
    return (f"the write of {name} failed part way and was rolled back; nothing was changed. "
            "The service had a temporary problem: you may retry.")


def _fails_after_writing(spec_fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap a tool so that it runs (its writes flushed to the database), then raises the partial-write ToolError.

    Raised as a :class:`~simulator.errors.ToolError`, the dispatch rolls the call's transaction back; the outcome is
    told from a refusal of the tool's own by its message (:func:`_partial_message`).
    """

    @functools.wraps(spec_fn)
    def run(ctx: ToolContext, **kwargs: Any) -> Any:
        spec_fn(ctx, **kwargs)
        if ctx.session.in_transaction():
            ctx.session.flush()  # the ORM's pending writes reach the database before the failure
        raise ToolError(_partial_message(name))

    return run


class FaultyToolbox(Toolbox):
    """A trial's toolbox with environment faults: wraps another toolbox, whose dispatch does the real work.

    Args:
        inner: the domain's toolbox for the trial.
        rates: the fault rates.
        trial_seed: the trial's seed (the faults' seed, with each call's step).

    Every attribute not set here (e.g. ``schemas``, ``kind``) behaves as the inner toolbox's.
    """

    def __init__(self, inner: Toolbox, rates: FaultRates, trial_seed: int):  # noqa: D107 - documented on the class
        # Not Toolbox.__init__: the inner toolbox keeps its own state; what is not set here is looked up on it.
        self.inner = inner
        self.rates = rates
        self.trial_seed = int(trial_seed)
        self.specs = inner.specs
        self.uses_session = inner.uses_session
        self._partial: Toolbox | None = None

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "__setstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _partial_box(self) -> Toolbox:
        if self._partial is None:
            self._partial = Toolbox([dataclasses.replace(s, fn=_fails_after_writing(s.fn, s.name))
                                     for s in self.specs.values()], uses_session=self.uses_session)
        return self._partial

    def dispatch(self, ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> CallOutcome:
        """Dispatch one call through the inner toolbox, or inject the fault drawn for it (module docstring).

        Args:
            ctx: the trial's tool context (``ctx.step`` is the call's agent step).
            name: the tool name.
            arguments: the parsed arguments, or None.

        Returns:
            The inner toolbox's outcome, or a :class:`FaultOutcome`. After any fault but ``slow`` the database is as
            it was before the call.
        """
        spec = self.specs.get(name)
        if spec is None or arguments is None:
            return self.inner.dispatch(ctx, name, arguments)
        fault, latency = draw_fault(self.rates, self.trial_seed, ctx.step or 0, spec.kind)
        if fault is None:
            return self.inner.dispatch(ctx, name, arguments)
        if fault == "transient":
            return FaultOutcome(f"Error: {name} is temporarily unavailable (the service is busy); nothing was "
                                "changed. Please try again.", "tool_error", spec.kind, 0.0, fault=fault)
        if fault == "timeout":
            return FaultOutcome(f"Error: the call to {name} timed out after {TIMEOUT_SECONDS:g} s and had no effect. "
                                "Please try again.", "tool_error", spec.kind, latency, fault=fault)
        if fault == "partial_write":
            out = self._partial_box().dispatch(ctx, name, arguments)
            if out.status == "tool_error" and out.content == f"Error: {_partial_message(name)}":
                return FaultOutcome(**_fields(out), fault=fault)
            return out  # the tool refused the call itself (or a bug): its own outcome, no fault
        out = self.inner.dispatch(ctx, name, arguments)  # slow
        return FaultOutcome(**{**_fields(out), "duration_s": out.duration_s + latency}, fault=fault)


def _fields(out: CallOutcome) -> dict[str, Any]:
    """The fields of a call outcome, as keyword arguments."""
    return {f.name: getattr(out, f.name) for f in dataclasses.fields(CallOutcome)}


def fault_counts(tool_calls: Iterable[Any]) -> dict[str, int]:
    """Count the injected faults of a trial's tool calls, by kind.

    Args:
        tool_calls: ``ToolCallRecord`` objects or their JSON form (``{"fault": ...}``).

    Returns:
        ``{kind: calls}`` in :data:`FAULT_KINDS` order, kinds with no call left out.
    """
    counts: Counter[str] = Counter()
    for c in tool_calls:
        fault = c.get("fault") if isinstance(c, Mapping) else getattr(c, "fault", None)
        if fault:
            counts[str(fault)] += 1
    return {k: counts[k] for k in sorted(counts, key=lambda k: (FAULT_KINDS.index(k) if k in FAULT_KINDS
                                                                   else len(FAULT_KINDS), k))}


def _trial_faults(trial: Mapping[str, Any]) -> dict[str, int]:
    faults = trial.get("faults")
    if isinstance(faults, Mapping):
        return {str(k): int(v) for k, v in faults.items() if v}
    return fault_counts(((trial.get("trajectory") or {}).get("tool_calls")) or [])


def recovery_rates(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Recovery from environment faults: of the trials where a fault was injected, the share that passed.

    Args:
        trials: trial records (the JSON form of ``TrialResult``); a trial's faults are its ``faults`` counts, else
            counted from its tool calls' ``fault`` fields.

    Returns:
        ``{"trials": T, "faulted": N, "recovered": R, "rate": R / N or None, "faults": {kind: calls},
        "by_kind": {kind: {"trials", "recovered", "rate"}}}``: ``faulted`` trials met at least one fault,
        ``recovered`` of them passed; per kind, over the trials that met that kind.
    """
    total = faulted = recovered = 0
    calls: Counter[str] = Counter()
    by_kind: dict[str, list[int]] = {}
    for t in trials:
        total += 1
        faults = _trial_faults(t)
        if not faults:
            continue
        passed = bool(t.get("passed"))
        faulted += 1
        recovered += passed
        calls.update(faults)
        for kind in faults:
            entry = by_kind.setdefault(kind, [0, 0])
            entry[0] += 1
            entry[1] += passed
    order = sorted(by_kind, key=lambda k: (FAULT_KINDS.index(k) if k in FAULT_KINDS else len(FAULT_KINDS), k))
    return {
        "trials": total, "faulted": faulted, "recovered": recovered,
        "rate": recovered / faulted if faulted else None,
        "faults": {k: calls[k] for k in order},
        "by_kind": {k: {"trials": by_kind[k][0], "recovered": by_kind[k][1], "rate": by_kind[k][1] / by_kind[k][0]}
                    for k in order},
    }

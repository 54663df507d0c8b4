"""Environment faults: tool-side failures injected at seeded rates, and the agent's recovery rate.

``tausim run --faults transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02`` (``RunSpec.faults``, a
:class:`FaultRates`) wraps the agent's toolbox of every trial in a :class:`FaultyToolbox`. Each call to a known tool
with parsed arguments may meet one fault, drawn from its own generator
``Generator(PCG64(SeedSequence([FAULT_STREAM, trial seed, step])))`` (:func:`draw_fault`): the draw depends only on
the trial seed (itself from the run seed, task and trial index) and the agent step of the call, so a run is
reproducible, a forked trial (:mod:`simulator.hunt.snapshot`) meets the same faults as its original, and no generator of
the
agent or user is touched. The kinds, in the order the unit interval is cut:

- ``transient``: the service refuses the call for now; the tool does not run, the agent gets a retryable error.
- ``timeout``: the call times out; the tool does not run, the agent gets an error after :data:`TIMEOUT_SECONDS`
  of recorded latency.
- ``partial_write`` (write tools only; on a read tool the draw is no fault): the tool runs and its writes reach the
  trial database, then it fails; its transaction is rolled back, so the database is exactly as before, and the agent
  gets an error. A call the tool itself refuses is reported as the tool's own error, without a fault.
- ``slow``: the call succeeds but its recorded latency (``duration_s``) grows by a drawn number of seconds in
  :data:`SLOW_SECONDS` (simulated time: nothing sleeps).
- ``lost_ack`` (write tools only): the tool runs and its write is committed, but its answer is lost: the agent gets
  an error saying the outcome is unknown. It measures whether an agent retries idempotently: one that checks the
  record (or whose retry the service refuses) keeps the goal state; one that blindly applies the write again changes
  the state twice (and the repeat counts as redundant, :mod:`simulator.stats.trajectory`). A call the tool itself
  refuses is reported as the tool's own error, without a fault.

A faulted call has status ``tool_error`` (``slow``: its real status) and its kind in ``ToolCallRecord.fault``; the
trial's counts are ``TrialResult.faults``. :func:`recovery_rates` gives, of the trials where a fault was injected,
the share that still passed, overall and per kind (in the run document's ``recovery`` and the reports).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from simulator.errors import ToolError
from simulator.types.faults import FAULT_STREAM, SLOW_SECONDS, TIMEOUT_SECONDS, FaultRates
from simulator.world.tools import CallOutcome, Toolbox, ToolContext

__all__ = ["FaultOutcome", "FaultyToolbox", "draw_fault"]

_WRITE_ONLY = frozenset({"partial_write", "lost_ack"})








def draw_fault(rates: FaultRates, trial_seed: int, step: int, tool_kind: str | None) -> tuple[str | None, float]:
    """Draw the fault of one tool call (see the module docstring).

    The generator is ``Generator(PCG64(SeedSequence([FAULT_STREAM, trial_seed, step])))``; its first uniform
    ``u`` picks the kind: ``transient`` when ``u < t``, ``timeout`` when ``t <= u < t + o``, then
    ``partial_write`` (on a ``write`` tool only; a read tool meets no fault in that interval), then ``slow``, then
    ``lost_ack`` (write tools only, as ``partial_write``); no fault above the sum. New kinds are appended, so the
    intervals of the older kinds (and so the faults of a run that uses only them) do not move.
    The second uniform gives a slow call's added latency in :data:`SLOW_SECONDS`.

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
            if kind in _WRITE_ONLY and tool_kind != "write":
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
    """A :class:`~simulator.world.tools.CallOutcome` carrying the injected fault (copied to ``ToolCallRecord.fault``).

    Attributes:
        fault: the fault kind (:data:`FAULT_KINDS`), or None.
    """

    fault: str | None = None


def _lost_ack_message(name: str) -> str:
    return (f"Error: the connection to the service was lost before the answer of {name} arrived; it is not known "
            "whether the call took effect.")


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
            self._partial = Toolbox([dataclasses.replace(s, fn=_fails_after_writing(s.fn, s.name), memo=False)
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
        out = self.inner.dispatch(ctx, name, arguments)
        if fault == "lost_ack":
            if out.status != "ok":
                return out  # the tool refused the call itself: its own outcome, no fault
            return FaultOutcome(**{**_fields(out), "content": _lost_ack_message(name), "status": "tool_error"},
                                fault=fault)
        # slow
        return FaultOutcome(**{**_fields(out), "duration_s": out.duration_s + latency}, fault=fault)


def _fields(out: CallOutcome) -> dict[str, Any]:
    """The fields of a call outcome, as keyword arguments."""
    return {f.name: getattr(out, f.name) for f in dataclasses.fields(CallOutcome)}







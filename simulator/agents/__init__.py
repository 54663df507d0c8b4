"""Agents under test: the Agent protocol, scripted agents and the registry of agent specs.

Agent specs on the command line: ``oracle``, ``null``, ``faulty:KIND=RATE[,KIND=RATE...]`` (the oracle with injected
faults, see :mod:`simulator.agents._faulty`), ``reference`` or ``reference:KNOB=RATE[,KNOB=RATE...]`` (the domain's
rule-based reference agent, see :meth:`simulator.world.domain.Domain.reference_agent`, with fault knobs),
``litellm:MODEL`` (e.g. ``litellm:openai/gpt-4o-mini``) and
``py:package.module:factory`` for an agent of your own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.agents._faulty import FAULT_KINDS, FaultyOracleAgent, faulty_agent_factory, parse_fault_rates
from simulator.agents._scripted import NullAgent, OracleAgent
from simulator.agents.rates import parse_rates
from simulator.types.protocols import Agent, AgentFactory, TrialContext
from simulator.world.plugins import load_reference

if TYPE_CHECKING:
    from simulator.world.domain import Domain

__all__ = ["FAULT_KINDS", "Agent", "AgentFactory", "FaultyOracleAgent", "NullAgent", "OracleAgent", "TrialContext",
           "agent_factory", "parse_knob_rates"]


def parse_knob_rates(text: str) -> dict[str, float]:
    """Parse ``KNOB=RATE[,KNOB=RATE...]`` (the part of a ``reference:`` spec after the colon).

    Knob names are checked by the domain's reference agent; here only the form and the rates.

    Returns:
        Knob -> rate, in the order given; empty for an empty text (no faults).

    Raises:
        ValueError: a part without ``=``, a knob given twice, or a rate that is not a number in [0, 1].
    """
    return parse_rates(text, "reference agent", "knob")


def _reference_factory(domain: Domain, rates: dict[str, float]) -> AgentFactory:
    """Return a factory building the domain's reference agent; checks the knobs once on a probe context.

    Raises:
        DomainError: the domain has no reference agent or does not know a knob.
    """
    import numpy as np

    from simulator.types.tasks import Task, UserScenario

    probe = TrialContext(task=Task(id="probe", scenario=UserScenario(instructions="")), tools=[], policy="",
                         seed=0, rng=np.random.Generator(np.random.PCG64(0)), domain=domain.name)
    domain.reference_agent(probe, rates)

    def make(ctx: TrialContext) -> Agent:
        return domain.reference_agent(ctx, rates)

    return make


def agent_factory(spec: str, *, domain: Domain | None = None, **params: Any) -> AgentFactory:
    """Return the agent factory named by a spec string.

    Args:
        spec: ``oracle``, ``null``, ``faulty:KIND=RATE,...``, ``reference[:KNOB=RATE,...]``, ``litellm:MODEL`` or
            ``py:package.module:factory`` (your own agent: a callable taking the :class:`TrialContext` and returning
            an object with ``step(messages)``).
        domain: the run's domain; needed by ``reference`` (its :meth:`~simulator.world.domain.Domain.reference_agent`).
        **params: model parameters for LLM agents (temperature, api_base, ...).

    Returns:
        A callable building one agent per trial from its :class:`TrialContext`.

    Raises:
        ValueError: unknown spec, ``litellm:`` without a model, a malformed ``faulty:`` or ``reference:`` spec,
            or ``reference`` without a domain.
        simulator.world.domain.DomainError: the domain has no reference agent, or does not know a fault knob.
    """
    if spec == "oracle":
        return OracleAgent
    if spec == "null":
        return NullAgent
    if spec == "faulty" or spec.startswith("faulty:"):
        return faulty_agent_factory(parse_fault_rates(spec.partition(":")[2]))
    if spec == "reference" or spec.startswith("reference:"):
        if domain is None:
            raise ValueError("--agent reference needs the run's domain (agent_factory(spec, domain=...))")
        return _reference_factory(domain, parse_knob_rates(spec.partition(":")[2]))
    if spec.startswith("litellm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--agent litellm:MODEL needs a model, e.g. litellm:openai/gpt-4o-mini")
        from simulator.agents.litellm_agent import litellm_agent_factory

        return litellm_agent_factory(model, **params)
    if spec.startswith("py:"):
        return load_reference(spec, "agent")  # type: ignore[no-any-return]
    raise ValueError(f"--agent {spec!r}: unknown agent; use oracle, null, faulty:KIND=RATE, reference[:KNOB=RATE], "
                     "litellm:MODEL or py:MODULE:FACTORY")

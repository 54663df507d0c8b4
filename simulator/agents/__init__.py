"""Agents under test: the Agent protocol, scripted agents and the registry of agent specs.

Agent specs on the command line: ``oracle``, ``null``, ``faulty:KIND=RATE[,KIND=RATE...]`` (the oracle with injected
faults, see :mod:`simulator.agents._faulty`), ``litellm:MODEL`` (e.g. ``litellm:openai/gpt-4o-mini``) and
``py:package.module:factory`` for an agent of your own.
"""

from __future__ import annotations

from typing import Any

from simulator._plugins import load_reference
from simulator._protocols import Agent, AgentFactory, TrialContext
from simulator.agents._faulty import FAULT_KINDS, FaultyOracleAgent, faulty_agent_factory, parse_fault_rates
from simulator.agents._scripted import NullAgent, OracleAgent

__all__ = ["FAULT_KINDS", "Agent", "AgentFactory", "FaultyOracleAgent", "NullAgent", "OracleAgent", "TrialContext",
           "agent_factory"]


def agent_factory(spec: str, **params: Any) -> AgentFactory:
    """Return the agent factory named by a spec string.

    Args:
        spec: ``oracle``, ``null``, ``faulty:KIND=RATE,...``, ``litellm:MODEL`` or ``py:package.module:factory``
            (your own agent: a callable taking the :class:`TrialContext` and returning an object with
            ``step(messages)``).
        **params: model parameters for LLM agents (temperature, api_base, ...).

    Returns:
        A callable building one agent per trial from its :class:`TrialContext`.

    Raises:
        ValueError: unknown spec, ``litellm:`` without a model, or a malformed ``faulty:`` spec.
    """
    if spec == "oracle":
        return OracleAgent
    if spec == "null":
        return NullAgent
    if spec == "faulty" or spec.startswith("faulty:"):
        return faulty_agent_factory(parse_fault_rates(spec.partition(":")[2]))
    if spec.startswith("litellm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--agent litellm:MODEL needs a model, e.g. litellm:openai/gpt-4o-mini")
        from simulator.agents.litellm_agent import litellm_agent_factory

        return litellm_agent_factory(model, **params)
    if spec.startswith("py:"):
        return load_reference(spec, "agent")  # type: ignore[no-any-return]
    raise ValueError(f"--agent {spec!r}: unknown agent; use oracle, null, faulty:KIND=RATE, litellm:MODEL or "
                     "py:MODULE:FACTORY")

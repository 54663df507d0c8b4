"""Agents under test: the Agent protocol, scripted agents and the registry of agent specs.

Agent specs on the command line: ``oracle``, ``null``, ``litellm:MODEL`` (e.g. ``litellm:openai/gpt-4o-mini``) and
``py:package.module:factory`` for an agent of your own.
"""

from __future__ import annotations

from typing import Any

from simulator._plugins import load_reference
from simulator._protocols import Agent, AgentFactory, TrialContext
from simulator.agents._scripted import NullAgent, OracleAgent

__all__ = ["Agent", "AgentFactory", "NullAgent", "OracleAgent", "TrialContext", "agent_factory"]


def agent_factory(spec: str, **params: Any) -> AgentFactory:
    """Return the agent factory named by a spec string.

    Args:
        spec: ``oracle``, ``null``, ``litellm:MODEL`` or ``py:package.module:factory`` (your own agent: a
            callable taking the :class:`TrialContext` and returning an object with ``step(messages)``).
        **params: model parameters for LLM agents (temperature, api_base, ...).

    Returns:
        A callable building one agent per trial from its :class:`TrialContext`.

    Raises:
        ValueError: unknown spec, or ``litellm:`` without a model.
    """
    if spec == "oracle":
        return OracleAgent
    if spec == "null":
        return NullAgent
    if spec.startswith("litellm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--agent litellm:MODEL needs a model, e.g. litellm:openai/gpt-4o-mini")
        from simulator.agents.litellm_agent import litellm_agent_factory

        return litellm_agent_factory(model, **params)
    if spec.startswith("py:"):
        return load_reference(spec, "agent")  # type: ignore[no-any-return]
    raise ValueError(f"--agent {spec!r}: unknown agent; use oracle, null, litellm:MODEL or py:MODULE:FACTORY")

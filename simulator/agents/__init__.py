"""Agents under test: the Agent protocol, scripted agents and the registry of agent schemes.

Agent specs on the command line are ``SCHEME[:ARG]``; the scheme names a builder registered under the entry-point
group ``tausim.agents`` (see :mod:`simulator.agents._registry`; ``tausim agents`` lists them). tausim registers
``oracle``, ``null``, ``faulty:KIND=RATE[,KIND=RATE...]`` (the oracle with injected faults, see
:mod:`simulator.agents._faulty`), ``reference`` or ``reference:KNOB=RATE[,KNOB=RATE...]`` (the domain's rule-based
reference agent, see :meth:`simulator.world.domain.Domain.reference_agent`, with fault knobs), ``litellm:MODEL``
(e.g. ``litellm:openai/gpt-4o-mini``) and ``py:package.module:factory`` for an agent of your own; another package
adds a scheme with an entry point of its own.
"""

from __future__ import annotations

from simulator.agents._faulty import FAULT_KINDS, FaultyOracleAgent
from simulator.agents._registry import AGENTS, AgentBuilder, agent_factory, agent_schemes
from simulator.agents._scripted import NullAgent, OracleAgent
from simulator.agents.rates import parse_knob_rates
from simulator.types.protocols import Agent, AgentFactory, TrialContext

__all__ = ["AGENTS", "FAULT_KINDS", "Agent", "AgentBuilder", "AgentFactory", "FaultyOracleAgent", "NullAgent",
           "OracleAgent", "TrialContext", "agent_factory", "agent_schemes", "parse_knob_rates"]

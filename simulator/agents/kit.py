"""The public kit for agent writers.

The agent protocol, the records an agent reads and writes, the dialogue cues and the reference-agent base that the
built-in domains' rule-based agents are built on.

Your own agent needs only ``step(messages) -> AgentTurn`` (see :class:`Agent`); guide: docs/guides/write-an-agent.md.
To name it on the command line (``--agent mine:ARG``), register an :class:`AgentBuilder` under the entry-point
group ``tausim.agents``.
"""

from __future__ import annotations

from simulator.agents._registry import AgentBuilder
from simulator.agents.rates import REFERENCE_KNOBS, FaultDraws, check_fault_rates
from simulator.agents.reference import ANYTHING_ELSE, RETRIES, ReferenceAgentBase
from simulator.dialogue.cues import (
    asks_confirmation,
    is_closing,
    is_no,
    is_retryable_error,
    is_yes,
    offers_more_help,
    requested_tool_calls,
)
from simulator.dialogue.text import clip_long_tokens
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.persona import Persona
from simulator.types.protocols import Agent, AgentFactory, Progress, TrialContext

__all__ = [
    "ANYTHING_ELSE",
    "Agent",
    "AgentBuilder",
    "AgentFactory",
    "AgentTurn",
    "FaultDraws",
    "Message",
    "Persona",
    "Progress",
    "REFERENCE_KNOBS",
    "RETRIES",
    "ReferenceAgentBase",
    "ToolCall",
    "TrialContext",
    "Usage",
    "UserTurn",
    "asks_confirmation",
    "check_fault_rates",
    "clip_long_tokens",
    "is_closing",
    "is_no",
    "is_retryable_error",
    "is_yes",
    "offers_more_help",
    "requested_tool_calls",
]

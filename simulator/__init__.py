"""tausim: multi-turn simulation of conversational, tool-using agents (the engine).

The engine knows nothing about a particular domain: domains register through the ``tausim.domains`` entry
point group and provide a schema, data, tools, a policy and tasks. Domains import only the names exported here
(``from simulator import ...``, see ``__all__``), never a ``simulator._*`` module; ``tests/test_walls.py`` and the
import-linter contracts in ``pyproject.toml`` check it.
"""

from simulator._messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator._protocols import Agent, AgentFactory, Progress, TrialContext, UserFactory, UserSimulator
from simulator._text import clip_long_tokens
from simulator.agents.rates import REFERENCE_KNOBS, FaultDraws, check_fault_rates
from simulator.agents.reference import ANYTHING_ELSE, RETRIES, ReferenceAgentBase
from simulator.build import RunServices, build_runner
from simulator.cache import SQLiteCache
from simulator.cues import (
    asks_confirmation,
    is_closing,
    is_no,
    is_retryable_error,
    is_yes,
    offers_more_help,
    requested_tool_calls,
)
from simulator.database import StateDiff, StateSpec, TemplateDatabase, TrialDatabase, json_diff, snapshot
from simulator.domain import Domain, DomainError, available_domains, get_domain
from simulator.dual import SetupActionError, env_caller, syncer
from simulator.errors import TausimError
from simulator.grading import AssertionResult, AssertionsResult
from simulator.orchestrator import Limits, TerminationReason, Trajectory, run_conversation
from simulator.persona import Persona
from simulator.prepared import PreparedTask, prepare_tasks
from simulator.ratelimit import RateLimiter, RateLimiterRegistry
from simulator.records import RunResult, TrialResult
from simulator.runner import Runner, derive_seed
from simulator.sinks import Clock, Event, Ledger, Outbox, Sink, read_events
from simulator.spec import ComponentSpec, JudgeSpec, RunSpec
from simulator.store import ResultsStore
from simulator.tasks import Action, InitialState, Intent, Task, TaskFileError, UserScenario, load_tasks, parse_tasks
from simulator.tools import CallOutcome, Toolbox, ToolContext, ToolError, ToolSpec, tool

__all__ = [
    "Action", "Agent", "AgentFactory", "AgentTurn", "CallOutcome", "Domain", "DomainError", "Limits",
    "Message", "ResultsStore", "RunResult", "RunServices", "RunSpec", "Runner", "StateDiff", "StateSpec", "Task",
    "TaskFileError",
    "TemplateDatabase", "TerminationReason", "ToolCall", "ToolContext", "ToolError", "ToolSpec", "Toolbox",
    "Trajectory", "TrialContext", "TrialDatabase", "TrialResult", "Usage", "UserFactory", "UserScenario",
    "UserSimulator", "UserTurn", "available_domains", "derive_seed", "get_domain", "json_diff", "load_tasks",
    "run_conversation", "snapshot", "tool",
    "RateLimiter", "RateLimiterRegistry", "SQLiteCache",
    "ANYTHING_ELSE", "FaultDraws", "Intent", "Persona", "Progress", "REFERENCE_KNOBS", "RETRIES", "ReferenceAgentBase",
    "check_fault_rates",
    "asks_confirmation", "is_closing", "is_no", "is_retryable_error", "is_yes", "offers_more_help",
    "requested_tool_calls",
    "Clock", "Event", "Ledger", "Outbox", "Sink", "read_events",
    "AssertionResult", "AssertionsResult", "InitialState",
    "TausimError",
    "PreparedTask", "prepare_tasks",
    "ComponentSpec", "JudgeSpec", "RunServices", "build_runner", "clip_long_tokens",
    "SetupActionError", "env_caller", "syncer", "parse_tasks",
]

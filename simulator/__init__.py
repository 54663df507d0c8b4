"""tausim: multi-turn simulation of conversational, tool-using agents (the engine).

The engine knows nothing about a particular domain: domains register through the ``tausim.domains`` entry
point group and provide a schema, data, tools, a policy and tasks.
"""

from simulator._messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator._protocols import Agent, AgentFactory, TrialContext, UserFactory, UserSimulator
from simulator.build import RunServices, build_runner
from simulator.cache import SQLiteCache
from simulator.database import StateDiff, StateSpec, TemplateDatabase, TrialDatabase, json_diff, snapshot
from simulator.domain import Domain, DomainError, available_domains, get_domain
from simulator.orchestrator import Limits, TerminationReason, Trajectory, run_conversation
from simulator.ratelimit import RateLimiter, RateLimiterRegistry
from simulator.records import RunResult, TrialResult
from simulator.runner import Runner, derive_seed
from simulator.spec import ComponentSpec, JudgeSpec, RunSpec
from simulator.store import ResultsStore
from simulator.tasks import Action, Task, TaskFileError, UserScenario, load_tasks
from simulator.tools import CallOutcome, Toolbox, ToolContext, ToolError, ToolSpec, tool

__all__ = [
    "Action", "Agent", "AgentFactory", "AgentTurn", "CallOutcome", "Domain", "DomainError", "Limits",
    "Message", "ResultsStore", "RunResult", "RunServices", "RunSpec", "Runner", "StateDiff", "StateSpec", "Task",
    "TaskFileError",
    "TemplateDatabase", "TerminationReason", "ToolCall", "ToolContext", "ToolError", "ToolSpec", "Toolbox",
    "Trajectory", "TrialContext", "TrialDatabase", "TrialResult", "Usage", "UserFactory", "UserScenario",
    "UserSimulator", "UserTurn", "available_domains", "derive_seed", "get_domain", "json_diff", "load_tasks",
    "run_conversation", "snapshot", "tool",
    "RateLimiter", "RateLimiterRegistry", "SQLiteCache", "ComponentSpec", "JudgeSpec", "build_runner",
]

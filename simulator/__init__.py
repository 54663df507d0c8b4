"""tausim: multi-turn simulation of conversational, tool-using agents (the engine).

A narrow, lazy facade (PEP 562): ``import simulator`` loads none of the engine, neither SQLAlchemy nor litellm; each
name below is imported from its home module on first use. The engine is a house of floors (docs/architecture.md):
``types`` | ``errors`` | ``stats`` at the bottom, then ``world`` | ``models`` | ``storage``, ``dialogue``,
``agents`` | ``users`` | ``grading``, ``execution``, ``analysis`` | ``hunt`` | ``interop`` | ``authoring``, and the
faces ``report`` and ``cli``. Domain authors use the public kit :mod:`simulator.world.kit`; agent writers
:mod:`simulator.agents.kit`.

The run itself is :func:`run` (``simulator.run(spec, store=..., out=..., resume=...)``): what ``tausim run`` does,
as a library call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.types.lazy import lazy_exports

__all__ = [
    "Action",
    "Agent",
    "AgentFactory",
    "AgentTurn",
    "ComponentSpec",
    "Domain",
    "DomainError",
    "Grade",
    "JudgeSpec",
    "Message",
    "Persona",
    "Progress",
    "ResultsStore",
    "RunResult",
    "RunSpec",
    "Runner",
    "Task",
    "TausimError",
    "TerminationReason",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolSession",
    "Toolbox",
    "Trajectory",
    "TrialContext",
    "TrialResult",
    "Usage",
    "UserFactory",
    "UserScenario",
    "UserSimulator",
    "UserTurn",
    "available_domains",
    "build_runner",
    "derive_seed",
    "get_domain",
    "load_tasks",
    "run",
    "tool",
]

_HOMES: dict[str, str] = {
    "Action": "simulator.types.tasks",
    "Agent": "simulator.types.protocols",
    "AgentFactory": "simulator.types.protocols",
    "AgentTurn": "simulator.types.messages",
    "ComponentSpec": "simulator.types.spec",
    "Domain": "simulator.world.domain",
    "DomainError": "simulator.errors",
    "Grade": "simulator.types.grade",
    "JudgeSpec": "simulator.types.spec",
    "Message": "simulator.types.messages",
    "Persona": "simulator.types.persona",
    "Progress": "simulator.types.protocols",
    "ResultsStore": "simulator.storage.store",
    "RunResult": "simulator.types.results",
    "RunSpec": "simulator.types.spec",
    "Runner": "simulator.execution.runner",
    "Task": "simulator.types.tasks",
    "TausimError": "simulator.errors",
    "TerminationReason": "simulator.types.trajectory",
    "ToolCall": "simulator.types.messages",
    "ToolContext": "simulator.world.tools",
    "ToolError": "simulator.errors",
    "ToolSession": "simulator.interop.mcp_server",
    "Toolbox": "simulator.world.tools",
    "Trajectory": "simulator.types.trajectory",
    "TrialContext": "simulator.types.protocols",
    "TrialResult": "simulator.types.results",
    "Usage": "simulator.types.messages",
    "UserFactory": "simulator.types.protocols",
    "UserScenario": "simulator.types.tasks",
    "UserSimulator": "simulator.types.protocols",
    "UserTurn": "simulator.types.messages",
    "available_domains": "simulator.world.domain",
    "build_runner": "simulator.execution.build",
    "derive_seed": "simulator.execution.runner",
    "get_domain": "simulator.world.domain",
    "load_tasks": "simulator.types.tasks",
    "run": "simulator.execution.session",
    "tool": "simulator.world.tools",
}
"""Public name -> the module that defines it."""

if TYPE_CHECKING:  # for type checkers and IDEs only; at run time the names load lazily
    from simulator.errors import DomainError, TausimError, ToolError
    from simulator.execution.build import build_runner
    from simulator.execution.runner import Runner, derive_seed
    from simulator.execution.session import run
    from simulator.interop.mcp_server import ToolSession
    from simulator.storage.store import ResultsStore
    from simulator.types.grade import Grade
    from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
    from simulator.types.persona import Persona
    from simulator.types.protocols import (
        Agent,
        AgentFactory,
        Progress,
        TrialContext,
        UserFactory,
        UserSimulator,
    )
    from simulator.types.results import RunResult, TrialResult
    from simulator.types.spec import ComponentSpec, JudgeSpec, RunSpec
    from simulator.types.tasks import Action, Task, UserScenario, load_tasks
    from simulator.types.trajectory import TerminationReason, Trajectory
    from simulator.world.domain import Domain, available_domains, get_domain
    from simulator.world.tools import Toolbox, ToolContext, tool


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)

"""Extension points for the conversation: the agent under test and the simulated user.

Both are small Protocols with one required method. They are built per trial by factories that receive the
:class:`TrialContext`, so each trial owns its state and its random generator.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from simulator.types.messages import AgentTurn, Message, UserTurn
from simulator.types.persona import Persona
from simulator.types.tasks import Task

if TYPE_CHECKING:
    from simulator.types.prepared import PreparedTask

__all__ = ["PROGRESS_SIGNALS", "Agent", "AgentFactory", "AsyncAgent", "Progress", "ProgressAware", "TrialContext",
           "UserFactory", "UserSimulator"]

PROGRESS_SIGNALS = ("tool_ok", "confirmed_action", "new_info", "answered", "new_question", "repeated_question",
                    "agent_repeat", "tool_error")
"""Every progress signal, positive ones first (see :class:`Progress`)."""


@dataclass(frozen=True)
class Progress:
    """Whether one agent turn (its tool calls and its closing message) moved the conversation forward.

    Computed by the orchestrator after each agent turn and given to users that implement
    :class:`ProgressAware` before they reply. Positive signals: ``tool_ok`` (a successful tool call not identical
    to an earlier one), ``confirmed_action`` (a successful write right after a user yes), ``new_info`` (the agent
    message carries values, such as ids, amounts or emails, not seen before in the conversation), ``answered``
    (the user's last message asked a question and the agent's message states values, already seen ones),
    ``new_question`` (the agent asks a question it had not asked before). Negative: ``repeated_question``
    (a question it asked before), ``agent_repeat`` (a message or a tool call identical to an earlier one; a read
    repeated after a successful write is not a repeat, the state changed), ``tool_error`` (a failed tool call).

    Attributes:
        made: any positive signal and neither ``repeated_question`` nor ``agent_repeat``.
        signals: the signals, in :data:`PROGRESS_SIGNALS` order.
    """

    made: bool
    signals: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Return ``{"made": bool, "signals": [str, ...]}`` (the form kept in ``Trajectory.progress``)."""
        return {"made": self.made, "signals": list(self.signals)}


class _TrialRng:
    """The ``rng`` field of :class:`TrialContext`: the generator given, or ``Generator(PCG64(seed))`` when first read.

    A descriptor-typed dataclass field (still a required constructor argument): passing None defers making the
    generator, which costs tens of microseconds per trial, to the first component that reads ``ctx.rng``; one that
    never does (the oracle, a scripted user) never pays it. The generator is the same either way.
    """

    def __get__(self, ctx: TrialContext | None, owner: type | None = None) -> np.random.Generator:
        if ctx is None:
            raise AttributeError("rng")  # no class-level default: the dataclass keeps the field required
        rng: np.random.Generator | None = ctx.__dict__.get("_rng")
        if rng is None:
            rng = ctx.__dict__["_rng"] = np.random.Generator(np.random.PCG64(ctx.seed))
        return rng

    def __set__(self, ctx: TrialContext, value: np.random.Generator | None) -> None:
        ctx.__dict__["_rng"] = value


@dataclass
class TrialContext:
    """Everything a per-trial component may know at construction.

    Attributes:
        task: the task being run. Agents other than the oracle must not read its gold actions or
            required outputs; user simulators only read ``task.scenario`` and ``task.user_id``.
        tools: OpenAI function schemas of the domain's tools.
        policy: the domain policy text.
        seed: the trial seed (int), derived from (run seed, task id, trial index); with ``RunSpec.vary`` holding
            one side fixed, this side's seed (:mod:`simulator.execution.seeds`: the held side's is the same in
            every trial of the task).
        rng: the trial's own generator, ``numpy.random.Generator(PCG64(seed))``; never the global RNG. Shared by
            the agent and the user of a trial by default; each side's own when one side is held. Given as None, it
            is made from ``seed`` when first read.
        domain: domain name.
        trial_index: index of this trial among the task's trials (0-based).
        extra: free-form run options (e.g. model parameters). The runner sets ``tool_kinds``: tool name ->
            ``"read"``, ``"write"`` or ``"ending"`` (a tool that ends the conversation); the pre-flight
            (:mod:`simulator.execution.preflight`) sets ``preflight: True`` on the context it builds a trial-less
            agent and
            user with.
        log: the trial's structlog logger (bound to run id, task id and trial index), or None when the run
            keeps no log; components may emit their own events on it (LLM agents and users emit
            ``model_call``).
        persona: the simulated user's persona for this trial (``tausim run --personas``), or None (the
            user's default manner: cooperative, never abandons).
        prepared: the task as the run prepared it (:class:`~simulator.types.prepared.PreparedTask`: effective rules,
            goal replay, and what the run's user declared it needs: derived scenario, leak-guard secrets), or
            None outside a run. Read-only, shared by the task's trials; users read it through
            :func:`simulator.types.protocols.prepared_for`.
        user_tools: the schemas of the user's own tools (dual control, see ``Domain.user_toolbox``).
    """

    task: Task
    tools: list[dict[str, Any]]
    policy: str
    seed: int
    rng: _TrialRng = _TrialRng()
    domain: str  # type: ignore[misc]  # mypy takes the descriptor for a default; the field is required (_TrialRng)
    trial_index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    log: Any = None
    persona: Persona | None = None
    prepared: PreparedTask | None = None
    user_tools: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI function schemas of the simulated user's own tools (dual-control domains; empty otherwise)."""


@runtime_checkable
class Agent(Protocol):
    """The agent under test."""

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the agent's next message given the conversation so far.

        Args:
            messages: all messages of the trial in order (user, assistant, tool); no system message.

        Returns:
            An :class:`AgentTurn`: tool calls continue the agent's turn; text without tool calls ends it.
        """
        ...


class AsyncAgent(Protocol):
    """An agent under test whose ``step`` is a coroutine (``async def step``).

    The runner awaits it on the event loop of the worker thread that runs the trial; a trial timeout cancels the
    pending step (:mod:`simulator.execution.aio`). Everything else is as :class:`Agent`.
    """

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the agent's next message given the conversation so far (see :meth:`Agent.step`)."""
        ...


@runtime_checkable
class UserSimulator(Protocol):
    """The simulated user."""

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the user's next message.

        Args:
            messages: the conversation as the user sees it: user and assistant text messages only
                (empty for the opening message).

        Returns:
            A :class:`UserTurn` (text, and whether the user stops or abandons).
        """
        ...


@runtime_checkable
class ProgressAware(Protocol):
    """Optional hook of a simulated user: told the progress of each agent turn before it replies."""

    def observe_progress(self, progress: Progress) -> None:
        """Record the progress of the agent turn the next ``reply`` answers.

        Args:
            progress: the turn's :class:`Progress`.
        """
        ...


AgentFactory = Callable[[TrialContext], "Agent | AsyncAgent | Awaitable[Agent | AsyncAgent]"]
"""Builds one trial's agent: an :class:`Agent` or an :class:`AsyncAgent`; an ``async def`` factory (returning a
coroutine of either) is awaited on the trial's event loop."""
UserFactory = Callable[[TrialContext], UserSimulator]
"""Builds one trial's simulated user."""


EnvCall = Callable[[str, str, Mapping[str, Any]], Any]
"""Calls a domain assertion function: ``(side, function name, arguments) -> value``."""


def prepared_for(ctx: TrialContext) -> PreparedTask | None:
    """Return the trial's prepared task (``ctx.prepared``) when it is of the trial's task, else None.

    Args:
        ctx: the trial context.

    Returns:
        ``ctx.prepared``, or None when there is none or it was prepared for another task (e.g. a wrapper
        replaced ``ctx.task``).
    """
    p = ctx.prepared
    if p is None or not (p.task is ctx.task or p.task == ctx.task):
        return None
    return p

"""Gymnasium environments: play one side of a tausim trial from outside, one step at a time (the ``gym`` extra).

Two environments are registered with Gymnasium when this module is imported:

- ``tausim/Agent-v0`` (:class:`AgentEnv`): the caller is the agent, tausim's simulated user the other side. An action
  is plain text (a message to the user, which ends the agent's turn) or a tool call, a JSON object
  ``{"name": ..., "arguments": {...}}`` (a string holding one, or a dict). The observation is what the agent sees
  next: the tool's answer, or the user's reply. ``reset`` gives the user's opening message; its ``info`` holds the
  policy (``policy``) and the tools' OpenAI function schemas (``tools``) an agent needs.
- ``tausim/User-v0`` (:class:`UserEnv`): the caller is the user, a configured agent (default ``reference``) the
  other side. An action is the user's text; ``###STOP###`` in it ends the conversation (the text before it is
  delivered first), ``###ABANDON###`` abandons it; in dual-control domains (telecom) a JSON tool call runs one of the
  user's own tools. The observation is what the user sees next: the agent's message (or the user tool's answer).
  ``reset`` gives an empty observation (the user speaks first) unless the task starts from a history or greeting.

::

    import gymnasium
    import simulator.interop.gym_env  # registers the environments

    env = gymnasium.make("tausim/Agent-v0", domain="retail", task_id="0", user="scripted")
    obs, info = env.reset(seed=7)
    obs, reward, terminated, truncated, info = env.step('{"name": "find_user_id_by_email", "arguments": {...}}')
    ...
    env.close()

The episode ends when the conversation ends (the user stops or abandons, the agent transfers, a cap is reached, a
component fails): ``terminated`` is True, or ``truncated`` when a budget ran out (``max_turns``, ``max_steps``,
``budget_exceeded``, ``timeout``; as Gymnasium's ``TimeLimit`` separates them). The reward is 0.0 on every step but
the last, which gets 1.0 when tausim's grade passes, else 0.0; the last step's ``info`` holds ``grade`` (the
:class:`~simulator.types.grade.TrialGrade` as a JSON-ready dict), ``passed``, ``termination_reason`` and ``result``
(the whole :class:`~simulator.types.results.TrialResult`).

How it runs: each episode is one trial run by the runner exactly as ``tausim run`` runs it (its own database copy,
seed, caps, grading), in a worker thread, with the caller's side played by a bridge component whose ``step`` /
``reply`` hands the conversation to the caller and blocks on a queue for the caller's next action. Every wait is
bounded: the caller waits at most ``step_timeout`` seconds for the other side (:class:`EpisodeTimeout`), the bridge
at most ``idle_timeout`` seconds for the caller (then its trial ends as ``agent_error``/``user_error``). ``close``
and ``reset`` end a running episode (the bridge is told to stop; the trial ends and the worker returns).

Seeds: ``reset(seed=S)`` makes S the run seed and starts episode 0; each later ``reset()`` without a seed starts the
next episode. An episode's trial seed is :func:`~simulator.execution.runner.derive_seed` ``(S, task id, episode)``
(a task's pinned seed wins), so an episode is replayed exactly by the same seed and episode count. Without a
``task_id`` the task of each episode is drawn from the task set with the environment's ``np_random``;
``reset(options={"task_id": ...})`` picks one.
"""

from __future__ import annotations

import json
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium
from gymnasium.envs.registration import register, registry

from simulator.dialogue.state import visible_to_user
from simulator.errors import TausimError
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.types.messages import AgentTurn, Message, ToolCall, UserTurn
from simulator.types.protocols import TrialContext
from simulator.types.results import TrialResult
from simulator.types.spec import ComponentSpec, RunSpec
from simulator.types.tasks import Task
from simulator.types.trajectory import TerminationReason

__all__ = ["ABANDON_TOKEN", "STOP_TOKEN", "AgentEnv", "EpisodeTimeout", "TextSpace", "UserEnv"]

STOP_TOKEN = "###STOP###"
"""In a User-v0 action: the user ends the conversation (the text before the token is delivered)."""
ABANDON_TOKEN = "###ABANDON###"
"""In a User-v0 action: the user gives up (``user_abandon``)."""

_TRUNCATING = frozenset({TerminationReason.MAX_TURNS, TerminationReason.MAX_STEPS,
                         TerminationReason.BUDGET_EXCEEDED, TerminationReason.TIMEOUT})


class EpisodeTimeout(TausimError, TimeoutError):
    """The other side of the conversation did not answer within ``step_timeout`` seconds (the episode is closed)."""


class _Closed(TausimError):  # noqa: N818 - control flow inside the worker, never leaves it
    """Raised in the bridge when the environment ends the episode (close, reset) or the caller went idle."""


class TextSpace(gymnasium.spaces.Space[Any]):
    """Any text (``str``); as an action space also a tool call (a dict with ``name``, or its JSON text).

    ``sample`` gives an empty message (there is no meaningful random utterance).
    """

    def __init__(self, *, tool_calls: bool = False) -> None:
        """Args: tool_calls: dicts with a string ``name`` (tool calls) are members too."""
        super().__init__(shape=None, dtype=None)
        self.tool_calls = tool_calls

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Return ``""``."""
        return ""

    def contains(self, x: Any) -> bool:
        """True for a string, and (``tool_calls``) for a dict whose ``name`` is a string."""
        return isinstance(x, str) or (self.tool_calls and isinstance(x, dict) and isinstance(x.get("name"), str))

    @property
    def is_np_flattenable(self) -> bool:
        """Text cannot be flattened to an array."""
        return False


def parse_tool_call(action: Any, call_id: str) -> ToolCall | None:
    """Return the tool call an action holds, or None when it is a message.

    Args:
        action: a dict ``{"name": str, "arguments": dict}`` or a string holding such a JSON object; anything
            else (any other text, JSON that is not such an object) is a message.
        call_id: the id given to the call.

    Returns:
        The :class:`ToolCall` (``arguments`` None and ``raw_arguments`` set when they are not a JSON object, so the
        tool answers with an argument error as for a model), or None.
    """
    obj = action
    if isinstance(action, str):
        text = action.strip()
        if not (text.startswith("{") and text.endswith("}")):
            return None
        try:
            obj = json.loads(text)
        except ValueError:
            return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", {})
    if isinstance(args, str):  # the OpenAI wire form: arguments as JSON text
        try:
            args = json.loads(args)
        except ValueError:
            return ToolCall(id=call_id, name=obj["name"], arguments=None, raw_arguments=obj["arguments"])
    if not isinstance(args, dict):
        return ToolCall(id=call_id, name=obj["name"], arguments=None, raw_arguments=json.dumps(args))
    return ToolCall(id=call_id, name=obj["name"], arguments=args)


class _Bridge:
    """The caller's side of one episode's trial: hands each turn to the caller, waits for the caller's action.

    The worker thread (the trial) calls :meth:`ask`; the environment calls :meth:`act` and :meth:`next_event`.
    """

    def __init__(self, idle_timeout: float | None) -> None:
        self.idle_timeout = idle_timeout
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()  # worker -> env: ("turn", messages) | ("done", ..)
        self.actions: queue.Queue[Any] = queue.Queue()  # env -> worker: an action or _STOP
        self.ctx: TrialContext | None = None
        self.calls = 0

    def ask(self, messages: Sequence[Message]) -> Any:
        """(Worker) hand the conversation to the caller; return the caller's action. Raises :class:`_Closed`."""
        self.events.put(("turn", list(messages)))
        try:
            action = self.actions.get(timeout=self.idle_timeout)
        except queue.Empty:
            raise _Closed(f"the caller sent no action within idle_timeout={self.idle_timeout:g} s") from None
        if action is _STOP:
            raise _Closed("the environment was closed or reset before the conversation ended")
        return action

    def next_call_id(self) -> str:
        """A new tool call id of the caller's side."""
        self.calls += 1
        return f"gym_call_{self.calls}"


_STOP = object()


class _Slot:
    """The bridge of the running episode, read by the trial's component factories (called in the worker thread)."""

    def __init__(self) -> None:
        self.bridge: _Bridge | None = None

    def _current(self, ctx: TrialContext) -> _Bridge:
        bridge = self.bridge
        if bridge is None:
            raise RuntimeError("no episode is running")
        bridge.ctx = ctx
        return bridge

    def make_agent(self, ctx: TrialContext) -> _BridgeAgent:
        """Build the trial's agent: the caller of ``tausim/Agent-v0``."""
        return _BridgeAgent(self._current(ctx))

    def make_user(self, ctx: TrialContext) -> _BridgeUser:
        """Build the trial's user: the caller of ``tausim/User-v0``."""
        return _BridgeUser(self._current(ctx))


class _BridgeAgent:
    """The trial's agent: the caller of ``tausim/Agent-v0``."""

    def __init__(self, bridge: _Bridge) -> None:
        self.bridge = bridge

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Hand the conversation to the caller; turn its action into the agent's message."""
        action = self.bridge.ask(messages)
        call = parse_tool_call(action, self.bridge.next_call_id())
        if call is not None:
            return AgentTurn(message=Message(role="assistant", content=None, tool_calls=[call]))
        return AgentTurn(message=Message(role="assistant", content=str(action)))


class _BridgeUser:
    """The trial's simulated user: the caller of ``tausim/User-v0``."""

    def __init__(self, bridge: _Bridge) -> None:
        self.bridge = bridge

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Hand the conversation (as the user sees it) to the caller; turn its action into the user's turn."""
        action = self.bridge.ask(messages)
        call = parse_tool_call(action, self.bridge.next_call_id())
        if call is not None:
            return UserTurn(content="", tool_calls=[call])
        text = str(action)
        if ABANDON_TOKEN in text:
            return UserTurn(content=text.split(ABANDON_TOKEN, 1)[0].strip(), abandon=True)
        if STOP_TOKEN in text:
            return UserTurn(content=text.split(STOP_TOKEN, 1)[0].strip(), stop=True)
        return UserTurn(content=text)


class _TausimEnv(gymnasium.Env[str, Any]):
    """One task set of one domain; each episode one trial with the caller on one side (see the module docstring)."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium.Env declares it an instance attribute
    _side: ClassVar[str]
    _own_role: ClassVar[str]

    def __init__(self, domain: str, task_id: str | None = None, *, user: str = "scripted", agent: str = "reference",
                 data: str | None = None, tasks: str | None = None, split: str | None = None,
                 options: dict[str, Any] | None = None, max_turns: int = 30, max_steps: int = 60,
                 step_timeout: float | None = 600.0, idle_timeout: float | None = 3600.0,
                 spec: RunSpec | None = None) -> None:
        """Build the run the episodes are trials of.

        Args:
            domain: the domain (``tausim domains``).
            task_id: the task of every episode; None: drawn per episode (see the module docstring).
            user: the simulated user (Agent-v0), a spec string as ``--user`` takes.
            agent: the agent (User-v0), a spec string as ``--agent`` takes.
            data: the data directory (e.g. a tau2 suite's); None: the domain's own.
            tasks: the task file or split name; None: the domain's own tasks.
            split: the split of a tau2 task file.
            options: domain options (``--option``).
            max_turns: the turn cap of each episode.
            max_steps: the step cap of each episode.
            step_timeout: seconds :meth:`step` and :meth:`reset` wait for the other side; None: no limit.
            idle_timeout: seconds the trial waits for the caller's next action before it ends; None: no limit.
            spec: a whole run spec instead of the arguments above (its agent or user is replaced by the caller).

        Raises:
            simulator.world.domain.DomainError, ValueError: unknown domain, task id, option, agent or user.
        """
        if spec is None:
            spec = RunSpec(domain=domain, task_ids=[task_id] if task_id is not None else None, data_dir=data,
                           tasks=tasks, split=split, options=dict(options or {}), max_turns=max_turns,
                           max_steps=max_steps, preflight=False,
                           agent=ComponentSpec(name="null" if self._side == "agent" else agent),
                           user=ComponentSpec(name=user if self._side == "agent" else "scripted"))
        self._bridge: _Bridge | None = None
        self._idle_timeout = idle_timeout
        self.step_timeout = step_timeout
        # the factories hold a slot, not the environment: a worker thread never keeps an unclosed env alive, so a
        # forgotten env is collected and its finalizer stops the episode
        self._slot = _Slot()
        override = self._slot.make_user if self._side == "user" else None
        self.runner: Runner = build_runner(spec, user_factory_override=override)
        if self._side == "agent":
            self.runner.agent_factory = self._slot.make_agent
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.task_id = task_id
        self.action_space = TextSpace(tool_calls=True)
        self.observation_space = TextSpace()
        self._run_seed = spec.seed
        self._episode = -1
        self._worker: threading.Thread | None = None
        self._shown = 0
        self._done = True

    # ------------------------------------------------------------------------------------------- components
    # ------------------------------------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a new episode (a running one is ended first).

        Args:
            seed: the run seed (episode 0 of it); None: the next episode of the current seed.
            options: ``{"task_id": ...}`` picks the episode's task.

        Returns:
            ``(observation, info)``: the caller's first view and ``task_id``, ``seed`` (the trial seed), ``episode``,
            ``policy``, ``tools``, ``user_tools`` (schemas) and ``messages`` (the new messages, OpenAI form).

        Raises:
            EpisodeTimeout: the other side did not answer within ``step_timeout``.
            KeyError: ``options["task_id"]`` is not one of the environment's tasks.
        """
        super().reset(seed=seed)
        self._end_episode()
        if seed is not None:
            self._run_seed = seed
            self._episode = 0
        else:
            self._episode += 1
        if self.runner.config.seed != self._run_seed:
            self.runner.config = self.runner.config.model_copy(update={"seed": self._run_seed})
        task = self._pick_task(options)
        bridge = self._bridge = self._slot.bridge = _Bridge(self._idle_timeout)
        self._finalizer = weakref.finalize(self, bridge.actions.put, _STOP)
        runner = self.runner
        self._shown = 0
        self._done = False
        episode = self._episode

        def work() -> None:
            try:
                bridge.events.put(("done", runner.run_trial(task, episode)))
            except BaseException as e:  # noqa: BLE001 - handed to the environment, which raises it
                bridge.events.put(("crash", e))

        self._worker = threading.Thread(target=work, name=f"tausim-gym-{task.id}-{episode}", daemon=True)
        self._worker.start()
        obs, _, _, _, info = self._next()
        ctx = bridge.ctx
        info.update(task_id=task.id, episode=episode, seed=self.runner.trial_seed(task, episode))
        if ctx is not None:
            info.update(policy=ctx.policy, tools=ctx.tools, user_tools=ctx.user_tools)
        return obs, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play the caller's action; return what the caller sees next.

        Args:
            action: text, or a tool call (a dict or its JSON text; see the module docstring).

        Returns:
            ``(observation, reward, terminated, truncated, info)``; the reward is 1.0 on the last step of a passed
            trial, else 0.0.

        Raises:
            gymnasium.error.ResetNeeded: no episode is running (call ``reset``).
            EpisodeTimeout: the other side did not answer within ``step_timeout``.
        """
        if self._done or self._bridge is None:
            raise gymnasium.error.ResetNeeded("the episode has ended (or never started): call reset()")
        self._bridge.actions.put(action)
        return self._next()

    def close(self) -> None:
        """End a running episode and release the run's services (model clients, cache)."""
        self._end_episode()
        services = getattr(self.runner, "services", None)
        if services is not None:
            services.close()
        super().close()

    # ------------------------------------------------------------------------------------------- helpers
    def _pick_task(self, options: dict[str, Any] | None) -> Task:
        by_id = {t.id: t for t in self.runner.tasks}
        wanted = (options or {}).get("task_id", self.task_id)
        if wanted is not None:
            if str(wanted) not in by_id:
                raise KeyError(f"task {wanted!r} is not one of the environment's tasks")
            return by_id[str(wanted)]
        return self.runner.tasks[int(self.np_random.integers(len(self.runner.tasks)))]

    def _next(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Wait for the worker's next event: the caller's turn, or the end of the trial."""
        assert self._bridge is not None
        try:
            kind, payload = self._bridge.events.get(timeout=self.step_timeout)
        except queue.Empty:
            self._end_episode()
            raise EpisodeTimeout(f"the other side did not answer within step_timeout={self.step_timeout:g} s; "
                                 "the episode was closed") from None
        if kind == "crash":
            self._done = True
            raise payload
        if kind == "turn":
            text, new = self._observe(payload)
            return text, 0.0, False, False, {"messages": [m.openai() for m in new]}
        result: TrialResult = payload
        self._done = True
        text, new = self._observe(self._final_view(result))
        reason = TerminationReason(result.termination_reason)
        info = {"messages": [m.openai() for m in new], "passed": result.passed, "termination_reason": str(reason),
                "grade": result.grade.model_dump(mode="json") if result.grade is not None else None,
                "error": result.error, "result": result}
        truncated = reason in _TRUNCATING
        return text, 1.0 if result.passed else 0.0, not truncated, truncated, info

    def _observe(self, messages: Sequence[Message]) -> tuple[str, list[Message]]:
        """The messages the caller has not seen yet, and their text (their contents, one per line).

        The caller's own messages are left out, but at the start (a greeting, a history).
        """
        new = list(messages[self._shown:])
        if self._shown:
            new = [m for m in new if m.role != self._own_role]
        self._shown = len(messages)
        return "\n".join(m.content for m in new if m.content), new

    def _final_view(self, result: TrialResult) -> list[Message]:
        """The finished trial's messages as the caller's side sees them."""
        raise NotImplementedError

    def _end_episode(self) -> None:
        """Tell a running episode's bridge to stop and wait (bounded) for its worker."""
        worker, bridge = self._worker, self._bridge
        self._done = True
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if worker is None or bridge is None or not worker.is_alive():
            return
        bridge.actions.put(_STOP)
        worker.join(self.step_timeout)  # a worker still busy then (a slow model) ends on its own; it is a daemon
        self._worker = None


class AgentEnv(_TausimEnv):
    """``tausim/Agent-v0``: the caller plays the agent against tausim's simulated user (see the module docstring)."""

    _side = "agent"
    _own_role = "assistant"

    def _final_view(self, result: TrialResult) -> list[Message]:
        return [m for m in result.trajectory.messages if m.requestor is None]


class UserEnv(_TausimEnv):
    """``tausim/User-v0``: the caller plays the user against a configured agent (see the module docstring)."""

    _side = "user"
    _own_role = "user"

    def _final_view(self, result: TrialResult) -> list[Message]:
        return [m for m in result.trajectory.messages if visible_to_user(m) or m.requestor == "user"]


def _register(env_id: str, entry: Callable[..., gymnasium.Env[Any, Any]]) -> None:
    if env_id not in registry:
        register(id=env_id, entry_point=f"{entry.__module__}:{entry.__qualname__}", disable_env_checker=True)


_register("tausim/Agent-v0", AgentEnv)
_register("tausim/User-v0", UserEnv)

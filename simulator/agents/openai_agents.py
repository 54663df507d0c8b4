"""``--agent openai-agents:module:factory``: the agent under test is an OpenAI Agents SDK ``Agent``.

The factory returns an ``agents.Agent`` (package ``openai-agents``, extra ``tausim[openai-agents]``); the model is
whatever the agent is configured with. tausim gives the agent the trial's tools as SDK function tools (replacing the
agent's own tools) and the conversation, and runs the SDK's own loop (``Runner.run``) on a background event loop. The
function tools do not run anything themselves: each invocation is handed to tausim as a tool call of the step, tausim
runs it on the trial's own database and records it like a native call, and the tool returns tausim's result to the
SDK, which goes on (the next model call, or its final output: the agent's message to the user). All the calls of one
model answer make one step (parallel tool calls stay one turn).

The factory may take, by parameter name, ``ctx`` (the :class:`~simulator.types.protocols.TrialContext`), ``policy``
(the domain policy text) and ``seed``; an agent without instructions gets the
policy as its instructions. Tracing export is off (``RunConfig(tracing_disabled=True)``): nothing leaves the machine
but the model's own requests::

    # my_agents.py
    from agents import Agent, OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    def build(policy):
        client = AsyncOpenAI(base_url="http://127.0.0.1:8000/v1", api_key="test")
        return Agent(name="support", instructions=policy,
                     model=OpenAIChatCompletionsModel(model="my-model", openai_client=client))

    # tausim run --domain retail --agent openai-agents:my_agents:build
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable, Sequence
from typing import Any

from simulator.agents._adapters import (
    call_factory,
    describe_error,
    error_kind,
    failed_turn,
    load_factory,
    parse_arguments,
)
from simulator.agents._loop import LoopThread
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage
from simulator.types.protocols import TrialContext

__all__ = ["OpenAIAgentsAdapter", "build_openai_agents", "to_response_items"]

STEP_TIMEOUT = 300.0
"""Seconds a step waits for the SDK's next tool calls or final output (then the trial ends ``agent_error``)."""


def _import_sdk() -> Any:
    try:
        import agents
    except ImportError as e:
        raise ValueError("--agent openai-agents: the OpenAI Agents SDK is not installed "
                         "(pip install 'tausim[openai-agents]')") from e
    return agents


def to_response_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Convert trial messages to the SDK's input items (the Responses API shape).

    Args:
        messages: the trial's messages in order (system messages and the user's own tool calls skipped).

    Returns:
        ``{"role": "user" | "assistant", "content"}`` messages, ``{"type": "function_call", ...}`` for each tool call
        and ``{"type": "function_call_output", ...}`` for each result.
    """
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system" or m.requestor == "user":
            continue
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content or ""})
            continue
        if m.content:
            items.append({"role": m.role, "content": m.content})
        for c in m.tool_calls:
            items.append({"type": "function_call", "call_id": c.id, "name": c.name,
                          "arguments": c.openai()["function"]["arguments"]})
    return items


class OpenAIAgentsAdapter:
    """An :class:`~simulator.types.protocols.Agent` driving an OpenAI Agents SDK agent for one trial.

    Args:
        ctx: the trial context (``tools`` and ``policy`` are read; never the task's gold).
        sdk_agent: the SDK ``Agent`` (its tools are replaced by the trial's).
        loop: the background loop the SDK runs on.
        step_timeout: seconds a step waits for the SDK.
        max_turns: the SDK's ``max_turns`` per user turn (model calls before it gives up).

    Attributes:
        agent: the SDK agent with the trial's function tools (agents it hands off to keep their own tools, which the
            SDK runs unrecorded: give the trial's tools to the agent that calls them).
        model: the agent's model name, when it has one.
        resumes_from_history: True: between user turns the adapter keeps no state, each turn's SDK run starts from
            the messages given (a trajectory prefix needs no replay).
    """

    resumes_from_history = True

    def __init__(self, ctx: TrialContext, sdk_agent: Any, loop: LoopThread, *, step_timeout: float = STEP_TIMEOUT,
                 max_turns: int = 50) -> None:
        self._sdk = _import_sdk()
        self._loop = loop
        self._timeout = step_timeout
        self._max_turns = max_turns
        self._names = [t["function"]["name"] for t in ctx.tools]
        changes: dict[str, Any] = {"tools": [self._function_tool(t["function"]) for t in ctx.tools]}
        if not getattr(sdk_agent, "instructions", None):
            changes["instructions"] = ctx.policy
        self.agent = sdk_agent.clone(**changes)
        model = getattr(self.agent, "model", None)
        self.model = model if isinstance(model, str) else getattr(model, "model", None)
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._results: dict[str, asyncio.Future[str]] = {}
        self._expected: list[str] = []  # call ids of the last model answer meant for tausim
        self._batch: dict[str, ToolCall] = {}
        self._text: str | None = None
        self._usage = Usage(cost_usd=None)
        self._run: Any = None  # the concurrent future of the SDK run in progress
        self._seen = 0

    # ------------------------------------------------------------------------------------------ SDK side (loop)
    def _function_tool(self, schema: dict[str, Any]) -> Any:
        name = schema["name"]

        async def invoke(tool_ctx: Any, args_json: str) -> str:
            call_id = str(getattr(tool_ctx, "tool_call_id", "") or f"sdk_{len(self._results)}")
            args, raw = parse_arguments(args_json)
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._results[call_id] = future
            self._batch[call_id] = ToolCall(id=call_id, name=name, arguments=args, raw_arguments=raw)
            if all(i in self._batch for i in self._expected) or call_id not in self._expected:
                self._post_calls()
            return await asyncio.wait_for(future, self._timeout)

        return self._sdk.FunctionTool(name=name, description=schema.get("description", ""),
                                      params_json_schema=schema.get("parameters") or {"type": "object"},
                                      on_invoke_tool=invoke, strict_json_schema=False)

    def _post_calls(self) -> None:
        order = {i: n for n, i in enumerate(self._expected)}
        calls = sorted(self._batch.values(), key=lambda c: order.get(c.id, len(order)))
        self._batch = {}
        self._expected = []
        message = Message(role="assistant", content=self._text, tool_calls=calls)
        self._text = None
        self._events.put(("turn", AgentTurn(message=message, usage=self._take_usage())))

    def _take_usage(self) -> Usage:
        usage, self._usage = self._usage, Usage(cost_usd=None)
        return usage

    def _hooks(self) -> Any:
        adapter = self

        class Hooks(self._sdk.RunHooks):  # type: ignore[misc,name-defined]
            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                adapter._on_model_answer(response)

        return Hooks()

    def _on_model_answer(self, response: Any) -> None:
        used = getattr(response, "usage", None)
        self._usage = self._usage + Usage(prompt_tokens=int(getattr(used, "input_tokens", 0) or 0),
                                          completion_tokens=int(getattr(used, "output_tokens", 0) or 0),
                                          cost_usd=None, calls=1, attempts=1)
        texts: list[str] = []
        self._expected = []
        for item in getattr(response, "output", []) or []:
            kind = getattr(item, "type", None)
            if kind == "function_call" and getattr(item, "name", None) in self._names:
                self._expected.append(str(item.call_id))
            elif kind == "message":
                texts.extend(str(getattr(part, "text", "")) for part in getattr(item, "content", []) or [])
        self._text = "".join(texts) or None

    async def _run_sdk(self, items: list[dict[str, Any]]) -> None:
        sdk = self._sdk
        try:
            result = await sdk.Runner.run(self.agent, items, max_turns=self._max_turns, hooks=self._hooks(),
                                          run_config=sdk.RunConfig(tracing_disabled=True))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the framework or its model ends the trial
            self._events.put(("error", (describe_error("openai-agents", e), error_kind(e))))
            return
        output = result.final_output
        text = output if isinstance(output, str) else (None if output is None else str(output))
        self._events.put(("turn", AgentTurn(message=Message(role="assistant", content=text or ""),
                                            usage=self._take_usage())))

    # ------------------------------------------------------------------------------------------ tausim side
    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the SDK agent's next tool calls or its message.

        Args:
            messages: all messages of the trial in order.

        Returns:
            The tool calls of one model answer (tausim runs them; their results go back to the SDK at the next step),
            or the SDK's final output as the message to the user; an ``agent_error`` / ``infra_error`` /
            ``setup_error`` turn when the SDK or its model failed or did not answer in time.
        """
        new = messages[self._seen:]
        self._seen = len(messages)
        if self._run is not None and not self._run.done() and self._results:
            for m in new:
                future = self._results.pop(m.tool_call_id or "", None) if m.role == "tool" else None
                if future is not None:
                    self._loop.call(_resolve, future, m.content or "")
        else:
            self._results.clear()
            self._run = self._loop.submit(self._run_sdk(to_response_items(messages)))
        try:
            kind, value = self._events.get(timeout=self._timeout)
        except queue.Empty:
            self.close()
            return failed_turn(f"openai-agents: no tool call or answer from the agent in {self._timeout:g} s")
        if kind == "error":
            return failed_turn(*value)
        turn: AgentTurn = value
        return turn

    def close(self) -> None:
        """Stop the SDK run in progress, if any (its pending tool calls are cancelled)."""
        if self._run is not None and not self._run.done():
            self._run.cancel()


def _resolve(future: asyncio.Future[str], content: str) -> None:
    if not future.done():
        future.set_result(content)


def build_openai_agents(arg: str, **options: Any) -> Callable[[TrialContext], OpenAIAgentsAdapter]:
    """Return the factory of ``--agent openai-agents:module:factory``.

    Args:
        arg: ``package.module:factory``; the factory returns an SDK ``Agent`` (see the module docstring for what it
            may take).
        **options: ``step_timeout`` (seconds) and ``max_turns`` (:class:`OpenAIAgentsAdapter`); the run's
            ``timeout`` (``--request-timeout``, seconds) is the step timeout when it is shorter than
            :data:`STEP_TIMEOUT` and none is given; other run-wide options (``domain``, model parameters) are
            ignored: the agent's own configuration decides.

    Returns:
        A callable building one :class:`OpenAIAgentsAdapter` per trial; every trial's SDK run shares one background
        event loop.

    Raises:
        ValueError: the SDK is not installed, or the factory reference is malformed or cannot be imported.
    """
    sdk = _import_sdk()
    factory = load_factory("openai-agents", arg)
    adapter_options = {k: options[k] for k in ("step_timeout", "max_turns") if k in options}
    timeout = options.get("timeout")  # the run's --request-timeout bounds each step's wait for the SDK as well
    if "step_timeout" not in adapter_options and isinstance(timeout, int | float) and 0 < timeout < STEP_TIMEOUT:
        adapter_options["step_timeout"] = float(timeout)
    loop = LoopThread("tausim-openai-agents")

    def build(ctx: TrialContext) -> OpenAIAgentsAdapter:
        sdk_agent = call_factory(factory, ctx)
        if not isinstance(sdk_agent, sdk.Agent):
            raise TypeError(f"--agent openai-agents:{arg}: the factory returned {type(sdk_agent).__name__}, "
                            "expected an agents.Agent")
        return OpenAIAgentsAdapter(ctx, sdk_agent, loop, **adapter_options)

    return build

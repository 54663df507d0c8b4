"""An agent whose ``step`` is ``async def``, tested by tausim: the runner awaits it on its worker's event loop.

The agent asks a model for each step with an async OpenAI client (``openai.AsyncOpenAI``): the conversation and the
trial's tool schemas go out, text or tool calls come back. The model here is the loopback scripted server (127.0.0.1
only), which answers as a model that replays the task's gold actions. ``--trial-timeout`` applies: past it the
agent's pending request is cancelled. Offline; run from the repository root::

    python examples/async-agent/run.py [TASK_ID]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from openai import AsyncOpenAI

from simulator import AgentTurn, Message, RunSpec, ToolCall, TrialContext, build_runner
from simulator.interop.loopback import openai_server, oracle_script

os.environ["NO_PROXY"] = "127.0.0.1"  # loopback only, never through a proxy
MODEL_URL = ""  # set by main() once the loopback model server runs


def to_chat(policy: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as chat-completions messages, the policy as the system message."""
    chat: list[dict[str, Any]] = [{"role": "system", "content": policy}]
    for m in messages:
        entry: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments)}} for c in m.tool_calls]
        if m.role == "tool":
            entry["tool_call_id"] = m.tool_call_id
        chat.append(entry)
    return chat


class AsyncSupportAgent:
    """One trial's agent: each step is one awaited chat completion."""

    def __init__(self, ctx: TrialContext):
        self.ctx = ctx
        self.client = AsyncOpenAI(base_url=MODEL_URL, api_key="loopback", timeout=30, max_retries=1)

    async def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Ask the model; its tool calls continue the turn, its text goes to the user."""
        reply = await self.client.chat.completions.create(
            model="support-model", messages=to_chat(self.ctx.policy, messages),  # type: ignore[arg-type]
            tools=self.ctx.tools)  # type: ignore[arg-type]
        said = reply.choices[0].message
        calls = [ToolCall(id=c.id, name=c.function.name, arguments=json.loads(c.function.arguments or "{}"))
                 for c in said.tool_calls or [] if c.type == "function"]
        return AgentTurn(message=Message(role="assistant", content=said.content, tool_calls=calls))


def main(task_id: str = "cancel-gift-card-balance") -> int:
    """Run one built-in retail task with the async agent; print and return its outcome (0: pass)."""
    global MODEL_URL
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task_id], trial_timeout=60,
                                  preflight=False))
    with openai_server({"support-model": oracle_script(runner.tasks[0])}) as server:
        MODEL_URL = server.api_base
        runner.agent_factory = AsyncSupportAgent
        trial = runner.run().trials[0]
    print(f"async-agent: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

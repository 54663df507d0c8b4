"""An A2A agent whose tools come over MCP, tested by tausim (``--agent a2a:URL``).

``SupportAgent`` is a plain A2A agent (an ``a2a-sdk`` ``AgentExecutor``, served here on 127.0.0.1 by the SDK's own
server): for each user message it asks a chat model what to do, and calls the tools the model picks through the MCP
endpoint whose URL tausim puts in the message metadata (``mcp_url``; the ``mcp`` SDK client). The model is the
loopback scripted server, answering as a model that replays the task's gold actions. tausim speaks to the agent as the
user would (one A2A context per trial), runs and records every tool call the agent makes over MCP, and grades the
trial as any other. Offline; run from the repository root (needs ``pip install -e '.[a2a]'``)::

    python examples/a2a/run.py [TASK_ID]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor
from google.protobuf.json_format import MessageToDict
from mcp import Client
from openai import AsyncOpenAI

from simulator import RunSpec, build_runner
from simulator.agents.a2a_agent import build_a2a_agent
from simulator.interop.a2a_server import a2a_server
from simulator.interop.loopback import openai_server, oracle_script

os.environ["NO_PROXY"] = "127.0.0.1"  # loopback only, never through a proxy


class SupportAgent(AgentExecutor):
    """An A2A agent: a chat model decides, the trial's tools are reached over MCP; one history per A2A context."""

    def __init__(self, model_url: str, model: str) -> None:
        self.llm = AsyncOpenAI(base_url=model_url, api_key="loopback")
        self.model = model
        self.histories: dict[str, list[dict[str, Any]]] = {}

    async def execute(self, context: Any, event_queue: Any) -> None:
        """Answer one user message: model calls and MCP tool calls until the model replies with text."""
        metadata = MessageToDict(context.message.metadata)  # {"mcp_url": ..., "tausim": {"policy", ...}}
        history = self.histories.setdefault(context.context_id, [
            {"role": "system", "content": metadata["tausim"]["policy"]}])
        history.append({"role": "user", "content": context.get_user_input()})
        async with Client(metadata["mcp_url"]) as mcp:
            tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                       "parameters": t.input_schema}}
                     for t in (await mcp.list_tools()).tools]
            for _ in range(20):  # a bounded number of model calls per message
                answer = (await self.llm.chat.completions.create(model=self.model, messages=history,
                                                                 tools=tools)).choices[0].message
                history.append(answer.model_dump(exclude_none=True))
                if not answer.tool_calls:
                    break
                for call in answer.tool_calls:
                    result = await mcp.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                    text = "".join(getattr(part, "text", "") for part in result.content)
                    history.append({"role": "tool", "tool_call_id": call.id, "content": text})
        await event_queue.enqueue_event(new_text_message(answer.content or "", context_id=context.context_id))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        """Cancelling is not supported by this agent."""
        raise NotImplementedError


def main(task_id: str = "cancel-gift-card-balance") -> int:
    """Run one built-in retail task against the A2A agent; print and return its outcome (0: pass)."""
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task_id], preflight=False))
    with openai_server({"support-model": oracle_script(runner.tasks[0])}) as model, \
            a2a_server(SupportAgent(model.api_base, "support-model"), name="support") as url:
        factory = build_a2a_agent(url, timeout=60)
        factory.client.preflight()  # type: ignore[attr-defined]  # what `tausim run` checks before any trial
        runner.agent_factory = factory
        trial = runner.run().trials[0]
        factory.client.close()  # type: ignore[attr-defined]
    print(f"a2a: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls over MCP)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

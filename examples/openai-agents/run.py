"""An OpenAI Agents SDK agent tested by tausim (``--agent openai-agents:module:factory``).

``build`` is the factory: a plain SDK ``Agent`` whose model is an ``OpenAIChatCompletionsModel`` on the loopback
scripted server (127.0.0.1 only), which answers as a model that replays the task's gold actions. tausim gives the
agent the trial's tools as function tools; every call the SDK makes goes through tausim (run on the trial's own
database and recorded), and the trial is graded as any other. Tracing export is off. Offline; run from the
repository root (needs ``pip install -e '.[openai-agents]'``)::

    python examples/openai-agents/run.py [TASK_ID]
"""

from __future__ import annotations

import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI

from simulator import RunSpec, build_runner
from simulator.agents.openai_agents import build_openai_agents
from simulator.interop.loopback import openai_server, oracle_script

os.environ["NO_PROXY"] = "127.0.0.1"  # loopback only, never through a proxy
set_tracing_disabled(True)  # nothing leaves the machine
MODEL_URL = ""  # set by main() once the loopback model server runs


def build(policy: str) -> Agent:
    """The agent factory: tausim calls it once per trial (with the domain policy) and adds the trial's tools."""
    client = AsyncOpenAI(base_url=MODEL_URL, api_key="test")
    return Agent(name="support", instructions=policy,
                 model=OpenAIChatCompletionsModel(model="support-model", openai_client=client))


def main(task_id: str = "cancel-gift-card-balance") -> int:
    """Run one built-in retail task with the SDK agent; print and return its outcome (0: pass)."""
    global MODEL_URL
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task_id], preflight=False))
    with openai_server({"support-model": oracle_script(runner.tasks[0])}) as server:
        MODEL_URL = server.api_base
        runner.agent_factory = build_openai_agents("__main__:build", step_timeout=60)
        trial = runner.run().trials[0]
    print(f"openai-agents: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

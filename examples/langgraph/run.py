"""A LangGraph agent tested by tausim (``--agent langgraph:module:factory``).

``build`` is the factory: LangGraph's prebuilt ReAct agent on ``ChatOpenAI`` pointed at the loopback scripted server
(127.0.0.1 only), which answers as a model that replays the task's gold actions. tausim hands the factory the
trial's tools; every call the graph makes goes through tausim (run on the trial's own database and recorded), and
the trial is graded as any other. Offline; run from the repository root (needs ``pip install -e '.[langgraph]'``)::

    python examples/langgraph/run.py [TASK_ID]
"""

from __future__ import annotations

import os
import sys
import warnings

from langchain_openai import ChatOpenAI

from simulator import RunSpec, build_runner
from simulator.agents.langgraph_agent import build_langgraph_agent
from simulator.interop.loopback import openai_server, oracle_script

os.environ["NO_PROXY"] = "127.0.0.1"  # loopback only, never through a proxy
MODEL_URL = ""  # set by main() once the loopback model server runs


def build(tools: list, policy: str):  # type: ignore[no-untyped-def]
    """The graph factory: tausim calls it once per trial with the trial's tools and the domain policy."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's deprecation notice in LangGraph 1.x
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model="support-model", base_url=MODEL_URL, api_key="test", timeout=30)
        return create_react_agent(model, tools, prompt=policy)


def main(task_id: str = "cancel-gift-card-balance") -> int:
    """Run one built-in retail task with the graph; print and return its outcome (0: pass)."""
    global MODEL_URL
    runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task_id], preflight=False))
    with openai_server({"support-model": oracle_script(runner.tasks[0])}) as server:
        MODEL_URL = server.api_base
        runner.agent_factory = build_langgraph_agent("__main__:build")
        trial = runner.run().trials[0]
    print(f"langgraph: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

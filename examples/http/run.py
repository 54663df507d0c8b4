"""An agent service behind an OpenAI-compatible chat-completions endpoint, tested by tausim (``--agent http:URL``).

The service here is the loopback scripted server (127.0.0.1 only): it answers like an agent that looks the customer
up, cancels the order and reports the refund, i.e. it replays the task's gold actions as tool calls. tausim sends it
the conversation and the tool schemas, runs each tool call on the trial's own database, records it and grades the
trial. Offline; run from the repository root::

    python examples/http/run.py [TASK_ID]
"""

from __future__ import annotations

import os
import sys

from simulator import RunSpec, build_runner
from simulator.agents.http_agent import build_http_agent
from simulator.interop.loopback import openai_server, oracle_script

os.environ["NO_PROXY"] = "127.0.0.1"  # loopback only, never through a proxy


def main(task_id: str = "cancel-gift-card-balance") -> int:
    """Run one built-in retail task against the service; print and return its outcome (0: pass)."""
    try:
        runner = build_runner(RunSpec(domain="retail", user="rule", task_ids=[task_id], preflight=False))
    except ValueError as e:  # e.g. no such task: one line, not a traceback
        print(f"http: {e}", file=sys.stderr)
        return 2
    with openai_server({"support-agent": oracle_script(runner.tasks[0])}) as service:
        factory = build_http_agent(service.api_base, model="support-agent", timeout=30)
        factory.client.preflight()  # type: ignore[attr-defined]  # what `tausim run` checks before any trial
        runner.agent_factory = factory
        trial = runner.run().trials[0]
    print(f"http: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

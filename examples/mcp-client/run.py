"""An agent written with the official ``mcp`` SDK client, driving one trial's tools served over MCP.

tausim serves the trial's tools over streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (what ``tausim serve-tools
--domain retail --task-id TASK --port P`` does, here in-process: :mod:`simulator.interop.mcp_server`). The agent
connects with ``mcp.Client``, lists the tools, and calls them: here, a scripted agent that makes the task's gold
actions. Every call runs on the trial's own database and is recorded as a native one; once the agent is done the
trial is graded (state differences against the goal state). Offline; run from the repository root (needs
``pip install -e '.[mcp]'``)::

    python examples/mcp-client/run.py [TASK_ID]
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import anyio
from mcp import Client

from simulator import RunSpec
from simulator.interop.mcp_server import ToolSession, bind_loopback, serve_http


async def agent(url: str, plan: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The outside agent: connect, list the tools, make the planned calls; return the tool names it saw."""
    with anyio.fail_after(60):  # nothing waits forever
        async with Client(url) as client:
            listed = await client.list_tools()
            names = {t.name for t in listed.tools}
            for name, arguments in plan:
                if name not in names:
                    raise RuntimeError(f"the server has no tool {name!r}")
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name} failed: {result.content}")
    return sorted(names)


def main(task_id: str = "cancel-no-longer-needed") -> int:
    """Serve one built-in retail task's tools, drive them with the MCP client, grade; print the outcome (0: pass)."""
    session = ToolSession.open(RunSpec(domain="retail", task_ids=[task_id], preflight=False))
    plan = [(a.name, dict(a.arguments)) for a in session.task.gold_actions]  # the script a real agent would decide
    ready, stop, urls = threading.Event(), threading.Event(), []
    sock = bind_loopback(0)

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    server = threading.Thread(target=serve_http, args=(session, sock, stop, on_ready), daemon=True)
    server.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the MCP server did not start within 60 s")
        tools = anyio.run(agent, urls[0], plan)
    finally:
        stop.set()
        server.join(30)
    trial = session.finish()
    print(f"mcp-client: {task_id}: {'pass' if trial.passed else 'FAIL'} ({len(tools)} tools listed, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

"""An A2A agent served on ``127.0.0.1``, for tests and examples of ``--agent a2a:URL``.

An ``AgentExecutor`` of your own runs behind the ``a2a-sdk``'s own server (JSON-RPC, an in-memory task store, the
agent card at ``/.well-known/agent-card.json``).

::

    from simulator.interop.a2a_server import a2a_server

    with a2a_server(MyExecutor(), name="support") as url:   # url: http://127.0.0.1:PORT
        ...  # tausim run --agent a2a:URL, or build_a2a_agent(url)

The SDK (extra ``tausim[a2a]``), Starlette and uvicorn are imported when a server starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from simulator.agents.mcp_tools import LOOPBACK, LoopbackServer, bind_loopback

__all__ = ["a2a_server", "agent_card"]


def agent_card(url: str, name: str, description: str) -> Any:
    """Return the agent card of an agent served at ``url`` (JSON-RPC binding, A2A protocol 1.0, text in and out).

    Args:
        url: the agent's base URL (its JSON-RPC endpoint).
        name: the agent's name.
        description: what it does.

    Returns:
        The card (``a2a.types.a2a_pb2.AgentCard``).
    """
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

    return AgentCard(
        name=name, description=description, version="1",
        supported_interfaces=[AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC,
                                             protocol_version=PROTOCOL_VERSION_CURRENT)],
        capabilities=AgentCapabilities(streaming=False), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="support", name=name, description=description, tags=["tausim"])])


@contextlib.contextmanager
def a2a_server(executor: Any, *, name: str = "tausim-a2a-agent",
               description: str = "A customer-service agent under test", port: int = 0,
               startup_timeout: float = 30.0) -> Iterator[str]:
    """Serve an A2A agent on ``127.0.0.1`` in a background thread while the ``with`` block runs.

    Args:
        executor: the agent's logic (an ``a2a.server.agent_execution.AgentExecutor``).
        name: the agent's name (its card).
        description: the agent's description (its card).
        port: the port (0: a free one).
        startup_timeout: seconds to wait for the server to start.

    Yields:
        The agent's base URL, ``http://127.0.0.1:PORT``.

    Raises:
        ImportError: the ``a2a`` extra is not installed.
        RuntimeError: the server did not start.
    """
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    sock = bind_loopback(port)
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}"
    card = agent_card(url, name, description)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
    server = LoopbackServer(app, sock, name="tausim-a2a-agent")
    try:
        server.start(startup_timeout)
        yield url
    finally:
        server.stop()

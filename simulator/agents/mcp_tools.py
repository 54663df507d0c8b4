"""Tools over MCP, the serving core: an MCP server for a set of tool schemas, and a loopback HTTP server thread.

Two parts of tausim give tools to an agent outside the process over MCP (the official ``mcp`` SDK, extra
``tausim[mcp]``):

- ``tausim serve-tools`` (:mod:`simulator.interop.mcp_server`): one trial's tools, served alone;
- the ``a2a:URL`` agent (:mod:`simulator.agents.a2a_agent`): the tools of each trial of a run, which the remote agent
  calls while tausim's conversation loop runs the calls and records them.

Both build their server with :func:`tools_server` (the tools' names, descriptions and JSON schemas as
:meth:`simulator.world.tools.Toolbox.schemas` gives them; every call handed to one coroutine) and run it over
streamable HTTP with :class:`LoopbackServer` (uvicorn in a daemon thread, bound to ``127.0.0.1`` only). The ``mcp``
SDK, uvicorn and anyio are imported when a server is built, not with this module.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["LOOPBACK", "LoopbackServer", "bind_loopback", "tools_server"]

LOOPBACK = "127.0.0.1"
"""The only address the servers bind."""

ToolCaller = Callable[[Any, str, "dict[str, Any] | None"], Awaitable[tuple[str, bool]]]
"""``await call(request, name, arguments) -> (text the agent sees, is an error)``; ``request`` is the HTTP request
(a Starlette ``Request``) the call came in (None over stdio)."""


def tools_server(schemas: Callable[[Any], Sequence[dict[str, Any]]], call: ToolCaller, *, name: str = "tausim",
                 instructions: str | None = None) -> Any:
    """Return an MCP server (``mcp.server.lowlevel.Server``) whose tools are OpenAI function schemas.

    ``tools/list`` answers the tools of ``schemas(request)`` (name, description, ``parameters`` as the input schema);
    ``tools/call`` answers the text of ``await call(request, name, arguments)`` (``is_error`` as it says). Arguments
    are not validated by the SDK: the caller's toolbox validates them, as for a native call.

    Args:
        schemas: ``schemas(request) -> [{"type": "function", "function": {...}}, ...]`` (``request``: the HTTP request
            of the ``tools/list`` call, or None).
        call: runs one call (see :data:`ToolCaller`); it must not raise for a failed tool call (answer the error text).
        name: the server's name (``serverInfo``).
        instructions: the server's instructions (shown to the client at initialisation).

    Returns:
        The server (serve it with ``server.streamable_http_app(...)`` and :class:`LoopbackServer`, or over stdio).

    Raises:
        ImportError: the ``mcp`` extra is not installed.
    """
    from mcp import types
    from mcp.server.lowlevel import Server

    def tool(schema: dict[str, Any]) -> Any:
        function = schema["function"]
        return types.Tool(name=function["name"], description=function.get("description") or "",
                          input_schema=function.get("parameters") or {"type": "object", "properties": {}})

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool(s) for s in schemas(getattr(ctx, "request", None))])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        text, error = await call(getattr(ctx, "request", None), params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    return Server(name, version="1", instructions=instructions, on_list_tools=on_list_tools,
                  on_call_tool=on_call_tool)


def bind_loopback(port: int = 0) -> socket.socket:
    """Return a listening TCP socket on ``127.0.0.1:port`` (0: a free port; read it from ``getsockname()``).

    Raises:
        OSError: the port is taken (or not allowed).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class LoopbackServer:
    """An ASGI app served by uvicorn in a daemon thread on a socket bound to ``127.0.0.1``.

    Args:
        app: the ASGI application (e.g. an MCP server's ``streamable_http_app``, or an A2A agent's Starlette app).
        sock: a listening socket on 127.0.0.1 (:func:`bind_loopback`).
        name: the thread's name.

    Attributes:
        port: the port served.

    Raises:
        ValueError: ``sock`` is not bound to 127.0.0.1.
    """

    def __init__(self, app: Any, sock: socket.socket, name: str = "tausim-loopback-http") -> None:
        import uvicorn

        host, self.port = sock.getsockname()[:2]
        if host != LOOPBACK:
            raise ValueError(f"the server binds {LOOPBACK} only, not {host}")
        self._sock = sock
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                                     timeout_graceful_shutdown=2))
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._target, name=name, daemon=True)

    def _target(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as e:  # noqa: BLE001 - handed to the starting thread
            self._failed.append(e)

    @property
    def alive(self) -> bool:
        """Whether the server thread still runs."""
        return self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> LoopbackServer:
        """Start serving and wait until the server accepts connections.

        Args:
            timeout: seconds to wait for the start.

        Returns:
            The server itself.

        Raises:
            RuntimeError: the server failed, or did not start within ``timeout`` (it is stopped then).
        """
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if self._failed or not self._thread.is_alive():
                raise RuntimeError(f"the server failed to start: {self._failed[0] if self._failed else 'it stopped'}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start within {timeout:g} s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Shut the server down (open connections are closed; at most ~15 s; idempotent)."""
        self._server.should_exit = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(5)

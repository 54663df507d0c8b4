"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 (stdlib only).

It stands in for vLLM, llama.cpp or Ollama: ``POST /v1/chat/completions`` answers from a script per model name,
in order. A script entry is one of:

- a string: an assistant text reply;
- ``{"tool_calls": [(id, name, arguments_text), ...], "content": optional text}``: a reply with tool calls;
- ``{"status": 429 | 500 | ...}``: an error answer (OpenAI's error body, ``Retry-After: 0`` on 429);
- ``{"slow": seconds, "then": entry}``: wait, then answer ``entry`` (a client timeout fires first);
- ``{"malformed": True}``: status 200 with a body that is not JSON;
- ``{"drop": True}``: close the connection without answering.

Every request is recorded (``server.requests[model]``: the decoded JSON bodies). A model whose script is used up
answers 500 with a message saying so, so a test never hangs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedOpenAIServer", "openai_server"]


class ScriptedOpenAIServer(ThreadingHTTPServer):
    """The server; start it with :func:`openai_server`."""

    daemon_threads = True

    def __init__(self, scripts: Mapping[str, Sequence[Any]]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scripts = {model: list(entries) for model, entries in scripts.items()}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    @property
    def api_base(self) -> str:
        """The URL to give as ``api_base`` (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_entry(self, model: str, body: dict[str, Any]) -> Any:
        with self.lock:
            self.requests.setdefault(model, []).append(body)
            script = self.scripts.get(model)
            if not script:
                return {"status": 500, "message": f"test server: no scripted answer left for model {model!r}"}
            return script.pop(0)

    def left(self, model: str) -> int:
        """Entries not yet used of a model's script."""
        with self.lock:
            return len(self.scripts.get(model, []))


def _completion(model: str, entry: Any, n: int) -> dict[str, Any]:
    if isinstance(entry, str):
        message: dict[str, Any] = {"role": "assistant", "content": entry}
        finish = "stop"
    else:
        calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                 for cid, name, args in entry["tool_calls"]]
        message = {"role": "assistant", "content": entry.get("content"), "tool_calls": calls}
        finish = "tool_calls"
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Keep the test output quiet."""

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """Answer one chat-completions request from the model's script."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            return
        model = str(body.get("model", ""))
        entry = self.server.next_entry(model, body)
        n = len(self.server.requests[model])
        while isinstance(entry, dict) and "slow" in entry:
            time.sleep(float(entry["slow"]))
            entry = entry["then"]
        if isinstance(entry, dict) and entry.get("drop"):
            self.close_connection = True
            self.connection.close()
            return
        if isinstance(entry, dict) and entry.get("malformed"):
            self._send(200, b'{"id": "chatcmpl-x", "choices": [{"message": ')
            return
        if isinstance(entry, dict) and "status" in entry:
            status = int(entry["status"])
            kind = "rate_limit_exceeded" if status == 429 else "server_error"
            error = {"error": {"message": entry.get("message", f"scripted {status}"), "type": kind, "code": kind}}
            self._send(status, json.dumps(error).encode(), {"Retry-After": "0"} if status == 429 else None)
            return
        self._send(200, json.dumps(_completion(model, entry, n)).encode())


@contextmanager
def openai_server(scripts: Mapping[str, Sequence[Any]]) -> Iterator[ScriptedOpenAIServer]:
    """Run a :class:`ScriptedOpenAIServer` on 127.0.0.1 (a free port) for the duration of the block.

    Args:
        scripts: the answers per model name (the name the client sends, without litellm's ``openai/`` prefix).

    Yields:
        The running server (``api_base``, ``requests``, ``left``).
    """
    server = ScriptedOpenAIServer(scripts)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

"""A small OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib only), for tests and examples.

It stands in for vLLM, llama.cpp or Ollama: ``POST /v1/chat/completions`` answers from a script per model name,
in order. A script entry is one of:

- a string: an assistant text reply;
- ``{"tool_calls": [(id, name, arguments_text), ...], "content": optional text}``: a reply with tool calls;
- ``{"status": 429 | 500 | ...}``: an error answer (OpenAI's error body, ``Retry-After: 0`` on 429);
- ``{"slow": seconds, "then": entry}``: wait, then answer ``entry`` (a client timeout fires first);
- ``{"malformed": True}``: status 200 with a body that is not JSON;
- ``{"body": value}``: status 200 with ``value`` as the JSON body, as is (a completion whose fields the caller
  chose, e.g. a tool call whose ``arguments`` is a number);
- ``{"raw": bytes}``: status 200 with these bytes as the body (e.g. UTF-8 with a character cut in half);
- ``{"drop": True}``: close the connection without answering.

Every request is recorded (``server.requests[model]``: the decoded JSON bodies). A model whose script is used up
answers 500 with a message saying so, so a test never hangs.

:func:`oracle_script` turns a task's gold actions into such a script (what the oracle agent would say), so that an
adapter or a remote agent driven by the server replays the gold actions, one tool call per answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedOpenAIServer", "openai_server", "oracle_script"]


class ScriptedOpenAIServer(ThreadingHTTPServer):
    """The server; start it with :func:`openai_server`."""

    daemon_threads = True

    def __init__(self, scripts: Mapping[str, Sequence[Any]]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scripts = {model: list(entries) for model, entries in scripts.items()}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of each request, in arrival order (None when absent)."""
        self.lock = threading.Lock()

    @property
    def api_base(self) -> str:
        """The URL to give as ``api_base`` (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_entry(self, model: str, body: dict[str, Any]) -> Any:
        """Record a request of ``model`` and return its next script entry (a 500 entry when none is left)."""
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
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first (a timeout test)
            self.close_connection = True

    def do_POST(self) -> None:
        """Answer one chat-completions request from the model's script."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            return
        model = str(body.get("model", ""))
        with self.server.lock:
            self.server.authorizations.append(self.headers.get("Authorization"))
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
        if isinstance(entry, dict) and "body" in entry:
            self._send(200, json.dumps(entry["body"]).encode())
            return
        if isinstance(entry, dict) and "raw" in entry:
            self._send(200, bytes(entry["raw"]))
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


def oracle_script(task: Any, *, closings: int = 3) -> list[Any]:
    """Return the script of a model that acts as the oracle agent does on ``task``.

    One answer per gold action (a tool call with the action's arguments, ids ``oracle_0``, ``oracle_1``, ...), then
    the oracle's closing message with the task's required outputs, then ``closings`` further closings for a user
    that asks again (the oracle's words, so the conversation is the oracle run's word for word).

    Args:
        task: a task (:class:`simulator.types.tasks.Task`: ``gold_actions`` with ``name`` and ``arguments``, and
            ``required_outputs``); only agent-side gold actions are scripted.
        closings: how many further closing messages follow the first.

    Returns:
        The script entries, for :func:`openai_server`.
    """
    script: list[Any] = []
    for i, action in enumerate(a for a in task.gold_actions if getattr(a, "requestor", None) != "user"):
        script.append({"tool_calls": [(f"oracle_{i}", action.name, json.dumps(dict(action.arguments)))]})
    outputs = list(task.required_outputs)
    answer = " The answer: " + ", ".join(outputs) + "." if outputs else ""
    script.append("Your request has been handled." + answer)
    script.extend(["That has been handled as well." + answer + " Is there anything else I can help with?"] * closings)
    return script

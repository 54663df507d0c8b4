"""What the ``a2a:URL`` agent reads and writes on the wire: the user's A2A message, the agent's answer, failures.

The ``a2a-sdk`` types (protobuf messages, version 1.x) are imported inside the functions: this module loads without
the ``a2a`` extra.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState

from simulator.agents._adapters import ErrorKind

__all__ = ["CARD_PATH", "A2AFailure", "Working", "failure_of", "parse_card", "poll_delays", "reply_of",
           "retry_last_result", "user_message"]

CARD_PATH = ".well-known/agent-card.json"
"""Where an A2A agent serves its card, relative to its base URL."""

_TRANSIENT_STATUS = (429, 500, 502, 503, 504)
_INFRA_STATUS = (429, 502, 503, 504)
_SETUP_STATUS = (401, 403, 404, 405)


@dataclass(frozen=True)
class A2AFailure:
    """One failed exchange with the agent (a value: the step turns it into an error turn).

    Attributes:
        message: one line naming the URL and the cause.
        kind: the trial's termination reason (``agent_error``: the agent misbehaved; ``infra_error``: it could not be
            reached or was overloaded; ``setup_error``: it can never work, e.g. refused credentials).
        transient: whether another attempt may succeed.
    """

    message: str
    kind: ErrorKind
    transient: bool = False


@dataclass(frozen=True)
class Working:
    """The agent answered a task that is still working (submitted or working): ask for it again.

    Attributes:
        task_id: the task's id.
    """

    task_id: str


def _line(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, control characters shown escaped (the text comes from the agent)."""
    flat = " ".join(str(text).split())
    return json.dumps(flat[:limit], ensure_ascii=True)[1:-1]


def user_message(text: str, context_id: str, task_id: str | None, metadata: dict[str, Any]) -> Any:
    """Return the ``SendMessageRequest`` of one user message.

    Args:
        text: the user's words (one text part).
        context_id: the trial's A2A context.
        task_id: the task to continue (one the agent left input-required), or None.
        metadata: the message's metadata (JSON values).

    Returns:
        The request (``a2a.types.a2a_pb2.SendMessageRequest``).
    """
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

    message = Message(message_id=uuid.uuid4().hex, context_id=context_id, role=Role.ROLE_USER,
                      parts=[Part(text=text)])
    if task_id:
        message.task_id = task_id
    message.metadata.update(metadata)
    return SendMessageRequest(message=message)


def _text(message: Any) -> str:
    from a2a.helpers import get_message_text

    return str(get_message_text(message))


def _task_text(task: Any) -> str:
    """The agent's words in a task: its status message, else its artifacts' text, else its last agent message."""
    from a2a.helpers import get_artifact_text
    from a2a.types.a2a_pb2 import Role

    if task.status.HasField("message"):
        text = _text(task.status.message)
        if text:
            return text
    texts = [t for t in (get_artifact_text(a) for a in task.artifacts) if t]
    if texts:
        return "\n".join(texts)
    agent = [m for m in task.history if m.role == Role.ROLE_AGENT]
    return _text(agent[-1]) if agent else ""


def reply_of(answer: Any, url: str) -> tuple[str, str | None] | A2AFailure | Working:
    """Read the agent's answer to a message.

    Args:
        answer: a ``StreamResponse`` (with a ``message`` or a ``task``) or a ``Task``.
        url: the agent's URL (for messages).

    Returns:
        ``(reply text, task to continue or None)`` for a message, a completed task or one that asks for input; a
        :class:`Working` task to ask for again; a failure for a failed, rejected, cancelled task, one that asks for
        authentication, or an answer with neither message nor task.
    """
    from a2a.types.a2a_pb2 import Task, TaskState

    if not isinstance(answer, Task):
        if answer.HasField("message"):
            return _text(answer.message), None
        if not answer.HasField("task"):
            return A2AFailure(f"A2A agent {url} answered neither a message nor a task", "agent_error")
        answer = answer.task
    state = answer.status.state
    name = TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")
    if state == TaskState.TASK_STATE_COMPLETED:
        return _task_text(answer), None
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        return _task_text(answer), answer.id
    if state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING):
        return Working(answer.id)
    said = _task_text(answer)
    detail = f": {_line(said)}" if said else ""
    if state == TaskState.TASK_STATE_AUTH_REQUIRED:
        return A2AFailure(f"A2A agent {url} asks for authentication (task {name}){detail}", "setup_error")
    return A2AFailure(f"A2A agent {url}: the task ended {name}{detail}", "agent_error")


def poll_delays(limit: float) -> Iterator[float]:
    """Seconds to wait between asks for a working task: 0.1, 0.2, 0.4, ... up to 2 each, ``limit`` in all."""
    total, delay = 0.0, 0.1
    while total + delay <= limit:
        yield delay
        total += delay
        delay = min(delay * 2, 2.0)


def parse_card(response: httpx.Response, url: str) -> Any:
    """Return the agent card of a card response, or the failure (a body that is not a usable card)."""
    from a2a.client.card_resolver import parse_agent_card

    try:
        data = response.json()
    except ValueError:
        return A2AFailure(f"A2A agent {url}: the agent card is not JSON: {_line(response.text, 120)}", "agent_error")
    try:
        return parse_agent_card(data)
    except Exception as e:  # noqa: BLE001 - the SDK's parser raises protobuf and type errors for a malformed card
        return A2AFailure(f"A2A agent {url}: the agent card is not valid: {_line(str(e), 160)}", "agent_error")


def failure_of(error: BaseException, url: str) -> A2AFailure:
    """Return the failure of an exchange that raised ``error`` (the SDK's errors and their httpx causes).

    Refused or dropped connections, 429 and 5xx are transient (429, 502, 503, 504 end ``infra_error``, a 500 the
    agent's own ``agent_error``); a timeout is not retried (the agent may still be acting); 401/403/404/405 are
    ``setup_error``; anything else (a body that is not JSON-RPC, an A2A error the agent answered) is ``agent_error``.
    """
    where = f"A2A agent {url}"
    cause = error if isinstance(error, httpx.HTTPError) else error.__cause__  # the card's request is tausim's own
    if type(error).__name__ == "A2AClientTimeoutError" or isinstance(cause, httpx.TimeoutException):
        return A2AFailure(f"{where}: no answer in time", "infra_error")
    if isinstance(cause, httpx.HTTPStatusError):
        status = cause.response.status_code
        kind: ErrorKind = ("infra_error" if status in _INFRA_STATUS else
                           "setup_error" if status in _SETUP_STATUS else "agent_error")
        body = _line(cause.response.text, 160)
        return A2AFailure(f"{where} answered HTTP {status}{': ' + body if body else ''}", kind,
                          transient=status in _TRANSIENT_STATUS)
    if isinstance(cause, httpx.RequestError):
        return A2AFailure(f"{where} is unreachable: {type(cause).__name__}: {_line(str(cause), 160)}",
                          "infra_error", transient=True)
    if isinstance(cause, json.JSONDecodeError):
        return A2AFailure(f"{where} answered a body that is not JSON", "agent_error")
    detail = _line(str(error), 200)
    return A2AFailure(f"{where} misbehaved: {type(error).__name__}{': ' + detail if detail else ''}", "agent_error")


def retry_last_result(state: RetryCallState) -> Any:
    """After the last attempt: its failure, returned rather than raised."""
    assert state.outcome is not None
    return state.outcome.result()

"""What the agent's and the user's code may raise: its own failure, recorded, or a stop that is not its own.

The agent and the simulated user are code under test (a step, a reply, the factory that builds them). Whatever it
raises is its own failure, recorded as the trial's ``agent_error`` / ``user_error`` with the traceback: an
``Exception``, ``SystemExit``, ``GeneratorExit``, a ``KeyboardInterrupt`` it raised itself, its own
``BaseException`` subclass; it never stops the run. Two exceptions are not the actor's and propagate:

- the user's Ctrl-C: Python delivers SIGINT to the main thread only, so a ``KeyboardInterrupt`` raised in the main
  thread may be the user's (a run's trials run in worker threads: one raised there is the actor's own);
- the cancellation of the asyncio task that runs the actor (``asyncio.CancelledError`` while that task is being
  cancelled, :meth:`asyncio.Task.cancelling`): how a trial's time limit stops an async agent. A ``CancelledError``
  the agent's code raised unasked (an inner task of its own that was cancelled) is its failure.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Callable
from typing import Any

from simulator.types.sanitize import bounded

__all__ = ["actor_traceback", "call_actor", "is_actor_failure"]


def is_actor_failure(error: BaseException) -> bool:
    """Whether ``error``, raised by agent or user code, is that code's failure (to record) or must propagate.

    Args:
        error: what the call raised.

    Returns:
        False for the user's Ctrl-C (a ``KeyboardInterrupt`` in the main thread) and for the cancellation of the
        running asyncio task (see the module docstring); True for anything else.
    """
    if isinstance(error, KeyboardInterrupt):
        return threading.current_thread() is not threading.main_thread()
    if isinstance(error, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop runs in this thread: nothing of ours is being cancelled
            return True
        return task is None or task.cancelling() == 0
    return True


def actor_traceback() -> str:
    """The exception being handled, as traceback text fit for the record (:func:`~simulator.types.sanitize.bounded`)."""
    return bounded(traceback.format_exc())


def call_actor(fn: Callable[..., Any], *args: Any) -> tuple[Any, str | None]:
    """Call agent or user code (e.g. a factory) and catch its failure (:func:`is_actor_failure`).

    Args:
        fn: the code to call.
        *args: its arguments.

    Returns:
        ``(what fn returned, None)``, or ``(None, its traceback)`` when it raised its own failure.

    Raises:
        KeyboardInterrupt, asyncio.CancelledError: what is not the actor's failure, as raised.
    """
    try:
        return fn(*args), None
    except BaseException as e:  # noqa: BLE001 - the actor's failure is recorded by the caller; the user's Ctrl-C
        if not is_actor_failure(e):
            raise
        return None, actor_traceback()

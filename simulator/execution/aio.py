"""Async agents in a run: one event loop per worker thread, on which that worker's async trials run.

An agent whose ``step`` is ``async def`` (:func:`simulator.dialogue.conversation.is_async_agent`), or built by an
``async def`` factory, has its conversation run as a coroutine
(:meth:`~simulator.dialogue.conversation.Conversation.arun`) on the event loop of the thread that runs the trial:
each worker thread (a thread of the run's pool, of a Dask
worker, or the caller's) gets one loop, made the first time it runs an async trial and kept for the next ones, so
many trials share a loop instead of paying for one each. ``--concurrency`` is the number of worker threads, as for
synchronous agents. The runner closes the idle loops when a run ends (:meth:`WorkerLoops.close`); a Dask
worker's threads keep theirs for the worker's next batches.

Time limit (``RunSpec.trial_timeout``): the conversation runs as a task for at most the time left
(:func:`run_within`); past it the pending step of the agent is *cancelled* (``asyncio.CancelledError`` is raised
inside its coroutine), the conversation ends ``timeout`` with what it did so far, and the trial is graded like any
other (a ``timeout`` never passes). A :class:`~simulator.dialogue.caps.TimeLimit` with the same deadline is checked
at every step too, so an agent that swallows the cancellation still ends at its next step; one that swallows it
and never returns is *abandoned* after :data:`CANCEL_GRACE_S` (left pending on the loop, never awaited again), so
nothing waits forever. An async agent must not block its loop (``time.sleep``, a
synchronous HTTP call): that is the synchronous agents' business, whose hung threads the runner abandons.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from simulator.dialogue.actors import is_actor_failure

__all__ = ["CANCEL_GRACE_S", "WorkerLoops", "run_within"]

T = TypeVar("T")

CANCEL_GRACE_S = 5.0
"""Seconds a cancelled conversation may take to end before it is abandoned."""


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Done callback of an abandoned task: read its outcome, so that asyncio logs no unretrieved exception."""
    if not task.cancelled():
        task.exception()


async def run_within(coro: Coroutine[Any, Any, T], seconds: float | None,
                     grace: float = CANCEL_GRACE_S) -> tuple[str, T | None]:
    """Run ``coro`` as a task for at most ``seconds``; past it cancel it and wait ``grace`` seconds for it to end.

    Args:
        coro: the coroutine (a conversation).
        seconds: the time left, in seconds; None: no limit.
        grace: seconds a cancelled task may take to end.

    Returns:
        ``("done", result)`` when it finished in time; ``("cancelled", result or None)`` when it ended after its
        cancellation (its result when it swallowed the cancellation and returned one);
        ``("abandoned", None)`` when it ignored the cancellation for ``grace`` seconds (it stays pending on the
        loop and is never awaited again).

    Raises:
        Whatever ``coro`` raises when it finishes in time.
    """
    task = asyncio.ensure_future(coro)
    if seconds is None:
        return "done", await task
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if done:
        return "done", task.result()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=grace)
    task.add_done_callback(_retrieve)
    if done and not task.cancelled() and task.exception() is None:
        return "cancelled", task.result()  # it swallowed the cancellation and ended on its own (e.g. a time cap)
    return ("cancelled" if done else "abandoned"), None


class WorkerLoops:
    """One asyncio event loop per thread, made on first use and closed by :meth:`close` (thread-safe).

    Owned by a :class:`~simulator.execution.runner.Runner`; no global state (two runners never share a loop).
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._loops: list[asyncio.AbstractEventLoop] = []

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion on this thread's loop and return its result.

        A ``KeyboardInterrupt`` or ``SystemExit`` that a task of an agent's own raises leaves the loop (asyncio lets
        those two out at once); but for the user's Ctrl-C (:func:`~simulator.dialogue.actors.is_actor_failure`) the
        loop is run on, and the code awaiting that task meets it (a trial's ``agent_error``).

        Raises:
            RuntimeError: this thread already runs an event loop (call from a thread of your own, e.g.
                ``asyncio.to_thread(runner.run_trial, ...)``); whatever ``coro`` raises.
        """
        loop: asyncio.AbstractEventLoop | None = getattr(self._local, "loop", None)
        if loop is None or loop.is_closed():
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                coro.close()
                raise RuntimeError("an async agent's trial cannot run in a thread that already runs an event loop; "
                                   "run it from a worker thread (e.g. asyncio.to_thread(runner.run_trial, ...))")
            loop = asyncio.new_event_loop()
            self._local.loop = loop
            with self._lock:
                self._loops.append(loop)
        future = asyncio.ensure_future(coro, loop=loop)
        while True:
            try:
                return loop.run_until_complete(future)
            except (KeyboardInterrupt, SystemExit) as e:
                # asyncio lets these two out of the loop from whichever task raised them; in a worker thread they
                # are an agent's own (a task of its own: asyncio.gather, a task group), never the user's Ctrl-C.
                # That task holds it as its exception: the conversation awaiting it gets it, as its agent_error.
                if future.done() or not is_actor_failure(e):
                    raise

    def __len__(self) -> int:
        """Return the number of loops made and not closed yet."""
        with self._lock:
            return sum(1 for loop in self._loops if not loop.is_closed())

    def close(self) -> None:
        """Close every loop that is not running (call once the threads that used them are done)."""
        with self._lock:
            loops, self._loops = self._loops, []
        for loop in loops:
            if loop.is_running():  # a thread still in a trial (an interrupted run): left to it
                with self._lock:
                    self._loops.append(loop)
                continue
            loop.close()

"""The event loop the async framework adapters run on: one background thread per factory, shared by its trials.

A framework agent (the OpenAI Agents SDK) runs its own loop of model calls and tool calls as a coroutine. tausim's
``step`` is synchronous, so the coroutine runs on a loop in a daemon thread and ``step`` waits (with a timeout) for
what it produces next. One loop serves every trial of a factory, so async clients the user's factory shares across
trials (an ``AsyncOpenAI`` client and its connection pool) always stay on the loop they were first used on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running forever in a daemon thread (started on first use).

    Args:
        name: the thread's name.
    """

    def __init__(self, name: str = "tausim-adapter-loop") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started on first use)."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self._name, daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule a coroutine on the loop.

        Args:
            coro: the coroutine.

        Returns:
            Its future (cancelling it cancels the task).
        """
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, callback: Any, *args: Any) -> None:
        """Run ``callback(*args)`` on the loop's thread, soon (thread-safe)."""
        self.loop.call_soon_threadsafe(callback, *args)

    def stop(self) -> None:
        """Stop the loop and let its thread end (idempotent; a later use starts a new loop)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)

"""Per-model request rate limiting shared by every model client of a run.

A run owns one :class:`RateLimiterRegistry`; the agent and user factories hand it to their
:class:`~simulator.models.llm.LLMClient`, which asks it for the limiter of its model. All clients of the same model
in the run therefore share one :class:`RateLimiter`, whatever thread they run in. There is no module-level
state: two runs in one process (or two tests) never share limiters.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

__all__ = ["RateLimiter", "RateLimiterRegistry"]

WINDOW_S = 60.0
"""Length of the sliding window over which ``rpm`` requests are allowed."""


class RateLimiter:
    """Allows at most ``rpm`` requests in any sliding window of 60 seconds; thread-safe.

    Each :meth:`acquire` reserves the earliest slot that keeps the limit (now, or 60 s after the ``rpm``-th
    most recent reservation) and then sleeps until it; reservations are handed out in call order, so
    waiting callers never stampede.

    Args:
        rpm: requests per minute (>= 1).
        clock: monotonic clock in seconds (injectable for tests).
        sleep: sleeps a number of seconds (injectable for tests: advance a fake clock instead).

    Raises:
        ValueError: ``rpm`` < 1.
    """

    def __init__(
        self,
        rpm: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rpm < 1:
            raise ValueError(f"rpm must be >= 1, got {rpm}")
        self.rpm = rpm
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._slots: deque[float] = deque()

    def reserve(self) -> float:
        """Reserve the next request slot without waiting.

        Returns:
            Seconds to wait from now until the slot (0.0 when a request may be sent at once).
        """
        with self._lock:
            now = self._clock()
            while self._slots and self._slots[0] <= now - WINDOW_S:
                self._slots.popleft()
            slot = now if len(self._slots) < self.rpm else max(now, self._slots[-self.rpm] + WINDOW_S)
            self._slots.append(slot)
            return slot - now

    def acquire(self) -> float:
        """Wait until a request may be sent under the limit.

        Returns:
            Seconds waited.
        """
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


class RateLimiterRegistry:
    """The limiters of one run, one per model string, created on first use; thread-safe.

    Args:
        rpm: requests per minute for every model, or ``{model: rpm}`` (models not named are unlimited),
            or None (no limit).
        clock: monotonic clock shared by the limiters (injectable for tests).
        sleep: sleep function shared by the limiters (injectable for tests).

    Raises:
        ValueError: an rpm value < 1.
    """

    def __init__(
        self,
        rpm: int | Mapping[str, int] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        values = [rpm] if isinstance(rpm, int) else list(rpm.values()) if rpm else []
        for v in values:
            if v < 1:
                raise ValueError(f"rpm must be >= 1, got {v}")
        self.rpm = rpm
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._limiters: dict[str, RateLimiter] = {}

    def get(self, model: str) -> RateLimiter | None:
        """Return the limiter shared by every client of ``model`` in this run, or None when unlimited.

        Args:
            model: the model string.

        Returns:
            The model's :class:`RateLimiter`, the same object on every call; None when no limit applies.
        """
        limit = self.rpm if isinstance(self.rpm, int) or self.rpm is None else self.rpm.get(model)
        if limit is None:
            return None
        with self._lock:
            limiter = self._limiters.get(model)
            if limiter is None:
                limiter = self._limiters[model] = RateLimiter(limit, clock=self._clock, sleep=self._sleep)
            return limiter

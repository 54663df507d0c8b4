"""Agents for the results-store tests, loaded by reference (``--agent py:tests.slow_agents:...``)."""

from __future__ import annotations

import os
import threading
import time

from simulator.agents import OracleAgent

STEP_SLEEP_S = float(os.environ.get("TAUSIM_TEST_STEP_SLEEP", "0.02"))

_lock = threading.Lock()
constructed: list[tuple[str, int]] = []
"""(task id, trial index) of every agent built by :func:`counting_oracle` in this process."""


class _Slow:
    def __init__(self, inner, sleep_s):
        self.inner = inner
        self.sleep_s = sleep_s

    def step(self, messages):
        time.sleep(self.sleep_s)
        return self.inner.step(messages)


def slow_oracle(ctx):
    """The oracle, sleeping ``TAUSIM_TEST_STEP_SLEEP`` seconds (default 0.02) before each step."""
    return _Slow(OracleAgent(ctx), STEP_SLEEP_S)


def counting_oracle(ctx):
    """The oracle; records the (task, trial) of each construction in :data:`constructed`."""
    with _lock:
        constructed.append((ctx.task.id, ctx.trial_index))
    return OracleAgent(ctx)


class _Stuck:
    def step(self, messages):
        time.sleep(3600)  # an agent that never answers


def stuck_after_first(ctx):
    """The oracle for trial 0 of every task, an agent that never answers for the other trials."""
    return OracleAgent(ctx) if ctx.trial_index == 0 else _Stuck()

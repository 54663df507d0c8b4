"""Agents that kill their worker process, for the process-execution tests (``--agent py:...crash_agents``)."""

from __future__ import annotations

import os
from pathlib import Path

from simulator.agents import OracleAgent

CRASH_TASK = "cancel-no-longer-needed"
MARKER_ENV = "TAUSIM_TEST_CRASH_MARKER"


def crash_always(ctx):
    """The oracle, except trial 0 of :data:`CRASH_TASK`, whose construction kills the process (exit code 3)."""
    if ctx.task.id == CRASH_TASK and ctx.trial_index == 0:
        os._exit(3)
    return OracleAgent(ctx)


def crash_once(ctx):
    """Like :func:`crash_always`, but only while the file named by ``TAUSIM_TEST_CRASH_MARKER`` is absent
    (the crash creates it): a re-run of the trial succeeds."""
    marker = Path(os.environ[MARKER_ENV])
    if ctx.task.id == CRASH_TASK and ctx.trial_index == 0 and not marker.exists():
        marker.write_text("crashed")
        os._exit(3)
    return OracleAgent(ctx)


def crash_always_and_once(ctx):
    """The oracle, except: trial 0 of :data:`CRASH_TASK` always kills the process; trial 1 kills it only while the
    file named by ``TAUSIM_TEST_CRASH_MARKER`` is absent (the crash creates it), so its re-run succeeds."""
    if ctx.task.id == CRASH_TASK and ctx.trial_index == 0:
        os._exit(3)
    marker = Path(os.environ[MARKER_ENV])
    if ctx.task.id == CRASH_TASK and ctx.trial_index == 1 and not marker.exists():
        marker.write_text("crashed")
        os._exit(3)
    return OracleAgent(ctx)


class _InterruptingAsync:
    """An async agent whose step raises KeyboardInterrupt."""

    async def step(self, messages):
        raise KeyboardInterrupt("from the agent")


def interrupting_async_once(ctx):
    """The oracle, except trial 0 of :data:`CRASH_TASK`: an async agent whose step raises ``KeyboardInterrupt``."""
    if ctx.task.id == CRASH_TASK and ctx.trial_index == 0 and not ctx.extra.get("preflight"):
        return _InterruptingAsync()
    return OracleAgent(ctx)

"""Agents for the results-store tests, loaded by reference (``--agent py:tests._support.slow_agents:...``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from simulator.agents import OracleAgent
from tests._support.children import restore_sigint

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
    """The oracle; records the (task, trial) of each construction for a trial in :data:`constructed`.

    The pre-flight's construction (``ctx.extra["preflight"]``) is not a trial's and is not recorded.
    """
    if ctx.extra.get("preflight"):
        return OracleAgent(ctx)
    with _lock:
        constructed.append((ctx.task.id, ctx.trial_index))
    return OracleAgent(ctx)


class _Stuck:
    def step(self, messages):
        time.sleep(3600)  # an agent that never answers


def stuck_after_first(ctx):
    """The oracle for trial 0 of every task, an agent that never answers for the other trials."""
    return OracleAgent(ctx) if ctx.trial_index == 0 else _Stuck()


def interrupt_run(args: list[str], partial: Path, after_lines: int, timeout_s: float,
                  sig: int = signal.SIGINT) -> tuple[int, str, list[dict]]:
    """Start ``python -m simulator.cli`` with ``args``, send Ctrl-C (or ``sig``) once ``partial`` holds ``after_lines``
    trials.

    Returns:
        (exit code, stderr, the trials in ``partial``: the lines after its header).
    """
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=restore_sigint)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not (partial.exists()  # the header line, then one line a trial
                                                    and partial.read_text().count("\n") >= after_lines + 1):
            time.sleep(0.1)
        assert partial.exists(), "no trial finished in time"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [json.loads(x) for x in partial.read_text().splitlines()]
    assert lines and lines[0]["format"] == "tausim.partial"
    return proc.returncode, stderr, lines[1:]


MARKER_ENV = "TAUSIM_TEST_RESULT_MARKER"


class _Raising:
    def __init__(self, error):
        self.error = error

    def step(self, messages):
        raise RuntimeError(self.error)


def last_of_batch_waits_for_the_first(ctx):
    """The oracle; trial 3 first waits (at most 60 s) for the file ``$TAUSIM_TEST_RESULT_MARKER``, which the test's
    driver writes when it receives trial 0, and fails (agent_error) when it does not come. Trial 1 takes 1.2 s
    (longer than the batch's publishing interval, ``simulator.execution.dask_executor.PUBLISH_INTERVAL_S``)."""
    if ctx.trial_index == 1 and not ctx.extra.get("preflight"):
        time.sleep(1.2)
    if ctx.trial_index == 3 and not ctx.extra.get("preflight"):
        marker = Path(os.environ[MARKER_ENV])
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not marker.exists():
            return _Raising("trial 0 had not reached the driver while trial 3 of its batch ran")
    return OracleAgent(ctx)


def stuck(ctx):
    """An agent that never answers (every trial)."""
    return _Stuck()


def returns_none(ctx):
    """A factory that forgot its ``return``."""
    OracleAgent(ctx)


STARTING_MARKER = "slow-factory: building"


def slow_factory(ctx):
    """A factory that takes 60 s to build its agent: the run's pre-flight (start-up) waits on it."""
    print(STARTING_MARKER, file=sys.stderr, flush=True)
    time.sleep(60)
    return stuck(ctx)


BUILT_ENV = "TAUSIM_TEST_BUILT_FILE"


def slow_faulty_reference(ctx):
    """The retail reference agent with faults (wrong item, skipped confirmation: failures to hunt), sleeping
    ``TAUSIM_TEST_STEP_SLEEP`` seconds before each step; each agent built for a trial (not the pre-flight's, nor
    the hunt's async check) adds a line to the file ``$TAUSIM_TEST_BUILT_FILE`` when it is set."""
    from simulator.world.domain import get_domain

    agent = get_domain(ctx.domain).reference_agent(ctx, {"wrong_item": 0.3, "skip_confirmation": 0.3})
    built = os.environ.get(BUILT_ENV)
    if built and not ctx.extra.get("preflight"):
        with open(built, "a", encoding="utf-8") as f:
            f.write(f"{ctx.task.id} {ctx.trial_index}\n")
    return _Slow(agent, STEP_SLEEP_S)

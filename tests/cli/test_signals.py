"""Signals and CI: SIGTERM ends a run as Ctrl-C does (exit 143); off a terminal, a progress line every N seconds."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from simulator.dialogue.progress import RunProgress
from tests._support.children import restore_sigint
from tests._support.slow_agents import STARTING_MARKER, interrupt_run

REPO = Path(__file__).resolve().parents[2]


def test_sigterm_keeps_finished_trials_says_how_to_resume_and_exits_143(tmp_path):
    partial = tmp_path / "run.json.partial.jsonl"
    code, stderr, lines = interrupt_run(
        ["run", "--agent", "py:tests._support.slow_agents:stuck_after_first", "--trials", "2", "--concurrency", "2",
         "--out", str(tmp_path / "run.json")], partial, 1, 60, sig=signal.SIGTERM)
    assert code == 143, stderr
    assert f"interrupted (SIGTERM): finished trials are in {partial}; resume with --resume-from {partial}" in stderr
    assert "Traceback" not in stderr
    assert lines and all(x["trial"] == 0 for x in lines)


def _trial(passed: bool, cost: float | None) -> SimpleNamespace:
    usage = SimpleNamespace(cost_usd=cost)
    return SimpleNamespace(passed=passed, trajectory=SimpleNamespace(agent_usage=usage,
                                                                     user_usage=SimpleNamespace(cost_usd=0.0)))


def test_the_progress_line_gives_done_total_pass_rate_cost_and_eta():
    bar = RunProgress(8, enabled=False)
    assert bar.line(3.0) == "progress: 0/8 trials, pass -, cost $0.0000, elapsed 3s, ETA -"
    for passed, cost in ((True, 0.01), (False, 0.02), (True, None), (True, 0.005)):
        bar.update(_trial(passed, cost))
    # 4 of 8 done in 130 s: 3 of 4 passed; $0.035 priced, one unpriced; the other 4 take 130 s more
    assert bar.line(130.0) == "progress: 4/8 trials, pass 75.0%, cost $0.0350 +?, elapsed 2m10s, ETA 2m10s"


def test_progress_lines_come_from_a_background_thread_while_trials_run():
    written: list[str] = []
    import threading

    two = threading.Event()

    def write(text: str) -> None:
        written.append(text)
        if len(written) >= 2:
            two.set()

    with RunProgress(5, enabled=False, lines_every=0.01, write=write) as bar:
        bar.update(_trial(True, 0.0))
        assert two.wait(30)  # no trial needs to finish for the lines to come
    assert all(line.startswith("progress: 1/5 trials, pass 100.0%, cost $0.0000, elapsed ") for line in written[1:])


def test_a_run_off_a_terminal_prints_progress_lines(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TAUSIM_TEST_STEP_SLEEP": "0.05", "TAUSIM_PROGRESS_EVERY": "0.1"}
    done = subprocess.run([sys.executable, "-m", "simulator.cli", "run", "--agent",
                           "py:tests._support.slow_agents:slow_oracle", "--task-ids",
                           "cancel-no-longer-needed", "--trials", "6", "--no-preflight"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("progress:")]
    assert lines, done.stdout  # 6 trials of ~5 agent steps sleeping 0.05 s each: well over 0.1 s
    pattern = re.compile(r"progress: ([0-6])/6 trials, pass (-|\d+\.\d%), cost \$\d+\.\d{4}, elapsed \d+s, "
                         r"ETA (-|\d+s)")
    assert all(pattern.fullmatch(line) for line in lines), lines
    done_counts = [int(pattern.fullmatch(line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert done_counts == sorted(done_counts)


def test_two_resumes_of_one_partial_file_the_second_refuses(tmp_path):
    import time

    from typer.testing import CliRunner

    from simulator.cli import app

    out = tmp_path / "run.json"
    partial = tmp_path / "run.json.partial.jsonl"
    code, _, lines = interrupt_run(
        ["run", "--agent", "py:tests._support.slow_agents:stuck_after_first", "--trials", "2", "--concurrency", "2",
         "--task-ids", "cancel-no-longer-needed", "--out", str(out)], partial, 1, 60)
    assert code == 130 and len(lines) == 1
    # the first resume hangs on the stuck trial, holding the file
    first = subprocess.Popen([sys.executable, "-m", "simulator.cli", "run", "--resume-from", str(partial), "--out",
                              str(out)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = Path(f"{partial}.lock")
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lock.exists(), "the first resume never took the lock"
        second = CliRunner().invoke(app, ["run", "--resume-from", str(partial), "--out", str(out)])
        assert second.exit_code == 2, second.output
        assert (f"--resume-from {partial}: another tausim process (pid {first.pid}) is running this run now; wait "
                "for it to end, or stop it first") in second.output
        assert len(partial.read_text().splitlines()) == 2  # header + the one trial: untouched by the second
    finally:
        first.kill()
        first.communicate()


def test_a_child_gets_ctrl_c_back_even_where_the_suite_ignores_it():
    """A non-interactive shell's background job (`pytest &`) ignores SIGINT, and its children inherit that across
    exec: Python then installs no KeyboardInterrupt handler and the Ctrl-C tests' tausim processes never stopped.
    Those tests start their children with ``preexec_fn=restore_sigint``."""
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # this process, as a background job's
    try:
        inherited = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                   check=True)
        restored = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                  check=True, preexec_fn=restore_sigint)
    finally:
        signal.signal(signal.SIGINT, old)
    assert inherited.stdout.strip() == "False"  # what the children got before
    assert restored.stdout.strip() == "True"


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "interrupted (SIGTERM)"),
                                                   (signal.SIGINT, 130, "interrupted while")])
def test_a_signal_while_the_run_starts_exits_143_on_sigterm_and_130_on_ctrl_c(sig, code, said):
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", "run", "--agent",
                             "py:tests._support.slow_agents:slow_factory", "--task-ids", "cancel-no-longer-needed",
                             "--no-progress"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=restore_sigint)
    try:
        seen = ""
        while STARTING_MARKER not in seen and proc.poll() is None:  # the pre-flight is building the agent
            seen = proc.stderr.readline()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert STARTING_MARKER in seen
    assert proc.returncode == code, stderr  # SIGTERM exited 130, silently (the docs say 143)
    assert said in stderr and "no trial was run" in stderr and "Traceback" not in stderr

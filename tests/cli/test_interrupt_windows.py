"""Ctrl-C and SIGTERM at the edges of a run: after its trials, after its document, and dropped by a callback.

An interruption once the trials began must say where they are (the partial file and how to resume, or the run
document), never ``while the run was starting: no trial was run``; one that Python dropped in a garbage collector
or weakref callback (``Exception ignored in``) must still stop the command.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from simulator.execution.recording import Interrupts, sigint_deferred
from tests._support.children import restore_sigint

REPO = Path(__file__).resolve().parents[2]
RUN = ["run", "--agent", "oracle", "--task-ids", "cancel-no-longer-needed", "--trials", "2", "--concurrency", "1",
       "--no-progress", "--no-preflight"]


def _interrupted_run(tmp_path: Path, point: str, sig: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TAUSIM_TEST_POINT": point, "TAUSIM_TEST_SIGNAL": str(int(sig))}
    return subprocess.run([sys.executable, "-m", "tests._support.interrupt_points", *RUN, *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=restore_sigint)


def _trials(partial: Path) -> list[dict]:
    return [json.loads(line) for line in partial.read_text().splitlines()[1:]]


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "interrupted (SIGTERM)"),
                                                   (signal.SIGINT, 130, "interrupted")])
def test_a_signal_after_the_trials_names_the_partial_file_and_how_to_resume(tmp_path, sig, code, said):
    out = tmp_path / "run.json"
    partial = tmp_path / "run.json.partial.jsonl"
    done = _interrupted_run(tmp_path, "finish", sig, "--out", str(out))
    assert done.returncode == code, done.stderr
    assert done.stderr.splitlines() == [f"{said}: finished trials are in {partial}; resume with --resume-from "
                                        f"{partial}"]  # was: "... while the run was starting: no trial was run"
    assert [t["trial"] for t in _trials(partial)] == [0, 1] and not out.exists()


def test_a_signal_after_the_run_document_was_written_says_so(tmp_path):
    out = tmp_path / "run.json"
    done = _interrupted_run(tmp_path, "written", signal.SIGTERM, "--out", str(out))
    assert done.returncode == 143, done.stderr
    assert done.stderr.splitlines() == [f"interrupted (SIGTERM): the run was written to {out}"]
    assert len(json.loads(out.read_text())["trials"]) == 2
    assert not (tmp_path / "run.json.partial.jsonl").exists()


def test_a_ctrl_c_a_callback_dropped_still_stops_the_run(tmp_path):
    out = tmp_path / "run.json"
    partial = tmp_path / "run.json.partial.jsonl"
    done = _interrupted_run(tmp_path, "dropped", signal.SIGINT, "--out", str(out))
    assert done.returncode == 130, done.stderr  # was 0: the run went on and wrote a whole document
    assert done.stderr.splitlines() == [f"interrupted: finished trials are in {partial}; resume with --resume-from "
                                        f"{partial}"]
    assert [t["trial"] for t in _trials(partial)] == [0] and not out.exists()


def test_a_run_interrupted_while_its_summary_is_printed_says_it_was_written(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from simulator.cli import app, run

    def interrupted(*a: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "_render", interrupted)
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, [*RUN, "--out", str(out)])
    assert res.exit_code == 130, res.output  # typer made it a silent 130
    assert "interrupted: the run was written to" in res.output and out.exists()


def _drop_interrupt(sig: int) -> None:
    """Send ``sig`` to this process inside a weakref callback (the KeyboardInterrupt is dropped there)."""

    class Thing:
        pass

    thing = Thing()
    ref = weakref.ref(thing, lambda _: os.kill(os.getpid(), sig))
    del thing
    assert ref() is None


def test_check_raises_the_interrupt_a_callback_dropped_once(capsys):
    interrupts = Interrupts()
    hook = sys.unraisablehook
    with interrupts.handled():
        interrupts.check()  # nothing dropped: nothing raised
        _drop_interrupt(signal.SIGTERM)
        gc.collect()
        assert interrupts.received == [signal.SIGTERM] and interrupts.dropped == 1
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
        interrupts.check()  # raised once
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is hook and signal.getsignal(signal.SIGTERM) is not interrupts
    assert (interrupts.code, interrupts.said) == (143, "interrupted (SIGTERM)")


def test_other_unraisable_errors_still_reach_the_previous_hook():
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_type)
    try:
        with Interrupts().handled():
            class Thing:
                def __del__(self) -> None:
                    raise ValueError("boom")

            Thing()
    finally:
        sys.unraisablehook = old
    assert seen == [ValueError]


def test_a_sigterm_held_off_by_sigint_deferred_is_noted_for_the_exit_code():
    interrupts = Interrupts()
    with interrupts.handled():
        with sigint_deferred() as held:
            os.kill(os.getpid(), signal.SIGTERM)  # would raise KeyboardInterrupt mid-write without the hold
        assert held == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is interrupts  # restored
    assert interrupts.code == 143

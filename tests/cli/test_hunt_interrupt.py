"""Ctrl-C during ``tausim hunt``: what the hunt found so far is written (marked interrupted), one line, exit 130.

As ``tausim run`` keeps its finished trials: a hunt of a model agent costs its budget again, so the trials played,
the failures clustered and the regression cases already made are never lost to Ctrl-C. The Ctrl-C is raised in the
main thread at a chosen point (a fork of the search, the shrinking of a cluster, the pre-flight), and for real
(SIGINT to a ``tausim hunt`` process).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.hunt.snapshot import Harness, HuntTrial
from simulator.types.tasks import load_tasks
from tests._support.children import restore_sigint
from tests._support.slow_agents import BUILT_ENV

REPO = Path(__file__).resolve().parents[2]
HUNT = ["hunt", "--domain", "retail", "--agent", "reference:wrong_item=0.3,skip_confirmation=0.3", "--user", "rule",
        "--budget", "400", "--seed", "7"]


def _hunt(*args: Any) -> Any:
    try:
        return CliRunner().invoke(app, [*HUNT, *(str(a) for a in args)])
    except KeyboardInterrupt:  # pragma: no cover - the failure this file is about
        pass
    pytest.fail("the Ctrl-C escaped tausim hunt", pytrace=False)


def _interrupted_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("interrupted")]


class _Counted:
    """Wraps ``Harness.play`` and ``Harness.fork``: counts the trials played; the ``stop_at``-th fork is a Ctrl-C."""

    def __init__(self, monkeypatch: Any, stop_at: int):
        self.played: list[HuntTrial] = []
        self.forks = 0
        play, fork = Harness.play, Harness.fork

        def counted_play(harness: Harness, *a: Any, **kw: Any) -> HuntTrial:
            t = play(harness, *a, **kw)
            self.played.append(t)
            return t

        def counted_fork(harness: Harness, *a: Any, **kw: Any) -> HuntTrial:
            self.forks += 1
            if self.forks == stop_at:
                raise KeyboardInterrupt
            t = fork(harness, *a, **kw)
            self.played.append(t)
            return t

        monkeypatch.setattr(Harness, "play", counted_play)
        monkeypatch.setattr(Harness, "fork", counted_fork)


def test_ctrl_c_during_the_search_writes_the_trials_and_clusters_found_so_far_and_exits_130(tmp_path, monkeypatch):
    counted = _Counted(monkeypatch, stop_at=60)
    out, export, html = tmp_path / "hunt.json", tmp_path / "reg.json", tmp_path / "hunt.html"
    res = _hunt("--out", out, "--export", export, "--html", html)
    assert res.exit_code == 130, res.output
    assert "Traceback" not in res.output
    summary = json.loads(out.read_text())
    failed = [t for t in counted.played if not t.result.passed]
    assert failed  # the hunt had found failures before the Ctrl-C: they are the point
    assert summary["trials"] == len(counted.played)
    assert summary["forks"] == sum(1 for t in counted.played if t.parent is not None) > 0
    assert summary["agent_turns"] == sum(t.fresh_agent_turns for t in counted.played)
    assert sum(c["count"] for c in summary["clusters"]) == len(failed)
    assert summary["interrupted"].startswith("during the search")
    cases = json.loads(export.read_text())
    assert cases["format"] == "tausim.tasks" and cases["tasks"] == []  # no cluster was shrunk yet
    assert cases["interrupted"] == summary["interrupted"]
    assert "interrupted during the search" in html.read_text()
    assert _interrupted_lines(res.output) == [
        f"interrupted during the search: wrote {export} (0 cases), {out}, {html}"]


def _interrupted_at_call(n: int, fn: Any) -> Any:
    """``fn``, but its ``n``-th call raises KeyboardInterrupt (a Ctrl-C at that point) instead of running."""
    calls = []

    def wrapped(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return fn(*a, **kw)

    return wrapped


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same hunt uninterrupted: (its summary, its cases), what an interrupted one must have kept."""
    room = tmp_path_factory.mktemp("room")
    res = _hunt("--out", room / "hunt.json", "--export", room / "reg.json", "--prefix")
    assert res.exit_code == 0, res.output
    return json.loads((room / "hunt.json").read_text()), json.loads((room / "reg.json").read_text())


def test_ctrl_c_while_the_cases_are_made_keeps_the_cases_already_made(tmp_path, monkeypatch, whole):
    full_summary, full_cases = whole
    first, second = full_summary["clusters"][0]["id"], full_summary["clusters"][1]["id"]
    assert [t["id"] for t in full_cases["tasks"][:4]] == [first, f"{first}-prefix", second, f"{second}-prefix"]

    from simulator.hunt import cases

    monkeypatch.setattr(cases, "shrink", _interrupted_at_call(3, cases.shrink))  # while the third cluster is shrunk
    out, export = tmp_path / "hunt.json", tmp_path / "reg.json"
    res = _hunt("--out", out, "--export", export, "--prefix")
    assert res.exit_code == 130, res.output
    kept = json.loads(export.read_text())
    assert kept["tasks"] == full_cases["tasks"][:4]  # the first two clusters' cases, as the whole hunt made them
    assert [t.id for t in load_tasks(export, domain="retail")] == [t["id"] for t in kept["tasks"]]  # still runnable
    assert kept["interrupted"].startswith("while the regression cases were made")
    summary = json.loads(out.read_text())
    assert summary["interrupted"] == kept["interrupted"]
    assert summary["trials"] == full_summary["trials"]  # the search had ended: every trial and cluster is kept
    assert [c["id"] for c in summary["clusters"]] == [c["id"] for c in full_summary["clusters"]]
    assert [c["case_id"] for c in summary["clusters"]][:3] == [first, second, None]
    assert _interrupted_lines(res.output) == [
        f"interrupted while the regression cases were made: wrote {export} (4 cases), {out}"]


def test_ctrl_c_while_the_examples_are_replayed_keeps_every_case(tmp_path, monkeypatch, whole):
    full_summary, full_cases = whole
    from simulator.hunt import session

    monkeypatch.setattr(session, "replay_script", _interrupted_at_call(2, session.replay_script))
    out, export = tmp_path / "hunt.json", tmp_path / "reg.json"
    res = _hunt("--out", out, "--export", export, "--prefix")
    assert res.exit_code == 130, res.output
    kept, summary = json.loads(export.read_text()), json.loads(out.read_text())
    assert kept["tasks"] == full_cases["tasks"]
    assert kept["interrupted"] == summary["interrupted"] == "while the shrunk examples were replayed"
    # the first cluster's shrunk example was replayed before the Ctrl-C, the others show their shortest member
    assert [c["example"]["shrunk"] for c in summary["clusters"]] == [
        True, *(False for _ in summary["clusters"][1:])]
    assert summary["clusters"][0] == full_summary["clusters"][0]


def test_ctrl_c_while_the_hunt_starts_writes_nothing_and_exits_130(tmp_path, monkeypatch):
    from simulator.hunt import session

    def interrupted(runner: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "preflight", interrupted)
    res = _hunt("--out", tmp_path / "hunt.json", "--export", tmp_path / "reg.json")
    assert res.exit_code == 130, res.output
    assert _interrupted_lines(res.output) == ["interrupted while the hunt was starting: nothing was run"]
    assert list(tmp_path.iterdir()) == []


def test_a_second_ctrl_c_while_the_interrupted_hunt_writes_leaves_every_file_whole(tmp_path, monkeypatch):
    from simulator.execution import recording

    _Counted(monkeypatch, stop_at=30)
    original, signals = recording.write_text_atomic, []

    def interrupted_write(path: Path, text: str) -> None:
        signals.append(path)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again while an output is being written
        time.sleep(0.05)
        original(path, text)

    monkeypatch.setattr(recording, "write_text_atomic", interrupted_write)
    out, export = tmp_path / "hunt.json", tmp_path / "reg.json"
    res = _hunt("--out", out, "--export", export)
    assert res.exit_code == 130, res.output
    assert signals == [export, out]
    assert json.loads(out.read_text())["interrupted"].startswith("during the search")
    assert json.loads(export.read_text())["tasks"] == []
    assert sorted(tmp_path.iterdir()) == sorted([out, export])  # no temporary file left


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "interrupted (SIGTERM)")])
def test_a_signal_to_a_hunting_process_writes_its_summary_and_exits_130_or_143(tmp_path, sig, code, said):
    """Ctrl-C for real; SIGTERM (a cancelled CI job) as ``tausim run`` takes it."""
    built = tmp_path / "built.txt"
    out = tmp_path / "hunt.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), BUILT_ENV: str(built), "TAUSIM_TEST_STEP_SLEEP": "0.01"}
    proc = subprocess.Popen([sys.executable, "-m", "simulator.cli", "hunt", "--domain", "retail", "--agent",
                             "py:tests._support.slow_agents:slow_faulty_reference", "--budget", "100000",
                             "--out", str(out)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=restore_sigint)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (built.exists() and built.read_text().count("\n") >= 20):
            time.sleep(0.05)
        assert built.exists(), "the hunt built no agent in time"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    summary = json.loads(out.read_text())
    assert summary["interrupted"].startswith("during the search")
    assert summary["trials"] >= 19  # agents built for 20 trials at least (the pre-flight's is not counted)
    assert stderr.splitlines() == [f"{said} during the search: wrote {out}"]


def test_an_interrupted_hunt_without_outputs_prints_what_it_found(monkeypatch):
    counted = _Counted(monkeypatch, stop_at=30)
    res = _hunt()
    assert res.exit_code == 130, res.output
    assert _interrupted_lines(res.output) == [
        "interrupted during the search: nothing was written (no --out, --export or --html)"]
    assert f"{len(counted.played)} trials" in res.output  # the summary is printed, as at the end of a hunt
    figures = json.loads(res.output[res.output.index("\n{\n"):res.output.rindex("\n}\n") + 2])
    assert figures["interrupted"] == "during the search" and figures["trials"] == len(counted.played)


def test_a_ctrl_c_a_callback_dropped_still_interrupts_the_hunt(tmp_path, monkeypatch):
    """Python drops a KeyboardInterrupt raised in a weakref or GC callback (seen in SQLAlchemy's): the hunt went on."""
    import weakref

    fork, forks = Harness.fork, []

    def dropping_fork(harness: Harness, *a: Any, **kw: Any) -> HuntTrial:
        forks.append(1)
        if len(forks) == 30:
            class Thing:
                pass

            thing = Thing()
            ref = weakref.ref(thing, lambda _: os.kill(os.getpid(), signal.SIGTERM))  # (SIGINT may be ignored here)
            del thing
            assert ref() is None
        return fork(harness, *a, **kw)

    monkeypatch.setattr(Harness, "fork", dropping_fork)
    out = tmp_path / "hunt.json"
    res = _hunt("--out", out)
    assert res.exit_code == 143, res.output  # was 0: the whole hunt ran, its summary not marked interrupted
    assert _interrupted_lines(res.output) == [f"interrupted (SIGTERM) during the search: wrote {out}"]
    summary = json.loads(out.read_text())
    assert summary["interrupted"] == "during the search" and summary["forks"] == 30


def test_a_ctrl_c_after_the_outputs_were_written_says_so_in_one_line(tmp_path, monkeypatch):
    from simulator.cli import hunt

    def interrupted(*a: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(hunt, "_show", interrupted)
    out = tmp_path / "hunt.json"
    res = _hunt("--out", out, "--budget", "60")
    assert res.exit_code == 130, res.output
    assert res.output.splitlines() == ["interrupted after the outputs were written"]  # was: nothing said
    assert "interrupted" not in json.loads(out.read_text())  # whole: not marked interrupted


def test_the_export_line_counts_its_cases_in_words(tmp_path):
    from types import SimpleNamespace

    from simulator.cli.hunt import _Files

    files = _Files(tmp_path / "reg.json", None, None, "tausim hunt")
    details = [files.outputs(SimpleNamespace(cases={"tasks": [{}] * n}, interrupted=None), {})[0].detail  # type: ignore[arg-type]
               for n in (0, 1, 2)]
    assert details == [" (0 cases)", " (1 case)", " (2 cases)"]

"""``tausim hunt`` on a full disk: each output is tried; one that fails goes to a fallback file named in one line.

As ``tausim run``'s ``--out`` (``tausim-run-XXXXXXXX.json``): a hunt of a model agent costs its budget again, so
its results are never lost to a full disk. The full disk is simulated by making writes into one folder raise
``ENOSPC`` (as ``tests/execution/test_write_errors.py`` does).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from simulator.cli import app

ENOSPC = "No space left on device"
HUNT = ["hunt", "--domain", "retail", "--agent", "reference:wrong_item=0.3,skip_confirmation=0.3", "--user", "rule",
        "--budget", "80", "--seed", "7"]


def _hunt(*args: Any) -> Any:
    return CliRunner().invoke(app, [*HUNT, *(str(a) for a in args)])


def _full_folder(folder: Path, monkeypatch: Any) -> None:
    """Every file written into ``folder`` fails as on a full disk."""
    real = Path.write_text

    def full(self: Path, *a: Any, **kw: Any) -> int:
        if self.parent == folder:
            raise OSError(errno.ENOSPC, ENOSPC)
        return real(self, *a, **kw)

    folder.mkdir()
    monkeypatch.setattr(Path, "write_text", full)


def test_hunt_outputs_on_a_full_disk_go_to_fallback_files_named_each_in_one_line(tmp_path, monkeypatch):
    room = tmp_path / "room"  # the same hunt where there is room: what the fallback files must hold, byte for byte
    room.mkdir()
    res = _hunt("--out", room / "hunt.json", "--export", room / "reg.json", "--html", room / "hunt.html")
    assert res.exit_code == 0, res.output
    summary_lines = [line for line in res.output.splitlines() if not line.startswith("wrote ")]

    cwd, full = tmp_path / "cwd", tmp_path / "full"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    _full_folder(full, monkeypatch)
    res = _hunt("--out", full / "hunt.json", "--export", full / "reg.json", "--html", full / "hunt.html")
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    (summary,) = cwd.glob("tausim-hunt-????????.json")
    (cases,) = cwd.glob("tausim-hunt-cases-*.json")
    (page,) = cwd.glob("tausim-hunt-*.html")
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: --export {full / 'reg.json'}: cannot write ({ENOSPC}); the regression cases went to {cases} instead",
        f"error: --out {full / 'hunt.json'}: cannot write ({ENOSPC}); the hunt's summary went to {summary} instead",
        f"error: --html {full / 'hunt.html'}: cannot write ({ENOSPC}); the hunt's page went to {page} instead"]
    assert summary.read_bytes() == (room / "hunt.json").read_bytes()
    assert cases.read_bytes() == (room / "reg.json").read_bytes()
    assert page.read_bytes() == (room / "hunt.html").read_bytes()
    assert json.loads(summary.read_text())["clusters"]  # the hunt found failures: they are kept
    # the summary is printed as where there is room
    assert [line for line in res.output.splitlines() if not line.startswith(("wrote ", "error:"))] == summary_lines
    assert list(full.iterdir()) == []  # no temporary file left


def test_a_failed_export_does_not_stop_the_summary_nor_the_other_outputs(tmp_path, monkeypatch):
    cwd, full = tmp_path / "cwd", tmp_path / "full"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    _full_folder(full, monkeypatch)
    res = _hunt("--export", full / "reg.json", "--out", tmp_path / "hunt.json")
    assert res.exit_code == 1, res.output
    (cases,) = cwd.glob("tausim-hunt-cases-*.json")
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: --export {full / 'reg.json'}: cannot write ({ENOSPC}); the regression cases went to "
                      f"{cases} instead"]
    assert json.loads((tmp_path / "hunt.json").read_text())["clusters"]  # --out written all the same
    assert f"wrote {tmp_path / 'hunt.json'}" in res.output and f"wrote {cases}" in res.output
    assert "hunt: " in res.output  # the summary


def test_ctrl_c_while_the_hunt_writes_finishes_every_output_then_exits_130(tmp_path, monkeypatch):
    import os
    import signal
    import time

    from simulator.execution import recording

    original = recording.write_text_atomic

    def interrupted_write(path: Path, text: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while an output is being written
        time.sleep(0.05)
        original(path, text)

    monkeypatch.setattr(recording, "write_text_atomic", interrupted_write)
    res = _hunt("--out", tmp_path / "hunt.json", "--export", tmp_path / "reg.json")
    assert res.exit_code == 130, res.output
    assert "interrupted: the hunt's outputs were written first" in res.output
    assert json.loads((tmp_path / "hunt.json").read_text())["clusters"]
    assert json.loads((tmp_path / "reg.json").read_text())["tasks"]

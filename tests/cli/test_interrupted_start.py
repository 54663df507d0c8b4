"""Ctrl-C or SIGTERM while the ``tausim`` command starts: exit 130 / 143 with a one-line message, no traceback."""

from __future__ import annotations

import signal

import pytest

import simulator.cli as cli


def test_ctrl_c_while_the_command_is_imported_exits_130_with_a_line(monkeypatch, capsys):
    def interrupted(command):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_import_quietly", interrupted)
    monkeypatch.setattr("sys.argv", ["tausim", "run", "--domain", "retail"])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == 130
    err = capsys.readouterr().err
    assert err.strip() == "tausim: interrupted" and "Traceback" not in err


def test_sigterm_while_the_command_is_imported_exits_143_with_a_line(monkeypatch, capsys):
    seen = {}

    def terminated(command):
        handler = signal.getsignal(signal.SIGTERM)
        seen["handler"] = handler
        handler(signal.SIGTERM, None)  # what the signal would run at this point

    monkeypatch.setattr(cli, "_import_quietly", terminated)
    monkeypatch.setattr("sys.argv", ["tausim", "run"])
    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exc:
            cli.main()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert seen["handler"] is cli._terminated_while_starting
    assert exc.value.code == 143
    assert "terminated while starting" in capsys.readouterr().err


def test_the_start_handler_is_gone_once_the_command_is_imported(monkeypatch):
    monkeypatch.setattr(cli, "_import_quietly", lambda command: None)
    monkeypatch.setattr("sys.argv", ["tausim", "--help"])
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit):
        cli.main()
    assert signal.getsignal(signal.SIGTERM) is before

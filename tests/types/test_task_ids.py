"""Task ids that would break terminals, pages or the store are refused at load; versions are strict integers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.tasks import TaskFileError, load_tasks, parse_tasks
from simulator.world.tau2_tasks import parse_tau2_tasks


def _doc(task_id, version=1):
    return {"format": "tausim.tasks", "version": version, "tasks": [
        {"id": "fine", "scenario": {"instructions": "say hi"}},
        {"id": task_id, "scenario": {"instructions": "say hi"}}]}


@pytest.mark.parametrize(("task_id", "why"), [
    ("", "an empty (or blank) id"), ("   ", "an empty (or blank) id"),
    ("a\x00b", "U+0000"), ("two\nlines", "U+000A"), ("esc\x1b]0;pwned\x07", "U+001B"), ("c1\x9b", "U+009B"),
    ("evil\u202etxt.exe", "U+202E"), ("iso\u2066late", "U+2066"), ("zero\u200bwidth", "U+200B"),
])
def test_bad_task_ids_are_refused_with_file_field_and_value(tmp_path, task_id, why):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(_doc(task_id)), encoding="utf-8")
    with pytest.raises(TaskFileError) as e:
        load_tasks(path)
    message = str(e.value)
    assert message.startswith(f"{path}: task [1]: field id: ")
    assert why in message
    assert "\n" not in message and all(ch.isprintable() for ch in message)  # the value is shown escaped
    with pytest.raises(TaskFileError, match="field id"):
        parse_tau2_tasks([{"id": task_id, "user_scenario": {"instructions": "x"}}], "tau2.json")


def test_printable_ids_are_kept_even_long_or_non_ascii():
    for task_id in ["x" * 100_000, "[mms_issue]airplane_mode_on|user_abroad", "commande-é-中文", "7"]:
        assert parse_tasks(_doc(task_id))[1].id == task_id


@pytest.mark.parametrize("version", [True, 1.0, "1", None, 3])
def test_version_is_a_strict_integer(version):
    with pytest.raises(TaskFileError, match=f"field version: unsupported value {version!r}"):
        parse_tasks(_doc("fine2", version))


def test_run_refuses_a_bad_id_with_one_line(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({**_doc("bad\x1b[2J"), "domain": "retail"}), encoding="utf-8")
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--tasks", str(path), "--trials", "1"])
    assert res.exit_code == 2, res.output
    assert "field id" in res.output and "\x1b" not in res.output and "Traceback" not in res.output

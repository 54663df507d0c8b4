"""Hostile input files: UTF-16 text and 100,000-deep JSON are one-line errors naming the file, never tracebacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app

DEEP = "[" * 100_000 + "]" * 100_000


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_error(res: Any) -> str:
    assert "Traceback" not in res.output and "RecursionError" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.fixture
def utf16_tasks(tmp_path) -> Path:
    from domains.retail import RetailDomain

    text = (RetailDomain().default_data_dir().parent / "tasks" / "builtin.json").read_text(encoding="utf-8")
    path = tmp_path / "tasks.json"
    path.write_text(text, encoding="utf-16")  # what Windows' PowerShell `>` writes
    return path


@pytest.mark.parametrize("command", [["tasks", "lint", "{f}"], ["tasks", "lint", "{f}", "--domain", "retail"],
                                     ["run", "--tasks", "{f}", "--no-preflight"]])
def test_a_utf16_task_file_is_one_line_naming_the_file_and_the_encoding(command, utf16_tasks):
    res = invoke(*[a.format(f=utf16_tasks) for a in command])
    assert res.exit_code == 2
    assert _one_error(res) == f"error: {utf16_tasks}: the file is UTF-16 text; save it as UTF-8"


def test_a_file_in_another_encoding_names_the_byte(tmp_path):
    path = tmp_path / "tasks.json"
    raw = b'{"domain": "retail", "tasks": [{"id": "caf\xe9"}]}'  # Latin-1
    path.write_bytes(raw)
    res = invoke("tasks", "lint", path)
    assert res.exit_code == 2
    assert _one_error(res) == (f"error: {path}: not UTF-8 text (invalid continuation byte at byte "
                               f"{raw.index(0xE9)}); save it as UTF-8")


@pytest.mark.parametrize(("command", "doc"), [
    (["tasks", "lint", "{f}", "--domain", "retail"], DEEP),
    (["tasks", "lint", "{f}"], '{"domain": "retail", "tasks": ' + DEEP + "}"),
    (["run", "--tasks", "{f}", "--no-preflight"], DEEP),
    (["run", "--spec", "{f}"], DEEP),
    (["report", "{f}"], DEEP),
    (["export", "{f}"], DEEP),
])
def test_deeply_nested_json_is_one_line_naming_the_file(command, doc, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(doc)
    res = invoke(*[a.format(f=path) for a in command])
    assert res.exit_code == 2
    assert _one_error(res) == (f"error: {path}: JSON nested too deeply to read (Python's parser stops at about "
                               "1,000 levels)")


def test_deeply_nested_tool_arguments_are_shown_to_the_agent_as_an_error():
    from simulator.agents._adapters import parse_arguments

    assert parse_arguments('{"a": ' + DEEP + "}") == (None, '{"a": ' + DEEP + "}")
    assert parse_arguments(json.dumps({"a": [[1]]})) == ({"a": [[1]]}, None)


BIG_INT = "9" * 5000
"""More digits than Python converts from text (4,300: ``sys.get_int_max_str_digits()``)."""


@pytest.mark.parametrize(("command", "prefix"), [
    (["tasks", "lint", "{f}", "--domain", "retail"], '{"domain": "retail", "tasks": [{"id": '),
    (["tasks", "lint", "{f}"], '{"domain": "retail", "tasks": [{"id": '),
    (["run", "--tasks", "{f}", "--no-preflight"], '{"domain": "retail", "tasks": [{"id": '),
    (["run", "--spec", "{f}"], '{"domain": "retail",\n "trials": '),
    (["run", "--budgets", "{f}", "--no-preflight"], '{"tasks": {"x": '),
    (["personas", "--validate", "{f}"], '{"name": '),
    (["report", "{f}"], '{"format": '),
    (["export", "{f}"], '{"format": '),
    (["gate", "--baseline", "{f}", "--candidate", "{f}"], '{"format": '),
    (["regrade", "{f}", "--out", "{f}.out"], '{"format": '),
])
def test_an_integer_of_more_than_4300_digits_is_one_line_naming_the_file_and_where(command, prefix, tmp_path):
    path = tmp_path / "big.json"
    path.write_text(prefix + BIG_INT + "}" * prefix.count("{") + "]" * prefix.count("["))
    line = prefix.count("\n") + 1
    column = len(prefix.rsplit("\n", 1)[-1]) + 1  # counted by hand from the prefix: the first digit's column
    res = invoke(*[a.format(f=path) for a in command])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and "set_int_max_str_digits" not in res.output
    shown = _one_error(res).replace("error: --budgets ", "error: ")  # budgets errors name their option
    assert shown == f"error: {path}: invalid JSON at line {line} column {column}: an integer of more than 4300 digits"


def test_json_lines_and_peer_files_name_the_line_of_a_too_long_integer(tmp_path):
    """Labels (judge calibrate), a replay reference and peer results: the file's line, not Python's advice."""
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"transcript": "a", "assertion": "b", "label": "yes"}\n{"label": ' + BIG_INT + "}\n")
    res = invoke("judge", "calibrate", "--model", "m", "--labels", labels)
    assert res.exit_code == 2
    assert _one_error(res).startswith(f"error: {labels}: invalid JSON at line 2 column 11: an integer of more than "
                                      "4300 digits; expected {")
    reference = tmp_path / "ref.jsonl"
    reference.write_text('\n\n{"task_id": "t", "x": -' + BIG_INT + "}\n")  # blank lines are counted, then skipped
    res = invoke("replay", "--reference", reference)
    assert res.exit_code == 2
    assert _one_error(res) == (f"error: {reference}: invalid JSON at line 3 column 23: an integer of more than 4300 "
                               "digits")
    peer = tmp_path / "peer.json"
    peer.write_text('[{"a": ' + BIG_INT + "}]")
    res = invoke("import", peer, "--format", "tau-bench", "--domain", "retail")
    assert res.exit_code == 2
    assert _one_error(res) == (f"error: {peer}: not JSON (invalid JSON at line 1 column 8: an integer of more than "
                               "4300 digits)")

"""``tausim run --resume-from FILE.partial.jsonl``: a bad trial line is refused; without ``--out``, messages name what
the user gave.

Without ``--out`` the run document goes to ``FILE`` (beside the partial file); errors and hints once said
``--out FILE`` as if the user had passed that option.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution import recording
from simulator.storage.documents import partial_header
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

TASK = "cancel-no-longer-needed"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _oneline(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def stopped(tmp_path):
    """``run.json.partial.jsonl`` of a 2-trial run of one task stopped after its first trial."""
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", 2, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(done.read_text())
    first = TrialResult.model_validate(doc["trials"][0])
    partial = tmp_path / "run.json.partial.jsonl"
    header = partial_header(RunSpec.model_validate(doc["config"]), 2, [TASK])
    partial.write_text(json.dumps(header) + "\n" + first.model_dump_json() + "\n")
    return partial, tmp_path / "run.json"


def test_a_document_path_that_cannot_be_written_names_resume_from_not_out(stopped):
    partial, document = stopped
    document.mkdir()  # the document's name is taken by a folder
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 2, res.output
    said = _oneline(res.output)
    assert f"--out {document}" not in said, said
    assert f"--resume-from {partial}: its run document {document}: is a directory; give --out FILE to write it " \
        "elsewhere" in said, said
    assert partial.read_bytes() == before


def test_a_failed_final_write_names_the_document_not_out(stopped, monkeypatch):
    partial, document = stopped
    original = recording.write_text_atomic

    def full_disk_at_the_document(path, text):
        if path == document:
            raise OSError(28, "No space left on device")
        original(path, text)

    monkeypatch.setattr(recording, "write_text_atomic", full_disk_at_the_document)
    monkeypatch.chdir(partial.parent)
    res = invoke("run", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 1, res.output
    said = _oneline(res.output)
    assert "--out" not in said, said
    assert f"--resume-from {partial}: its run document {document}: cannot write (No space left on device)" in said, said
    assert "the run was written to" in said and "tausim-run-" in said
    (fallback,) = partial.parent.glob("tausim-run-*.json")
    assert len(json.loads(fallback.read_text())["trials"]) == 2  # the whole run, the resumed trial included


def test_with_out_given_the_messages_name_out_as_before(stopped, monkeypatch):
    partial, _ = stopped
    out = partial.parent / "other.json"
    out.mkdir()
    res = invoke("run", "--resume-from", partial, "--out", out, "--no-progress")
    assert res.exit_code == 2, res.output
    assert f"--out {out}: is a directory" in _oneline(res.output), res.output


def test_a_trial_line_with_a_wrong_typed_field_is_refused_and_the_file_kept(stopped):
    """``"passed": "yes"`` once resumed as a passed trial (pydantic's lax mode)."""
    partial, document = stopped
    header, line = partial.read_text().splitlines()
    trial = json.loads(line)
    trial["passed"] = "yes"
    partial.write_text(header + "\n" + json.dumps(trial) + "\n")
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 2, res.output
    said = _oneline(res.output)
    assert f'{partial}: line 2: field passed: Input should be a valid boolean (value "yes")' in said, said
    assert partial.read_bytes() == before and not document.exists()
    res = invoke("report", partial)
    assert res.exit_code == 2 and "line 2: field passed" in _oneline(res.output), res.output

"""``tausim run --resume-from``: a partial file is resumed only when nothing it records would be lost or mixed.

A fresh-user tour found resume keeping the first of two different records of one trial and rewriting the file
without the second, deleting a field it did not know, rewriting ``NaN`` as null, and taking a trial of another run
(another seed) or a header with ``"planned": "lots"`` without a word. Each is now exit 2, one line naming the file,
the line, the field and the value, the file left byte-identical and nothing run or written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.execution.seeds import derive_seed
from simulator.storage.documents import partial_header
from simulator.types.spec import RunSpec

TASK = "cancel-no-longer-needed"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _oneline(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[dict[str, Any], list[str]]:
    """A finished 2-trial run of one task: its document and its trials' JSON lines."""
    done = tmp_path_factory.mktemp("done") / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", 2, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(done.read_text())
    return doc, [json.dumps(t) for t in doc["trials"]]


def _partial(tmp_path: Path, finished: Any, *lines: str, header: dict[str, Any] | None = None) -> Path:
    doc, _ = finished
    path = tmp_path / "run.json.partial.jsonl"
    head = header if header is not None else partial_header(RunSpec.model_validate(doc["config"]), 2, [TASK])
    path.write_text("\n".join([json.dumps(head), *lines]) + "\n", encoding="utf-8")
    return path


def _refused(path: Path, *args: Any) -> str:
    before = path.read_bytes()
    res = invoke("run", "--resume-from", path, *args, "--no-progress")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert path.read_bytes() == before, "the partial file must be left byte-identical"
    assert not (path.parent / "run.json").exists(), "nothing may be written"
    return _oneline(res.output)


def test_two_different_records_of_one_trial_are_refused(tmp_path, finished):
    _, (first, second) = finished
    other = {**json.loads(first), "passed": False, "termination_reason": "agent_error", "grade": None,
             "error": "boom"}
    path = _partial(tmp_path, finished, first, json.dumps(other))
    said = _refused(path)
    assert f"{path}: lines 2 and 3: two different records of the same trial (task \"{TASK}\", trial 0)" in said, said


def test_an_exact_duplicate_is_collapsed_and_the_run_resumes(tmp_path, finished):
    _, (first, second) = finished
    path = _partial(tmp_path, finished, first, first)
    res = invoke("run", "--resume-from", path, "--no-progress")
    assert res.exit_code == 0, res.output
    trials = json.loads((tmp_path / "run.json").read_text())["trials"]
    assert [t["trial"] for t in trials] == [0, 1]
    assert trials[0] == json.loads(first)


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t.update(reviewer="ann"), "line 2: field reviewer: not a field tausim knows (value \"ann\")"),
    (lambda t: t["grade"].update(extra_check=True), "line 2: field grade.extra_check: not a field tausim knows"),
    (lambda t: t.update(duration_s=float("nan")), "line 2: field duration_s: not a finite number (value NaN)"),
    (lambda t: t.update(passed=not t["grade"]["passed"]), "line 2: field passed: contradicts grade.passed"),
])
def test_a_line_that_would_not_be_written_back_as_it_is_is_refused(tmp_path, finished, edit, expected):
    _, (first, _) = finished
    trial = json.loads(first)
    edit(trial)
    path = _partial(tmp_path, finished, json.dumps(trial))
    said = _refused(path)
    assert f"{path}: {expected}" in said, said


def test_a_trial_of_another_seed_is_refused_naming_the_expected_one(tmp_path, finished):
    doc, (first, _) = finished
    trial = json.loads(first)
    expected = derive_seed(doc["config"]["seed"], TASK, 0)  # DESIGN.md: sha256(run seed, task, trial)
    assert trial["seed"] == expected
    trial["seed"] = derive_seed(9, TASK, 0)
    path = _partial(tmp_path, finished, json.dumps(trial))
    said = _refused(path)
    assert f"{path}: line 2: field seed: not the seed this run's plan gives task {TASK} trial 0 " \
        f"(value {trial['seed']}, expected {expected})" in said, said


def test_a_header_planning_lots_is_refused(tmp_path, finished):
    doc, (first, _) = finished
    header = {**partial_header(RunSpec.model_validate(doc["config"]), 2, [TASK]), "planned": "lots"}
    path = _partial(tmp_path, finished, first, header=header)
    said = _refused(path)
    assert f'{path}: line 1: field planned: expected the number of planned trials, an integer >= 0 (value "lots")' \
        in said, said


def test_a_line_that_is_not_utf8_is_named(tmp_path, finished):
    _, (first, second) = finished
    path = _partial(tmp_path, finished, first, second)
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace(b'"error"', b'"err\xc3"', 1)
    path.write_bytes(b"\n".join(raw))
    said = _refused(path)
    assert f"{path}: line 3: not UTF-8 text (" in said and "at byte " in said, said


def test_an_option_the_run_was_recorded_without_says_not_set(tmp_path, finished):
    _, (first, _) = finished
    path = _partial(tmp_path, finished, first)
    said = _refused(path, "--option", "foo=bar")
    assert "null" not in said, said
    assert f"--option {{\"foo\": \"bar\"}}: {path} was recorded with option 'foo' not set (the options recorded: " \
        in said, said


def _persona_run_stopped(tmp_path: Path, trials: int) -> tuple[dict, Path]:
    """A run of personas cooperative,impatient and its partial file stopped after the first trial: (document, file)."""
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", trials, "--user", "rule", "--personas", "cooperative,impatient",
                 "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(done.read_text())
    path = tmp_path / "run.json.partial.jsonl"
    header = partial_header(RunSpec.model_validate(doc["config"]), 2 * trials, [TASK])
    path.write_text(json.dumps(header) + "\n" + json.dumps(doc["trials"][0]) + "\n")
    return doc, path


def test_personas_in_another_order_resume_the_same_trials(tmp_path):
    """A trial's seed does not depend on its persona: the order changes only the order trials run and are listed."""
    doc, path = _persona_run_stopped(tmp_path, 2)
    assert len(doc["trials"]) == 4
    res = invoke("run", "--resume-from", path, "--user", "rule", "--personas", "impatient,cooperative", "--no-progress")
    assert res.exit_code == 0, res.output
    resumed = json.loads((tmp_path / "run.json").read_text())
    assert resumed["config"]["personas"] == ["cooperative", "impatient"]  # the recorded order is kept

    def key(t):
        return t["task_id"], t["persona"], t["trial"]
    assert sorted((key(t), t["seed"], t["passed"], t["termination_reason"]) for t in resumed["trials"]) == \
        sorted((key(t), t["seed"], t["passed"], t["termination_reason"]) for t in doc["trials"])


def test_the_library_refuses_another_persona_order_saying_so(tmp_path):
    """``simulator.run(spec, resume=FILE)`` builds its plan in the spec's order: it refuses, naming the order."""
    import simulator
    from simulator.errors import SpecError

    doc, path = _persona_run_stopped(tmp_path, 1)
    spec = RunSpec.model_validate(doc["config"])
    before = path.read_bytes()
    with pytest.raises(SpecError, match="the same personas in another order: give them in the recorded order"):
        simulator.run(spec.model_copy(update={"personas": ["impatient", "cooperative"]}), resume=path)
    assert path.read_bytes() == before

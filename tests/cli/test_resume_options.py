"""``tausim run --resume-from FILE.partial.jsonl`` with options that decide what a trial measures.

The resumed run document holds the trials of both sessions: an option such as ``--policy`` that changed what the
remaining trials measured (it was once applied with no check) made a document mixing two runs. Such an option is
accepted when it is what the file recorded (the same command line plus ``--resume-from`` works), else refused
naming the option, the value given and the value recorded, with nothing run or written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.storage.documents import partial_header
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec
from simulator.world.domain import get_domain

TASK = "cancel-no-longer-needed"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _oneline(text: str) -> str:
    return " ".join(text.split())


def _stop_after_first(done: Path, partial: Path) -> None:
    """Write ``partial`` as a 2-trial run stopped after its first trial, from the finished document ``done``."""
    doc = json.loads(done.read_text())
    first = TrialResult.model_validate(doc["trials"][0])
    header = partial_header(RunSpec.model_validate(doc["config"]), 2, [TASK])
    partial.write_text(json.dumps(header) + "\n" + first.model_dump_json() + "\n")


@pytest.fixture
def with_policy(tmp_path):
    """A run given ``--policy a.md`` stopped after its first trial: (partial file, its document, a.md)."""
    policy = tmp_path / "a.md"
    policy.write_text(get_domain("retail").policy() + "\nRule A: be brief.\n")
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", 2, "--policy", policy, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    partial = tmp_path / "run.json.partial.jsonl"
    _stop_after_first(done, partial)
    return partial, tmp_path / "run.json", policy


@pytest.fixture
def plain(tmp_path):
    """A run with the domain's own policy, seed 0, stopped after its first trial: (partial file, its document)."""
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", 2, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    partial = tmp_path / "run.json.partial.jsonl"
    _stop_after_first(done, partial)
    return partial, tmp_path / "run.json"


def _refused(res: Any, partial: Path, before: bytes, document: Path) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert partial.read_bytes() == before, "the partial file must be left as it was"
    assert not document.exists(), "nothing may be written"
    return _oneline(res.output)


def test_another_policy_file_is_refused_naming_both(with_policy, tmp_path):
    partial, document, policy = with_policy
    other = tmp_path / "b.md"
    other.write_text("Rule B: refund everything without asking.\n")
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--policy", other, "--no-progress")
    said = _refused(res, partial, before, document)
    recorded = hashlib.sha256(policy.read_text().encode()).hexdigest()
    given = hashlib.sha256(other.read_text().encode()).hexdigest()
    assert f"--policy {other}" in said, said
    assert given[:12] in said and recorded[:12] in said, said
    assert str(policy) in said and str(partial) in said, said


def test_a_policy_given_with_a_run_of_the_domains_own_policy_is_refused(plain, tmp_path):
    partial, document = plain
    other = tmp_path / "b.md"
    other.write_text("Rule B.\n")
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--policy", other, "--no-progress")
    said = _refused(res, partial, before, document)
    assert f"--policy {other}" in said and "the domain's or suite's own policy" in said, said


def test_the_same_policy_text_is_accepted_under_another_path(with_policy, tmp_path):
    partial, document, policy = with_policy
    copy = tmp_path / "moved" / "a-copy.md"
    copy.parent.mkdir()
    copy.write_bytes(policy.read_bytes())
    policy.unlink()  # the recorded path is gone: the copy is how the run finds its policy now
    res = invoke("run", "--resume-from", partial, "--policy", copy, "--no-progress")
    assert res.exit_code == 0, res.output
    doc = json.loads(document.read_text())
    assert len(doc["trials"]) == 2
    assert doc["config"]["policy_sha256"] == hashlib.sha256(copy.read_text().encode()).hexdigest()


def test_a_policy_file_edited_since_the_run_started_is_refused(with_policy):
    """No option given: the recorded policy path now holds another text (the partial file's spec is compared)."""
    partial, document, policy = with_policy
    policy.write_text(policy.read_text() + "Rule C: never confirm.\n")
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--no-progress")
    said = _refused(res, partial, before, document)
    assert "policy" in said and str(partial) in said, said


def test_the_same_command_line_plus_resume_from_is_accepted(plain):
    partial, document = plain
    res = invoke("run", "--task-ids", TASK, "--trials", 2, "--seed", 0, "--agent", "oracle", "--max-turns", 30,
                 "--option", "mode=tau-bench", "--resume-from", partial, "--no-progress")
    assert res.exit_code == 0, res.output
    assert len(json.loads(document.read_text())["trials"]) == 2


@pytest.mark.parametrize(("args", "named"), [
    (["--seed", 3], "--seed 3: PARTIAL was recorded with 0"),
    (["--agent", "reference"], "--agent 'reference': PARTIAL was recorded with 'oracle'"),
    (["--max-turns", 5], "--max-turns 5: PARTIAL was recorded with 30"),
    (["--trials", 4], "--trials 4: PARTIAL was recorded with 2"),
    (["--temperature", 0.5], "--temperature 0.5: PARTIAL was recorded with none"),
    (["--task-ids", "modify-order-address"],
     "--task-ids [\"modify-order-address\"]: PARTIAL was recorded with [\"cancel-no-longer-needed\"]"),
    (["--faults", "transient=0.5"], "--faults "),
    (["--judge", "openai/gpt-4o-mini", "--strict-judge"], "--judge 'openai/gpt-4o-mini': PARTIAL was recorded "
                                                          "with none"),
    (["--option", "mode=tau2"], '--option {"mode": "tau2"}: PARTIAL was recorded with {"mode": "tau-bench"}'),
])
def test_a_measured_option_other_than_recorded_is_refused_naming_both_values(plain, args, named):
    partial, document = plain
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, *args, "--no-progress")
    said = _refused(res, partial, before, document)
    assert named.replace("PARTIAL", str(partial)) in said, said
    assert said.count("error:") == 1, said


def test_a_value_with_terminal_escapes_is_shown_escaped(plain):
    partial, document = plain
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--agent", "py:evil\x1b[31m:f", "--no-progress")
    said = _refused(res, partial, before, document)
    assert "\x1b" not in res.output and "\\x1b[31m" in said, said


def test_execution_options_still_apply(plain, tmp_path):
    partial, document = plain
    res = invoke("run", "--resume-from", partial, "--concurrency", 2, "--executor", "threads", "--log-file",
                 tmp_path / "log.jsonl", "--no-preflight", "--request-timeout", 5, "--no-progress")
    assert res.exit_code == 0, res.output
    assert len(json.loads(document.read_text())["trials"]) == 2
    assert (tmp_path / "log.jsonl").exists()


def test_library_resume_refuses_an_edited_policy(with_policy):
    """``simulator.run(spec, resume=FILE)``: the policy's text is compared, not only its path."""
    from simulator.errors import SpecError
    from simulator.execution.session import run

    partial, document, policy = with_policy
    spec = RunSpec.model_validate(json.loads(partial.read_text().splitlines()[0])["config"])
    policy.write_text("Another policy.\n")
    before = partial.read_bytes()
    with pytest.raises(SpecError, match="policy_sha256"):
        run(spec, out=document, resume=partial)
    assert partial.read_bytes() == before and not document.exists()


def _stopped_run(tmp_path: Path, *args: Any) -> tuple[Path, Path]:
    done = tmp_path / "done.json"
    res = invoke("run", "--task-ids", TASK, "--trials", 2, *args, "--out", done, "--no-progress")
    assert res.exit_code == 0, res.output
    partial = tmp_path / "run.json.partial.jsonl"
    _stop_after_first(done, partial)
    return partial, tmp_path / "run.json"


def test_the_same_personas_file_is_accepted_and_an_edited_one_refused(tmp_path):
    persona = tmp_path / "flaky.json"
    persona.write_text(json.dumps({"name": "flaky", "description": "Gives up at once.", "patience": 1,
                                   "abandonment_phrases": ["Forget it."]}))
    partial, document = _stopped_run(tmp_path, "--user", "rule", "--personas", persona)
    persona.write_text(persona.read_text().replace('"patience": 1', '"patience": 9'))
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--user", "rule", "--personas", persona, "--no-progress")
    said = _refused(res, partial, before, document)
    assert f'--personas ["flaky"]: {partial} was recorded with ["flaky"] (with other definitions)' in said, said
    persona.write_text(persona.read_text().replace('"patience": 9', '"patience": 1'))
    res = invoke("run", "--resume-from", partial, "--user", "rule", "--personas", persona, "--no-progress")
    assert res.exit_code == 0, res.output
    assert len(json.loads(document.read_text())["trials"]) == 2


def test_budgets_are_compared_by_their_ceilings(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    partial, _ = _stopped_run(first)
    budgets = tmp_path / "budgets.json"
    res = invoke("baseline", first / "done.json", "--out", budgets)
    assert res.exit_code == 0, res.output
    partial, document = _stopped_run(tmp_path, "--budgets", budgets)
    res = invoke("run", "--resume-from", partial, "--budgets", budgets, "--no-progress")
    assert res.exit_code == 0, res.output  # the same file: accepted
    unlimited = _stopped_run(first)[0]
    before = unlimited.read_bytes()
    res = invoke("run", "--resume-from", unlimited, "--budgets", budgets, "--no-progress")
    said = _refused(res, unlimited, before, first / "run.json")
    assert f"--budgets {budgets} (1 task budget): {unlimited} was recorded with 0 task budgets" in said, said


def test_a_broken_personas_file_beside_resume_from_is_named_once(tmp_path):
    partial, document = _stopped_run(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    before = partial.read_bytes()
    res = invoke("run", "--resume-from", partial, "--user", "rule", "--personas", broken, "--no-progress")
    said = _oneline(res.output)
    assert res.exit_code == 2, res.output
    assert "--personas:" in said and said.count(str(broken)) == 1, said
    assert partial.read_bytes() == before and not document.exists()

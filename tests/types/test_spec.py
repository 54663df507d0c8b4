"""The run spec: validation errors name file/field/value, temperature and api_base are recorded and checked on
resume, ``tausim run --spec FILE``, stored specs that do not validate, and the docs' library example
(``docs/reference/run-spec.md``); ``format_validation_error`` naming a bad dict key."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.storage.store import ResultsStore, StoreError
from simulator.types.spec import ComponentSpec, RunSpec, SpecError, load_spec, spec_differences

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_components_accept_a_bare_name_and_keep_their_arguments():
    spec = RunSpec.model_validate({"domain": "retail", "agent": "reference:repeat_question=0.5",
                                   "user": {"name": "llm:m", "temperature": 0.3, "api_base": "http://h/v1"}})
    assert spec.agent == ComponentSpec(name="reference:repeat_question=0.5")
    assert spec.user.model_params() == {"temperature": 0.3, "api_base": "http://h/v1"}
    again = RunSpec.model_validate_json(spec.model_dump_json())
    assert again == spec and again.format == "tausim.runspec" and again.version == 1


def test_differences_name_nested_fields_and_skip_execution_fields():
    a = RunSpec.model_validate({"domain": "retail", "agent": {"name": "litellm:m", "temperature": 0.0}})
    b = a.model_copy(update={"agent": a.agent.model_copy(update={"temperature": 0.7}), "concurrency": 8,
                             "executor": "local:2", "log_file": "x.jsonl", "seed": 4})
    assert spec_differences(a, b) == [("agent.temperature", 0.0, 0.7), ("seed", 0, 4)]


def test_spec_file_errors_name_file_field_and_value(tmp_path):
    bad = tmp_path / "spec.json"
    bad.write_text(json.dumps({"domain": "retail", "trials": 0}))
    with pytest.raises(SpecError, match=r"spec\.json: field trials: .*greater than or equal to 1 \(value 0\)"):
        load_spec(bad)
    bad.write_text(json.dumps({"domain": "retail", "agent": {"name": "oracle", "temprature": 1}}))
    res = invoke("run", "--spec", bad, "--no-progress")
    assert res.exit_code == 2
    assert re.search(r"spec\.json: field agent\.temprature: Extra inputs are not permitted \(value 1\)", res.output)
    bad.write_text(json.dumps({"domain": "retail", "executor": "local:zero"}))
    res = invoke("run", "--spec", bad, "--no-progress")
    assert res.exit_code == 2 and "field executor" in res.output and "local:zero" in res.output
    bad.write_text("{")
    res = invoke("run", "--spec", bad)
    assert res.exit_code == 2 and "spec.json: invalid JSON at line 1" in res.output


def test_run_from_a_spec_file_equals_the_same_run_from_options(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(RunSpec.model_validate({
        "domain": "retail", "agent": "reference", "user": "rule", "task_ids": ["cancel-no-longer-needed"],
        "personas": None, "trials": 2, "seed": 5}).model_dump_json())
    res = invoke("run", "--spec", spec, "--out", tmp_path / "a.json", "--no-progress")
    assert res.exit_code == 0, res.output
    res = invoke("run", "--agent", "reference", "--user", "rule", "--task-ids", "cancel-no-longer-needed",
                 "--trials", 2, "--seed", 5, "--out", tmp_path / "b.json", "--no-progress")
    assert res.exit_code == 0, res.output
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a["config"] == b["config"]  # the file gives no options: the domain's defaults are recorded for both
    assert a["config"]["options"] == {"mode": "tau-bench"}
    assert [(t["task_id"], t["trial"], t["seed"], t["passed"]) for t in a["trials"]] == \
        [(t["task_id"], t["trial"], t["seed"], t["passed"]) for t in b["trials"]] == \
        [("cancel-no-longer-needed", 0, a["trials"][0]["seed"], True),
         ("cancel-no-longer-needed", 1, a["trials"][1]["seed"], True)]


def test_temperature_and_api_base_are_recorded_and_resume_with_another_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    def run(temperature):
        return invoke("run", "--agent", "oracle", "--task-ids", "cancel-no-longer-needed", "--temperature",
                      temperature, "--api-base", "http://127.0.0.1:9/v1", "--store", url, "--run-id", "T",
                      "--no-progress")

    assert run(0.0).exit_code == 0
    with ResultsStore(url) as store:
        spec = store.require_run("T").config
        doc = store.load_run_document("T")
    assert (spec.agent.temperature, spec.agent.api_base) == (0.0, "http://127.0.0.1:9/v1")
    assert (spec.user.temperature, spec.user.api_base) == (0.0, "http://127.0.0.1:9/v1")
    assert doc["config"]["agent"]["temperature"] == 0.0
    res = run(0.7)
    assert res.exit_code == 2
    assert "agent.temperature: stored 0.0, now 0.7" in res.output
    assert run(0.0).exit_code == 0  # the same spec resumes (nothing left to run)


def test_a_stored_spec_that_does_not_validate_is_named(tmp_path):
    db = tmp_path / "runs.db"
    assert invoke("run", "--task-ids", "cancel-no-longer-needed", "--store", f"sqlite:///{db}", "--run-id", "S",
                  "--no-progress").exit_code == 0
    with sqlite3.connect(db) as conn:  # a run recorded by an older tausim: its config has no spec fields
        conn.execute("UPDATE runs SET config = ? WHERE run_id = 'S'",
                     (json.dumps({"domain": "retail", "agent": "oracle", "concurrency": 0}),))
    with ResultsStore(f"sqlite:///{db}") as store, pytest.raises(
            StoreError, match=r"stored spec of run 'S': field concurrency: .* \(value 0\)"):
        store.require_run("S")
    res = invoke("run", "--task-ids", "cancel-no-longer-needed", "--store", f"sqlite:///{db}", "--run-id", "S",
                 "--no-progress")
    assert res.exit_code == 2 and "stored spec of run 'S': field concurrency" in res.output


def test_docs_library_example_runs():
    text = (ROOT / "docs" / "reference" / "run-spec.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- library-example -->\s*```python\n(.*?)```", text, re.S)
    assert match, "docs/reference/run-spec.md has no library example"
    scope: dict[str, object] = {}
    exec(compile(match.group(1), "run-spec.md", "exec"), scope)  # noqa: S102 - our own docs' example
    result = scope["result"]
    assert result.metrics["pass^1"] == 1.0  # the reference agent passes both tasks with the rule user
    assert len(result.trials) == 2 * 2 and result.config.seed == 7


def test_format_validation_error_names_a_bad_dict_key():
    from pydantic import BaseModel, ValidationError

    from simulator.types.spec import format_validation_error

    class Caps(BaseModel):
        limits: dict[int, str]

    with pytest.raises(ValidationError) as e:
        Caps.model_validate({"limits": {"x1": "a"}})
    assert format_validation_error("caps.json", e.value).startswith("caps.json: field limits: key 'x1': ")


def test_format_validation_error_escapes_and_cuts_keys_messages_and_values():
    """A spec's unknown key, a bad value and a message quoting it may hold terminal escapes or be 100 KB long: the
    message shows them escaped (``\\x1b``) and cut (80 characters of a value, then its length)."""
    from pydantic import ValidationError

    from simulator.types.spec import format_validation_error

    hostile = "\x1b]0;pwned\x07"
    with pytest.raises(ValidationError) as e:
        RunSpec.model_validate({"domain": "retail", hostile: 1})
    message = format_validation_error("s.json", e.value)
    assert "\x1b" not in message and "\x07" not in message
    assert message.startswith("s.json: field \\x1b]0;pwned\\x07: Extra inputs are not permitted (value 1)"), message
    with pytest.raises(ValidationError) as e:
        RunSpec.model_validate({"domain": "retail", "seed": hostile + "x" * 100_000})
    message = format_validation_error("s.json", e.value)
    assert "\x1b" not in message and len(message) < 400, message
    # its JSON text: 100,000 x + 8 plain characters + two escapes of 6 (\u001b, \u0007) + 2 quotes = 100,022
    assert '(value "\\u001b]0;pwned\\u0007xxx' in message and "(100,022 characters)" in message, message

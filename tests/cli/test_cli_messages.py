"""Error messages of bad input name the option or argument the user gave, and every misspelled key (issue 17).

Values that look like rich markup (``[mms_issue]``, pydantic's ``[key]`` locations) print whole; markup prints as
styles.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import SpecError
from simulator.types.spec import RunSpec, format_validation_error, load_spec
from tests._support.returns_cases import RETURNS, pin, returns_task


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(("value", "says"), [("foo://", "unknown executor"),
                                             ("local:0", "local:N needs a number of worker processes N >= 1")])
def test_executor_errors_name_option_and_value_without_pydantics_prefix(value: str, says: str) -> None:
    res = invoke("run", "--executor", value, "--no-progress")
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())  # rich may wrap
    assert "Value error" not in line
    assert f"--executor '{value}': {says}" in line


def test_every_misspelled_spec_key_is_named_with_a_suggestion(tmp_path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"domain": "retail", "trails": 3, "agent": {"name": "oracle", "temprature": 1},
                                "concurency": 2}))
    with pytest.raises(SpecError) as e:
        load_spec(spec)
    message = str(e.value)
    assert "more)" not in message
    for wrong, right in (("trails", "trials"), ("agent.temprature", "agent.temperature"),
                         ("concurency", "concurrency")):
        assert f"field {wrong}: Extra inputs are not permitted" in message
        assert f"did you mean {right}?" in message
    res = invoke("run", "--spec", spec, "--no-progress")
    assert res.exit_code == 2 and "did you mean trials?" in " ".join(res.output.split())


def test_an_unknown_key_far_from_every_field_gets_no_suggestion() -> None:
    with pytest.raises(Exception) as e:
        RunSpec.model_validate({"domain": "retail", "zzzzqqq": 1})
    message = format_validation_error("x.json", e.value)
    assert message == "x.json: field zzzzqqq: Extra inputs are not permitted (value 1)"


def test_a_numeric_value_is_still_shown_when_the_message_has_the_same_digit() -> None:
    with pytest.raises(Exception) as e:
        RunSpec.model_validate({"domain": "retail", "trials": 1, "max_turns": 0})
    message = format_validation_error("x.json", e.value)
    assert message.startswith("x.json: field max_turns: Input should be greater than or equal to 1 (value 0)")


def test_other_errors_after_the_unknown_keys_are_counted() -> None:
    with pytest.raises(Exception) as e:
        RunSpec.model_validate({"domain": "retail", "trails": 3, "seed": "x", "max_turns": 0})
    message = format_validation_error("x.json", e.value)
    assert "field trails" in message and "did you mean trials?" in message
    assert "field seed" in message and message.endswith("(and 1 more)")


def test_tasks_lint_names_its_file_argument_not_the_tasks_option(tmp_path) -> None:
    missing = tmp_path / "nope.json"
    res = invoke("tasks", "lint", "--domain", "retail", missing)
    assert res.exit_code == 2, res.output
    line = " ".join(res.output.split())
    assert "--tasks" not in line and "FILE" in line and "nope.json" in line and "no such task file" in line
    res = invoke("tasks", "lint", missing)  # no domain given: the missing file is reported first
    assert res.exit_code == 2 and "no such task file" in " ".join(res.output.split())


def test_tasks_lint_of_a_tau2_file_for_a_domain_without_tau2_names_the_file(tmp_path) -> None:
    tau2 = tmp_path / "tasks.json"
    tau2.write_text(json.dumps([{"id": "0", "user_scenario": {"instructions": "x"},
                                 "evaluation_criteria": {"actions": []}}]))
    res = invoke("tasks", "lint", "--domain", "returns", tau2)
    line = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "--tasks" not in line and f"{tau2}: a tau2-bench task file" in line.replace("\n", "")


def test_a_bad_move_key_is_named_as_a_key_of_scenario_moves(tmp_path):
    """The message read ``field scenario.moves.abc.:`` (pydantic's ``[key]`` location eaten as rich markup)."""
    doc = json.loads(RETURNS.read_text())
    task = pin(returns_task(), "case-1", moves={"abc": "off_topic"})
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**doc, "tasks": [task]}))
    res = CliRunner().invoke(app, ["run", "--domain", "returns", "--tasks", str(path), "--agent", "oracle",
                                   "--no-progress"])
    assert res.exit_code == 2, res.output
    assert "(id 'case-1'): field scenario.moves: key 'abc': Input should be a valid integer" in res.output
    assert "moves.abc." not in res.output


def test_error_messages_keep_square_brackets(tmp_path):
    """An error naming a bracketed value prints it whole (rich markup would swallow ``[mms_issue]``)."""
    from typer.testing import CliRunner

    from simulator.cli import app

    missing = tmp_path / "[mms_issue]tasks.json"
    res = CliRunner().invoke(app, ["run", "--tasks", str(missing)])
    assert res.exit_code == 2
    assert "[mms_issue]tasks.json" in res.output


def test_judge_and_gate_errors_print_markup_as_styles_and_values_as_text(tmp_path):
    """`judge compare` / `gate` on a missing run: no raw ``[bold red]`` tag, and a bracketed file name kept whole."""
    from typer.testing import CliRunner

    from simulator.cli import app

    missing = tmp_path / "[run]a.json"
    for args in (["judge", "compare", str(missing), str(missing), "--criterion", "polite", "--model", "m"],
                 ["gate", "--baseline", str(missing), "--candidate", str(missing)]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert "[bold red]" not in res.output and "error:" in res.output, res.output
        assert "[run]a.json" in res.output, res.output

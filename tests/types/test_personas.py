"""Personas: the schema, the shipped data files, the loader's errors and `tausim personas`."""

import json
from importlib import resources

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from personas import PersonaError, available_personas, load_persona, load_personas, parse_persona
from simulator import Persona
from simulator.cli import app

REQUIRED = ["cooperative", "terse", "verbose", "impatient", "abandoner", "drip-feeder", "mind-changer",
            "confused", "policy-pusher"]

GOOD = {
    "name": "custom",
    "description": "A test persona.",
    "patience": 4,
    "reveal_style": "drip",
    "verbosity": "terse",
    "politeness": "rude",
    "typo_rate": 0.1,
    "wrong_answer_rate": 0.2,
    "mind_change_turn": None,
    "policy_push": False,
    "abandonment_phrases": ["I give up."],
}


def write(tmp_path, doc, name="custom.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


# --- shipped personas -------------------------------------------------------------------------------------------

def test_required_personas_ship():
    assert set(REQUIRED) <= set(available_personas())
    assert available_personas() == sorted(available_personas())


@pytest.mark.parametrize("name", available_personas())
def test_every_shipped_persona_loads(name):
    (persona,) = load_personas([name])
    assert persona.name == name
    assert persona.description.strip()
    if persona.patience is not None:
        assert persona.abandonment_phrases


def test_shipped_files_are_package_resources():
    files = {f.name for f in (resources.files("personas") / "data").iterdir()}
    assert {f"{n}.json" for n in REQUIRED} <= files
    # package-data in pyproject ships them: "data/*.json" for every package
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"data/*.json"' in pyproject and '"personas*"' in pyproject


def test_shipped_personas_mean_what_their_names_say():
    p = {x.name: x for x in load_personas("all")}
    assert p["cooperative"].patience is None and p["cooperative"].typo_rate == 0
    assert p["cooperative"].wrong_answer_rate == 0 and not p["cooperative"].policy_push
    assert p["terse"].verbosity == "terse" and p["verbose"].verbosity == "verbose"
    assert p["verbose"].reveal_style == "all_at_once"
    assert p["drip-feeder"].reveal_style == "drip"
    assert p["mind-changer"].mind_change_turn is not None and p["mind-changer"].mind_change_phrases
    assert p["confused"].typo_rate > 0 and p["confused"].wrong_answer_rate > 0
    assert p["policy-pusher"].policy_push and p["policy-pusher"].push_phrases
    assert p["abandoner"].patience is not None and p["impatient"].patience is not None
    assert p["abandoner"].patience <= p["impatient"].patience < min(
        x.patience for x in p.values() if x.patience is not None and x.name not in ("abandoner", "impatient"))
    # our own phrasings, all distinct across personas
    phrases = [s for x in p.values() for s in x.abandonment_phrases]
    assert len(phrases) == len(set(phrases))


def test_all_and_comma_lists_and_duplicates():
    assert [p.name for p in load_personas("all")] == available_personas()
    assert [p.name for p in load_personas(["all"])] == available_personas()
    assert [p.name for p in load_personas("terse, impatient,terse")] == ["terse", "impatient"]
    assert [p.name for p in load_personas(["impatient", "all"])][0] == "impatient"
    assert len(load_personas(["impatient", "all"])) == len(available_personas())


def test_load_by_path(tmp_path):
    path = write(tmp_path, GOOD)
    (persona,) = load_personas(["cooperative", str(path)])[1:]
    assert persona == load_persona(path) and persona.reveal_style == "drip"


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(PersonaError, match=r"unknown persona 'grumpy' \(available: abandoner, .*cooperative"):
        load_personas(["grumpy"])
    with pytest.raises(PersonaError, match="no persona given"):
        load_personas("")


def test_same_persona_twice_by_name_and_path(tmp_path):
    path = write(tmp_path, {**GOOD, "name": "terse"}, "terse.json")
    with pytest.raises(PersonaError, match="persona name 'terse' is given twice"):
        load_personas(["terse", str(path)])


def test_persona_is_frozen():
    (p,) = load_personas(["terse"])
    with pytest.raises(ValidationError, match="frozen"):
        p.patience = 2  # type: ignore[misc]
    assert isinstance(p.abandonment_phrases, tuple)


def test_schema_documents_every_field():
    for name, field in Persona.model_fields.items():
        assert field.description, name
    schema = Persona.model_json_schema()
    assert schema["additionalProperties"] is False
    assert "patience" in schema["properties"] and schema["properties"]["patience"]["description"]


# --- bad files ----------------------------------------------------------------------------------------------------

def error_of(tmp_path, doc, name="custom.json"):
    path = write(tmp_path, doc, name)
    with pytest.raises(PersonaError) as e:
        load_persona(path)
    msg = str(e.value)
    assert msg.startswith(str(path) + ": "), msg
    return msg


def test_unknown_field(tmp_path):
    msg = error_of(tmp_path, {**GOOD, "moodiness": 0.7})
    assert "field moodiness: unknown field (value: 0.7" in msg
    assert "known fields: name, description, patience" in msg


@pytest.mark.parametrize("rate", [1.5, -0.1])
def test_out_of_range_typo_rate(tmp_path, rate):
    msg = error_of(tmp_path, {**GOOD, "typo_rate": rate})
    assert "field typo_rate:" in msg and f"(value: {rate})" in msg


def test_patience_without_abandonment_phrases(tmp_path):
    msg = error_of(tmp_path, {**GOOD, "abandonment_phrases": []})
    assert "field abandonment_phrases: must not be empty when patience is set (patience=4) (value: [])" in msg
    msg = error_of(tmp_path, {k: v for k, v in GOOD.items() if k != "abandonment_phrases"})
    assert "field abandonment_phrases: must not be empty when patience is set" in msg


def test_infinite_patience_needs_no_phrases(tmp_path):
    assert load_persona(write(tmp_path, {**GOOD, "patience": None, "abandonment_phrases": []})).patience is None


def test_mind_change_and_push_need_phrases(tmp_path):
    msg = error_of(tmp_path, {**GOOD, "mind_change_turn": 2})
    assert "field mind_change_phrases: must not be empty when mind_change_turn is set (mind_change_turn=2)" in msg
    msg = error_of(tmp_path, {**GOOD, "policy_push": True})
    assert "field push_phrases: must not be empty when policy_push is set (policy_push=True)" in msg


@pytest.mark.parametrize("field,value,words", [
    ("patience", 0, "greater than or equal to 1"),
    ("reveal_style", "sometimes", "'all_at_once', 'when_asked' or 'drip'"),
    ("verbosity", "loud", "'terse', 'normal' or 'verbose'"),
    ("politeness", "snarky", "'rude', 'neutral' or 'polite'"),
    ("wrong_answer_rate", 2, "less than or equal to 1"),
    ("mind_change_turn", 0, "greater than or equal to 1"),
    ("abandonment_phrases", ["bye", "bye"], "phrases must not repeat"),
    ("abandonment_phrases", ["  "], "phrases must not be empty or blank"),
    ("description", "two\nlines", "String should match pattern"),
    ("name", "Has Spaces", "String should match pattern"),
    ("patience", True, "Input should be a valid integer"),  # not converted to 1
    ("typo_rate", "0.1", "Input should be a valid number"),
    ("mind_change_turn", 2.5, "Input should be a valid integer"),
    ("policy_push", "yes", "Input should be a valid boolean"),
])
def test_bad_values_name_field_and_value(tmp_path, field, value, words):
    msg = error_of(tmp_path, {**GOOD, field: value})
    assert f"field {field}: " in msg and words in msg and f"(value: {json.dumps(value)}" in msg


def test_missing_required_field(tmp_path):
    msg = error_of(tmp_path, {k: v for k, v in GOOD.items() if k != "description"})
    assert "field description: Field required" in msg


def test_several_problems_reported_at_once(tmp_path):
    msg = error_of(tmp_path, {**GOOD, "typo_rate": 3, "verbosity": "loud"})
    assert "field typo_rate:" in msg and "field verbosity:" in msg


def test_name_must_match_file_name(tmp_path):
    msg = error_of(tmp_path, {**GOOD, "name": "other"})
    assert "field name: 'other' does not match the file name (expected 'custom'" in msg


def test_non_json(tmp_path):
    msg = error_of(tmp_path, '{"name": "custom",')
    assert "invalid JSON at line 1" in msg


def test_not_an_object(tmp_path):
    assert "expected a JSON object (a persona), got list" in error_of(tmp_path, [GOOD])


def test_missing_file(tmp_path):
    path = tmp_path / "absent.json"
    with pytest.raises(PersonaError, match=rf"^{path}: cannot read persona file: no such file"):
        load_persona(path)


def test_directory(tmp_path):
    with pytest.raises(PersonaError, match="is a directory"):
        load_persona(tmp_path)


def test_parse_persona_without_file():
    assert parse_persona(GOOD).name == "custom"
    with pytest.raises(PersonaError, match=r"^<persona>: field typo_rate"):
        parse_persona({**GOOD, "typo_rate": 9})


# --- CLI ----------------------------------------------------------------------------------------------------------

def test_cli_lists_personas():
    res = invoke("personas")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split() == ["name", "patience", "reveal", "style", "description"]
    rows = {line.split()[0]: line for line in lines[1:] if line.strip()}
    assert set(rows) == set(available_personas())
    assert rows["impatient"].split()[1:3] == ["3", "when_asked"]
    assert "never gives up" in rows["cooperative"]
    assert "drip" in rows["drip-feeder"].split()
    assert "Reveals one fact per turn" in rows["drip-feeder"]


def test_cli_validate_ok(tmp_path):
    path = write(tmp_path, GOOD)
    res = invoke("personas", "--validate", path)
    assert res.exit_code == 0, res.output
    assert f"{path}: ok (persona custom)" in res.output


def test_cli_validate_bad(tmp_path):
    good = write(tmp_path, GOOD)
    bad = write(tmp_path, {**GOOD, "name": "bad", "typo_rate": 1.5, "mood": "[red]x[/red]"},
                "bad.json")
    res = invoke("personas", "--validate", good, "--validate", bad, "--validate", tmp_path / "missing.json")
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert f"{good}: ok" in out
    assert f"error: {bad}: field typo_rate:" in out and "(value: 1.5)" in out
    assert "missing.json: cannot read persona file: no such file" in out
    assert 'field mood: unknown field (value: "[red]x[/red]"' in out  # printed as is, not as markup


def test_cli_validate_shipped_files():
    files = [resources.files("personas") / "data" / f"{n}.json" for n in available_personas()]
    res = invoke("personas", *[a for f in files for a in ("--validate", f)])
    assert res.exit_code == 0, res.output
    assert res.output.count(": ok (persona ") == len(files)


def test_a_lone_surrogate_is_refused_at_load_naming_file_field_and_value(tmp_path):
    """As a task file's: the escape \\udc80 alone was admitted and kept raw in the run document's config."""
    msg = error_of(tmp_path, {**GOOD, "abandonment_phrases": ["I give up.", "bye \udc80"]})
    assert msg == (f"{tmp_path / 'custom.json'}: abandonment_phrases[1]: 'bye \\udc80' holds a lone surrogate (half "
                   "of a UTF-16 pair, e.g. the escape \\ud83d alone): write the whole character, or both escapes of "
                   "its pair")
    res = invoke("personas", "--validate", tmp_path / "custom.json")
    assert res.exit_code == 2 and res.output.strip().splitlines() == [f"error: {msg}"], res.output

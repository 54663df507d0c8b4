"""A trial read back from a partial file is exactly what tausim wrote: a wrong-typed field is refused, not coerced.

Pydantic's lax mode read ``"passed": "yes"`` as true, ``"trial": "1"`` as 1 and a reward of ``"1"`` as 1.0, so a
hand-edited or foreign line resumed as a passing trial. Each bad line is one error naming the file, the line, the
field and the value (escaped: it may hold terminal escapes); a last line cut short by a crash is still dropped.
"""

from __future__ import annotations

import json

import pytest

from simulator.agents import NullAgent
from simulator.errors import RunDocumentError
from simulator.execution.recording import open_partial
from simulator.execution.runner import Runner
from simulator.storage.documents import load_partial, partial_document
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import scripted_user_factory
from tests._support.toy import BankDomain, write_data


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real trial of the toy bank domain and the spec it ran with."""
    folder = tmp_path_factory.mktemp("bank")
    dom = BankDomain()
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1,
                         "tasks": [{"id": "t", "scenario": {"instructions": "say hi"}}]})
    runner = Runner(dom, dom.template(write_data(folder / "d")), tasks, NullAgent, scripted_user_factory(),
                    RunSpec(domain="bank", agent="x", trials=2))
    trials = runner.run().trials
    assert len(trials) == 2 and trials[0].grade is not None
    return runner.config, trials


def _partial(tmp_path, recorded, edit=None, *, cut=False):
    """The partial file of the two trials, the second one's JSON changed by ``edit`` (a function of the dict)."""
    config, trials = recorded
    path = tmp_path / "run.json.partial.jsonl"
    open_partial(path, config, 2, trials[:1], ["t"]).close()
    second = json.loads(trials[1].model_dump_json())
    if edit is not None:
        edit(second)
    path.write_text(path.read_text() + json.dumps(second) + ("" if cut else "\n"), encoding="utf-8")
    return path


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def test_the_trials_tausim_writes_read_back_equal(tmp_path, recorded):
    path = _partial(tmp_path, recorded)
    assert load_partial(path)[1] == recorded[1]


@pytest.mark.parametrize(("edit", "field", "shown"), [
    (_set("passed", "yes"), "passed", '"yes"'),  # lax mode: true
    (_set("passed", 1), "passed", "1"),
    (_set("trial", "1"), "trial", '"1"'),  # lax mode: 1
    (_set("trial", 1.0), "trial", "1.0"),
    (_set("seed", "7"), "seed", '"7"'),
    (_set("duration_s", "0.5"), "duration_s", '"0.5"'),
    (_set("task_id", 5), "task_id", "5"),
    (_set("trajectory", "turns", "3"), "trajectory.turns", '"3"'),  # a count as a string
    (_set("trajectory", "agent_usage", "prompt_tokens", "12"), "trajectory.agent_usage.prompt_tokens", '"12"'),
    (_set("trajectory", "agent_usage", "cost_usd", "1"), "trajectory.agent_usage.cost_usd", '"1"'),
    (_set("grade", "passed", "true"), "grade.passed", '"true"'),
    (_set("grade", "state", "passed", 0), "grade.state.passed", "0"),
    (_set("termination_reason", "USER_STOP"), "termination_reason", '"USER_STOP"'),  # another case
    (_set("termination_reason", "finished"), "termination_reason", '"finished"'),
])
def test_a_wrong_typed_field_is_refused_naming_file_line_field_and_value(tmp_path, recorded, edit, field, shown):
    path = _partial(tmp_path, recorded, edit)
    before = path.read_bytes()
    with pytest.raises(RunDocumentError) as info:
        load_partial(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line 3: field {field}: "), message
    assert f"(value {shown})" in message, message
    assert "\n" not in message
    with pytest.raises(RunDocumentError, match=r"line 3: field "):
        partial_document(path)  # what `tausim report FILE.partial.jsonl` reads
    assert path.read_bytes() == before


def test_a_hostile_value_is_shown_escaped_and_clipped(tmp_path, recorded):
    hostile = "\x1b]0;pwned\x07\x1b[2J" + "x" * 5000
    path = _partial(tmp_path, recorded, _set("passed", hostile))
    with pytest.raises(RunDocumentError) as info:
        load_partial(path)
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "\\u001b]0;pwned" in message  # the value's JSON text, escaped
    assert len(message) < len(str(path)) + 400
    assert "(5,0" in message  # the length of the value shown cut


def test_a_hostile_key_in_a_field_path_is_shown_escaped(tmp_path, recorded):
    path = _partial(tmp_path, recorded, _set("faults", {"\x1b]0;pwned\x07": "2"}))
    with pytest.raises(RunDocumentError) as info:
        load_partial(path)
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message and "field faults" in message, message


def test_a_last_line_cut_short_is_still_dropped_and_a_whole_bad_last_line_refused(tmp_path, recorded):
    path = _partial(tmp_path, recorded, lambda doc: doc.clear(), cut=True)  # "{}" without its newline
    assert load_partial(path)[1] == recorded[1][:1]
    text = path.read_text()
    path.write_text(text[:-2] + '{"task_id": "t", "trial": 1, "passed": "ye')  # the crash cut the line
    assert load_partial(path)[1] == recorded[1][:1]
    path = _partial(tmp_path, recorded, _set("passed", "yes"), cut=True)  # no newline: a cut line, as before
    assert load_partial(path)[1] == recorded[1][:1]
    path = _partial(tmp_path, recorded, _set("passed", "yes"))  # with its newline: written whole, refused
    with pytest.raises(RunDocumentError, match=r"line 3: field passed"):
        load_partial(path)


def _lines(tmp_path, recorded, *trial_lines, header=None):
    """A partial file of the toy run: its header (or ``header``), then the given lines, each with its newline."""
    config, _ = recorded
    path = tmp_path / "run.json.partial.jsonl"
    open_partial(path, config, 2, [], ["t"]).close()
    head = path.read_text().split("\n")[0] if header is None else json.dumps(header)
    path.write_text("\n".join([head, *trial_lines]) + "\n", encoding="utf-8")
    return path


def _refused(path, *parts):
    before = path.read_bytes()
    with pytest.raises(RunDocumentError) as info:
        load_partial(path)
    message = str(info.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message
    assert path.read_bytes() == before
    return message


def test_two_different_records_of_one_trial_are_refused_naming_both_lines_and_the_key(tmp_path, recorded):
    first = recorded[1][0]
    other = json.loads(first.model_dump_json())
    other.update(passed=False, termination_reason="agent_error", grade=None, error="boom")
    path = _lines(tmp_path, recorded, first.model_dump_json(), recorded[1][1].model_dump_json(), json.dumps(other))
    _refused(path, f"{path}: lines 2 and 4: two different records of the same trial", 'task "t"', "trial 0")
    with pytest.raises(RunDocumentError, match="lines 2 and 4"):
        partial_document(path)


def test_an_exact_duplicate_line_is_collapsed_nothing_is_lost(tmp_path, recorded):
    first, second = recorded[1]
    respaced = json.dumps(json.loads(first.model_dump_json()), indent=None, separators=(", ", ": "))
    assert respaced != first.model_dump_json()  # the same JSON value, spelled otherwise
    path = _lines(tmp_path, recorded, first.model_dump_json(), second.model_dump_json(), respaced)
    assert load_partial(path)[1] == [first, second]


@pytest.mark.parametrize(("edit", "field"), [
    (_set("from_the_future", 1), "from_the_future"),
    (_set("grade", "novel", {"x": 1}), "grade.novel"),
    (_set("trajectory", "messages", 0, "mood", "sunny"), "trajectory.messages.0.mood"),
])
def test_a_field_tausim_does_not_know_is_refused_not_dropped(tmp_path, recorded, edit, field):
    path = _partial(tmp_path, recorded, edit)
    message = _refused(path, f"{path}: line 3: field {field}: not a field tausim knows", "another tausim version")
    assert "(value " in message


def test_a_null_optional_field_is_not_an_unknown_one(tmp_path, recorded):
    path = _partial(tmp_path, recorded, _set("side_seeds", None))  # written only when set: null loses nothing
    assert load_partial(path)[1] == recorded[1]


@pytest.mark.parametrize(("token", "shown"), [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")])
def test_a_non_finite_number_is_refused_as_tausim_never_writes_one(tmp_path, recorded, token, shown):
    line = recorded[1][1].model_dump_json()
    assert '"duration_s":' in line
    bad = json.dumps({**json.loads(line), "duration_s": 0.25}).replace('"duration_s": 0.25', f'"duration_s": {token}')
    path = _lines(tmp_path, recorded, recorded[1][0].model_dump_json(), bad)
    _refused(path, f"{path}: line 3: field duration_s: not a finite number (value {shown})")


def test_passed_contradicting_the_grade_is_refused(tmp_path, recorded):
    graded = recorded[1][1]
    assert graded.grade is not None
    path = _partial(tmp_path, recorded, _set("passed", not graded.grade.passed))
    _refused(path, f"{path}: line 3: field passed: contradicts grade.passed",
             f"(value {json.dumps(not graded.grade.passed)}, grade.passed {json.dumps(graded.grade.passed)})")


@pytest.mark.parametrize(("change", "field", "shown"), [
    ({"planned": "lots"}, "planned", '"lots"'),
    ({"planned": -1}, "planned", "-1"),
    ({"planned": True}, "planned", "true"),
    ({"version": 2}, "version", "2"),
    ({"extra": {"k": 1}}, "extra", '{"k": 1}'),
    ({"planned_task_ids": "t"}, "planned_task_ids", '"t"'),
])
def test_a_header_field_is_checked_strictly(tmp_path, recorded, change, field, shown):
    config, _ = recorded
    from simulator.storage.documents import partial_header
    header = {**partial_header(config, 2, ["t"]), **change}
    path = _lines(tmp_path, recorded, recorded[1][0].model_dump_json(), header=header)
    _refused(path, f"{path}: line 1: field {field}: ", f"(value {shown})")


def test_a_line_that_is_not_utf8_is_named_by_its_line(tmp_path, recorded):
    path = _lines(tmp_path, recorded, recorded[1][0].model_dump_json(), recorded[1][1].model_dump_json())
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace(b'"t"', b'"t\xff"', 1)
    path.write_bytes(b"\n".join(raw))
    _refused(path, f"{path}: line 3: not UTF-8 text (invalid start byte at byte ")
    cut = path.read_bytes()[:-1]  # the same line, last and without its newline: a crash cut it, dropped
    path.write_bytes(cut)
    assert load_partial(path)[1] == recorded[1][:1]

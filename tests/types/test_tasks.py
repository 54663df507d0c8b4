import json

import pytest

from simulator.types.tasks import TaskFileError, load_tasks


def write(tmp_path, doc, name="t.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def test_tau_bench_list_gets_index_ids(tmp_path):
    p = write(tmp_path, [
        {"user_id": "u1", "instruction": "do x", "actions": [{"name": "a", "kwargs": {"k": 1}}], "outputs": ["5"]},
        {"user_id": "u2", "instruction": "do y", "actions": [], "outputs": []},
    ])
    tasks = load_tasks(p)
    assert [t.id for t in tasks] == ["0", "1"]
    assert tasks[0].gold_actions[0].name == "a" and tasks[0].gold_actions[0].arguments == {"k": 1}
    assert tasks[0].required_outputs == ["5"] and tasks[0].scenario.instructions == "do x"


def test_errors_name_file_task_and_field(tmp_path):
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "ok", "scenario": {"instructions": "x"}},
        {"id": "broken", "scenario": {"instructions": "x"}, "gold_actions": [{"name": 3}]},
    ]})
    with pytest.raises(TaskFileError) as e:
        load_tasks(p)
    msg = str(e.value)
    assert str(p) in msg and "task [1]" in msg and "'broken'" in msg and "gold_actions.0.name" in msg


def test_unknown_field_and_duplicate_ids(tmp_path):
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "a", "scenario": {"instructions": "x"}, "gold_action": []}]})
    with pytest.raises(TaskFileError, match="gold_action"):
        load_tasks(p)
    p = write(tmp_path, {"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "a", "scenario": {"instructions": "x"}}, {"id": "a", "scenario": {"instructions": "y"}}]})
    with pytest.raises(TaskFileError, match="duplicate task id 'a'"):
        load_tasks(p)


def test_not_json_and_missing_file(tmp_path):
    with pytest.raises(TaskFileError, match=r"invalid JSON at line 1"):
        load_tasks(write(tmp_path, "{nope"))
    with pytest.raises(TaskFileError, match="cannot read"):
        load_tasks(tmp_path / "absent.json")
    with pytest.raises(TaskFileError, match="missing field"):
        load_tasks(write(tmp_path, [{"user_id": "u"}]))
    with pytest.raises(TaskFileError, match="not a task file"):
        load_tasks(write(tmp_path, {"tasks": []}))

"""Bad task and data files end the run with one short line naming file, field and value (exit 2)."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from simulator.cli import app

BIG = 100_000


def _task_file(tmp_path, task):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"format": "tausim.tasks", "version": 1, "tasks": [task]}), encoding="utf-8")
    return path


def test_a_task_file_error_prints_an_excerpt_of_a_huge_id_and_exits_2(tmp_path):
    path = _task_file(tmp_path, {"id": "z" * BIG, "scenario": {"instructions": "say hi"}, "tags": 5})
    res = CliRunner().invoke(app, ["run", "--tasks", str(path), "--no-progress"])
    assert res.exit_code == 2, res.output[:400]
    assert "(100,000 characters)" in res.output and len(res.output) < 1000, len(res.output)


def test_a_lone_surrogate_in_peer_data_is_one_line_naming_file_field_and_value(tmp_path, retail_peer_dir):
    """tau-bench's retail data with one user's first name holding the JSON escape \\ud83d alone."""
    data = tmp_path / "data"
    shutil.copytree(retail_peer_dir / "data", data)
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    first = next(iter(users))
    users[first]["name"]["first_name"] = "\ud83d"
    (data / "users.json").write_text(json.dumps(users), encoding="utf-8")
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--data", str(data), "--no-progress"],
                             env={"TAUSIM_CACHE_DIR": str(tmp_path / "cache")})
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith(f"error: {data / 'users.json'}: {first}.name.first_name: '\\ud83d' holds a lone "
                               "surrogate (half of a UTF-16 pair"), lines[0]
    assert not list((tmp_path / "cache").rglob("*.sqlite"))


def test_a_price_sqlite_cannot_store_is_one_line_for_run_and_domain_check(tmp_path):
    from domains.retail import RetailDomain

    data = tmp_path / "data"
    shutil.copytree(RetailDomain().default_data_dir(), data)
    orders = json.loads((data / "orders.json").read_text(encoding="utf-8"))
    key = next(iter(orders))
    orders[key]["items"][0]["price"] = 10**30
    (data / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    env = {"TAUSIM_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["domain", "check", "retail", "--data", str(data)],
                 ["run", "--domain", "retail", "--data", str(data), "--no-progress", "--no-preflight"]):
        res = CliRunner().invoke(app, args, env=env)
        assert res.exit_code == 2, res.output
        assert res.output.strip().splitlines() == [
            f"error: {data / 'orders.json'}: record {key!r}: field items[0].price: expected a number SQLite can store "
            f"(an integer from -2**63 to 2**63-1, or a decimal), got int {10**30}"], res.output

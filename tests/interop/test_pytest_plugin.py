"""The tausim pytest plugin: the `tausim` fixture, pass^k, assert_pass_hat, --tausim-out (run with pytester)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TASKS = ["cancel-no-longer-needed", "modify-user-address"]

TWO_TESTS = f'''
import pytest

from simulator.interop.pytest_plugin import assert_pass_hat

TASKS = {TASKS!r}


def test_oracle_passes(tausim):
    result = tausim.run(domain="retail", agent="oracle", user="rule", trials=2, task_ids=TASKS)
    assert result.pass_hat(1) == 1.0 and result.pass_hat(2) == 1.0
    assert_pass_hat(result, 1, 1.0)


def test_null_fails(tausim):
    result = tausim.run(domain="retail", agent="null", user="rule", trials=2, task_ids=TASKS)
    assert result.pass_hat(1) == 0.0
    with pytest.raises(AssertionError) as info:
        tausim.assert_pass_hat(result, 1, 0.5)
    message = str(info.value)
    assert "pass^1 = 0.0000 < 0.5" in message
    for task in TASKS:
        assert f"task {{task}}: 0 of 2 trials passed" in message
    assert "state: " in message  # the state differences of the failed trials
'''


def test_two_test_file_runs_green(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_agents=TWO_TESTS)
    out = tmp_path / "docs"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--tausim-out={out}", timeout=600)
    result.assert_outcomes(passed=2)
    docs = sorted(out.glob("*.json"))
    assert [p.name for p in docs] == ["test_null_fails-1.json", "test_oracle_passes-1.json"]
    doc = json.loads(docs[1].read_text())
    assert doc["format"] == "tausim.run" and doc["metrics"]["pass^2"] == 1.0
    assert sorted({t["task_id"] for t in doc["trials"]}) == sorted(TASKS)
    trial_lines = [line for line in docs[1].read_text().splitlines() if line.startswith('  {"')]
    assert len(trial_lines) == len(doc["trials"])  # one trial a line, as `tausim run --out` writes them


def test_failure_message_names_cell_differences_and_assertions(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fail='''
from simulator.interop.pytest_plugin import assert_pass_hat


def test_null(tausim):
    assert_pass_hat(tausim.run(domain="retail", agent="null", user="rule", task_ids=["cancel-no-longer-needed"]),
                    1, 1.0)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pass^1 = 0.0000 < 1.0*", "*task cancel-no-longer-needed: 0 of 1 trials passed*",
                                 "*trial 0: *", "*state: orders*"])


def test_pass_hat_refuses_k_above_trials(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k='''
import pytest


def test_k(tausim):
    result = tausim.run(domain="retail", agent="oracle", user="rule", trials=1, task_ids=["modify-user-address"])
    assert result.pass_hat(1) == 1.0
    with pytest.raises(ValueError, match="exceeds"):
        result.pass_hat(2)
''')
    pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=600).assert_outcomes(passed=1)


def test_plugin_import_is_light() -> None:
    """Every pytest session loads the plugin: importing it loads neither the engine, SQLAlchemy nor litellm."""
    code = ("import sys, simulator.interop.pytest_plugin as p; assert hasattr(p, 'tausim'); "
            "heavy = [m for m in ('sqlalchemy', 'litellm', 'numpy', 'simulator.execution', 'simulator.world', 'mcp') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_personas_by_name_and_cells(tmp_path: Path) -> None:
    """Shipped personas may be named; the cells are task@persona; the document is kept under the test's name."""
    from simulator.interop.pytest_plugin import Tausim

    t = Tausim(tmp_path, "test_personas[x]")
    result = t.run(domain="retail", agent="oracle", user="rule", trials=1, task_ids=["modify-user-address"],
                   personas=["impatient", "cooperative"])
    assert set(result.cells()) == {"modify-user-address@impatient", "modify-user-address@cooperative"}
    assert result.pass_hat(1) == pytest.approx(sum(result.cells().values()) / 2)
    assert result.path is not None and result.path.name == "test_personas_x-1.json"
    assert json.loads(result.path.read_text())["config"]["personas"] == ["impatient", "cooperative"]


def test_the_fixture_runs_the_preflight_like_tausim_run(tmp_path: Path) -> None:
    """An unreachable endpoint stops the fixture's run once, before any trial (as `tausim run` exits 2)."""
    from simulator.errors import SetupError
    from simulator.interop.pytest_plugin import Tausim

    t = Tausim(tmp_path, "test_unreachable")
    with pytest.raises(SetupError, match="127.0.0.1:1"):
        t.run(domain="retail", agent="http:http://127.0.0.1:1/v1", user="rule", trials=1,
              task_ids=["modify-user-address"])
    assert t.results == []  # nothing ran
    # without the pre-flight, the trials run and each records the failure
    result = t.run(domain="retail", agent="http:http://127.0.0.1:1/v1", user="rule", trials=1,
                   task_ids=["modify-user-address"], preflight=False, request_timeout=2)
    assert [tr.termination_reason for tr in result.run.trials] != ["user_stop"]

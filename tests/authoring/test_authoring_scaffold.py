"""tausim domain new: the scaffold installs, passes tausim domain check with no edit, and the oracle passes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from simulator.authoring.scaffold import class_name, new_domain
from simulator.cli import app
from simulator.errors import ScaffoldError


def _tausim(*args, cwd):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600, check=False)


def _pip(*args):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600,
                          check=False)


def test_scaffold_installs_checks_and_runs(tmp_path):
    name = f"kiosk{os.getpid()}"
    res = CliRunner().invoke(app, ["domain", "new", name, "--dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    root = tmp_path / name
    for rel in ("pyproject.toml", "README.md", f"{name}/__init__.py", f"{name}/models.py", f"{name}/tools.py",
                f"{name}/policy.md", f"{name}/generate.py", f"{name}/data/orders.json", f"{name}/tasks/builtin.json",
                f"tests/test_{name}.py"):
        assert (root / rel).is_file(), rel
    assert f'{name} = "{name}:{class_name(name)}"' in (root / "pyproject.toml").read_text()
    installed = _pip("install", "-q", "-e", str(root), "--no-deps", "--no-build-isolation")
    assert installed.returncode == 0, installed.stderr[-2000:]
    work = tmp_path / "work"  # `python -m` puts the cwd first on sys.path: not the folder holding the project
    work.mkdir()
    try:
        check = _tausim("domain", "check", name, cwd=work)
        assert check.returncode == 0, check.stdout + check.stderr
        assert f"domain {name}: 0 error(s)" in check.stdout
        lint = _tausim("tasks", "lint", root / name / "tasks" / "builtin.json", cwd=work)
        assert lint.returncode == 0 and "0 error(s), 0 warning(s)" in lint.stdout, lint.stdout + lint.stderr
        tasks = json.loads((root / name / "tasks" / "builtin.json").read_text())["tasks"]
        assert any(t.get("assertions") for t in tasks) and all(t["gold_actions"] for t in tasks)
        for agent, expect in (("oracle", True), ("null", False)):
            out = work / f"{agent}.json"
            run = _tausim("run", "--domain", name, "--agent", agent, "--user", "scripted", "--out", out, cwd=work)
            assert run.returncode == 0, run.stdout + run.stderr
            trials = json.loads(out.read_text())["trials"]
            assert len(trials) == len(tasks) >= 4
            assert [t["passed"] for t in trials] == [expect] * len(tasks), (agent, trials)
        own = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
                             capture_output=True, text=True, cwd=root, timeout=600, check=False,
                             env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        assert own.returncode == 0, own.stdout[-2000:]
    finally:
        removed = _pip("uninstall", "-y", f"tausim-domain-{name}")
        assert removed.returncode == 0, removed.stderr


def test_bad_names_and_existing_folders_are_refused(tmp_path):
    for bad in ("Kiosk", "1kiosk", "class", "kiosk-shop"):
        with pytest.raises(ScaffoldError, match="lower-case letters"):
            new_domain(bad, tmp_path)
    with pytest.raises(ScaffoldError, match="already registered"):
        new_domain("retail", tmp_path)
    with pytest.raises(ScaffoldError, match="importable"):
        new_domain("json", tmp_path)
    (tmp_path / "kiosk_x").mkdir()
    (tmp_path / "kiosk_x" / "keep.txt").write_text("mine")
    res = CliRunner().invoke(app, ["domain", "new", "kiosk_x", "--dir", str(tmp_path)])
    assert res.exit_code == 2 and "exists and is not empty" in res.output
    assert (tmp_path / "kiosk_x" / "keep.txt").read_text() == "mine"
    res = CliRunner().invoke(app, ["domain", "new", "kiosk_y", "--dir", str(tmp_path / "no" / "such")])
    assert res.exit_code == 2 and "not an existing directory" in res.output
    assert not (tmp_path / "no").exists()

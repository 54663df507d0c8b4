"""tausim domain new: the scaffold installs, passes tausim domain check with no edit, and the oracle passes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.authoring.scaffold import class_name, new_domain
from simulator.cli import app
from simulator.errors import ScaffoldError


def _tausim(python, *args, cwd):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([str(python), "-m", "simulator.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600, check=False)


def _private_python(folder: Path) -> Path:
    """The python of a new virtual environment in ``folder`` that also sees this interpreter's packages.

    The scaffold is installed there, not into the suite's own environment: other tests, in other processes while
    the suite runs in parallel, list the installed domains (``tausim domains`` would name the scaffold's and fail
    to import it), and an interrupted test would leave it installed.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site_dir = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    # addsitedir, not a plain path line: the suite's environment's own .pth files (editable installs) apply too
    outer = sysconfig.get_paths()["purelib"]
    (Path(site_dir) / "suite_packages.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    return python


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
    python = _private_python(tmp_path / "venv")
    installed = subprocess.run([python, "-m", "pip", "install", "-q", "-e", str(root), "--no-deps",
                                "--no-build-isolation"], capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stderr[-2000:]
    listed = subprocess.run([sys.executable, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True,
                            timeout=600, check=True)
    assert f"tausim-domain-{name}" not in listed.stdout  # the suite's own environment is left as it was
    work = tmp_path / "work"  # `python -m` puts the cwd first on sys.path: not the folder holding the project
    work.mkdir()
    check = _tausim(python, "domain", "check", name, cwd=work)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"domain {name}: 0 error(s)" in check.stdout
    lint = _tausim(python, "tasks", "lint", root / name / "tasks" / "builtin.json", cwd=work)
    assert lint.returncode == 0 and "0 error(s), 0 warning(s)" in lint.stdout, lint.stdout + lint.stderr
    tasks = json.loads((root / name / "tasks" / "builtin.json").read_text())["tasks"]
    assert any(t.get("assertions") for t in tasks) and all(t["gold_actions"] for t in tasks)
    for agent, expect in (("oracle", True), ("null", False)):
        out = work / f"{agent}.json"
        run = _tausim(python, "run", "--domain", name, "--agent", agent, "--user", "scripted", "--out", out, cwd=work)
        assert run.returncode == 0, run.stdout + run.stderr
        trials = json.loads(out.read_text())["trials"]
        assert len(trials) == len(tasks) >= 4
        assert [t["passed"] for t in trials] == [expect] * len(tasks), (agent, trials)
    own = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
                         capture_output=True, text=True, cwd=root, timeout=600, check=False,
                         env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert own.returncode == 0, own.stdout[-2000:]


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

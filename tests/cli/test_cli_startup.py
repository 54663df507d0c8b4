"""`tausim --version` and `tausim --help` start without the engine: structural checks, no timing."""

import inspect
import subprocess
import sys

import pytest
from typer.testing import CliRunner

HEAVY = ("sqlalchemy", "litellm", "dask", "distributed", "opentelemetry", "mcp", "numpy", "pydantic", "structlog",
         "simulator.execution", "simulator.storage", "simulator.world", "simulator.report", "simulator.cli.run")
"""Modules (and their submodules) that neither start-up may import."""


MODULES_AT_EXIT = ("import atexit, json, sys\n"
                   "atexit.register(lambda: print('MODULES ' + json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
                   "sys.argv = ['tausim', *json.loads(sys.argv[1])]\n"
                   "from simulator.cli import main\n"
                   "main()\n")
"""What the ``tausim`` script does, printing the names in ``sys.modules`` on stderr as the process exits (-X
importtime would miss the modules loaded through ``importlib.import_module``)."""


def imported_modules(*args: str) -> set[str]:
    """The modules loaded by ``tausim ARGS`` (every module in ``sys.modules`` when it exits)."""
    import json

    out = subprocess.run([sys.executable, "-c", MODULES_AT_EXIT, json.dumps(args)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("MODULES ")]
    return set(json.loads(line.removeprefix("MODULES ")))


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [("--version",), ("--help",)])
def test_start_up_imports_no_engine_module(args):
    names = imported_modules(*args)
    assert "simulator.cli" in names
    assert heavy(names) == []


def test_a_command_imports_its_module_only_when_invoked():
    names = imported_modules("domains", "--help")
    assert "simulator.cli.domains" in names and "simulator.cli.run" not in names


def test_the_heavy_check_sees_a_heavy_import():
    """The check above can fail: a command that needs the engine shows it."""
    assert "simulator.cli.run" in heavy(imported_modules("run", "--help"))


def test_the_listed_help_is_each_commands_own_first_paragraph():
    from simulator.cli import COMMANDS, load_command

    for name, entry in COMMANDS.items():
        command = load_command(name)
        own = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())
        assert entry.summary == own, f"{name}: update its summary in simulator.cli.COMMANDS to {own!r}"


def test_root_help_lists_every_command_and_version_reads_the_metadata():
    from importlib import metadata

    from simulator.cli import COMMANDS, app

    res = CliRunner().invoke(app, ["--help"])
    assert res.exit_code == 0, res.output
    assert all(name in res.output for name in COMMANDS)
    res = CliRunner().invoke(app, ["--version"])
    assert res.output.strip() == f"tausim {metadata.version('tausim')}"
    out = subprocess.run([sys.executable, "-m", "simulator.cli", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == f"tausim {metadata.version('tausim')}"


NOT_ON_A_RUNS_PATH = ("tenacity", "simulator.authoring.check", "simulator.cli.domain", "simulator.report._html",
                      "simulator.report._export", "simulator.report._export_tau2")
"""Modules a model-free `tausim run` without a store never needs: tenacity only after a failed model call, the
conformance suite only for `tausim domain check`, the HTML page and the exports only for `tausim report`/`export`."""


def test_a_one_task_run_loads_what_it_uses_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = imported_modules("run", "--task-ids", "cancel-no-longer-needed")
    assert {"simulator.execution.session", "simulator.report._terminal", "simulator.authoring.lint"} <= names
    assert sorted(n for n in names if any(n == m or n.startswith(m + ".") for m in NOT_ON_A_RUNS_PATH)) == []
    assert list(tmp_path.iterdir()) == []


def test_the_lazy_packages_still_give_every_public_name():
    import simulator.authoring
    import simulator.report

    for package in (simulator.authoring, simulator.report):
        assert sorted(package._HOMES) == sorted(package.__all__)
        assert all(getattr(package, name) is not None for name in package.__all__)


BLAS_AT_EXIT = ("import atexit, os, sys\n"
                "atexit.register(lambda: print('BLAS ' + str(os.environ.get('OPENBLAS_NUM_THREADS')),\n"
                "                              file=sys.stderr))\n"
                "sys.argv = ['tausim', 'domains', '--help']\n"
                "from simulator.cli import main\n"
                "main()\n")


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_the_command_keeps_numpys_blas_to_one_thread_unless_told(given, expected):
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", BLAS_AT_EXIT], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"BLAS {expected}" in out.stderr.splitlines()

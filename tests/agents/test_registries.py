"""Agents and users from other packages: the ``tausim.agents`` and ``tausim.users`` entry-point registries.

Each test installs a real (if tiny) third-party distribution: a ``*.dist-info`` folder with ``METADATA`` and
``entry_points.txt`` beside its module, in a temporary folder put on ``sys.path``, so that ``importlib.metadata``
discovers it exactly as it would a ``pip install``-ed package. Nothing is monkeypatched inside tausim. The
``installed`` context removes the folder from ``sys.path``, forgets its modules and invalidates the import caches,
so no registration leaks into another test.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.agents import AGENTS, OracleAgent, agent_factory, agent_schemes
from simulator.cli import app
from simulator.errors import RegistryError
from simulator.users import USERS, user_factory, user_schemes

TASK = "cancel-no-longer-needed"  # a retail task the oracle passes with the rule user
ROOT = Path(__file__).resolve().parents[2]

AGENT_MODULE = '''
from simulator.agents import OracleAgent

CALLS = []


class PoliteOracle(OracleAgent):
    """An oracle-like agent of another package."""


def build(arg, /, **options):
    CALLS.append((arg, sorted(options)))
    if arg not in ("", "polite"):
        raise ValueError(f"--agent mine:{arg}: unknown mood {arg!r}")
    return PoliteOracle
'''

USER_MODULE = '''
from simulator.users import rule_user_factory

CALLS = []


def build(arg, /, *, domain=None, template=None, **options):
    CALLS.append((arg, domain.name, sorted(options)))
    return rule_user_factory(domain, template)
'''

BROKEN_MODULE = 'raise ImportError("the vendor SDK is not installed")\n'


@contextmanager
def installed(root: Path, dist: str, groups: dict[str, dict[str, str]], modules: dict[str, str]) -> Iterator[Path]:
    """Install distribution ``dist`` (version 1.0) into a fresh folder on ``sys.path`` for the ``with`` block.

    Args:
        root: where to make the folder.
        dist: the distribution name.
        groups: entry-point group -> {name: "module:attribute"}.
        modules: module name -> source, written beside the dist-info.
    """
    site = root / f"site-{dist}"
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in eps.items()) + "\n"
        for group, eps in groups.items()))
    for name, source in modules.items():
        (site / f"{name}.py").write_text(source)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.path_importer_cache.pop(str(site), None)
        for name in [n for n, m in sys.modules.items() if str(getattr(m, "__file__", "") or "").startswith(str(site))]:
            del sys.modules[name]
        importlib.invalidate_caches()


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def run_args(tmp_path: Path, *extra: object) -> list[object]:
    return ["run", "--domain", "retail", "--task-ids", TASK, "--trials", "1", "--out", tmp_path / "run.json", *extra]


# ------------------------------------------------------------------------------------------------- built-ins


def test_the_built_in_schemes_are_registered_by_tausims_own_entry_points():
    agents = {r.scheme: r for r in agent_schemes()}
    users = {r.scheme: r for r in user_schemes()}
    assert sorted(agents) == ["a2a", "faulty", "http", "langgraph", "litellm", "null", "openai-agents", "oracle",
                             "py", "reference"]
    assert sorted(users) == ["confirming", "llm", "py", "replay", "rule", "scripted"]
    assert {r.origin for r in [*agents.values(), *users.values()]} == {"tausim"}
    assert agents["oracle"].target == "simulator.agents._builtins:oracle"
    assert agent_factory("oracle") is OracleAgent  # through the entry point, like any package's scheme


@pytest.mark.parametrize(("make", "spec", "message"), [
    (agent_factory, "oracle:x", "the oracle agent takes no argument"),
    (agent_factory, "null:y", "the null agent takes no argument"),
    (agent_factory, "litellm:", "needs a model"),
    (agent_factory, "reference", "needs the run's domain"),
    (user_factory, "rule:z", "the rule user takes no argument"),
    (user_factory, "llm:", "needs a model"),
    (user_factory, "rule", "needs the run's domain and template"),
])
def test_built_in_builders_refuse_what_they_cannot_build(make, spec, message):
    with pytest.raises(ValueError, match=message):
        make(spec)


def test_an_unknown_scheme_lists_the_registered_ones():
    with pytest.raises(RegistryError, match="unknown agent 'nope'") as err:
        agent_factory("nope:x")
    assert isinstance(err.value, ValueError)
    assert "faulty, http, langgraph, litellm, null, openai-agents, oracle, py, reference" in str(err.value)
    with pytest.raises(ValueError, match=r"--user 'ghost': unknown user 'ghost'; .*rule, scripted"):
        user_factory("ghost")
    res = invoke("run", "--agent", "nope")
    assert res.exit_code == 2 and "unknown agent 'nope'" in res.output and "oracle" in res.output


# ------------------------------------------------------------------------------------------------ third party


def test_a_third_party_agent_runs_by_its_scheme(tmp_path):
    with installed(tmp_path, "mine-agents", {"tausim.agents": {"mine": "mine_agents:build"}},
                   {"mine_agents": AGENT_MODULE}):
        assert "mine_agents" not in sys.modules  # registered, not imported
        assert {"mine": "mine-agents"}.items() <= {r.scheme: r.origin for r in agent_schemes()}.items()
        res = invoke(*run_args(tmp_path, "--agent", "mine:polite", "--user", "rule"))
        assert res.exit_code == 0, res.output
        # built once by the run, given the run's options (the pre-flight then builds the first trial's agent)
        ((arg, options),) = sys.modules["mine_agents"].CALLS
        assert arg == "polite" and {"domain", "timeout"} <= set(options)
        doc = json.loads((tmp_path / "run.json").read_text())
        assert doc["config"]["agent"]["name"] == "mine:polite"
        (trial,) = doc["trials"]
        assert trial["task_id"] == TASK and trial["passed"] is True, trial["grade"]
        assert doc["packages"]["mine-agents"] == "1.0"  # the plug-in's package is recorded
        res = invoke(*run_args(tmp_path, "--agent", "mine:grumpy", "--user", "rule"))
        assert res.exit_code == 2 and "--agent mine:grumpy: unknown mood 'grumpy'" in res.output
    assert "mine" not in AGENTS.schemes() and "mine_agents" not in sys.modules  # nothing leaks out


def test_a_third_party_user_gets_the_runs_domain_and_template(tmp_path):
    with installed(tmp_path, "mine-users", {"tausim.users": {"mine": "mine_users:build"}},
                   {"mine_users": USER_MODULE}):
        res = invoke(*run_args(tmp_path, "--agent", "oracle", "--user", "mine:grumpy"))
        assert res.exit_code == 0, res.output
        ((arg, domain, _),) = sys.modules["mine_users"].CALLS
        assert (arg, domain) == ("grumpy", "retail")
        (trial,) = json.loads((tmp_path / "run.json").read_text())["trials"]
        assert trial["passed"] is True
        res = invoke("users")
        assert res.exit_code == 0 and "mine-users" in res.output and "mine_users:build" in res.output
    assert "mine" not in USERS.schemes()


def test_a_broken_registration_fails_only_when_used(tmp_path):
    groups = {"tausim.agents": {"good": "vendor_good:build", "broken": "vendor_broken:build",
                                "typo": "vendor_good:biuld", "plain": "vendor_good:NOT_CALLABLE"}}
    modules = {"vendor_good": AGENT_MODULE + "NOT_CALLABLE = 3\n", "vendor_broken": BROKEN_MODULE}
    with installed(tmp_path, "vendor", groups, modules):
        # listing reads names only: the broken module is never imported
        res = invoke("agents")
        assert res.exit_code == 0, res.output
        assert all(s in res.output for s in ("broken", "vendor_broken:build", "vendor", "oracle", "tausim"))
        assert "vendor_broken" not in sys.modules
        # the other schemes, built-in and third-party, still work
        assert agent_factory("oracle") is OracleAgent
        assert issubclass(agent_factory("good"), OracleAgent)
        res = invoke(*run_args(tmp_path, "--agent", "good", "--user", "rule"))
        assert res.exit_code == 0, res.output
        # the broken one fails when asked for, naming its scheme, package, entry point and error
        with pytest.raises(RegistryError) as err:
            agent_factory("broken:x")
        message = str(err.value)
        for part in ("--agent 'broken:x'", "cannot load agent 'broken'", "'vendor_broken:build'", "package 'vendor'",
                     "ImportError: the vendor SDK is not installed"):
            assert part in message, message
        with pytest.raises(RegistryError, match=r"cannot load agent 'typo' .*AttributeError"):
            agent_factory("typo")
        with pytest.raises(RegistryError, match="agent 'plain' .* is not callable"):
            agent_factory("plain")
        res = invoke("run", "--agent", "broken", "--user", "rule", "--task-ids", TASK)
        assert res.exit_code == 2 and "ImportError: the vendor SDK is not installed" in res.output
        # --check loads each one: every row is shown, the broken ones with their error, exit 1
        res = invoke("agents", "--check")
        assert res.exit_code == 1
        assert "the vendor SDK is not installed" in res.output and "upper bound" in res.output
        assert "3 agent scheme(s) cannot be used" in res.output


def test_two_packages_registering_one_scheme_is_an_error_naming_both(tmp_path):
    with installed(tmp_path, "first", {"tausim.agents": {"twin": "first_mod:build"}}, {"first_mod": AGENT_MODULE}), \
            installed(tmp_path, "second", {"tausim.agents": {"twin": "second_mod:build"}},
                      {"second_mod": AGENT_MODULE}):
        with pytest.raises(RegistryError, match=r"'twin' is registered by more than one package: first .*second"):
            agent_factory("twin")
        assert "first_mod" not in sys.modules and "second_mod" not in sys.modules


def test_a_fresh_interpreter_finds_the_registration_on_its_path(tmp_path):
    """The same discovery without pytest's process: ``tausim`` run with the folder on PYTHONPATH."""
    with installed(tmp_path, "mine-agents", {"tausim.agents": {"mine": "mine_agents:build"}},
                   {"mine_agents": AGENT_MODULE}) as site:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        args = [sys.executable, "-m", "simulator.cli", *map(str, run_args(tmp_path, "--agent", "mine",
                                                                           "--user", "rule"))]
        out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        (trial,) = json.loads((tmp_path / "run.json").read_text())["trials"]
        assert trial["passed"] is True

"""Small hostile-input defects of issue 26, each a one-line error now (every test failed before its fix)."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app

TASK = "cancel-no-longer-needed"


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line(res: Any) -> str:
    assert "Traceback" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


def test_a_broken_domain_plugin_is_reported_and_the_others_listed(monkeypatch):
    from simulator.world import domain as domain_module

    real = domain_module.entry_points

    def with_broken(**kw: Any) -> Any:
        found = list(real(**kw))
        if kw.get("group") == domain_module.ENTRY_POINT_GROUP:
            found.append(EntryPoint(name="broken", value="no_such_module_for_tausim:Domain", group=kw["group"]))
        return found

    monkeypatch.setattr(domain_module, "entry_points", with_broken)
    res = invoke("domains")
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    lines = res.output.splitlines()
    assert ("error: domain 'broken' (entry point 'no_such_module_for_tausim:Domain') cannot be loaded: "
            "ModuleNotFoundError: No module named 'no_such_module_for_tausim'") in lines
    assert any(line.startswith("retail: splits builtin; tools ") for line in lines)
    assert any(line.startswith("airline: ") for line in lines)


def test_domain_new_with_a_300_character_name_is_one_line(tmp_path):
    res = invoke("domain", "new", "a" * 300, "--dir", tmp_path)
    assert res.exit_code == 2
    assert _one_line(res) == (f"error: domain name {'a' * 40!r}...: 300 characters; at most 64 (it names a folder, "
                              "a package and a class)")
    assert list(tmp_path.iterdir()) == []


def test_domain_new_in_an_unwritable_dir_is_one_line():
    res = invoke("domain", "new", "kiosk_x", "--dir", "/proc")
    assert res.exit_code == 2
    assert _one_line(res) == "error: --dir /proc: cannot write /proc/kiosk_x: No such file or directory"


def test_an_unclosed_ipv6_dask_address_is_one_line():
    res = invoke("run", "--executor", "dask://[::1", "--task-ids", TASK, "--no-preflight")
    assert res.exit_code == 2
    assert _one_line(res).startswith("error: ")


def test_a_factory_returning_none_fails_the_preflight():
    res = invoke("run", "--agent", "py:tests._support.slow_agents:returns_none", "--task-ids", TASK)
    assert res.exit_code == 2
    assert _one_line(res) == ("error: set-up error (factory): --agent py:tests._support.slow_agents:returns_none: "
                              f"the factory returned None for task {TASK}, not an agent (an object with a "
                              "step(messages) method)")


def test_a_local_server_without_openai_api_key_says_to_set_it(monkeypatch):
    from simulator.errors import LLMSetupError
    from simulator.models.llm import LLMClient

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMSetupError, match="set OPENAI_API_KEY to any value for a local server"):
        LLMClient("openai/local-model", api_base="http://127.0.0.1:9/v1").check_setup()
    monkeypatch.setenv("OPENAI_API_KEY", "anything")
    LLMClient("openai/local-model", api_base="http://127.0.0.1:9/v1").check_setup()  # no request is made
    monkeypatch.delenv("OPENAI_API_KEY")
    LLMClient("openai/local-model", api_base="http://127.0.0.1:9/v1", api_key="k").check_setup()


def test_a_local_server_without_openai_api_key_fails_the_preflight_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = invoke("run", "--agent", "litellm:openai/local-model", "--api-base", "http://127.0.0.1:9/v1",
                 "--task-ids", TASK)
    assert res.exit_code == 2
    assert _one_line(res) == ("error: set-up error (credentials): agent model openai/local-model: set "
                              "OPENAI_API_KEY to any value for a local server (--api-base http://127.0.0.1:9/v1); "
                              "the OpenAI client will not start without one")


@pytest.mark.parametrize("value", ["", " , "])
def test_empty_personas_say_they_are_empty(value):
    res = invoke("run", "--personas", value, "--task-ids", TASK)  # the default user (scripted) plays none either
    assert res.exit_code == 2
    assert _one_line(res) == ("error: --personas: empty; give persona names (NAME[,NAME...]: shipped names or "
                              ".json files) or all")


def test_the_guide_states_retails_modes_as_the_domain_has_them():
    from pathlib import Path

    from domains.retail import RetailDomain

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "add-a-domain.md").read_text()
    modes = RetailDomain.option_values["mode"]
    assert "tausim" not in modes
    for mode in modes:
        assert f"--option mode={mode}" in guide
    assert "`mode=tausim` is refused" in guide
    res = invoke("run", "--domain", "retail", "--option", "mode=tausim", "--task-ids", TASK)
    assert res.exit_code == 2
    assert _one_line(res) == f"error: --option mode=tausim: allowed values are {', '.join(modes)}"


PERSONA_COMMANDS = {
    "run": ["run", "--user", "rule", "--task-ids", TASK, "--no-progress", "--no-preflight"],
    "hunt": ["hunt", "--task-ids", TASK, "--budget", "1"],
    "user check": ["user", "check", "--user", "rule"],
}


@pytest.mark.parametrize("command", PERSONA_COMMANDS, ids=[c.replace(" ", "-") for c in PERSONA_COMMANDS])
@pytest.mark.parametrize("case", ["missing", "not-json", "bad-field", "a-list", "directory", "unknown-name"])
def test_a_bad_personas_value_is_named_once(tmp_path, command, case):
    files = {"not-json": '{"name": "x", ', "bad-field": '{"name": "x", "description": "d", "patience": "lots"}',
             "a-list": "[1, 2]"}
    if case == "unknown-name":
        value = "no-such-persona-name"
    else:
        target = tmp_path / ("somewhere" if case == "directory" else "p.json")
        if case == "directory":
            target.mkdir()
        elif case in files:
            target.write_text(files[case])
        value = str(target)
    res = invoke(*PERSONA_COMMANDS[command], "--personas", value)
    assert res.exit_code == 2, res.output
    line = _one_line(res)
    assert line.startswith("error: --personas: ") and line.count(value) == 1, line
    expected = {"missing": "no such file", "not-json": "invalid JSON", "bad-field": "field patience",
                "a-list": "expected a JSON object", "directory": "is a directory",
                "unknown-name": "unknown persona"}[case]
    assert expected in line, line

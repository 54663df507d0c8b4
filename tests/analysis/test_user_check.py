"""`tausim user check`: the rule user passes every probe; scripted bad LLM users (loopback server) fail, named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.user_check import PROBES, check_user
from simulator.cli import app
from simulator.interop.loopback import openai_server
from simulator.types.spec import RunSpec


def invoke(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("domain", ["retail", "airline", "returns"])
def test_the_rule_user_passes_every_probe(domain: str, tmp_path: Path) -> None:
    out = tmp_path / "card.json"
    r = invoke("user", "check", "--user", "rule", "--domain", domain, "--personas", "impatient,cooperative",
               "--out", out)
    assert r.exit_code == 0, r.output
    card = json.loads(out.read_text())
    assert [p["name"] for p in card["probes"]] == [*PROBES, "persona:impatient", "persona:cooperative"]
    assert all(p["passed"] for p in card["probes"]) and card["passed"]
    assert card["rates"]["premature_stop"] == 0 and card["rates"]["invented_facts"] == 0
    assert card["rates"]["persona_adherence"] == 1.0 and card["rates"]["false_completion_acceptance"] == 0
    # the transcripts are there: the confirmation request answered with a yes
    confirm = card["probes"][0]["transcript"]
    assert confirm[1]["role"] == "assistant" and "(yes/no)" in confirm[1]["content"]
    assert confirm[2]["content"].lower().startswith("yes")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")  # the local server takes any key


def _llm_card(answers: list[str], tmp_path: Path) -> tuple[int, str, dict[str, Any]]:
    out = tmp_path / "card.json"
    with openai_server({"bad-user": answers * 400}) as server:
        r = invoke("user", "check", "--user", "llm:openai/bad-user", "--api-base", server.api_base, "--out", out)
    return r.exit_code, r.output, json.loads(out.read_text())


def test_an_always_stopping_user_fails_on_premature_stops(tmp_path: Path) -> None:
    code, output, card = _llm_card(["###STOP###"], tmp_path)
    assert code == 1
    # every probe but the transfer stops where it must not: 11 of 11
    assert card["rates"]["premature_stop"] == 1.0
    assert "premature stop 100.0%" in output and "premature_stop: confirm_write" in output
    assert not card["passed"] and {p["name"] for p in card["probes"] if p["passed"]} == {"transfer"}


def test_an_inventing_user_fails_on_invented_facts(tmp_path: Path) -> None:
    code, output, card = _llm_card(["Hi, I am Mia Brown and my order number is #W9999999."], tmp_path)
    assert code == 1
    assert card["rates"]["invented_facts"] > 0
    assert "Mia Brown" in card["named"]["invented_facts"] and "#W9999999" in card["named"]["invented_facts"]
    assert "invented_facts: #W9999999, Mia Brown" in output


def test_a_leaking_user_fails_on_leaks(tmp_path: Path) -> None:
    # a sentence of the retail policy, which the user is never shown
    leak = 'You said so yourself: "Then wait for the customer to answer with an explicit yes."'
    code, output, card = _llm_card([leak], tmp_path)
    assert code == 1
    assert card["rates"]["leaks"] > 0 and card["named"]["leaks"]
    assert "leaks: policy" in output


def test_check_user_library_call() -> None:
    card = check_user(RunSpec(domain="retail", user="rule"), task_id="cancel-no-longer-needed")
    assert card.passed and card.task_id == "cancel-no-longer-needed"
    assert card.as_dict()["format"] == "tausim.user_check"
    with pytest.raises(ValueError, match="no such task"):
        check_user(RunSpec(domain="retail", user="rule"), task_id="nope")


def test_hostile_user_text_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    code, output, card = _llm_card(["[bold]Mia Brown[/] \x1b[31m #W9999999"], tmp_path)
    assert code == 1 and "\x1b" not in output  # no terminal escape; rich markup in the data is not interpreted
    assert "Mia Brown" in card["named"]["invented_facts"]


def test_a_user_that_cannot_run_is_unusable_input(tmp_path: Path) -> None:
    with openai_server({"bad-user": [{"status": 401}] * 50}) as server:  # refused (not retried): the user fails
        r = invoke("user", "check", "--user", "llm:openai/bad-user", "--api-base", server.api_base)
    assert r.exit_code == 2 and "failed on every probe" in r.output, r.output

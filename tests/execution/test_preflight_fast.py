"""The credentials check of ``tausim run`` answers a missing key of a common provider without importing litellm.

:data:`simulator.models.llm.PROVIDER_KEYS` and :data:`simulator.models.llm.BARE_MODEL_PROVIDERS` restate what litellm's
``get_llm_provider`` and ``validate_environment`` decide; the tests here check each entry against litellm itself
(so a litellm upgrade that changes a provider's variables fails here), and that ``tausim run`` without the key
exits 2 naming it with litellm never imported (in a fresh interpreter: the proof that the fast path is taken,
independent of timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.errors import LLMSetupError
from simulator.models.llm import BARE_MODEL_PROVIDERS, PROVIDER_KEYS, LLMClient, known_missing_keys, model_provider

ROOT = Path(__file__).resolve().parents[2]

SAMPLE_MODELS = {
    "openai": "openai/gpt-4o-mini",
    "anthropic": "anthropic/claude-3-5-sonnet-20240620",
    "gemini": "gemini/gemini-1.5-flash",
    "mistral": "mistral/mistral-small",
    "groq": "groq/llama3-8b-8192",
    "together_ai": "together_ai/meta-llama/Llama-3-8b-chat-hf",
    "deepseek": "deepseek/deepseek-chat",
    "xai": "xai/grok-2",
    "cohere": "cohere/command-r",
    "fireworks_ai": "fireworks_ai/accounts/fireworks/models/llama-v3-8b-instruct",
    "openrouter": "openrouter/openai/gpt-4o",
    "perplexity": "perplexity/sonar",
    "deepinfra": "deepinfra/meta-llama/Meta-Llama-3-8B-Instruct",
    "cerebras": "cerebras/llama3.1-8b",
}


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every variable of the table from the environment."""
    for accepted, reported in PROVIDER_KEYS.values():
        for name in (*accepted, *reported):
            monkeypatch.delenv(name, raising=False)


def test_every_provider_of_the_table_has_a_sample() -> None:
    assert set(SAMPLE_MODELS) == set(PROVIDER_KEYS)


@pytest.mark.parametrize("provider", sorted(SAMPLE_MODELS))
def test_table_entry_agrees_with_litellm(provider: str, litellm, monkeypatch: pytest.MonkeyPatch) -> None:
    model = SAMPLE_MODELS[provider]
    _clear(monkeypatch)
    assert model_provider(model) == provider
    assert litellm.get_llm_provider(model)[1] == provider
    missing = litellm.validate_environment(model=model)["missing_keys"]
    assert missing and known_missing_keys(model, os.environ) == missing
    accepted, _ = PROVIDER_KEYS[provider]
    for name in accepted:  # any one of the accepted variables is enough, for litellm as for the table
        monkeypatch.setenv(name, "x")
        assert litellm.validate_environment(model=model)["missing_keys"] == []
        assert known_missing_keys(model, os.environ) == []
        monkeypatch.delenv(name)


def test_bare_names_litellm_knows_get_the_tables_provider(litellm, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model of litellm's own list that a bare-name pattern matches: same provider, same missing keys."""
    _clear(monkeypatch)
    matched = [name for name in litellm.model_cost if "/" not in name and model_provider(name) is not None]
    assert len(matched) > 20  # gpt-4o, o3, claude-... are there
    for name in matched:
        provider = model_provider(name)
        assert litellm.get_llm_provider(name)[1] == provider, name
        assert litellm.validate_environment(model=name)["missing_keys"] == known_missing_keys(name, os.environ), name


@pytest.mark.parametrize(("model", "provider"), [
    ("gpt-4o-mini", "openai"), ("o3-mini", "openai"), ("o4-mini", "openai"), ("claude-sonnet-4-5", "anthropic"),
    ("gpt-3.5-turbo-instruct", None),  # a text-completion model: litellm's own provider, no key checked
    ("claude-sonnet-4-5-20250929-v1:0", None),  # a Bedrock name
    ("openai/", None), ("nosuchprovider/m", None), ("azure/gpt-4o", None), ("llama3", None),
])
def test_model_provider_of_names(model: str, provider: str | None) -> None:
    assert model_provider(model) == provider


@pytest.mark.parametrize("model", ["xgpt-4o", "gpt-", "o1x", "o30", "claude", "claude-", "my-gpt-4o", "o3:free"])
def test_bare_names_match_whole_prefixes_only(model: str) -> None:
    assert model_provider(model) is None
    assert {provider for _, provider, _ in BARE_MODEL_PROVIDERS} <= set(PROVIDER_KEYS)


def test_missing_key_of_a_listed_provider_is_raised_without_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    import simulator.models.llm as llm

    def no_litellm():
        raise AssertionError("litellm was asked although the answer was known")

    monkeypatch.setattr(llm, "_litellm", no_litellm)
    _clear(monkeypatch)
    with pytest.raises(LLMSetupError, match="environment variable GOOGLE_API_KEY, GEMINI_API_KEY is not set") as e:
        LLMClient("gemini/gemini-1.5-flash").check_setup()
    assert e.value.cause == "missing_keys"


@pytest.mark.parametrize("kwargs", [{"api_base": "http://127.0.0.1:9/v1", "api_key": "k"}, {"api_key": "sk-x"},
                                    {"mock_response": "ok"}])
def test_a_server_a_key_or_a_mock_skips_the_key_check(kwargs, litellm, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    LLMClient("openai/gpt-4o-mini", **kwargs).check_setup()  # no error: litellm is asked, and finds nothing missing


def test_a_local_server_needs_openai_api_key_set_to_anything(litellm, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)  # the OpenAI client will not start without a key, even for a server that ignores it
    with pytest.raises(LLMSetupError, match="set OPENAI_API_KEY to any value for a local server"):
        LLMClient("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1").check_setup()
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    LLMClient("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1").check_setup()


def test_key_present_or_unlisted_provider_falls_back_to_litellm(litellm, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    LLMClient("openai/gpt-4o-mini").check_setup()
    monkeypatch.delenv("AZURE_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_API_BASE", raising=False)
    with pytest.raises(LLMSetupError, match="AZURE_API_KEY"):
        LLMClient("azure/gpt-4o").check_setup()  # not in the table: litellm's answer
    with pytest.raises(LLMSetupError, match="unknown to litellm"):
        LLMClient("nosuchprovider-xyz/m").check_setup()


_CHILD = """
import json, sys
from typer.testing import CliRunner
from simulator.cli import app
res = CliRunner().invoke(app, ["run", "--agent", "litellm:openai/gpt-4o-mini", "--task-ids",
                               "cancel-no-longer-needed", "--no-progress"])
print(json.dumps({"exit": res.exit_code, "output": res.output, "litellm": "litellm" in sys.modules,
                  "heavy": sorted(m for m in ("openai", "distributed", "dask", "opentelemetry", "pandas")
                                  if m in sys.modules)}))
"""


def test_tausim_run_without_the_key_exits_2_without_importing_litellm() -> None:
    """The must-show of issue 17 (exit 2 naming the variable), proven by the modules loaded, not by a clock."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["exit"] == 2, doc
    assert "OPENAI_API_KEY" in doc["output"] and "set-up error (credentials)" in doc["output"], doc
    assert doc["litellm"] is False and doc["heavy"] == [], doc

"""Secrets in a run's configuration are redacted wherever it is recorded (simulator.types.secrets)."""

from __future__ import annotations

import pytest

from simulator.types.secrets import REDACTED, is_secret_key, redact_secrets, redact_url
from simulator.types.spec import RunSpec, recorded_config, spec_differences


@pytest.mark.parametrize("key", ["api_key", "apiKey", "X-API-Key", "x-api-key", "access_token", "token", "password",
                                 "Authorization", "client_secret", "proxy-authorization", "Cookie", "credentials"])
def test_credential_keys_are_secret(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "api_key_env", "model", "api_base", "key", "headers", "keyword",
                                 "tokenizer", "prompt_tokens"])
def test_other_keys_are_not(key):
    assert not is_secret_key(key)


def test_urls_lose_their_password_and_credential_query_values_only():
    assert redact_url("http:https://me:s3cret@host:8/v1?api_key=abc&x=1") == \
        "http:https://me:[redacted]@host:8/v1?api_key=%5Bredacted%5D&x=1"
    assert redact_url("litellm:openai/gpt-4o") == "litellm:openai/gpt-4o"
    assert redact_url("https://host/v1?model=a") == "https://host/v1?model=a"


def test_a_spec_is_recorded_without_its_secrets_and_a_new_key_is_the_same_run():
    spec = RunSpec(domain="retail", agent={"name": "http:http://127.0.0.1:9/v1", "args": {
        "api_key": "sk-1", "api_key_env": "MY_KEY", "headers": {"Authorization": "Bearer t", "Accept": "json"}}},
        user={"name": "llm:m", "api_base": "http://u:p@127.0.0.1:1/v1"})
    rec = recorded_config(spec)
    assert rec["agent"]["args"] == {"api_key": REDACTED, "api_key_env": "MY_KEY",
                                    "headers": {"Authorization": REDACTED, "Accept": "json"}}
    assert rec["user"]["api_base"] == f"http://u:{REDACTED}@127.0.0.1:1/v1"
    assert "sk-1" not in repr(rec) and "Bearer t" not in repr(rec)
    assert spec.agent.args["api_key"] == "sk-1"  # the spec itself, which builds the agent, keeps the key
    other = spec.model_copy(update={"agent": spec.agent.model_copy(update={"args": {**spec.agent.args,
                                                                                    "api_key": "sk-2"}})})
    assert spec_differences(spec, other) == []
    assert redact_secrets({"a": [{"token": None}]}) == {"a": [{"token": None}]}  # unknown stays null

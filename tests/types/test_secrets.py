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


def test_a_recorded_spec_redacted_again_is_unchanged_so_a_run_with_url_credentials_resumes():
    # a stored run's configuration is already redacted; resuming compares it with the new spec redacted anew
    spec = RunSpec(domain="retail", agent={"name": "http:http://alice:PW1@127.0.0.1:9/chat/completions"},
                   user={"name": "llm:m", "api_base": "http://bob:PW2@host:1/v1?key=AIzaX1&x=1#access_token=tok1"})
    rec = recorded_config(spec)
    assert rec["agent"]["name"] == f"http:http://alice:{REDACTED}@127.0.0.1:9/chat/completions"  # the host is kept
    assert rec["user"]["api_base"] == "http://bob:[redacted]@host:1/v1?key=%5Bredacted%5D&x=1#access_token=%5Bredacted%5D"
    assert not any(secret in repr(rec) for secret in ("PW1", "PW2", "AIzaX1", "tok1"))
    stored = RunSpec.model_validate(rec)
    assert recorded_config(stored) == rec
    assert spec_differences(stored, spec) == []


@pytest.mark.parametrize("url", ["http://u:p@h/x", "https://h/v1?api_key=a&b=2", "http://[::1]:80/x", "http://h:99999999/",
                                 "see http://a:b@h/x and https://k:v@g/y?token=1", "http://tok_abcdefghijklmnop@h/"])
def test_redacting_a_redacted_url_changes_nothing(url):
    once = redact_url(url)
    assert redact_url(once) == once

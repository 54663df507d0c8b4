"""Tests of LLMUser, offline: a scripted in-process litellm provider records the prompt the simulator sent."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pytest

from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import TrialContext, UserSimulator
from simulator.types.tasks import Action, Task, UserScenario
from simulator.users.llm_user import (
    AGENT_GREETING,
    DEFAULT_USER_PROMPT,
    LLMUser,
    llm_user_factory,
    parse_user_reply,
)
from tests._support.fake_llm import register

PROVIDER = "tausimfakeuser"
MODEL = f"{PROVIDER}/user-model"
NO_WAIT: dict[str, Any] = {"wait_initial": 0.0, "wait_max": 0.0}

GOLD_ORDER = "#W4817420"
GOLD_ITEM = "6777246137"
GOLD_PAYMENT = "gift_card_8211471"
REQUIRED_OUTPUT = "1093.34"
INSTRUCTIONS = "You are Yusuf Rossi in zip 19122. You want to return the water bottle you bought."
KNOWN = {"name": "Yusuf Rossi", "zip": "19122", "item": "a 750ml stainless steel water bottle"}


@pytest.fixture
def fake(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a scripted provider: items are text or an exception to raise."""
    return lambda script: register(monkeypatch, litellm, {PROVIDER: script})[PROVIDER]


def make_ctx(seed: int = 777) -> TrialContext:
    task = Task(
        id="return-1", user_id="yusuf_rossi_9620",
        scenario=UserScenario(instructions=INSTRUCTIONS, known_info=KNOWN, unknown_info=["item ids"]),
        gold_actions=[
            Action(name="find_user_id_by_name_zip", arguments={"first_name": "Yusuf", "last_name": "Rossi",
                                                               "zip": "19122"}),
            Action(name="return_delivered_order_items", arguments={
                "order_id": GOLD_ORDER, "item_ids": [GOLD_ITEM], "payment_method_id": GOLD_PAYMENT}),
        ],
        required_outputs=[REQUIRED_OUTPUT],
    )
    return TrialContext(task=task, tools=[], policy="SECRET POLICY TEXT: refunds go to gift cards.", seed=seed,
                        rng=np.random.Generator(np.random.PCG64(seed)), domain="retail")


def user(**params: Any) -> LLMUser:
    return llm_user_factory(MODEL, **{**NO_WAIT, **params})(make_ctx())


def test_is_a_user_simulator_with_recorded_model_and_prompt_hash() -> None:
    u = user()
    assert isinstance(u, UserSimulator)
    assert u.model == MODEL
    assert u.prompt_hash == hashlib.sha256(DEFAULT_USER_PROMPT.encode("utf-8")).hexdigest()
    other = llm_user_factory(MODEL, prompt_template="Be {instructions}. {known_info} {unknown_info}")(make_ctx())
    assert other.prompt_hash != u.prompt_hash


def test_opening_message(litellm: Any, fake: Any) -> None:
    provider = fake(["Hi, I'd like to return a water bottle."])
    turn = user().reply([])
    assert turn == UserTurn(content="Hi, I'd like to return a water bottle.", usage=turn.usage)
    assert not turn.stop and not turn.abandon and turn.error is None
    assert turn.usage.calls == 1
    sent = provider.calls[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == AGENT_GREETING


def test_prompt_has_scenario_but_no_gold_outputs_or_policy(litellm: Any, fake: Any) -> None:
    provider = fake(["Hi.", "My zip is 19122."])
    u = user()
    u.reply([])
    u.reply([Message(role="user", content="Hi."), Message(role="assistant", content="What is your zip code?")])
    for call in provider.calls:
        dumped = json.dumps(call["messages"])
        # the scenario is there (so this check is not vacuous) ...
        assert INSTRUCTIONS in call["messages"][0]["content"]
        for key, value in KNOWN.items():
            assert f"{key}: {value}" in call["messages"][0]["content"]
        assert "item ids" in call["messages"][0]["content"]
        # ... but nothing from the gold actions, the required outputs or the policy
        for secret in (GOLD_ORDER, GOLD_ITEM, GOLD_PAYMENT, REQUIRED_OUTPUT, "return_delivered_order_items",
                       "find_user_id_by_name_zip", "SECRET POLICY", "yusuf_rossi_9620"):
            assert secret not in dumped, secret


def test_roles_are_flipped_and_tool_traffic_skipped(litellm: Any, fake: Any) -> None:
    from simulator.types.messages import ToolCall

    provider = fake(["It is 19122."])
    history = [
        Message(role="user", content="I want a return."),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="lookup", arguments={})]),
        Message(role="tool", tool_call_id="c1", name="lookup", content='{"secret": "tool output"}'),
        Message(role="assistant", content="Sure. Your zip code?"),
    ]
    turn = user().reply(history)
    assert turn.content == "It is 19122."
    sent = provider.calls[0]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", AGENT_GREETING),
        ("assistant", "I want a return."),
        ("user", "Sure. Your zip code?"),
    ]
    assert "tool output" not in json.dumps(sent)


@pytest.mark.parametrize("reply,content,stop,abandon", [
    ("Thanks, that's all! ###STOP###", "Thanks, that's all!", True, False),
    ("###STOP###", "", True, False),
    ("Great, bye.\n### stop ###\nignored tail", "Great, bye.", True, False),
    ("OK. ###TRANSFER###", "OK.", True, False),
    ("Forget it. ###ABANDON###", "Forget it.", False, True),
    ("No token here.", "No token here.", False, False),
])
def test_stop_tokens(litellm: Any, fake: Any, reply: str, content: str, stop: bool, abandon: bool) -> None:
    fake([reply])
    turn = user().reply([Message(role="user", content="hi"), Message(role="assistant", content="Done.")])
    assert (turn.content, turn.stop, turn.abandon, turn.error) == (content, stop, abandon, None)
    assert parse_user_reply(reply).content == content


def test_seed_reaches_provider(litellm: Any, fake: Any) -> None:
    provider = fake(["a", "b"])
    llm_user_factory(MODEL, **NO_WAIT)(make_ctx(seed=2**33 + 5)).reply([])
    llm_user_factory(MODEL, temperature=0.9, seed=11, **NO_WAIT)(make_ctx(seed=2**33 + 5)).reply([])
    assert provider.calls[0]["optional_params"]["seed"] == 5  # 2**33 + 5 mod 2**31
    assert "temperature" not in provider.calls[0]["optional_params"]  # provider default, as in tau-bench
    assert (provider.calls[1]["optional_params"]["seed"], provider.calls[1]["optional_params"]["temperature"]) == (
        11, 0.9)


def test_infra_error(litellm: Any, fake: Any) -> None:
    provider = fake([litellm.InternalServerError("boom", PROVIDER, "m") for _ in range(2)])
    turn = user(max_attempts=2).reply([])
    assert len(provider.calls) == 2
    assert turn.error_kind == "infra_error" and turn.error is not None and MODEL in turn.error
    assert not turn.stop


@pytest.mark.parametrize("make,kind", [
    (lambda lt: lt.AuthenticationError("bad key", PROVIDER, "m"), "setup_error"),  # the set-up, not the user
    (lambda lt: lt.ContextWindowExceededError("too long", "m", PROVIDER), "user_error"),
])
def test_other_errors_are_user_errors(litellm: Any, fake: Any, make: Any, kind: str) -> None:
    provider = fake([make(litellm), "never"])
    turn = user().reply([])
    assert len(provider.calls) == 1
    assert turn.error_kind == kind and turn.error is not None and MODEL in turn.error


def test_empty_reply_is_user_error(litellm: Any, fake: Any) -> None:
    fake(["   "])
    turn = user().reply([])
    assert turn.error_kind == "user_error"
    assert turn.content == ""


def test_bad_template_fails_at_factory() -> None:
    with pytest.raises(KeyError):
        llm_user_factory(MODEL, prompt_template="{instructions} {gold_actions}")

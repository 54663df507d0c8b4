"""LLMUser's per-trial set-up: what depends on the run alone is made once, the user's generator only when drawn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from personas.loader import load_personas
from simulator.types.messages import Message
from simulator.types.protocols import Progress, TrialContext
from simulator.types.tasks import Task, UserScenario
from simulator.users import llm_user
from simulator.users.llm_user import llm_user_factory
from tests._support.fake_llm import register

PROVIDER = "tausimfakeonce"
MODEL = f"{PROVIDER}/user-model"
NO_WAIT: dict[str, Any] = {"wait_initial": 0.0, "wait_max": 0.0}
NO = Progress(made=False, signals=("agent_repeat",))


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
            for n in names]


TOOLS = tools("get_order_details", "cancel_pending_order")


def ctx(seed: int = 5, tool_list: list[dict[str, Any]] | None = None, persona: Any = None) -> TrialContext:
    task = Task(id="t1", scenario=UserScenario(instructions="You want to cancel your order."))
    return TrialContext(task=task, tools=TOOLS if tool_list is None else tool_list, policy="", seed=seed, rng=None,
                        domain="retail", persona=persona)


@pytest.fixture
def fake(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    return lambda script: register(monkeypatch, litellm, {PROVIDER: script})[PROVIDER]


def test_the_generator_is_made_only_when_the_user_abandons(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = np.random.PCG64

    def counting(seed: Any = None) -> Any:
        made.append(seed)
        return real(seed)

    monkeypatch.setattr(np.random, "PCG64", counting)
    fake(["Hi, please cancel my order."])
    factory = llm_user_factory(MODEL, **NO_WAIT)
    u = factory(ctx())
    assert u.reply([]).content == "Hi, please cancel my order."
    assert made == []  # a trial that never abandons draws nothing: no generator was made
    impatient = load_personas("impatient")[0]
    for seed in (5, 6, 7):
        v = factory(ctx(seed, persona=impatient))
        for _ in range(impatient.patience or 0):
            v.observe_progress(NO)
        turn = v.reply([Message(role="assistant", content="Hmm.")])
        # the phrase the user's own generator draws: Generator(PCG64([trial seed, 0x5553])), made here apart
        expected = impatient.abandonment_phrases[
            int(np.random.Generator(real([seed, 0x5553])).integers(len(impatient.abandonment_phrases)))]
        assert turn.abandon and turn.content == expected
    assert made == [[5, 0x5553], [6, 0x5553], [7, 0x5553]]  # one per abandoning user, with its seed


def test_the_factory_names_the_tools_once_per_tool_list(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = llm_user.tool_names_of

    def counting(tool_list: Any) -> tuple[str, ...]:
        calls.append(len(tool_list))
        return real(tool_list)

    monkeypatch.setattr(llm_user, "tool_names_of", counting)
    factory = llm_user_factory(MODEL, **NO_WAIT)
    first = factory(ctx(1))
    second = factory(ctx(2))
    assert calls == [2]  # the run's one tool list: named once for every trial
    other = tools("get_user_details", "modify_pending_order_address", "transfer_to_human_agents")
    third = factory(ctx(3, other))
    assert calls == [2, 3]  # another list: named again
    fake(["I will just call get_user_details myself.", "Please call cancel_pending_order."])
    assert third.reply([]).content.startswith("I will")
    assert third.metadata["flags"] == ["tool_syntax"]  # the names in use are the third context's tools
    assert second.reply([]).content.startswith("Please")
    assert second.metadata["flag_events"][0]["match"] == "cancel_pending_order"
    assert first.metadata["flags"] == []

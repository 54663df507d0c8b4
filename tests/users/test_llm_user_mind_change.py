"""The LLM user's mind change to a task's alternative outcome (offline: a scripted in-process litellm provider)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from personas.loader import load_personas
from simulator.types.messages import Message
from simulator.types.protocols import TrialContext
from simulator.types.tasks import Action, Alternative, Intent, Task, UserScenario
from simulator.users.llm_user import llm_user_factory
from tests._support.fake_llm import register

PROVIDER = "tausimfakemind"
MODEL = f"{PROVIDER}/user-model"
ALT_REQUEST = "cancel order #W1234567 instead, I no longer need it"


def _ctx(alternatives: bool = True) -> TrialContext:
    alts = [Alternative(name="cancel-instead", intent=Intent(kind="cancel", request=[ALT_REQUEST],
                                                             slots={"order_id": "#W1234567"}),
                        gold_actions=[Action(name="cancel_pending_order",
                                             arguments={"order_id": "#W1234567", "reason": "no longer needed"})])]
    task = Task(id="t", scenario=UserScenario(instructions="You are Ann Lee. Change the address of order #W1234567.",
                                              known_info={"order_id": "#W1234567"}),
                gold_actions=[Action(name="modify_pending_order_address", arguments={"order_id": "#W1234567"})],
                alternatives=alts if alternatives else [])
    ctx = TrialContext(task=task, tools=[], policy="", seed=5, rng=np.random.Generator(np.random.PCG64(5)),
                       domain="retail")
    ctx.persona = load_personas(["mind-changer"])[0]
    return ctx


def _conversation(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [Message(role="user", content=f"user message {i + 1}"),
                Message(role="assistant", content=f"agent message {i + 1}")]
    return out


@pytest.mark.parametrize("with_alternatives", [True, False])
def test_switches_at_the_persona_turn_and_records_the_outcome(litellm: Any, monkeypatch: pytest.MonkeyPatch,
                                                              with_alternatives: bool) -> None:
    provider = register(monkeypatch, litellm, {PROVIDER: ["Hello."] * 4})[PROVIDER]
    ctx = _ctx(with_alternatives)
    turn = ctx.persona.mind_change_turn if ctx.persona is not None else None
    assert turn == 3  # the shipped mind-changer: its third message
    user = llm_user_factory(MODEL, wait_initial=0.0, wait_max=0.0)(ctx)
    for i in range(4):  # messages number 1 .. 4
        user.reply(_conversation(i))
        system = provider.calls[-1]["messages"][0]["content"]
        switched = with_alternatives and i + 1 >= 3
        assert (ALT_REQUEST in system) is switched, i
        assert user.metadata.get("outcome") == ("cancel-instead" if switched else None)
    assert user.metadata.get("mind_changed_at_turn") == (3 if with_alternatives else None)


def test_alternative_values_are_public_and_its_gold_is_secret() -> None:
    from simulator.users._leak import task_secrets

    task = _ctx().task
    alt = task.alternatives[0]
    other = alt.model_copy(update={
        "intent": Intent(kind="cancel", request=["cancel order #W7654321 instead"], slots={"order_id": "#W7654321"}),
        "gold_actions": [Action(name="cancel_pending_order", arguments={"order_id": "#W7654321"}),
                         Action(name="refund", arguments={"payment_method_id": "gift_card_7654321"})]})
    secrets = {str(s) for s in task_secrets(task.model_copy(update={"alternatives": [other]}), "")}
    assert "gift_card_7654321" in secrets  # the alternative's gold: the user cannot know it
    assert "#W7654321" not in secrets  # the alternative's own request names it: the user may say it

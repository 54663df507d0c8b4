"""The LLM user's leak guard, flags, persona and stop rules, offline.

A scripted in-process litellm provider (tests/_support/fake_llm.py) plays the model: its replies plant secrets, and the
calls it records show how many times the guard asked again and what the correction said. The secrets, the
matches and the redacted texts expected below are worked out by hand from the task, not taken from the code.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pytest

from personas.loader import load_personas
from simulator import Persona
from simulator.dialogue.conversation import Conversation
from simulator.dialogue.cues import asks_confirmation
from simulator.types.messages import AgentTurn, Message
from simulator.types.protocols import Progress, TrialContext
from simulator.types.tasks import Action, Intent, Task, UserScenario
from simulator.types.trajectory import TerminationReason
from simulator.users._leak import (
    Secret,
    SecretMatcher,
    _fold,
    _fold_map,
    find_secrets,
    redact,
    role_flip,
    task_secrets,
    tool_syntax,
)
from simulator.users.llm_user import DEFAULT_USER_PROMPT, LLMUser, llm_user_factory, persona_instructions
from tests._support.convo import bank_trial
from tests._support.fake_llm import register

PROVIDER = "tausimfakeleak"
MODEL = f"{PROVIDER}/user-model"
NO_WAIT: dict[str, Any] = {"wait_initial": 0.0, "wait_max": 0.0}

# The task, written for these tests. What the scenario gives the user: name, zip, the order id (without "#")
# and a description of the item. What it does not: the user id, the item id, the payment method id, the
# refund amount (the required output) and the policy.
ORDER = "#W4817420"
USER_ID = "yusuf_rossi_9620"
ITEM = "6777246137"
PAYMENT = "gift_card_8211471"
AMOUNT = "1093.34"
P_REFUND = "Refunds for returned items always go back to the original payment method within five business days."
P_IDENTIFY = "Always check who the customer is before looking at any order of theirs."
POLICY = f"""# Store rules

## Returns
- {P_REFUND}
- Be kind.

Short rule here. {P_IDENTIFY}
"""
INSTRUCTIONS = ("You are Yusuf Rossi, zip code 19122. You want to return the water bottle of order W4817420 and "
                "get your money back.")
KNOWN = {"name": "Yusuf Rossi", "zip": "19122", "order_id": "W4817420", "item": "750ml water bottle"}
TOOLS = [{"type": "function", "function": {
    "name": "return_delivered_order_items",
    "description": "Return items of a delivered order. Reason: 'changed my mind' or 'arrived damaged'.",
    "parameters": {"type": "object", "properties": {}}}}]


def make_task() -> Task:
    return Task(
        id="return-bottle", user_id=USER_ID,
        scenario=UserScenario(instructions=INSTRUCTIONS, known_info=KNOWN, unknown_info=["item ids"]),
        gold_actions=[
            Action(name="find_user_id_by_name_zip",
                   arguments={"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}),
            Action(name="get_user_details", arguments={"user_id": USER_ID}),
            Action(name="return_delivered_order_items", arguments={
                "order_id": ORDER, "item_ids": [ITEM], "payment_method_id": PAYMENT, "quantity": 2,
                "reason": "changed my mind", "express": True}),
        ],
        required_outputs=[AMOUNT, "delivered"],
    )


def make_ctx(seed: int = 777, persona: Persona | None = None) -> TrialContext:
    return TrialContext(task=make_task(), tools=TOOLS, policy=POLICY, seed=seed,
                        rng=np.random.Generator(np.random.PCG64(seed)), domain="retail", persona=persona)


@pytest.fixture
def fake(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a scripted provider; returns a function taking the script (replies in order)."""
    return lambda script: register(monkeypatch, litellm, {PROVIDER: script})[PROVIDER]


def user(persona: Persona | None = None, seed: int = 777, **params: Any) -> LLMUser:
    return llm_user_factory(MODEL, **{**NO_WAIT, **params})(make_ctx(seed, persona))


def agent_says(*texts: str) -> list[Message]:
    """A conversation: the user opened, then the agent said each text (user replies in between)."""
    out = [Message(role="user", content="Hi, I want to return something.")]
    for i, t in enumerate(texts):
        if i:
            out.append(Message(role="user", content="ok"))
        out.append(Message(role="assistant", content=t))
    return out


class ListAgent:
    """Says prepared texts in order (the last one repeated)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)

    def step(self, messages: Any) -> AgentTurn:
        text = self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]
        return AgentTurn(message=Message(role="assistant", content=text))


@pytest.fixture
def bank(tmp_path: Any) -> Any:
    with bank_trial(tmp_path / "d") as (toolbox, ctx, _):
        yield toolbox, ctx


# --- the secrets of a task --------------------------------------------------------------------------------


def test_task_secrets_by_hand() -> None:
    secrets = task_secrets(make_task(), POLICY, tools=TOOLS)
    # By hand: Yusuf/Rossi are single words, 19122 and W4817420 are in the scenario, 2 is a small integer,
    # True a boolean, "changed my mind" is public vocabulary of the tool's description, "delivered" a single
    # word; "Be kind." and "Short rule here." have fewer than 8 words; "Store rules" and "Returns" are headings.
    assert [(str(s), s.kind, s.form) for s in secrets] == [
        (USER_ID, "action_value", "id"),
        (ITEM, "action_value", "id"),
        (PAYMENT, "action_value", "id"),
        (AMOUNT, "output", "number"),
        (P_REFUND, "policy", "sentence"),
        (P_IDENTIFY, "policy", "sentence"),
    ]
    assert [s.origin for s in secrets[:4]] == ["get_user_details.user_id", "return_delivered_order_items.item_ids",
                                               "return_delivered_order_items.payment_method_id",
                                               "required_outputs[0]"]
    # usable as plain strings (H1's property test takes them so)
    assert USER_ID in secrets and all(isinstance(s, str) for s in secrets)


def test_without_tools_the_tool_vocabulary_is_a_secret_and_a_given_scenario_wins() -> None:
    values = [str(s) for s in task_secrets(make_task(), "")]
    assert values == [USER_ID, ITEM, PAYMENT, "changed my mind", AMOUNT]
    # a derived scenario that gives the user the item id and the amount (1,093.34 written another way)
    derived = UserScenario(instructions="You are Yusuf Rossi.", identity={"name": "Yusuf Rossi", "zip": "19122"},
                           agenda=[Intent(kind="return", request=["return the bottle in order #W4817420"],
                                          slots={"items": ["item 6777246137"]}, ask="is the refund $1,093.340")])
    assert [str(s) for s in task_secrets(make_task(), "", derived)] == [USER_ID, PAYMENT, "changed my mind"]


def test_a_policy_sentence_quoted_by_the_scenario_is_not_a_secret() -> None:
    task = make_task()
    task.scenario.instructions += " You were told: refunds for returned items always go back to the original..."
    assert [str(s) for s in task_secrets(task, POLICY) if s.kind == "policy"] == [P_IDENTIFY]


# --- the normalised matcher -------------------------------------------------------------------------------

SECRETS = [Secret(ORDER, "action_value", "id"), Secret(ITEM, "action_value", "id"),
           Secret(PAYMENT, "action_value", "id"), Secret(USER_ID, "action_value", "id"),
           Secret(AMOUNT, "output", "number"), Secret("1,234.50", "output", "number"),
           Secret("77 Orchard Street", "action_value", "text"), Secret(P_REFUND, "policy", "sentence")]


@pytest.mark.parametrize("text,found", [
    ("The order is #W4817420.", [ORDER]),
    ("order w4817420 please", [ORDER]),
    ("order W-4817420", [ORDER]),
    ("order number 4817420", [ORDER]),  # the digits alone
    ("item 6777246137", [ITEM]),
    ("item 6,777,246,137", [ITEM]),
    ("item #6777246137", [ITEM]),
    ("item 6777 246 137", [ITEM]),
    ("pay with gift_card_8211471", [PAYMENT]),
    ("pay with Gift Card 8211471", [PAYMENT]),
    ("pay with gift-card-8211471", [PAYMENT]),
    ("card 8211471", [PAYMENT]),
    ("I'm Yusuf_Rossi_9620", [USER_ID]),
    ("refund of $1,093.34?", [AMOUNT]),
    ("refund of 1093.340 dollars", [AMOUNT]),
    ("it costs 1234.5", ["1,234.50"]),
    ("it costs $1,234.50", ["1,234.50"]),
    ("ship to 77 orchard street, please", ["77 Orchard Street"]),
    ("ship to 77, Orchard-Street", ["77 Orchard Street"]),
    ("I know that REFUNDS for returned items always go back to the original payment method!", [P_REFUND]),
    ("refunds, for returned items; always go back to the original", [P_REFUND]),  # 9 words in a row
    ("#W4817420 and 1093.34", [ORDER, AMOUNT]),
    # near misses: other numbers, longer numbers, fewer than 8 policy words in a row
    ("order W48174201", []),
    ("order 14817420", []),
    ("refund of 1093.35", []),
    ("refund of 11093.34", []),
    ("refund of 93.34", []),
    ("refund of 1093.3", []),
    ("the 1093 items", []),
    ("gift card please", []),
    ("item 677724613", []),
    ("refunds always go back to the original payment", []),
    ("I live on Orchard Street", []),
    ("my zip is 19122 and I'm Yusuf Rossi", []),
])
def test_matcher_finds_secrets_in_other_formats(text: str, found: list[str]) -> None:
    assert [str(s) for s in find_secrets(text, SECRETS)] == found


def test_what_the_user_heard_is_not_a_secret() -> None:
    heard = ["I can refund $1,093.34 to gift card gift_card_8211471. Shall I proceed?"]
    assert find_secrets("Yes, refund 1093.34 to gift_card_8211471.", SECRETS, heard) == []
    # ... but the values it did not hear still are
    assert find_secrets("Yes, refund 1093.34 for item 6777246137.", SECRETS, heard) == [ITEM]
    # policy: only the word runs the agent said are free
    heard = ["Refunds for returned items always go back to the original payment method."]
    assert find_secrets("refunds for returned items always go back to the original payment method", SECRETS,
                        heard) == []
    assert find_secrets("back to the original payment method within five business days", SECRETS, heard) == [
        P_REFUND]


@pytest.mark.parametrize("text,expected", [
    ("Return item 6,777,246,137 please.", "Return item [redacted] please."),
    ("Refund $1,093.34 to GIFT_CARD_8211471.", "Refund $[redacted] to [redacted]."),
    ("Ok: refunds for returned items always go back to the original payment method, right?",
     "Ok: [redacted], right?"),
    ("Nothing secret: order 19122.", "Nothing secret: order 19122."),
    # full-width digits and a ligature before it: folding changes lengths, the span still lines up
    ("\ufb01ne: item \uff16\uff17\uff17\uff17\uff12\uff14\uff16\uff11\uff13\uff17 ok", "\ufb01ne: item [redacted] ok"),
])
def test_redaction(text: str, expected: str) -> None:
    assert redact(text, SECRETS) == expected
    assert SecretMatcher(SECRETS).redact(text) == expected


# --- role flips and tool syntax ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Hello! How can I help you today?",
    "Is there anything else I can help you with?",
    "I have cancelled your order #W1.",
    "I've refunded your gift card.",
    "Your order has been cancelled.",
    "As an AI assistant, I cannot do that.",
    "As an agent I will check.",
    "I will process your return now.",
    "Shall I proceed?",
    "Please confirm (yes/no).",
    "According to our policy, that is not possible.",
    "I'm transferring you to a human agent.",
])
def test_role_flip_detected(text: str) -> None:
    assert role_flip(text) is not None


@pytest.mark.parametrize("text", [
    'return_delivered_order_items(order_id="#W1", item_ids=["1"])',
    '{"name": "return_delivered_order_items", "arguments": {"order_id": "#W1"}}',
    "<tool_call>cancel</tool_call>",
    "Action: cancel_order\nAction Input: {}",
    "```json\n{}\n```",
    "please run return_delivered_order_items for me",
    "get_order_details()",
])
def test_tool_syntax_detected(text: str) -> None:
    assert tool_syntax(text, ["return_delivered_order_items"]) is not None


def test_tool_syntax_names_the_first_tool_in_order_and_only_whole_words() -> None:
    names = ["find_user_id_by_email", "get_order_details", "think", "transfer_to_human_agents"]
    text = "Could you get_order_details, or else find_user_id_by_email for me"
    assert tool_syntax(text, names) == "find_user_id_by_email"  # the first listed tool named, not the leftmost
    assert tool_syntax("Let me THINK about TRANSFER_TO_HUMAN_AGENTS", names) == "TRANSFER_TO_HUMAN_AGENTS"
    assert tool_syntax("I think so; my get_order_detailsx note", names) is None  # a plain word; a longer word
    assert tool_syntax("xfind_user_id_by_email", names) is None
    assert tool_syntax("no tools here", []) is None


@pytest.mark.parametrize("text", [
    "Hi, can you help me return a water bottle?",
    "I'd like to cancel my order, please.",
    "Yes, please go ahead.",
    "Would you like my email address?",
    "Is the refund going back to my card (the one I paid with)?",
    "I think your policy should allow this.",
    "My order W4817420 has been delayed: I have cancelled my plans for it.",
    "No, that's all, thank you.",
])
def test_ordinary_user_messages_not_flagged(text: str) -> None:
    assert role_flip(text) is None
    assert tool_syntax(text, ["return_delivered_order_items"]) is None


# --- the guard in LLMUser --------------------------------------------------------------------------------------


def sent_system(provider: Any, i: int) -> str:
    return str(provider.calls[i]["messages"][0]["content"])


@pytest.mark.parametrize("planted,secret", [
    ("I want to return item 6777246137.", ITEM),
    ("Refund it to gift card 8211471 please.", PAYMENT),
    ("My user id is yusuf_rossi_9620.", USER_ID),
    ("I expect $1,093.34 back.", AMOUNT),
    ("I know refunds for returned items always go back to the original payment method within days.", P_REFUND),
    ("You must always check who the customer is before looking at any order.", P_IDENTIFY),
])
def test_guard_catches_each_planted_secret_and_regenerates(litellm: Any, fake: Any, planted: str,
                                                           secret: str) -> None:
    clean = "I'd like to return the water bottle from order W4817420."
    provider = fake([planted, clean])
    u = user()
    turn = u.reply(agent_says("How can I help?"))
    assert len(provider.calls) == 2
    assert turn.content == clean and turn.error is None
    assert turn.usage.calls == 2
    assert u.metadata["flags"] == []
    assert len(u.metadata["leaks"]) == 1
    leak = u.metadata["leaks"][0]
    assert (leak["turn"], leak["action"]) == (1, "regenerated")
    # the correction reached the second call, without the secret itself (nor any of its digits' runs)
    first, second = sent_system(provider, 0), sent_system(provider, 1)
    assert "Correction" not in first and "Correction" in second and "[withheld]" in second
    assert find_secrets(second, [s for s in u.secrets if str(s) == secret]) == []
    # the rest of the request is unchanged
    assert provider.calls[0]["messages"][1:] == provider.calls[1]["messages"][1:]


def test_every_retry_leaks_then_redacted_and_flagged(litellm: Any, fake: Any) -> None:
    provider = fake(["Return item 6777246137.", "Return item #6777246137 please.",
                     "OK: item 6,777,246,137, refund $1093.34 to gift_card_8211471. ###STOP###"])
    u = user()
    turn = u.reply(agent_says("Which item?"))
    assert len(provider.calls) == 3  # the first draft and max_leak_retries=2 regenerations
    assert turn.content == "OK: item [redacted], refund $[redacted] to [redacted]."
    assert turn.stop
    assert u.metadata["flags"] == ["user_leak"]
    assert [(x["turn"], x["kind"], x["action"]) for x in u.metadata["leaks"]] == [
        (1, "action_value", "regenerated"), (1, "action_value", "regenerated"),
        (1, "action_value", "redacted"), (1, "action_value", "redacted"), (1, "output", "redacted")]
    assert sent_system(provider, 2).count("Correction") == 2
    assert turn.usage.calls == 3


def test_max_leak_retries_zero_redacts_at_once_and_one_retries_once(litellm: Any, fake: Any) -> None:
    provider = fake(["Item 6777246137.", "Item 6777246137.", "Item 6777246137."])
    turn = user(max_leak_retries=0).reply(agent_says("Which item?"))
    assert (len(provider.calls), turn.content) == (1, "Item [redacted].")
    turn = user(max_leak_retries=1).reply(agent_says("Which item?"))
    assert (len(provider.calls), turn.content) == (3, "Item [redacted].")
    with pytest.raises(ValueError, match="max_leak_retries"):
        user(max_leak_retries=-1)


@pytest.mark.parametrize("reply", [
    "Hi, I'm Yusuf Rossi, zip 19122. I want to return a water bottle from order #W4817420.",
    "It's order W-4817420, the 750ml water bottle.",
    "I ordered 2 of them; can I get my money back? ###STOP###",
    "I'd like to return it because I changed my mind.",
    "Was it delivered already?",
])
def test_clean_replies_pass_untouched(litellm: Any, fake: Any, reply: str) -> None:
    provider = fake([reply])
    u = user()
    turn = u.reply(agent_says("How can I help?"))
    assert len(provider.calls) == 1
    assert turn.content == reply.replace(" ###STOP###", "")
    assert u.metadata["flags"] == [] and u.metadata["leaks"] == [] and u.metadata["flag_events"] == []


def test_values_the_agent_said_may_be_repeated(litellm: Any, fake: Any) -> None:
    provider = fake(["Yes, refund the $1,093.34 to gift_card_8211471 for item 6777246137."])
    u = user()
    turn = u.reply(agent_says(
        "I found item 6777246137 in order #W4817420.",
        "I will refund 1093.34 to gift_card_8211471. Shall I proceed (yes/no)?"))
    assert len(provider.calls) == 1
    assert "[redacted]" not in turn.content and u.metadata["leaks"] == []


def test_role_flip_and_tool_syntax_flags(litellm: Any, fake: Any) -> None:
    fake(["Hello! How can I help you today?",
          'Sure: return_delivered_order_items(order_id="W4817420")',
          "Thanks, that's all."])
    u = user()
    u.reply([])
    u.reply(agent_says("What do you need?"))
    u.reply(agent_says("What do you need?", "Done."))
    assert u.metadata["flags"] == ["role_flip", "tool_syntax"]
    assert [(e["turn"], e["flag"]) for e in u.metadata["flag_events"]] == [(0, "role_flip"), (1, "tool_syntax")]


def test_model_prompt_hash_and_persona_recorded() -> None:
    u = user(persona=load_personas("impatient")[0])
    expected_hash = hashlib.sha256(DEFAULT_USER_PROMPT.encode("utf-8")).hexdigest()
    assert u.metadata["model"] == MODEL
    assert u.metadata["prompt_hash"] == expected_hash
    assert u.metadata["persona"] == "impatient"
    assert u.metadata["secrets"] == 6  # the six of test_task_secrets_by_hand
    assert user().metadata["persona"] is None
    other = llm_user_factory(MODEL, prompt_template="Be {instructions}. {known_info} {unknown_info}")(make_ctx())
    assert other.metadata["prompt_hash"] == hashlib.sha256(
        b"Be {instructions}. {known_info} {unknown_info}").hexdigest()


def test_persona_in_prompt(litellm: Any, fake: Any) -> None:
    provider = fake(["hi", "hi", "hi"])
    impatient = load_personas("impatient")[0]
    user(persona=impatient).reply([])
    assert impatient.llm_instructions is not None
    assert impatient.llm_instructions in sent_system(provider, 0)
    cooperative = load_personas("cooperative")[0]  # no llm_instructions: described from its fields
    assert cooperative.llm_instructions is None
    user(persona=cooperative).reply([])
    assert "Your manner" in sent_system(provider, 1)
    assert "friendly and polite" in sent_system(provider, 1)
    assert "only when the agent asks" in sent_system(provider, 1)
    user().reply([])
    assert "Your manner" not in sent_system(provider, 2)


def test_persona_description_from_fields() -> None:
    p = Persona(name="x", description="d", verbosity="terse", politeness="rude", reveal_style="drip",
                typo_rate=0.1, wrong_answer_rate=0.2, mind_change_turn=3, mind_change_phrases=("hmm",),
                policy_push=True, push_attempts=4, push_phrases=("please",))
    text = persona_instructions(p)
    for part in ("few words", "curt", "one fact per message", "typo", "different question", "number 3",
                 "4 times"):
        assert part in text, part


# --- patience ---------------------------------------------------------------------------------------------------


NO = Progress(made=False, signals=("agent_repeat",))
YES = Progress(made=True, signals=("tool_ok",))


def test_patience_abandons_with_a_persona_phrase_without_a_model_call(litellm: Any, fake: Any) -> None:
    provider = fake(["still here", "still here", "still here"])
    impatient = load_personas("impatient")[0]
    assert impatient.patience == 3
    u = user(persona=impatient)
    for _ in range(2):  # two turns without progress: tolerated
        u.observe_progress(NO)
    assert not u.reply(agent_says("Hmm.")).abandon
    u.observe_progress(YES)  # progress resets the count
    for _ in range(2):
        u.observe_progress(NO)
    assert not u.reply(agent_says("Hmm.")).abandon
    u.observe_progress(NO)  # the third in a row: its patience is spent
    turn = u.reply(agent_says("Hmm.", "Hmm."))
    assert turn.abandon and not turn.stop
    assert turn.content in impatient.abandonment_phrases
    assert u.metadata["abandoned_at_turn"] == 2  # two user messages before it (agent_says(a, b))
    assert len(provider.calls) == 2  # the abandoning turn asked no model
    # the phrase is drawn by the trial seed: the same seed gives the same phrase, seeds differ among them
    phrases = set()
    for seed in range(12):
        texts = []
        for _ in range(2):
            v = user(persona=impatient, seed=seed)
            for _ in range(3):
                v.observe_progress(NO)
            texts.append(v.reply([]).content)
        assert texts[0] == texts[1]
        phrases.add(texts[0])
    assert len(phrases) > 1


def test_abandoner_abandons_through_the_orchestrator(litellm: Any, fake: Any, bank: Any) -> None:
    provider = fake(["Hi, I want to return my water bottle.", "It's order W4817420."])
    abandoner = load_personas("abandoner")[0]
    assert abandoner.patience == 1
    # the agent asks, then asks the very same thing again (agent_repeat: no progress)
    traj = Conversation(ListAgent("Which order is it?"), user(persona=abandoner), *bank).run()
    assert traj.termination_reason == TerminationReason.USER_ABANDON
    assert [m.role for m in traj.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert traj.messages[-1].content in abandoner.abandonment_phrases
    assert len(provider.calls) == 2
    assert traj.user_metadata["persona"] == "abandoner" and traj.user_metadata["abandoned_at_turn"] == 2


def test_no_persona_never_abandons(litellm: Any, fake: Any) -> None:
    fake(["still here"])
    u = user()
    for _ in range(20):
        u.observe_progress(NO)
    assert not u.reply(agent_says("Hmm.")).abandon


# --- stop rules, through the orchestrator -------------------------------------------------------------------


def test_yes_stop_to_a_confirmation_request_does_not_end_the_trial(litellm: Any, fake: Any, bank: Any) -> None:
    confirm = "I will return the water bottle of order W4817420. Shall I proceed (yes/no)?"
    assert asks_confirmation(confirm)
    fake(["Hi, I want to return my water bottle.", "yes ###STOP###", "Thanks, bye ###STOP###"])
    u = user()
    traj = Conversation(ListAgent(confirm, "Done: the return is filed."), u, *bank).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [(m.role, m.content) for m in traj.messages] == [
        ("user", "Hi, I want to return my water bottle."),
        ("assistant", confirm),
        ("user", "yes"),  # delivered, and the conversation went on
        ("assistant", "Done: the return is filed."),
        ("user", "Thanks, bye"),  # text attached to the stop is delivered before the trial ends
    ]
    assert traj.user_metadata["model"] == MODEL and traj.user_metadata["flags"] == []
    assert json.loads(json.dumps(traj.user_metadata)) == traj.user_metadata  # JSON-safe for the store


def test_leak_flag_reaches_the_trajectory(litellm: Any, fake: Any, bank: Any) -> None:
    fake(["Item 6777246137.", "Item 6777246137.", "Item 6777246137.", "bye ###STOP###"])
    traj = Conversation(ListAgent("Which item?"), user(), *bank).run()
    assert traj.messages[0].content == "Item [redacted]."
    assert traj.user_metadata["flags"] == ["user_leak"]
    assert traj.user_metadata["persona"] is None
    assert "6777246137" not in json.dumps([m.content for m in traj.messages])


# --- forms and false positives on the real retail domain ---------------------------------------------------


def test_short_and_common_values_are_not_secrets() -> None:
    task = Task(id="t", scenario=UserScenario(instructions="You are someone."), gold_actions=[Action(
        name="f", arguments={"city": "New York", "state": "NY", "address2": "Suite 641", "reason": "no longer needed",
                             "qty": 12, "count": "7", "total": 5.5, "fee": 350, "code": "64GB", "short": "A1",
                             "note": "ok then", "flag": False, "nothing": None})])
    # by hand: two words without a digit, one word, integers under 3 digits, ids under 4 characters, and
    # texts under 8 characters are skipped
    assert [(str(s), s.form) for s in task_secrets(task, "")] == [
        ("Suite 641", "text"), ("no longer needed", "text"), ("5.5", "number"), ("350", "number"), ("64GB", "id")]


def retail() -> Any:
    from domains.retail import RetailDomain

    return RetailDomain()


# Messages an LLM customer could well write in the built-in retail tasks: about policy (in its own words),
# amounts it knows, its own order ids, item names. None may trip the guard.
PLAUSIBLE = [
    "Hi, I need to cancel an order I placed by mistake.",
    "Sure, my name is Samuel Laine and my zip code is 83782.",
    "It's order #W1773282. I no longer need the items.",
    "Why can't you cancel it? I thought an order could be cancelled any time before it ships.",
    "Can you make an exception just this once? I really need the refund on my card.",
    "I'd like the money back on the original payment method, please.",
    "Yes, please go ahead with the return of the wool throw blanket.",
    "Could you tell me my gift card balance after that?",
    "Please change the shipping address to 77 Orchard Street, Apt 3, Madison, WI 53703, USA.",
    "I don't remember my email, sorry. Can you find me by name and zip instead?",
    "No, that's all, thank you!",
    "How long does a refund take to reach my credit card?",
    "I want to exchange the keyboard for one with clicky switches, same color if possible.",
]


def test_plausible_customer_messages_trip_nothing_on_the_builtin_retail_tasks() -> None:
    dom = retail()
    policy = dom.policy()
    assert len(policy) > 2000  # the real policy, not a placeholder
    tools = dom.toolbox().schemas()
    for task in dom.load_tasks("builtin"):
        secrets = task_secrets(task, policy, tools=tools)
        assert sum(s.kind == "policy" for s in secrets) >= 30
        matcher = SecretMatcher(secrets)
        for text in PLAUSIBLE:
            assert matcher.find(text) == [], (task.id, text)
            assert role_flip(text) is None and tool_syntax(text, [t["function"]["name"] for t in tools]) is None


def test_the_rule_user_never_trips_the_guard() -> None:
    """A second method: RuleUser cannot leak by construction, so the guard must stay silent on all it says."""
    import dataclasses
    import importlib.util

    if importlib.util.find_spec("simulator.users.rule_user") is None:
        pytest.skip("simulator.users.rule_user not present")
    from personas.loader import load_personas as personas_all
    from simulator.agents import agent_factory
    from simulator.execution.runner import Runner
    from simulator.types.spec import RunSpec
    from simulator.users import user_factory

    dom = retail()
    template = dom.template(None)
    tasks = dom.load_tasks("builtin")
    tools = dom.toolbox().schemas()
    base = user_factory("rule", domain=dom, template=template)
    cfg = RunSpec(domain="retail", agent="reference", user="rule", trials=1, seed=11)
    checked = agent_hits = 0
    for persona in personas_all(["cooperative", "confused", "policy-pusher"]):
        def users(ctx: TrialContext, persona: Persona = persona) -> Any:
            return base(dataclasses.replace(ctx, persona=persona))

        result = Runner(dom, template, tasks, agent_factory("reference:wrong_item=0.3", domain=dom), users,
                        cfg).run()
        by_id = {t.id: t for t in tasks}
        for trial in result.trials:
            task = by_id[trial.task_id]
            matcher = SecretMatcher(task_secrets(task, dom.policy(), dom.derive_scenario(task, template),
                                                 tools=tools))
            heard: list[str] = []
            for m in trial.trajectory.messages:
                if m.role == "assistant" and m.content and not m.tool_calls:
                    agent_hits += bool(matcher.find(m.content))
                    heard.append(m.content)
                elif m.role == "user" and m.content:
                    checked += 1
                    assert matcher.find(m.content, heard) == [], (trial.task_id, m.content)
                    assert role_flip(m.content) is None, (trial.task_id, m.content)
    assert checked > 200
    assert agent_hits > 50  # the agent does say secret values (ids, amounts): the check above is not vacuous



def variants(secret: Secret) -> list[str]:
    """Other ways to write a secret, made independently of the matcher (Python formatting, plain edits)."""
    value = str(secret)
    if secret.form == "number":
        x = float(value.replace(",", "").lstrip("$"))
        return [value, f"${x:,.2f}", f"{x:.3f}", f"USD {x:,.2f}" if x >= 1000 else f"{x:g}"]
    if secret.form == "id":
        spaced = value.replace("_", " ").lstrip("#")
        return [value, value.upper(), f"#{value.lstrip('#')}", spaced]
    words = "".join(ch if ch.isalnum() else " " for ch in value).split()
    return [value, " ".join(words).upper(), ", ".join(words)]


def test_every_secret_of_the_builtin_tasks_is_caught_in_every_format() -> None:
    """Plant each secret of each built-in retail and airline task, in several formats, in a customer message."""
    from domains.airline import AirlineDomain

    planted = 0
    for dom in (retail(), AirlineDomain()):
        tools = dom.toolbox().schemas()
        for task in dom.load_tasks("builtin"):
            secrets = task_secrets(task, dom.policy(), tools=tools)
            matcher = SecretMatcher(secrets)
            for secret in secrets:
                for v in variants(secret):
                    text = f"Well, {v} - I guess."
                    assert secret in matcher.find(text), (task.id, secret.origin, text)
                    assert secret not in matcher.find(matcher.redact(text)), (task.id, text)
                    planted += 1
    assert planted > 1500


def test_users_read_the_prepared_secrets_and_the_factory_caches_none() -> None:
    import dataclasses

    from simulator.grading import effective_rules
    from simulator.types.prepared import GoldReplay, PreparedTask, user_needs

    build = llm_user_factory(MODEL, max_attempts=1)
    assert user_needs(build) == {"secrets"}  # a run prepares each task's secrets once
    task = make_task()
    matcher = SecretMatcher(task_secrets(task, POLICY, tools=TOOLS))
    prepared = PreparedTask(task=task, rules=effective_rules(task), gold=GoldReplay(task.id, (), (), b""),
                            secrets=matcher)

    def ctx(seed: int, t: Task = task) -> TrialContext:
        return dataclasses.replace(make_ctx(seed), task=t, prepared=prepared)

    first, second = build(ctx(1)), build(ctx(2))
    assert first._matcher is matcher and second._matcher is matcher  # the prepared one, shared by the trials
    # nothing is cached in the factory: without a prepared task each trial compiles the task's secrets itself
    third, fourth = build(make_ctx(seed=3)), build(make_ctx(seed=4))
    assert third._matcher is not fourth._matcher and third._matcher is not matcher
    expected = [str(s) for s in task_secrets(make_task(), POLICY, tools=TOOLS)]
    assert [str(s) for s in third.secrets] == expected == [str(s) for s in first.secrets]
    other = make_task().model_copy(update={"id": "other-task", "required_outputs": ["4242.42"]})
    fifth = build(ctx(5, other))  # prepared for another task: not used
    assert fifth._matcher is not matcher
    assert "4242.42" in [str(s) for s in fifth.secrets] and "4242.42" not in [str(s) for s in first.secrets]
    changed = make_task().model_copy(update={"required_outputs": ["777.77"]})  # same id, other content
    assert "777.77" in [str(s) for s in build(ctx(6, changed)).secrets]


@pytest.mark.parametrize(("text", "folded"), [
    ("Order \u201cW123\u201d \u2013 done", 'order "w123" - done'),  # typographic quotes and dash made plain
    ("\ufb01le \u2460 \uff21B", "file 1 ab"),  # NFKC: ligature, circled digit, full-width letter (then lower case)
    ("STRA\u1e9eE \u2212 5", "stra\u00dfe - 5"),  # capital sharp s lower-cased; minus sign a hyphen
    ("caf\u00e9 \U0001f600", "caf\u00e9 \U0001f600"),  # already folded: unchanged
])
def test_fold_folds_each_character_as_the_span_map_does(text: str, folded: str) -> None:
    # expected values by hand (NFKC tables); the fast fold must agree with the span-keeping one character by character
    assert _fold(text) == folded
    assert _fold_map(text)[0] == folded
    assert len(_fold_map(text)[1]) == len(folded)

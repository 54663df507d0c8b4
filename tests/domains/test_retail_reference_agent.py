"""The retail reference agent: clean runs with the rule-based user, plain-English conversations, fault knobs.

Expected outcomes come from the tasks (gold actions and required outputs written by hand for each task) and from
what each knob means, never from the agent's own output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from personas.loader import load_personas
from simulator.agents import agent_factory
from simulator.dialogue.cues import asks_confirmation
from simulator.execution.runner import Runner, RunResult
from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import TrialContext, UserSimulator
from simulator.types.spec import RunSpec
from simulator.types.tasks import Task, UserScenario
from simulator.users import user_factory
from simulator.users._scripted import ScriptedUser
from simulator.world.domain import DomainError, get_domain

DOMAIN = get_domain("retail")
TEMPLATE = DOMAIN.template(None)
TASKS = DOMAIN.load_tasks("builtin")
BY_ID = {t.id: t for t in TASKS}
WRITES = {n for n, s in DOMAIN.toolbox().specs.items() if s.kind == "write"}
TRANSFER = "transfer_to_human_agents"


def _run(spec: str, tasks: Sequence[Task] = TASKS, user: Callable[[TrialContext], UserSimulator] | None = None,
         trials: int = 1, seed: int = 0) -> RunResult:
    cfg = RunSpec(domain="retail", agent=spec, user="rule", trials=trials, seed=seed)
    users = user or user_factory("rule", domain=DOMAIN, template=TEMPLATE)
    return Runner(DOMAIN, TEMPLATE, list(tasks), agent_factory(spec, domain=DOMAIN), users, cfg).run()


def _with_persona(name: str) -> Callable[[TrialContext], UserSimulator]:
    base = user_factory("rule", domain=DOMAIN, template=TEMPLATE)
    persona = load_personas([name])[0]

    def make(ctx: TrialContext) -> UserSimulator:
        ctx.persona = persona
        return base(ctx)

    return make


class _YesUser:
    """The rule-based user, except that it says yes to every confirmation request (so a wrong write happens)."""

    def __init__(self, inner: UserSimulator):
        self.inner = inner

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        if messages and messages[-1].role == "assistant" and asks_confirmation(messages[-1].content):
            return UserTurn(content="Yes, please go ahead.")
        return self.inner.reply(messages)


def _yes_user(ctx: TrialContext) -> UserSimulator:
    return _YesUser(user_factory("rule", domain=DOMAIN, template=TEMPLATE)(ctx))


def _gold_writes(task: Task) -> bool:
    return any(a.name in WRITES for a in task.gold_actions)


def _calls(result: RunResult, task_id: str) -> list[tuple[str, dict[str, Any] | None]]:
    trial = next(t for t in result.trials if t.task_id == task_id)
    return [(c.name, c.arguments) for c in trial.trajectory.tool_calls]


# ------------------------------------------------------------------------------------------------ clean runs
def test_clean_agent_passes_the_builtin_tasks_with_the_rule_user() -> None:
    result = _run("reference", trials=2)
    failed = sorted({t.task_id for t in result.trials if not t.passed})
    passed = sum(t.passed for t in result.trials)
    assert passed >= 54, f"{passed}/58 passed; failing: {failed}"
    assert all(t.trajectory.agent_metadata == {"faults": []} for t in result.trials)
    # refusals and transfers end as the task expects, without any write
    for t in result.trials:
        task = BY_ID[t.task_id]
        if "refusal" in task.tags and "partial_refusal" not in task.tags:
            assert not any(c.name in WRITES for c in t.trajectory.tool_calls), t.task_id
        if "transfer" in task.tags:
            assert t.termination_reason == "agent_transfer", t.task_id


@pytest.mark.parametrize("persona", ["terse", "verbose", "drip-feeder", "impatient", "confused"])
def test_clean_agent_passes_with_personas(persona: str) -> None:
    result = _run("reference", user=_with_persona(persona))
    passed = sum(t.passed for t in result.trials)
    assert passed >= 26, (persona, sorted(t.task_id for t in result.trials if not t.passed))


def test_agent_does_not_need_the_task() -> None:
    """The agent sees a task without gold actions, outputs or scenario, and still passes (graded on the real one)."""
    tasks = [BY_ID[i] for i in ("cancel-gift-card-balance", "exchange-two-items", "refuse-exchange-unavailable")]
    blank = Task(id="blank", scenario=UserScenario(instructions=""))
    inner = agent_factory("reference", domain=DOMAIN)
    cfg = RunSpec(domain="retail", agent="reference", user="rule", trials=1, seed=3)
    result = Runner(DOMAIN, TEMPLATE, tasks, lambda ctx: inner(dataclasses.replace(ctx, task=blank)),
                    user_factory("rule", domain=DOMAIN, template=TEMPLATE), cfg).run()
    assert [t.passed for t in result.trials] == [True, True, True]


# ------------------------------------------------------------------------------------------------ plain English
def _scripted(lines: list[str]) -> Callable[[TrialContext], UserSimulator]:
    return lambda ctx: ScriptedUser(lines)


def test_plain_english_cancel_by_name_and_zip() -> None:
    task = BY_ID["cancel-no-longer-needed"]
    lines = ["hello, i need to cancel an order: #W1773282", "Samuel Laine, 83782",
             "i don't need it anymore", "yes", "no thanks, bye###STOP###"]
    result = _run("reference", [task], user=_scripted(lines))
    trial = result.trials[0]
    assert trial.passed, trial.grade
    # by hand: the look-ups and the write, in this order
    assert _calls(result, task.id) == [
        ("find_user_id_by_name_zip", {"first_name": "Samuel", "last_name": "Laine", "zip": "83782"}),
        ("get_user_details", {"user_id": "samuel_laine_4410"}),
        ("get_order_details", {"order_id": "#W1773282"}),
        ("cancel_pending_order", {"order_id": "#W1773282", "reason": "no longer needed"}),
    ]
    texts = trial.trajectory.agent_texts()
    confirm = next(t for t in texts if asks_confirmation(t))
    assert "#W1773282" in confirm and "no longer needed" in confirm and "cancel" in confirm.lower()
    assert "$99.40" in confirm  # 23.84 + 75.56, the order's two items


def test_plain_english_item_change_matches_the_gold_write() -> None:
    task = BY_ID["modify-items-gift-card-pays"]
    lines = ["Hi! my email is camila.castillo660@example.com. In order #W3303781 I'd like to switch the black "
             "blender to the red 72 oz one, and I'll pay with my gift card", "Yes, do it.", "that's all###STOP###"]
    result = _run("reference", [task], user=_scripted(lines))
    gold = next(a for a in task.gold_actions if a.name == "modify_pending_order_items")
    assert ("modify_pending_order_items", gold.arguments) in _calls(result, task.id)
    assert result.trials[0].passed


def test_finds_the_order_from_the_item_description() -> None:
    """No order id given: the agent finds the delivered order holding a red sleeping bag among the user's orders."""
    task = BY_ID["return-original-method"]
    lines = ["I want to return the red sleeping bag I bought, refunded to my paypal",
             "tara.moreau109@example.com", "Yes please", "no that's all###STOP###"]
    result = _run("reference", [task], user=_scripted(lines))
    gold = next(a for a in task.gold_actions if a.name == "return_delivered_order_items")
    assert ("return_delivered_order_items", gold.arguments) in _calls(result, task.id)
    assert result.trials[0].passed


def test_no_write_without_a_yes() -> None:
    task = BY_ID["cancel-no-longer-needed"]
    lines = ["cancel order #W1773282 please, I ordered it by mistake", "I'm Samuel Laine, zip code 83782",
             "hmm, let me think", "actually no", "bye###STOP###"]
    result = _run("reference", [task], user=_scripted(lines))
    assert not any(name in WRITES for name, _ in _calls(result, task.id))


# ------------------------------------------------------------------------------------------------ fault knobs
def _confirming(task: Task) -> Task:
    return task.model_copy(update={"process": task.process.model_copy(update={"confirm_writes": True})})


def test_skip_confirmation_breaks_the_confirm_rule() -> None:
    tasks = [_confirming(t) for t in TASKS]
    clean = _run("reference", tasks)
    assert all(t.grade is not None and t.grade.process.passed for t in clean.trials), [
        (t.task_id, t.grade.process.violations) for t in clean.trials if t.grade and not t.grade.process.passed]
    faulty = _run("reference:skip_confirmation=1", tasks)
    for t in faulty.trials:
        assert t.grade is not None
        if _gold_writes(BY_ID[t.task_id]):
            assert not t.grade.process.passed, t.task_id
            assert any("without an explicit user yes" in v for v in t.grade.process.violations), t.task_id
            assert any(f["fault"] == "skip_confirmation" for f in t.trajectory.agent_metadata["faults"])
        else:
            assert t.grade.process.passed, t.task_id


def test_repeat_call_is_caught_as_a_loop() -> None:
    clean = _run("reference")
    assert all(t.grade is not None and t.grade.loops.passed for t in clean.trials)
    faulty = _run("reference:repeat_call=1")
    # every task starts with a look-up of the user: at rate 1 it is made four times, past the threshold of 2 repeats
    assert all(t.grade is not None and not t.grade.loops.passed for t in faulty.trials)
    assert all(t.termination_reason != "tool_bug" for t in faulty.trials)


# tasks choosing items or variants; return-original-method is left out: its order holds only the sleeping bag, so
# there is no other item to pick by mistake
ITEM_TASKS = ["modify-items-two-refund", "modify-items-gift-card-pays", "return-to-gift-card",
              "return-two-items-gift-card-paid", "exchange-pay-difference", "exchange-two-items",
              "multi-exchange-and-return"]


def test_wrong_item_breaks_the_state() -> None:
    tasks = [BY_ID[i] for i in ITEM_TASKS]
    clean = _run("reference", tasks, user=_yes_user)
    assert all(t.grade is not None and t.grade.state.passed for t in clean.trials)
    faulty = _run("reference:wrong_item=1", tasks, user=_yes_user)
    for t in faulty.trials:
        assert t.grade is not None and not t.grade.state.passed, t.task_id
        assert any(f["fault"] == "wrong_item" for f in t.trajectory.agent_metadata["faults"]), t.task_id


def test_forget_constraint_breaks_the_state_when_two_options_change() -> None:
    # by hand from the instructions: one item changes in two options (capacity and colour; material and colour;
    # piece count and handle)
    two_options = ["modify-items-gift-card-pays", "exchange-pay-difference", "modify-items-two-refund"]
    one_option = ["exchange-two-items"]  # each item changes in one option: nothing to forget
    faulty = _run("reference:forget_constraint=1", [BY_ID[i] for i in two_options + one_option], user=_yes_user)
    outcome = {t.task_id: t.grade.state.passed for t in faulty.trials if t.grade is not None}
    assert outcome == {**dict.fromkeys(two_options, False), **dict.fromkeys(one_option, True)}


def test_early_transfer_hands_over_before_trying() -> None:
    faulty = _run("reference:early_transfer=1")
    for t in faulty.trials:
        task = BY_ID[t.task_id]
        if task.tags == ["info", "required_output", "gift_card"]:
            continue  # an information request is answered, never transferred
        assert t.termination_reason == "agent_transfer", t.task_id
        assert not any(c.name in WRITES for c in t.trajectory.tool_calls), t.task_id
        if _gold_writes(task):
            assert t.grade is not None and not t.grade.state.passed, t.task_id


def test_repeat_question_makes_impatient_users_abandon() -> None:
    impatient = _with_persona("impatient")
    clean = _run("reference", user=impatient)
    assert sum(t.termination_reason == "user_abandon" for t in clean.trials) == 0
    faulty = _run("reference:repeat_question=1", user=impatient)
    abandoned = sum(t.termination_reason == "user_abandon" for t in faulty.trials)
    assert abandoned >= 15, abandoned
    half = _run("reference:repeat_question=0.5", user=impatient)
    half_abandoned = sum(t.termination_reason == "user_abandon" for t in half.trials)
    assert 0 < half_abandoned < abandoned


def test_faults_are_seeded_and_never_a_tool_bug() -> None:
    spec = ("reference:skip_confirmation=0.5,wrong_item=0.5,repeat_call=0.5,early_transfer=0.2,"
            "forget_constraint=0.5,repeat_question=0.3")
    a = _run(spec, seed=11)
    b = _run(spec, seed=11)
    assert [t.trajectory.agent_metadata for t in a.trials] == [t.trajectory.agent_metadata for t in b.trials]
    assert [t.trajectory.messages for t in a.trials] == [t.trajectory.messages for t in b.trials]
    assert all(t.termination_reason not in ("tool_bug", "agent_error") for t in a.trials)
    kinds = {f["fault"] for t in a.trials for f in t.trajectory.agent_metadata["faults"]}
    assert {"skip_confirmation", "repeat_call", "repeat_question"} <= kinds
    c = _run(spec, seed=12)
    assert [t.trajectory.agent_metadata for t in a.trials] != [t.trajectory.agent_metadata for t in c.trials]


# ------------------------------------------------------------------------------------------------ spec and hook
def test_spec_errors_name_the_problem() -> None:
    with pytest.raises(DomainError, match="bogus"):
        agent_factory("reference:bogus=0.1", domain=DOMAIN)
    with pytest.raises(ValueError, match="repeat_call"):
        agent_factory("reference:repeat_call=1.5", domain=DOMAIN)
    with pytest.raises(ValueError, match="repeat_call"):
        agent_factory("reference:repeat_call=lots", domain=DOMAIN)
    with pytest.raises(ValueError, match="twice"):
        agent_factory("reference:repeat_call=0.1,repeat_call=0.2", domain=DOMAIN)
    with pytest.raises(ValueError, match="domain"):
        agent_factory("reference")
    ctx = TrialContext(task=TASKS[0], tools=[], policy="", seed=0, rng=np.random.default_rng(0),
                       domain="retail")
    with pytest.raises(DomainError, match="wrong_itme"):
        DOMAIN.reference_agent(ctx, {"wrong_itme": 0.1})
    with pytest.raises(DomainError, match="outside"):
        DOMAIN.reference_agent(ctx, {"wrong_item": -0.1})
    assert agent_factory("reference:", domain=DOMAIN)(ctx).metadata == {"faults": []}


def test_agendas_give_no_ids_the_user_does_not_know() -> None:
    """Agendas state order ids and descriptions, never item, product or payment method ids or user ids unknown."""
    import json
    import re

    for task in TASKS:
        scenario = task.scenario
        assert scenario.identity and scenario.agenda, task.id
        text = json.dumps([i.model_dump() for i in scenario.agenda])
        ids = {str(v) for a in task.gold_actions for k, v in a.arguments.items()
               if k in ("item_ids", "new_item_ids", "payment_method_id", "product_id")}
        ids |= {x for a in task.gold_actions for v in a.arguments.values() if isinstance(v, list) for x in v}
        assert not any(i in text for i in ids), task.id
        assert not re.search(r"\b\d{10}\b|(?:gift_card|credit_card|paypal)_\d+", text), task.id
        if "user_id" not in scenario.known_info:
            assert "user_id" not in scenario.identity, task.id


# ------------------------------------------------------------------------------------------------ named, not given
# Expected values below were read by hand from domains/retail/data (users.json, orders.json).
_VEHICLE = "cancel-no-longer-needed"  # any task: these tests check the agent's calls, not the grade


def test_address_named_by_the_order_that_ships_there() -> None:
    # Emil Vargas: pending #W6738693 (cast iron skillet) ships to Albuquerque; his delivered #W7736924 (electric
    # scooter) ships to 5892 Foxglove Lane, Floor 1, Raleigh, NC 27638
    lines = ["Please ship my pending order with the cast iron skillet to the address that my order with the "
             "electric scooter ships to.", "emil.vargas961@example.com", "yes", "no, that's all###STOP###"]
    result = _run("reference", [BY_ID[_VEHICLE]], user=_scripted(lines))
    writes = [c for c in _calls(result, _VEHICLE) if c[0] in WRITES]
    assert writes == [("modify_pending_order_address", {
        "order_id": "#W6738693", "address1": "5892 Foxglove Lane", "address2": "Floor 1", "city": "Raleigh",
        "state": "NC", "country": "USA", "zip": "27638"})]


def test_partial_address_keeps_the_rest_of_the_order_address() -> None:
    # Julia Fischer: #W5966685 ships to 7139 Vineyard Road, (no second line), Portland, OR 97255
    lines = ["I want order #W5966685 delivered to Apt 12 instead (the rest of the address stays the same).",
             "julia.fischer418@example.com", "yes", "no, that's all###STOP###"]
    result = _run("reference", [BY_ID[_VEHICLE]], user=_scripted(lines))
    writes = [c for c in _calls(result, _VEHICLE) if c[0] in WRITES]
    assert writes == [("modify_pending_order_address", {
        "order_id": "#W5966685", "address1": "7139 Vineyard Road", "address2": "Apt 12", "city": "Portland",
        "state": "OR", "country": "USA", "zip": "97255"})]


def test_most_recently_placed_order_is_the_last_one_of_the_account() -> None:
    # Julia Fischer's orders, in account order: #W5966685, #W8045422, #W5731976
    lines = ["julia.fischer418@example.com", "How much did I pay for the order I most recently placed?",
             "no, that's all###STOP###"]
    result = _run("reference", [BY_ID[_VEHICLE]], user=_scripted(lines))
    answer = next(t for t in result.trials[0].trajectory.agent_texts() if "total" in t)
    assert "#W5731976" in answer and "#W5966685" not in answer


def test_no_and_a_human_instead_of_the_action_transfers_without_writing() -> None:
    lines = ["cancel order #W6738693 please, I don't need it anymore", "emil.vargas961@example.com",
             "No, don't. I want to talk to a human agent.", "ok###STOP###"]
    result = _run("reference", [BY_ID[_VEHICLE]], user=_scripted(lines))
    names = [c[0] for c in _calls(result, _VEHICLE)]
    assert TRANSFER in names and not WRITES & set(names)


def test_the_same_product_changed_twice_gives_one_part_per_item() -> None:
    from domains.retail._understand import change_parts
    from domains.retail.reference_agent import RetailReferenceAgent

    text = ("exchange in order #W1: the tea kettle for a tea kettle with material ceramic, stovetop gas and the tea "
            "kettle for a tea kettle with capacity 1.5 liters")
    parts = change_parts(text, "Tea Kettle")
    assert len(parts) == 2 and "ceramic" in parts[0] and "1.5" not in parts[0] and "1.5 liters" in parts[1]
    assert change_parts("return the tea kettle", "Tea Kettle") == []
    # "1.5 liters" names 1.5 liters, not "1 liter" (the word "liter" is shared by the values)
    values = ["1.5 liters", "2 liters", "1 liter"]
    said = "a tea kettle with capacity 1.5 liters"
    assert [v for v in values if RetailReferenceAgent._value_mentioned(said, v, values)] == ["1.5 liters"]


def test_questions_about_an_order_described_by_status_and_about_the_card_used() -> None:
    # Julia Fischer: #W8045422 is her only cancelled order (never shipped); all three orders were paid with her
    # Amex ending in 3903 (credit_card_5501054), none with her Visa ending in 4400
    lines = ["julia.fischer418@example.com", "What is the tracking number of my cancelled order?",
             "Could you tell me whether I paid with my visa or my amex card?", "no, that's all###STOP###"]
    result = _run("reference", [BY_ID[_VEHICLE]], user=_scripted(lines))
    texts = result.trials[0].trajectory.agent_texts()
    tracking = next(t for t in texts if "tracking" in t)
    assert "#W8045422" in tracking and "no tracking number" in tracking
    paid = next(t for t in texts if "paid with" in t)
    assert paid.count("Amex credit card ending in 3903") == 3 and "4400" not in paid
    assert not any(c[0] in WRITES for c in _calls(result, _VEHICLE))


@pytest.mark.parametrize(("text", "named"), [
    ("change my default address to the address that my order #W1234567 ships to", "#W1234567"),
    ("ship it instead to the address in Seattle that my order with the lamp and the mug ships to",
     "the lamp and the mug"),
    ("I want my order shipped to the address of my other order with the lamp", "the lamp"),
    # the address being changed, not a new one
    ("update the address of my order with the lamp to 1 Main St, Austin, TX 78701", None),
    ("change the address that my order #W1234567 ships to", None),
])
def test_an_address_is_named_by_an_order_only_as_the_target(text: str, named: str | None) -> None:
    from domains.retail._understand import ADDRESS_REF_RE

    m = ADDRESS_REF_RE.search(text)
    assert (m and (m.group("oid") or m.group("items"))) == named


def test_identity_given_as_im_name_is_understood() -> None:
    """RuleUser's own "I'm NAME" / "This is NAME" wording: the agent asks for the zip next, not the name again."""
    for line in ("I'm Samuel Laine.", "this is Samuel Laine", "It's Samuel Laine here"):
        user = ScriptedUser(["I need to cancel my order #W1773282.", line])
        cfg = RunSpec(domain="retail", agent="reference", user="py:test", trials=1)
        task = next(t for t in TASKS if t.id == "cancel-no-longer-needed")
        res = Runner(DOMAIN, TEMPLATE, [task], agent_factory("reference", domain=DOMAIN), lambda ctx, u=user: u,
                     cfg).run()
        texts = res.trials[0].trajectory.agent_texts()
        assert "zip code" in texts[1] and "name" not in texts[1].split("zip")[0].lower().replace("samuel", ""), texts


def test_wrong_item_knob_without_another_item_does_not_crash() -> None:
    """A one-item order (every item of it already chosen): the wrong-item fault has nothing to swap and is skipped."""
    res = _run("reference:wrong_item=1", [t for t in TASKS if t.id.startswith(("return", "exchange"))])
    assert all(t.termination_reason != "agent_error" for t in res.trials), [t.error for t in res.trials]


def test_lowercase_name_with_zip_and_dont_without_apostrophe() -> None:
    """Typed as people type: "samuel laine 83782", "i dont need it anymore"; the cancellation goes through."""
    task = next(t for t in TASKS if t.id == "cancel-no-longer-needed")
    user = ScriptedUser(["hi, I want to cancel an order", "samuel laine 83782", "#W1773282",
                         "i dont need it anymore", "yes"])
    cfg = RunSpec(domain="retail", agent="reference", user="py:test", trials=1)
    res = Runner(DOMAIN, TEMPLATE, [task], agent_factory("reference", domain=DOMAIN), lambda ctx: user, cfg).run()
    trial = res.trials[0]
    assert trial.passed, trial.trajectory.agent_texts()
    calls = [(c.name, c.arguments) for c in trial.trajectory.tool_calls]
    assert ("find_user_id_by_name_zip", {"first_name": "Samuel", "last_name": "Laine", "zip": "83782"}) in calls
    assert ("cancel_pending_order", {"order_id": "#W1773282", "reason": "no longer needed"}) in calls

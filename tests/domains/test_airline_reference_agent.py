"""The airline reference agent: policy-following conversations, fault knobs, determinism.

The agent is played against the cooperative RuleUser (:mod:`simulator.users.rule_user`) and, as a second
opinion, a small agenda user defined here (it speaks the issue 4 contract's phrasings and reads only the
task's scenario ``identity`` and ``agenda``), through the real Runner and graders. Expected outcomes are written
by hand from the policy and the data (amounts, allowances, ids), not read from the agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from domains.airline import AirlineDomain
from domains.airline import _understand as nl
from domains.airline.reference_agent import KNOBS, AirlineReferenceAgent
from simulator.dialogue.cues import asks_confirmation
from simulator.execution.runner import Runner
from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import TrialContext
from simulator.types.spec import RunSpec
from simulator.types.tasks import Intent, Task
from simulator.users import rule_user_factory
from simulator.world.domain import DomainError

# ------------------------------------------------------------------------------------------------ agenda user
_SLOT_WORDS = (("insurance", "insurance"), ("reservation", "reservation_id"), ("payment", "payment"),
               ("reason", "reason"), ("bags", "baggage"), ("cabin", "cabin"), ("date", "date"),
               ("replaced", "passengers"), ("passengers", "passengers"))


class AgendaUser:
    """A cooperative agenda user speaking the contract's phrasings (test stand-in for the RuleUser)."""

    def __init__(self, ctx: TrialContext):
        self.identity = ctx.task.scenario.identity
        self.agenda: list[Intent] = list(ctx.task.scenario.agenda)
        self.rng = ctx.rng
        self.i = 0
        self.done = False
        self.asked = False
        self.metadata: dict[str, Any] = {"persona": "test-cooperative"}

    @property
    def intent(self) -> Intent:
        return self.agenda[self.i]

    def _request(self) -> str:
        return str(self.intent.request[int(self.rng.integers(len(self.intent.request)))])

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        if not messages:
            return UserTurn(content=f"Hi, {self._request()}.")
        text = messages[-1].content or ""
        low = text.lower()
        if "transferring you" in low:
            return UserTurn(content="Okay, thank you.", stop=True)
        if asks_confirmation(text) and "(yes/no)" in low:
            if all(term.lower() in low for term in self.intent.confirm_terms):
                return UserTurn(content="Yes, please go ahead.")
            return UserTurn(content=f"No, that's not what I want: {self._request()}.")
        if "i'm sorry, but i can't" in low and self.intent.fallback is not None:
            self.agenda[self.i] = self.intent.fallback
            return UserTurn(content=f"Okay. Then {self._request()}.")
        if re.search(r"\bdone:", low):
            self.done = True
        if "user id" in low and text.rstrip().endswith("?"):
            return UserTurn(content=f"My user id is {self.identity['user_id']}.")
        if "anything else" in low:
            if self.done and self.intent.ask and not self.asked:
                self.asked = True
                return UserTurn(content=f"Thanks. One question: {self.intent.ask}?")
            if self.i + 1 < len(self.agenda):
                self.i, self.done, self.asked = self.i + 1, False, False
                if self.intent.kind == "info" and self.intent.ask:
                    self.asked = True
                return UserTurn(content=f"Yes, one more thing: {self._request()}.")
            return UserTurn(content="No, that's all, thank you.", stop=True)
        if text.rstrip().endswith("?"):
            for word, slot in _SLOT_WORDS:
                if word in low and slot in self.intent.slots:
                    return UserTurn(content=str(self.intent.slots[slot]))
            return UserTurn(content=f"I'm not sure. {self._request()}.")
        return UserTurn(content="No, that's all, thank you.", stop=True)


def agenda_user(ctx: TrialContext) -> AgendaUser:
    return AgendaUser(ctx)


# ------------------------------------------------------------------------------------------------ helpers
@pytest.fixture(scope="module")
def domain() -> AirlineDomain:
    return AirlineDomain()


@pytest.fixture(scope="module")
def tasks(domain: AirlineDomain) -> dict[str, Task]:
    return {t.id: t for t in domain.load_tasks()}


def _run(domain: AirlineDomain, tasks: Sequence[Task], faults: dict[str, float] | None = None, seed: int = 0,
         trials: int = 1, user: str = "rule") -> Any:
    """Run the reference agent on ``tasks`` against the RuleUser (``user="rule"``) or the AgendaUser above."""
    def factory(ctx: TrialContext) -> Any:
        return domain.reference_agent(ctx, faults or {})

    users = rule_user_factory(domain, domain.template()) if user == "rule" else agenda_user
    cfg = RunSpec(domain="airline", trials=trials, concurrency=2, seed=seed)
    return Runner(domain, domain.template(), list(tasks), factory, users, cfg).run()


# ------------------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize(("user", "seed"), [("rule", 0), ("rule", 1), ("agenda", 0)])
def test_passes_the_builtin_tasks_it_covers(domain, tasks, user, seed):
    res = _run(domain, tasks.values(), user=user, seed=seed)
    passed = {t.task_id for t in res.trials if t.passed}
    failed = {t.task_id: (t.grade.failure if t.grade else t.error) for t in res.trials if not t.passed}
    assert all(t.termination_reason != "tool_bug" for t in res.trials)
    assert passed == set(tasks), failed


def test_confirmation_precedes_every_write_and_names_the_values(domain, tasks):
    res = _run(domain, [tasks["add-bags"], tasks["change-return-date"]])
    for trial in res.trials:
        msgs = trial.trajectory.messages
        for i, m in enumerate(msgs):
            for call in m.tool_calls:
                if call.name.startswith(("update_", "cancel_", "send_", "book_")):
                    user = next(x for x in reversed(msgs[:i]) if x.role == "user")
                    asked = next(x for x in reversed(msgs[:i]) if x.role == "assistant" and x.content)
                    assert user.content.startswith("Yes")
                    assert asks_confirmation(asked.content)
                    assert call.arguments["reservation_id"] in asked.content
    bags = next(t for t in res.trials if t.task_id == "add-bags").trajectory
    confirm = next(m.content for m in bags.messages if m.content and "(yes/no)" in m.content)
    # silver member, economy, 1 passenger: 2 free bags; 1 + 2 = 3 bags, 1 non-free, $50, gift card 9421312
    assert "3 checked bags" in confirm and "$50" in confirm and "gift card" in confirm


def test_refusals_write_nothing_and_give_the_rule(domain, tasks):
    ids = ["refuse-cancel-economy-no-insurance", "refuse-change-basic-economy-flights", "refuse-add-passenger",
           "refuse-other-users-reservation", "refuse-compensation-regular-economy"]
    res = _run(domain, [tasks[i] for i in ids])
    rules = {"refuse-cancel-economy-no-insurance": "no travel insurance",
             "refuse-change-basic-economy-flights": "basic economy flights can never be changed",
             "refuse-add-passenger": "number of passengers",
             "refuse-other-users-reservation": "does not belong to your profile",
             "refuse-compensation-regular-economy": "no compensation"}
    for trial in res.trials:
        assert trial.passed, trial.grade
        assert not [c for c in trial.trajectory.tool_calls if c.kind == "write"]
        assert any(rules[trial.task_id] in t for t in trial.trajectory.agent_texts()), trial.task_id
        assert trial.termination_reason == "user_stop"


def test_transfers_what_no_tool_can_do(domain, tasks):
    res = _run(domain, [tasks["transfer-lost-bag"], tasks["transfer-cancel-partly-flown"]])
    for trial in res.trials:
        assert trial.passed and trial.termination_reason == "agent_transfer"
        assert trial.trajectory.tool_calls[0].name == "get_user_details"


def test_same_seed_same_conversation(domain, tasks):
    a = _run(domain, [tasks["multi-change-date-and-bags"]], faults={"repeat_question": 0.5}, seed=3)
    b = _run(domain, [tasks["multi-change-date-and-bags"]], faults={"repeat_question": 0.5}, seed=3)
    ta, tb = a.trials[0].trajectory, b.trials[0].trajectory
    assert [m.model_dump_json() for m in ta.messages] == [m.model_dump_json() for m in tb.messages]
    assert ta.agent_metadata == tb.agent_metadata and ta.agent_metadata["faults"]
    c = _run(domain, [tasks["multi-change-date-and-bags"]], faults={"repeat_question": 0.5}, seed=4)
    assert c.trials[0].trajectory.agent_metadata != ta.agent_metadata  # other draws (checked by hand: differ)


def test_skip_confirmation_fails_the_process_grade(domain, tasks):
    task = tasks["add-bags"].model_copy(deep=True)
    task.process.confirm_writes = True
    clean = _run(domain, [task])
    assert clean.trials[0].passed
    faulty = _run(domain, [task], faults={"skip_confirmation": 1.0})
    trial = faulty.trials[0]
    assert not trial.passed and not trial.grade.process.passed
    assert trial.grade.state.passed  # the write itself is the right one
    assert [f["fault"] for f in trial.trajectory.agent_metadata["faults"]] == ["skip_confirmation"]


def test_wrong_item_fails_the_state(domain, tasks):
    trial = _run(domain, [tasks["add-bags"]], faults={"wrong_item": 1.0, "skip_confirmation": 1.0}).trials[0]
    assert not trial.grade.state.passed
    write = next(c for c in trial.trajectory.tool_calls if c.kind == "write")
    assert write.arguments["total_baggages"] == 4  # one more than the 1 + 2 asked for


def test_repeat_call_is_a_loop(domain, tasks):
    trial = _run(domain, [tasks["cancel-within-24-hours"]], faults={"repeat_call": 1.0}).trials[0]
    assert not trial.passed and not trial.grade.loops.passed
    names = [c.name for c in trial.trajectory.tool_calls]
    assert names[:4] == ["get_user_details"] * 4


def test_early_transfer_ends_before_trying(domain, tasks):
    trial = _run(domain, [tasks["cancel-business-change-of-plans"]], faults={"early_transfer": 1.0}).trials[0]
    assert trial.termination_reason == "agent_transfer" and not trial.passed
    assert [c.name for c in trial.trajectory.tool_calls] == ["get_user_details", "transfer_to_human_agents"]


def test_forget_constraint_ignores_the_named_payment(domain, tasks):
    # Fionn Galloway pays with the gift card; forgetting it, the agent takes his Amex card instead.
    trial = _run(domain, [tasks["multi-change-date-and-bags"]],
                 faults={"forget_constraint": 1.0, "skip_confirmation": 1.0}).trials[0]
    assert not trial.grade.state.passed
    writes = [c for c in trial.trajectory.tool_calls if c.kind == "write"]
    assert writes and writes[0].arguments["payment_id"] == "credit_card_7615094"


def test_repeat_question_reasks_given_values(domain, tasks):
    trial = _run(domain, [tasks["cancel-within-24-hours"]], faults={"repeat_question": 1.0}).trials[0]
    texts = trial.trajectory.agent_texts()
    reasks = [t for t in texts if t.startswith("Sorry, could you")]
    assert len(reasks) == len(trial.trajectory.agent_metadata["faults"]) >= 2
    assert all(f["fault"] == "repeat_question" for f in trial.trajectory.agent_metadata["faults"])


def test_unknown_knob_is_a_domain_error(domain, tasks):
    ctx = TrialContext(task=tasks["add-bags"], tools=[], policy="", seed=1, rng=np.random.default_rng(1),
                       domain="airline")
    with pytest.raises(DomainError, match="unknown fault knob"):
        domain.reference_agent(ctx, {"typo": 0.5})
    with pytest.raises(DomainError, match=r"\[0, 1\]"):
        domain.reference_agent(ctx, {"wrong_item": 1.5})
    assert isinstance(domain.reference_agent(ctx, dict.fromkeys(KNOBS, 0.0)), AirlineReferenceAgent)


def test_agent_never_reads_the_gold(domain, tasks):
    """The same conversation with the gold actions and outputs removed from the task."""
    task = tasks["change-return-date"]
    blind = task.model_copy(update={"gold_actions": [], "required_outputs": []})
    a = _run(domain, [task]).trials[0].trajectory.messages
    b = _run(domain, [blind]).trials[0].trajectory.messages
    assert [m.model_dump() for m in a] == [m.model_dump() for m in b]


# ------------------------------------------------------------------------------------------------ understanding
@pytest.mark.parametrize(("text", "kinds"), [
    ("I want compensation because my flight was cancelled by the airline", ["compensation"]),
    ("please cancel reservation FFVX16, my plans changed", ["cancel"]),
    ("I'd like two more checked bags on IT03XM", ["bags"]),
    ("move reservation CAPKYS from basic economy to economy on the same flights", ["cabin"]),
    ("come back on May 28 instead of May 25", ["change_flights"]),
    ("add my colleague Wendell Okonkwo to reservation SHWIH0", ["add_passenger"]),
    ("Wendell Kaur can no longer travel; Malak Valdivia will fly in his place", ["passengers"]),
    ("one of my bags never arrived", ["transfer"]),
    ("what is my gift card balance", ["info"]),
    ("I need a one-way flight in economy from Albuquerque to Portland on May 19", ["book"]),
    ("how much will be refunded?", ["info"]),
    ("what are the details of reservation 4YBNIY?", ["details"]),
    # a cabin named as a field's value is no request to change a cabin (a verbose persona restating a booking)
    ("then pay with the larger certificate. Cabin: business. Passengers: myself.", []),
    ("As for the origin: Kansas City. For the cabin, business. Baggage: 2.", []),
    ("I'd like to upgrade the cabin on reservation CAPKYS", ["cabin"]),
    ("can you change the cabin of my reservation", ["cabin"]),
])
def test_intents(text, kinds):
    assert nl.intents_in(text) == kinds


def test_values_from_plain_english():
    assert nl.dates_in("come back on May 28, 2024 instead of May 25") == ["2024-05-28", "2024-05-25"]
    assert nl.dates_in("tomorrow, May 16, born 1979-02-11") == ["2024-05-16"]
    assert nl.reservation_ids("flight HAT001 on reservation 3o7jl7 and CAPKYS") == ["3O7JL7", "CAPKYS"]
    assert nl.user_id_in("My user id is fionn_galloway_8894.") == "fionn_galloway_8894"
    assert nl.bag_request("bring two more", 1) == 3 and nl.bag_request("three bags instead of one", 1) == 3
    assert nl.target_cabin("from business to economy", "business") == "economy"
    assert nl.reason_in("she is ill") == "health" and nl.reason_in("my plans have changed") == "change_of_plans"
    methods = {"credit_card_1": {"source": "credit_card", "brand": "mastercard", "last_four": "4869", "id": "c1"},
               "gift_card_1": {"source": "gift_card", "amount": 10, "id": "g1"},
               "gift_card_2": {"source": "gift_card", "amount": 20, "id": "g2"}}
    assert nl.find_payment("the Mastercard", methods) == ["credit_card_1"]
    assert nl.find_payment("card ending in 4869", methods) == ["credit_card_1"]
    assert nl.find_payment("the gift card I paid with", methods, ["gift_card_2"]) == ["gift_card_2"]


def test_repeat_question_makes_abandoners_abandon(domain, tasks):
    """With re-asks drawn at 0.5, the abandoner persona gives up on many tasks, the cooperative one on none."""
    from personas.loader import load_personas

    counts = {}
    for persona in load_personas(["cooperative", "abandoner"]):
        base = rule_user_factory(domain, domain.template())

        def users(ctx: TrialContext, persona: Any = persona, base: Any = base) -> Any:
            ctx.persona = persona
            return base(ctx)

        cfg = RunSpec(domain="airline", trials=1, concurrency=2, seed=0)
        agent = lambda ctx: domain.reference_agent(ctx, {"repeat_question": 0.5})  # noqa: E731
        res = Runner(domain, domain.template(), list(tasks.values()), agent, users, cfg).run()
        counts[persona.name] = res.termination_reasons.get("user_abandon", 0)
    assert counts["cooperative"] == 0
    assert counts["abandoner"] >= 8, counts


class PlainUser:
    """Says the given lines in order (a person typing plain English); the last one stops."""

    def __init__(self, lines: Sequence[str]):
        self.lines = list(lines)

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        line = self.lines.pop(0)
        return UserTurn(content=line, stop=not self.lines)


@pytest.mark.parametrize(("task_id", "lines", "asked"), [
    ("cancel-within-24-hours",
     ["hey there, i need to cancel a flight", "sure, it's hamid_navarro_4958", "ffvx16", "my plans changed",
      "yes please", "no thanks, bye"],
     ["user id", "reservation id", "reason", "(yes/no)", "anything else"]),
    ("add-bags",
     # his only card or gift card is the gift card: no question, the confirmation names it
     ["Can I add 2 more suitcases to my booking MZU13P? I'm ulrich_cardenas_5707", "yep", "that's all"],
     ["gift card gift_card_9421312", "anything else"]),
    ("change-return-date",
     # return moved 2024-05-25 -> 2024-05-28 on HAT015: (179 - 139) x 2 passengers = $80, on his only card
     ["Hi, I'm eero_cardenas_5569. On 73LF7K I'd like to fly back on the 28th of May instead, same flight",
      "yes", "nope, thanks"],
     ["hat015 stl-msp on 2024-05-28; you pay $80 more, charged to mastercard", "anything else"]),
])
def test_plain_english_conversations(domain, tasks, task_id, lines, asked):
    cfg = RunSpec(domain="airline", trials=1, concurrency=1, seed=0)
    res = Runner(domain, domain.template(), [tasks[task_id]], lambda ctx: domain.reference_agent(ctx, {}),
                 lambda ctx: PlainUser(lines), cfg).run()
    trial = res.trials[0]
    texts = trial.trajectory.agent_texts()
    assert [a for a, t in zip(asked, texts, strict=True) if a not in t.lower()] == [], texts
    assert trial.passed, trial.grade


def test_agendas_say_only_what_the_user_knows(tasks):
    """Every id, flight number, payment id, amount and date in an agenda is in the task's instructions or
    known_info; no required output (an amount the agent must find) appears in it."""
    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [str(value)] if value is not None else []

    token = re.compile(r"\b(?:[A-Z0-9]{6}|HAT\d{3}|[a-z]+_[a-z_]*\d{4,}|\d{4}-\d{2}-\d{2}|\d{3,})\b")
    for task in tasks.values():
        scenario = task.scenario
        assert scenario.identity and scenario.agenda, task.id
        known = scenario.instructions + " " + " ".join(strings(scenario.known_info))
        said = strings(scenario.identity) + strings([i.model_dump() for i in scenario.agenda])
        for text in said:
            for tok in token.findall(text):
                assert tok in known, (task.id, tok)
            for out in task.required_outputs:
                assert not re.search(rf"(?<![\d.]){re.escape(out)}(?![\d.])", text), (task.id, out)


def test_report_states_the_gift_card_balance_after_the_charge(domain, tasks):
    """add-bags: $50 for the extra bag from gift_card_9421312, which holds $109 in the built-in data (by hand:
    the user's profile); the report must say $59 is left, not repeat the $109 of the confirmation."""
    trial = _run(domain, [tasks["add-bags"]]).trials[0]
    done = [m for m in trial.trajectory.agent_texts() if m.startswith("Done:")]
    assert trial.passed and done, trial.trajectory.agent_texts()
    assert "$50 was charged to gift card gift_card_9421312 (balance now $59)" in done[0]
    with domain.template().trial() as db:
        before = domain.dump(db)["users"]["ulrich_cardenas_5707"]["payment_methods"]["gift_card_9421312"]
    assert before["amount"] == 109

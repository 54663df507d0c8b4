"""The rule-based user plays every tau2 suite: a scenario read from the instruction.

Domains without a derivation of their own (airline, mock, banking_knowledge) get one from the instruction by general
rules (:mod:`simulator.world.instructions`); retail's own derivation takes the user from the gold actions when a tau2
task names none (telecom's own derivation is tested in test_rule_user_tools.py). Each suite's test runs the oracle
with the rule user on a few of its train tasks (mock has only ``base``, banking_knowledge no split); the full-suite
figures are in the branch report, not here.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator import RunSpec, Task, UserScenario, get_domain
from simulator.errors import DomainError
from simulator.execution.build import build_runner
from simulator.world.instructions import derive_instruction_scenario, first_person, identity_facts, user_goal
from simulator.world.tau2_tasks import render_instructions
from tests._support.peers import TAU2, needs_tau2


def _task(instructions: str) -> Task:
    return Task(id="hand", scenario=UserScenario(instructions=instructions))


def test_a_hand_written_tau2_style_task_in_other_words_is_derived() -> None:
    text = render_instructions({
        "domain": "bookshop",
        "reason_for_call": "You would like to return the cookbook from your last delivery.\nYou are in a hurry.",
        "known_info": "Your full name is Ada Lovelace Byron. Your user id: ada_byron_42. "
                      "Your zip code is 02139 and your phone number is +1 617 555 0101.",
        "unknown_info": "You do not remember your order number.",
        "task_instructions": "Be brief.",
    }, persona="Terse.")
    scenario = derive_instruction_scenario(_task(text))
    # the facts the known info states (checked by hand against the text above), nothing else
    assert scenario.identity == {"user_id": "ada_byron_42", "name": "Ada Lovelace Byron", "first_name": "Ada",
                                 "last_name": "Byron", "zip": "02139", "phone_number": "+1 617 555 0101"}
    [intent] = scenario.agenda
    assert intent.request == ["return the cookbook from my last delivery"]
    assert intent.slots == {"user_id": "ada_byron_42"}  # no order id: the user does not know it


def test_a_plain_instruction_and_its_ids() -> None:
    scenario = derive_instruction_scenario(_task(
        "Your user id is kim_ng_77. You need to move your booking XK42PQ to the next day because your meeting moved. "
        "If asked, you are fine with paying the difference."))
    assert scenario.identity["user_id"] == "kim_ng_77" and scenario.identity["name"] == "Kim Ng"
    assert scenario.agenda[0].request == ["move my booking XK42PQ to the next day because my meeting moved"]
    assert scenario.agenda[0].slots["reservation_id"] == "XK42PQ"


@pytest.mark.parametrize(("text", "goal"), [
    ("Your goal is to mark an existing task as completed.", "mark an existing task as completed"),
    ("Request that task_9 be archived.", "have task_9 archived"),
    ("Ask for a refund of your last order.", "get a refund of my last order"),
    ("Tell the agent you have finished the report.", "let you know that I have finished the report"),
    ("I am upset about a delay.", "get help: I am upset about a delay"),
    ("", None),
])
def test_user_goal(text: str, goal: str | None) -> None:
    assert user_goal(text) == goal


def test_second_person_becomes_first_person() -> None:
    assert first_person("the airline allows you to take your bags with you") == \
        "the airline allows me to take my bags with me"


def test_identity_facts_with_several_emails() -> None:
    facts = identity_facts("You are Li Wei, emails li@example.com and wei@example.org.")
    assert facts["email"] == "li@example.com" and facts["emails"] == "li@example.com, wei@example.org"


def test_an_instruction_without_a_request_is_refused() -> None:
    with pytest.raises(DomainError, match="says nothing the user wants"):
        derive_instruction_scenario(_task(""))


def _run(domain: str, agent: str, task_ids: list[str], split: str | None = "base") -> Any:
    folder = TAU2 / domain
    spec = RunSpec.model_validate({
        "domain": domain, "data_dir": str(folder), "tasks": str(folder / "tasks.json"), "split": split,
        "task_ids": task_ids, "agent": agent, "user": "rule", "options": {"mode": "tau2"} if domain in (
            "retail", "airline") else {}})
    return build_runner(spec).run()


# a few train tasks per suite (tau2's split_tasks.json "train"; mock has only "base"), picked to cover a plain
# cancellation, a refusal, several requests, a transfer, and user-side tool calls
SAMPLES = {
    "airline": ["0", "3", "7", "9", "20"],
    "retail": ["6", "22", "35", "78", "83"],
    "mock": ["create_task_1", "update_task_1", "update_task_with_user_tools", "impossible_task_1"],
    "banking_knowledge": ["task_015", "task_017"],  # tools the agent gives the user, called in call notation
}


@needs_tau2
@pytest.mark.parametrize("domain", sorted(SAMPLES))
def test_oracle_with_rule_user_passes_train_samples(domain: str) -> None:
    split = {"mock": "base", "banking_knowledge": None}.get(domain, "train")
    train = {t.id for t in get_domain(domain).load_tasks(str(TAU2 / domain / "tasks.json"), split=split)}
    assert set(SAMPLES[domain]) <= train
    res = _run(domain, "oracle", SAMPLES[domain], split)
    failed = [(t.task_id, str(t.termination_reason), t.error) for t in res.trials if not t.passed]
    assert len(res.trials) == len(SAMPLES[domain]) and not failed


@needs_tau2
def test_reference_agent_with_rule_user_finishes_retail_tasks_naming_no_user() -> None:
    """tau2 retail tasks name no user id: the user comes from the gold actions, so the user can identify itself
    (these tasks hit the turn cap when it could not: "You are mei_kovacs_8020 living in zipcode 28236")."""
    res = _run("retail", "reference", ["6", "7", "43", "46", "50"], "train")
    assert [str(t.termination_reason) for t in res.trials].count("max_turns") == 0

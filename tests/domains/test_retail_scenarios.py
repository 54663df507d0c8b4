"""Derived rule-user scenarios for tau-bench retail tasks (domains/retail/scenarios.py).

The peer data (../shared/peers/tau-bench/retail) is read at run time; every test here skips when it is absent.
Expected values of the hand-checked tasks were written from the peer's data files (users.json, orders.json,
products.json) and the task instructions, not from the derivation's output. The leak check builds its id sets
straight from the JSON files, independently of the derivation and of our loader.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from domains.retail import RetailDomain
from domains.retail.scenarios import WRITE_TOOLS, derive_retail_scenario, render_address
from simulator.types.tasks import Intent, Task, UserScenario, load_tasks
from simulator.world.database import TemplateDatabase

SPLITS = ("train", "dev", "test")
KINDS = {"cancel", "return", "exchange", "modify_items", "modify_address", "modify_payment",
         "modify_user_address", "info", "transfer"}


@pytest.fixture(scope="module")
def domain() -> RetailDomain:
    return RetailDomain()


@pytest.fixture(scope="module")
def template(domain: RetailDomain, retail_peer_dir: Path) -> TemplateDatabase:
    return domain.template(retail_peer_dir / "data")


@pytest.fixture(scope="module")
def peer_ids(retail_peer_dir: Path) -> dict[str, set[str]]:
    """Every id of the peer data, by kind, read straight from the JSON files."""
    data = retail_peer_dir / "data"
    users = json.loads((data / "users.json").read_text())
    orders = json.loads((data / "orders.json").read_text())
    products = json.loads((data / "products.json").read_text())
    items = {iid for p in products.values() for iid in p["variants"]}
    items |= {it["item_id"] for o in orders.values() for it in o["items"]}
    return {
        "item": items,
        "product": set(products) | {it["product_id"] for o in orders.values() for it in o["items"]},
        "payment method": {pid for u in users.values() for pid in u["payment_methods"]},
        "user": set(users),
        "order": set(orders),
    }


def tasks_of(peer_dir: Path, split: str) -> list[Task]:
    path = peer_dir / f"tasks_{split}.json"
    if not path.is_file():
        pytest.skip(f"tau-bench retail tasks_{split}.json not found at {peer_dir}")
    return load_tasks(path)


def walk(intents: list[Intent]) -> list[Intent]:
    """The intents with their fallbacks, flattened."""
    out: list[Intent] = []
    for i in intents:
        while i is not None:
            out.append(i)
            i = i.fallback
    return out


def user_facing(scenario: UserScenario) -> str:
    """Everything the rule-based user may say: identity and agenda, as JSON (the instruction excluded)."""
    return json.dumps({"identity": scenario.identity, "agenda": [i.model_dump() for i in scenario.agenda]})


# --- every peer task --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("split", SPLITS)
def test_every_peer_task_derives_a_playable_scenario(split: str, retail_peer_dir: Path,
                                                     template: TemplateDatabase) -> None:
    tasks = tasks_of(retail_peer_dir, split)
    incomplete: dict[str, tuple[str, ...]] = {}
    for task in tasks:
        derivation = derive_retail_scenario(task, template)
        scenario = derivation.scenario
        assert scenario.instructions == task.scenario.instructions
        assert scenario.agenda, f"task {task.id}: empty agenda"
        assert scenario.identity, f"task {task.id}: no identity"
        intents = walk(scenario.agenda)
        assert all(i.kind in KINDS and i.request and all(r.strip() for r in i.request) for i in intents), task.id
        # One intent (or fallback) per write gold action, counted independently of how they were grouped.
        writes = [a for a in task.gold_actions if a.name in WRITE_TOOLS]
        assert sum(1 for i in intents if i.kind not in ("info",)) == len(writes) or (
            not writes and [i.kind for i in intents] == ["info"]), f"task {task.id}"
        # Every required output is asked for by some info intent (or the gap is reported).
        if task.required_outputs and not any(i.kind == "info" for i in intents):
            assert any(g.startswith("info:") for g in derivation.gaps), task.id
        if derivation.gaps:
            incomplete[task.id] = derivation.gaps
    # Reported figure (see the H4 report): train 0/500, dev 1/20, test 7/115 tasks with gaps. A regression guard:
    # at most a tenth of the tasks may be incomplete.
    print(f"{split}: {len(incomplete)} of {len(tasks)} tasks with gaps: {incomplete}")
    assert len(incomplete) <= len(tasks) // 10


@pytest.mark.parametrize("split", SPLITS)
def test_no_id_or_answer_the_instruction_does_not_give(split: str, retail_peer_dir: Path,
                                                        template: TemplateDatabase,
                                                        peer_ids: dict[str, set[str]]) -> None:
    tasks = tasks_of(retail_peer_dir, split)
    all_ids = {i: kind for kind, ids in peer_ids.items() for i in ids}
    checked = 0
    for task in tasks:
        scenario = derive_retail_scenario(task, template).scenario
        said = user_facing(scenario)
        instruction = task.scenario.instructions
        # Candidate tokens: digit runs (item/product ids, order numbers), #W order ids, snake_case ids.
        tokens = set(re.findall(r"#W\d+|\d{6,}|[a-z]+(?:_[a-z]+)+_\d+", said))
        for token in tokens:
            kind = all_ids.get(token)
            if kind is None and token.isdigit():
                kind = "order" if f"#W{token}" in peer_ids["order"] else None
            if kind is not None:
                assert token.lstrip("#W") in instruction, f"task {task.id}: {kind} id {token} not in the instruction"
                checked += 1
        for email in re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", said):
            assert email.lower() in instruction.lower(), f"task {task.id}: e-mail {email} not in the instruction"
        for output in task.required_outputs:  # the answers the agent must find: never pre-told to the user
            if re.fullmatch(r"[\d,.]+", output) and output not in instruction:
                assert not re.search(rf"(?<![\d.]){re.escape(output)}(?![\d])", said), (task.id, output)
    assert checked > 0 or split != "test"  # the test split gives order ids in some instructions: the scan saw them


@pytest.mark.parametrize("split", SPLITS)
def test_no_secret_of_the_leak_guard_in_the_agenda(split: str, retail_peer_dir: Path, domain: RetailDomain,
                                                   template: TemplateDatabase) -> None:
    """Second, independent check: the LLM user's leak guard (H3's ``task_secrets``, computed from the gold
    actions and outputs against the instruction alone) finds none of its secrets in what the rule user says."""
    leak = pytest.importorskip("simulator.users._leak")
    tools = domain.toolbox().schemas()
    found: dict[str, list[str]] = {}
    for task in tasks_of(retail_peer_dir, split):
        secrets = leak.task_secrets(task, "", task.scenario, tools=tools)
        hits = leak.SecretMatcher(secrets).find(user_facing(derive_retail_scenario(task, template).scenario))
        if hits:
            found[task.id] = [h.value for h in hits]
    assert not found


def test_a_planted_item_id_is_caught_by_the_scan(peer_ids: dict[str, set[str]]) -> None:
    """The leak scan's token pattern does find the ids it looks for (so the test above can fail)."""
    said = json.dumps({"items": ["mechanical keyboard 1151293680"], "payment": "credit_card_9513926"})
    tokens = set(re.findall(r"#W\d+|\d{6,}|[a-z]+(?:_[a-z]+)+_\d+", said))
    assert {"1151293680", "credit_card_9513926"} <= tokens
    assert "1151293680" in peer_ids["item"] and "credit_card_9513926" in peer_ids["payment method"]


# --- hand-checked tasks (test split) ----------------------------------------------------------------------------

def test_task(retail_peer_dir: Path, template: TemplateDatabase, index: int) -> tuple[UserScenario, tuple[str, ...]]:
    task = tasks_of(retail_peer_dir, "test")[index]
    d = derive_retail_scenario(task, template)
    return d.scenario, d.gaps


test_task.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def test_task_0_exchange_of_two_items_in_a_named_order(retail_peer_dir: Path, template: TemplateDatabase) -> None:
    # Yusuf Rossi, 19122, order #W2378156 (delivered): Mechanical Keyboard (linear, RGB, full size) and Smart
    # Thermostat (Apple HomeKit, black) -> keyboard 7706410293 (clicky, backlight none, full size) and
    # thermostat 7747408585 (Google Assistant, black); one mastercard, its digits not in the instruction.
    # clicky + RGB + full size exists (9025753381) but is not the gold item, so "backlight: none" must be told.
    s, gaps = test_task(retail_peer_dir, template, 0)
    assert s.identity == {"first_name": "Yusuf", "last_name": "Rossi", "name": "Yusuf Rossi", "zip": "19122"}
    assert len(s.agenda) == 1 and not gaps
    x = s.agenda[0]
    assert x.kind == "exchange"
    assert x.slots["order_id"] == "#W2378156"
    assert x.slots["items"] == ["mechanical keyboard", "smart thermostat"]
    assert x.slots["payment"] == "credit card"
    assert x.preferences == {"switch type": "clicky", "backlight": "none", "compatibility": "Google Assistant"}
    assert {"#W2378156", "clicky", "none", "Google Assistant", "credit card"} <= set(x.confirm_terms)


def test_task_16_two_cancels_a_return_and_a_question(retail_peer_dir: Path, template: TemplateDatabase) -> None:
    # Fatima Johnson, 78712; no order id in the instruction. Pending #W5199551 (hiking boots, action camera,
    # electric kettle, cycling helmet, wristwatch) and #W8665881 (bluetooth speaker, smart watch, dumbbell set,
    # espresso machine, action camera) cancelled as "no longer needed"; from delivered #W9389413 the smart
    # watch (gold, metal band, AMOLED; her other smart watch is gold, leather, LCD) returned to PayPal; then
    # the total refund (output 8276.23) asked for.
    s, gaps = test_task(retail_peer_dir, template, 16)
    assert s.identity == {"first_name": "Fatima", "last_name": "Johnson", "name": "Fatima Johnson", "zip": "78712"}
    assert [i.kind for i in s.agenda] == ["cancel", "cancel", "return", "info"] and not gaps
    c1, c2, r, q = s.agenda
    assert c1.slots == {"items": ["hiking boots", "action camera", "electric kettle", "cycling helmet",
                                  "wristwatch"], "reason": "no longer needed"}
    assert c2.slots == {"items": ["bluetooth speaker", "smart watch", "dumbbell set", "espresso machine",
                                  "action camera"], "reason": "no longer needed"}
    assert r.slots == {"items": ["smart watch (band material: metal, display: AMOLED)"], "payment": "paypal"}
    assert q.ask is not None and "total amount" in q.ask and "get back" in q.ask
    assert "8276.23" not in user_facing(s)


def test_task_17_suite_change_keeps_the_rest_of_the_address(retail_peer_dir: Path,
                                                           template: TemplateDatabase) -> None:
    # Order #W8665881 ships to 123 Elm Street, Suite 640, Austin, TX 78712, USA; the instruction gives only the
    # new suite, so the user says only that (the street and city are values the instruction does not give).
    s, gaps = test_task(retail_peer_dir, template, 17)
    assert len(s.agenda) == 1 and not gaps
    x = s.agenda[0]
    assert x.kind == "modify_address" and x.slots["order_id"] == "#W8665881"
    assert x.slots["address"] == "Suite 641 (the rest of the address stays the same)"
    assert {"#W8665881", "Suite 641"} <= set(x.confirm_terms)
    assert "Elm Street" not in user_facing(s) and "Austin" not in user_facing(s)


def test_task_22_address_given_in_full_then_named_by_where_it_is(retail_peer_dir: Path,
                                                                 template: TemplateDatabase) -> None:
    # Ethan Garcia, Denver 80280: user address and the pending order #W9911714 to "101 Highway, New York, 10001"
    # (state NY and country USA follow), then the user address back to the original (667 Highland Drive,
    # Suite 865, Denver, CO 80280): not given by the instruction, so only named, and a confirmation must name
    # the parts the instruction does give (Denver, 80280).
    s, gaps = test_task(retail_peer_dir, template, 22)
    assert not gaps
    assert [i.kind for i in s.agenda] == ["modify_user_address", "modify_address", "modify_user_address"]
    new = {"address1": "101 Highway", "address2": "", "city": "New York", "country": "USA", "state": "NY",
           "zip": "10001"}
    assert s.agenda[0].slots == {"address": new}
    assert s.agenda[1].slots["address"] == new and "order_id" not in s.agenda[1].slots
    back = s.agenda[2]
    assert "address" not in back.slots and set(back.confirm_terms) == {"Denver", "80280"}
    assert "Highland" not in user_facing(s)


def test_task_114_cancel_all_pending_without_order_ids(retail_peer_dir: Path, template: TemplateDatabase) -> None:
    # Yara Muller, 85041: pending #W5056519 (makeup kit) and #W5995614 (dumbbell set, luggage set), reason
    # "ordered by mistake"; the instruction names no order id, so none is given to the user.
    s, gaps = test_task(retail_peer_dir, template, 114)
    assert s.identity == {"first_name": "Yara", "last_name": "Muller", "name": "Yara Muller", "zip": "85041"}
    assert not gaps
    assert [(i.kind, i.slots) for i in s.agenda] == [
        ("cancel", {"items": ["makeup kit"], "reason": "ordered by mistake"}),
        ("cancel", {"items": ["dumbbell set", "luggage set"], "reason": "ordered by mistake"}),
    ]
    assert "#W" not in user_facing(s)


def test_task_13_refund_retried_to_another_method_is_a_fallback(retail_peer_dir: Path,
                                                               template: TemplateDatabase) -> None:
    # Gold: return three items of #W5490111 to PayPal (not the original method: the tool refuses), then the same
    # items to the credit card. The user wants PayPal first and accepts the card otherwise.
    s, _ = test_task(retail_peer_dir, template, 13)
    assert s.identity["email"] == "mia.garcia2723@example.com" and s.identity["user_id"] == "mia_garcia_4516"
    assert len(s.agenda) == 1
    first = s.agenda[0]
    assert first.kind == "return" and first.slots["payment"] == "paypal"
    assert first.fallback is not None and first.fallback.slots["payment"] == "credit card"
    assert first.fallback.slots["items"] == first.slots["items"]


# --- the domain hook and helpers --------------------------------------------------------------------------------

def test_domain_hook_keeps_an_existing_agenda(domain: RetailDomain, template: TemplateDatabase) -> None:
    own = UserScenario(instructions="x", identity={"email": "a@b.c"},
                       agenda=[Intent(kind="info", request=["what is my balance"], ask="what is my balance")])
    task = Task(id="t", user_id="nobody", scenario=own)
    assert domain.derive_scenario(task, template) is own


def test_domain_hook_derives_for_a_peer_task(domain: RetailDomain, retail_peer_dir: Path,
                                             template: TemplateDatabase) -> None:
    task = tasks_of(retail_peer_dir, "test")[114]
    derived = domain.derive_scenario(task, template)
    assert derived.agenda and derived.agenda[0].kind == "cancel"
    assert task.scenario.agenda == []  # the task itself is not modified


def test_render_address() -> None:
    a: dict[str, Any] = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "zip": "78701",
                         "country": "USA"}
    assert render_address(a) == "1 Main St, Austin, TX 78701, USA"
    assert render_address(a | {"address2": "Apt 2"}) == "1 Main St, Apt 2, Austin, TX 78701, USA"


# --- end to end: RuleUser (cooperative) vs the retail reference agent on the 115 test and 500 train tasks ----------

# Sanity floor for pass^1 (seed 0, one trial). Measured on 2026-11-30: 0.57 (65/115) with the reference agent and
# RuleUser of the first full versions; 0.30 with their first drafts, whose conversations broke down on one in two
# tasks (agent loops on "which order?", the user not answering); 0.93 (107/115) once the agent understood
# addresses named by another order or the profile, partial addresses, "the order I most recently placed", totals
# asked after several actions and products named twice (train split: 0.94, 469/500). The floor sits well below
# the last figure: it fails when the two sides stop understanding each other (a regression of one of those
# capabilities costs 5-15 tasks), not on a few tasks lost to a change of either side.
PASS_FLOOR = 0.75
TRAIN_PASS_FLOOR = 0.85


@pytest.mark.parametrize(("split", "floor"), [("test", PASS_FLOOR), ("train", TRAIN_PASS_FLOOR)])
def test_rule_user_plays_a_split_against_the_reference_agent(retail_peer_dir: Path, domain: RetailDomain,
                                                                   template: TemplateDatabase, split: str,
                                                                   floor: float) -> None:
    import collections
    import importlib.util

    for module in ("simulator.users.rule_user", "domains.retail.reference_agent"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not present")
    from simulator.agents import agent_factory
    from simulator.execution.runner import Runner
    from simulator.types.spec import RunSpec
    from simulator.users import user_factory

    tasks = tasks_of(retail_peer_dir, split)
    assert len(tasks) == {"test": 115, "train": 500}[split]
    config = RunSpec(domain="retail", data_dir=str(retail_peer_dir / "data"), options={"mode": "tau-bench"},
                       tasks=str(retail_peer_dir / f"tasks_{split}.json"), agent="reference", user="rule", trials=1)
    runner = Runner(domain, template, tasks, agent_factory("reference", domain=domain),
                    user_factory("rule", domain=domain, template=template), config)
    result = runner.run()
    trials = result.trials
    assert len(trials) == len(tasks)
    endings = collections.Counter(str(t.termination_reason) for t in trials)
    grades = {t.task_id: (t.grade.model_dump() if t.grade is not None else {}) for t in trials}
    failed_parts = collections.Counter(
        name for t in trials if not t.passed for name in ("state", "outputs", "process", "loops", "budget")
        if isinstance(grades[t.task_id].get(name), dict) and grades[t.task_id][name].get("passed") is False)
    pass1 = sum(t.passed for t in trials) / len(trials)
    print(f"pass^1 {pass1:.3f}; terminations {dict(endings)}; failed components {dict(failed_parts)}")
    crashed = {t.task_id: (t.error or "").strip().splitlines()[-1:] for t in trials
               if t.error or str(t.termination_reason) in ("agent_error", "user_error", "tool_bug")}
    assert not crashed, f"crashes or tool bugs: {crashed}"
    assert pass1 >= floor


def test_unknown_user_order_and_items_give_gaps_not_errors(template: TemplateDatabase) -> None:
    from simulator.types.tasks import Action

    task = Task(id="odd", user_id="nobody_0000", scenario=UserScenario(instructions="You are Ann Lee in 12345. "
                "Return the lamp of order #W0000001."),
                gold_actions=[Action(name="return_delivered_order_items",
                                     arguments={"order_id": "#W0000001", "item_ids": ["4242"],
                                                "payment_method_id": "gift_card_1"}),
                              Action(name="transfer_to_human_agents", arguments={"summary": "x"})])
    d = derive_retail_scenario(task, template)
    assert d.scenario.identity == {"first_name": "Ann", "last_name": "Lee", "name": "Ann Lee", "zip": "12345"}
    assert [i.kind for i in d.scenario.agenda] == ["return", "transfer"]
    assert d.scenario.agenda[0].slots["order_id"] == "#W0000001"
    assert d.scenario.agenda[0].slots["payment"] == "gift card"
    assert any("not found" in g for g in d.gaps) and any("transfer" in g for g in d.gaps)
    assert "4242" not in user_facing(d.scenario)


def test_derivation_is_deterministic(retail_peer_dir: Path, template: TemplateDatabase) -> None:
    tasks = tasks_of(retail_peer_dir, "test")
    first = [derive_retail_scenario(t, template) for t in tasks[:40]]
    again = [derive_retail_scenario(t, template) for t in tasks[:40]]
    assert [d.scenario.model_dump_json() for d in first] == [d.scenario.model_dump_json() for d in again]

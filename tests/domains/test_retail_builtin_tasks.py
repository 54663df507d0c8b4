"""The built-in retail tasks: well-formed, grounded in the shipped data, and their gold actions do what we meant.

The expected diffs below were written by hand from domains/retail/data (seed 7), not copied from a replay:
each amount is derived in the comment next to it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simulator.execution.parity import ReplayResult, replay_tasks
from simulator.types.tasks import Task, load_tasks
from tests._support.task_checks import (
    assert_every_gold_action_succeeds,
    assert_no_change_without_a_write,
    assert_same_diff,
    assert_transfer_ends_the_replay,
)

ROOT = Path(__file__).resolve().parents[2]
RETAIL = ROOT / "domains" / "retail"
TASK_FILE = RETAIL / "tasks" / "builtin.json"

WRITE_TOOLS = {
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_pending_order_items",
    "modify_user_address",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
}
READ_TOOLS = {
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
    "get_product_details",
    "list_all_product_types",
    "calculate",
    "think",
}
ID_SLOTS = ("item ids", "product ids", "payment method ids")


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RETAIL / "data" / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return load_tasks(TASK_FILE)


@pytest.fixture(scope="module")
def db() -> dict[str, dict[str, Any]]:
    return {name: _load(f"{name}.json") for name in ("users", "orders", "products")}


# --------------------------------------------------------------------------------------------- static checks
def test_file_header_and_count(tasks: list[Task]) -> None:
    doc = json.loads(TASK_FILE.read_text(encoding="utf-8"))
    assert (doc["format"], doc["version"], doc["domain"]) == ("tausim.tasks", 1, "retail")
    assert len(tasks) >= 24
    assert len({t.id for t in tasks}) == len(tasks)


def test_every_write_tool_is_exercised(tasks: list[Task]) -> None:
    used = {a.name for t in tasks for a in t.gold_actions}
    assert WRITE_TOOLS <= used
    assert used <= WRITE_TOOLS | READ_TOOLS | {"transfer_to_human_agents"}


def test_task_kinds_are_covered(tasks: list[Task]) -> None:
    tags = {tag for t in tasks for tag in t.tags}
    assert {"cancel", "modify_items", "modify_payment", "modify_address", "modify_user_address", "return",
            "exchange", "refusal", "transfer", "multi_intent", "required_output"} <= tags
    multi = [t for t in tasks if "multi_intent" in t.tags]
    for t in multi:  # two or more requests, each on its own order (or the profile)
        targets = {a.arguments.get("order_id", "profile") for a in t.gold_actions if a.name in WRITE_TOOLS}
        mentioned = set(re.findall(r"#W\d{7}", t.scenario.instructions))
        assert len(targets) >= 2 or ("partial_refusal" in t.tags and len(mentioned) >= 2), t.id
    assert any(sum(a.name in WRITE_TOOLS for a in t.gold_actions) == 3 for t in multi)


def test_tags_agree_with_gold_actions(tasks: list[Task]) -> None:
    for t in tasks:
        writes = [a.name for a in t.gold_actions if a.name in WRITE_TOOLS]
        if "refusal" in t.tags:
            assert not writes, f"{t.id}: a refusal task must not write"
        if "transfer" in t.tags:
            assert t.gold_actions[-1].name == "transfer_to_human_agents", t.id
        else:
            assert all(a.name != "transfer_to_human_agents" for a in t.gold_actions), t.id
        if "required_output" in t.tags:
            assert t.required_outputs, t.id
        if "multi_intent" in t.tags:
            assert len(writes) >= (1 if "partial_refusal" in t.tags else 2), t.id
        elif "refusal" not in t.tags and "transfer" not in t.tags and "info" not in t.tags:
            assert writes, f"{t.id}: an action task needs a write"


def test_tasks_refer_to_existing_records(tasks: list[Task], db: dict[str, dict[str, Any]]) -> None:
    users, orders, products = db["users"], db["orders"], db["products"]
    item_ids = {iid for p in products.values() for iid in p["variants"]}
    for t in tasks:
        assert t.user_id in users, t.id
        user = users[t.user_id]
        for a in t.gold_actions:
            args = a.arguments
            if "user_id" in args:
                assert args["user_id"] == t.user_id, t.id
            if "order_id" in args and a.name in WRITE_TOOLS:
                assert orders[args["order_id"]]["user_id"] == t.user_id, (t.id, a.name)
            if "payment_method_id" in args:
                assert args["payment_method_id"] in user["payment_methods"], t.id
            if "product_id" in args:
                assert args["product_id"] in products, t.id
            for key in ("item_ids", "new_item_ids"):
                assert set(args.get(key, [])) <= item_ids, t.id
            if a.name == "find_user_id_by_email":
                assert args["email"] == user["email"], t.id
            if a.name == "find_user_id_by_name_zip":
                assert (args["first_name"], args["last_name"], args["zip"]) == (
                    user["name"]["first_name"], user["name"]["last_name"], user["address"]["zip"]), t.id
        # every order id the scenario mentions exists (it may belong to someone else: a refusal)
        text = t.scenario.instructions + json.dumps(t.scenario.known_info)
        for oid in re.findall(r"#W\d{7}", text):
            assert oid in orders, (t.id, oid)


def test_scenarios_are_well_formed(tasks: list[Task], db: dict[str, dict[str, Any]]) -> None:
    catalog_ids = set(db["products"]) | {i for p in db["products"].values() for i in p["variants"]}
    for t in tasks:
        sc = t.scenario
        assert sc.instructions.startswith("You are "), t.id
        known = sc.known_info
        assert "name" in known and ("email" in known or "zip" in known), t.id
        user = db["users"][t.user_id or ""]
        assert known["name"] == f"{user['name']['first_name']} {user['name']['last_name']}", t.id
        blob = json.dumps(known)
        assert not any(i in blob for i in catalog_ids), f"{t.id}: known_info must describe items, not ids"
        assert "_card_" not in blob and "paypal_" not in blob, f"{t.id}: no payment method ids in known_info"
        if any(a.name in ("modify_pending_order_items", "exchange_delivered_order_items",
                          "return_delivered_order_items") for a in t.gold_actions):
            assert "item ids" in sc.unknown_info, t.id
        # required outputs are never handed to the user
        for out in t.required_outputs:
            if re.fullmatch(r"[\d.]+", out):
                assert out not in blob and out not in sc.instructions, (t.id, out)


# --------------------------------------------------------------------------------------------- replay
def _retail_domain() -> Any:
    try:
        from domains.retail import RetailDomain
    except ImportError as e:  # pragma: no cover - only while the domain package is incomplete
        pytest.skip(f"retail domain not importable yet: {e}")
    return RetailDomain()


@pytest.fixture(scope="module")
def replays(tasks: list[Task]) -> dict[str, ReplayResult]:
    domain = _retail_domain()
    template = domain.template()
    return {r.task_id: r for r in replay_tasks(domain, template, tasks)}


def test_every_gold_action_succeeds(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_every_gold_action_succeeds(tasks, replays)


def test_no_change_without_a_write(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_no_change_without_a_write(tasks, replays, WRITE_TOOLS)


def test_transfer_ends_the_replay(tasks: list[Task], replays: dict[str, ReplayResult]) -> None:
    assert_transfer_ends_the_replay(tasks, replays)


def _orders(changed: dict[str, Any]) -> dict[str, Any]:
    return {"orders": {"added": {}, "removed": [], "changed": changed}}


def _users(changed: dict[str, Any]) -> dict[str, Any]:
    return {"users": {"added": {}, "removed": [], "changed": changed}}


def _pay(kind: str, amount: float, method: str) -> dict[str, Any]:
    return {"new": {"transaction_type": kind, "amount": amount, "payment_method_id": method}}


EXPECTED_DIFFS: dict[str, dict[str, Any]] = {
    # #W1773282: planter 23.84 + wool blanket 75.56 = 99.40, paid with credit_card_2668254 -> refunded in full.
    "cancel-no-longer-needed": _orders({"#W1773282": {
        "status": {"old": "pending", "new": "cancelled"},
        "payment_history[1]": _pay("refund", 99.40, "credit_card_2668254"),
        "cancel_reason": {"new": "no longer needed"},
    }}),
    # #W2148336 total 465.40 paid by gift_card_1634241 (balance 176.91): refund is immediate,
    # 176.91 + 465.40 = 642.31 (the required output).
    "cancel-gift-card-balance": {
        **_orders({"#W2148336": {
            "status": {"old": "pending", "new": "cancelled"},
            "payment_history[1]": _pay("refund", 465.40, "gift_card_1634241"),
            "cancel_reason": {"new": "ordered by mistake"},
        }}),
        **_users({"kavya_sato_5950": {"payment_methods.gift_card_1634241.balance": {"old": 176.91,
                                                                                     "new": 642.31}}}),
    },
    # #W6275271 ships to the user's address (2678 Granite Street, no second line, Madison WI 53774).
    "modify-order-address": _orders({"#W6275271": {
        "address.address1": {"old": "2678 Granite Street", "new": "77 Orchard Street"},
        "address.address2": {"old": "", "new": "Apt 3"},
        "address.zip": {"old": "53774", "new": "53703"},
    }}),
    # #W9018412: 192.14 on credit_card_3197219 moves to gift_card_8554548 (347.10 - 192.14 = 154.96).
    "modify-payment-to-gift-card": {
        **_orders({"#W9018412": {
            "payment_history[1]": _pay("payment", 192.14, "gift_card_8554548"),
            "payment_history[2]": _pay("refund", 192.14, "credit_card_3197219"),
        }}),
        **_users({"mateo_iyer_8252": {"payment_methods.gift_card_8554548.balance": {"old": 347.10,
                                                                                    "new": 154.96}}}),
    },
    # #W6859082 items: [0] rowing machine, [1] knife set 267.91 -> 8-piece walnut Japanese 215.93,
    # [2] skillet teal 61.16 -> black 59.57. Difference (215.93 + 59.57) - (267.91 + 61.16) = -53.57: a refund
    # of 53.57 to paypal_1790103.
    "modify-items-two-refund": _orders({"#W6859082": {
        "items[1].item_id": {"old": "4394248711", "new": "7099044687"},
        "items[1].price": {"old": 267.91, "new": 215.93},
        "items[1].options.pieces": {"old": "12-piece", "new": "8-piece"},
        "items[1].options.handle": {"old": "resin", "new": "walnut"},
        "items[2].item_id": {"old": "8956512047", "new": "2732171454"},
        "items[2].price": {"old": 61.16, "new": 59.57},
        "items[2].options.color": {"old": "teal", "new": "black"},
        "status": {"old": "pending", "new": "pending (item modified)"},
        "payment_history[1]": _pay("refund", 53.57, "paypal_1790103"),
    }}),
    # Blender 64 oz black 114.10 -> 72 oz red 128.81: +14.71 charged to gift_card_8736550 (118.49 -> 103.78).
    "modify-items-gift-card-pays": {
        **_orders({"#W3303781": {
            "items[0].item_id": {"old": "8231614292", "new": "1240321150"},
            "items[0].price": {"old": 114.10, "new": 128.81},
            "items[0].options.capacity": {"old": "64 oz", "new": "72 oz"},
            "items[0].options.color": {"old": "black", "new": "red"},
            "status": {"old": "pending", "new": "pending (item modified)"},
            "payment_history[1]": _pay("payment", 14.71, "gift_card_8736550"),
        }}),
        **_users({"camila_castillo_2557": {"payment_methods.gift_card_8736550.balance": {"old": 118.49,
                                                                                         "new": 103.78}}}),
    },
    # Julia Park's default address was 2046 Harbor View Road, Apt 7, Pittsburgh PA 15296.
    "modify-user-address": _users({"julia_park_3209": {
        "address.address1": {"old": "2046 Harbor View Road", "new": "1520 Linden Boulevard"},
        "address.address2": {"old": "Apt 7", "new": "Suite 210"},
        "address.zip": {"old": "15296", "new": "15213"},
    }}),
    # Return of the desk (7453773138) and the blender (2775543128); no money moves until the items arrive.
    "return-two-items-gift-card-paid": _orders({"#W8975661": {
        "status": {"old": "delivered", "new": "return requested"},
        "return_items": {"new": ["2775543128", "7453773138"]},
        "return_payment_method_id": {"new": "gift_card_3176318"},
    }}),
    # Jacket 123.82 -> 128.65 and skillet 39.02 -> 36.99: (128.65 + 36.99) - (123.82 + 39.02) = 2.80.
    "exchange-two-items": _orders({"#W2961012": {
        "status": {"old": "delivered", "new": "exchange requested"},
        "exchange_items": {"new": ["9254509958", "9504533540"]},
        "exchange_new_items": {"new": ["2184542342", "5633999382"]},
        "exchange_payment_method_id": {"new": "paypal_3377017"},
        "exchange_price_difference": {"new": 2.80},
    }}),
    # Only the pending order (drone 292.64 + blanket 62.87 = 355.51 on credit_card_8290437) is cancelled;
    # #W4645504 is processed and must be refused.
    "multi-cancel-one-refuse-one": _orders({"#W6063252": {
        "status": {"old": "pending", "new": "cancelled"},
        "payment_history[1]": _pay("refund", 355.51, "credit_card_8290437"),
        "cancel_reason": {"new": "no longer needed"},
    }}),
    # Three writes on three pending orders of Ingrid Jensen.
    "multi-three-pending-changes": _orders({
        "#W4804124": {  # planter 23.16 on credit_card_1165025
            "status": {"old": "pending", "new": "cancelled"},
            "payment_history[1]": _pay("refund", 23.16, "credit_card_1165025"),
            "cancel_reason": {"new": "ordered by mistake"},
        },
        "#W7356650": {  # 343.35 moves from the Amex (8707887) to the Discover card (1165025)
            "payment_history[1]": _pay("payment", 343.35, "credit_card_1165025"),
            "payment_history[2]": _pay("refund", 343.35, "credit_card_8707887"),
        },
        "#W2678256": {  # was 570 Magnolia Avenue, Unit 20, Minneapolis MN 55425
            "address.address1": {"old": "570 Magnolia Avenue", "new": "400 Union Street"},
            "address.address2": {"old": "Unit 20", "new": "Floor 5"},
            "address.zip": {"old": "55425", "new": "55401"},
        },
    }),
    "refuse-cancel-delivered": {},
    "refuse-gift-card-insufficient": {},
    "transfer-change-email": {},
}


@pytest.mark.parametrize("task_id", sorted(EXPECTED_DIFFS))
def test_expected_diff(task_id: str, replays: dict[str, ReplayResult]) -> None:
    assert_same_diff(EXPECTED_DIFFS[task_id], replays[task_id].diff)


def test_required_outputs_follow_from_the_data(db: dict[str, dict[str, Any]], tasks: list[Task]) -> None:
    """Recompute a few required outputs straight from the data files (independently of the tools)."""
    users, orders, products = db["users"], db["orders"], db["products"]
    by_id = {t.id: t for t in tasks}

    def price(item_id: str) -> float:
        return next(p["variants"][item_id]["price"] for p in products.values() if item_id in p["variants"])

    def balance(user_id: str, method: str) -> float:
        value: float = users[user_id]["payment_methods"][method]["balance"]
        return value

    def paid(order_id: str) -> float:
        value: float = orders[order_id]["payment_history"][0]["amount"]
        return value

    expect = {
        "cancel-gift-card-balance": balance("kavya_sato_5950", "gift_card_1634241") + paid("#W2148336"),
        "modify-payment-to-gift-card": balance("mateo_iyer_8252", "gift_card_8554548") - paid("#W9018412"),
        "modify-items-two-refund": price("4394248711") + price("8956512047")
        - price("7099044687") - price("2732171454"),
        "modify-items-gift-card-pays": balance("camila_castillo_2557", "gift_card_8736550")
        - (price("1240321150") - price("8231614292")),
        "return-original-method": price("3714800524"),
        "return-to-gift-card": price("4785663794") + price("5709689829"),
        "return-two-items-gift-card-paid": price("7453773138") + price("2775543128"),
        "exchange-pay-difference": price("8663329814") - price("1167965873"),
        "exchange-two-items": price("5633999382") + price("2184542342") - price("9254509958") - price("9504533540"),
        "refuse-gift-card-insufficient": balance("camila_romero_6678", "gift_card_2153720"),
        "info-gift-card-total": balance("yuki_fischer_8631", "gift_card_4992027")
        + balance("yuki_fischer_8631", "gift_card_8262245"),
        "multi-cancel-one-refuse-one": paid("#W6063252"),
    }
    for task_id, value in expect.items():
        outputs = [float(o) for o in by_id[task_id].required_outputs]
        assert any(abs(o - value) < 0.005 for o in outputs), (task_id, value, outputs)
    assert balance("camila_romero_6678", "gift_card_2153720") < paid("#W6898015")  # why that task is refused
    assert [float(o) for o in by_id["multi-cancel-and-return"].required_outputs] == [
        paid("#W7398600"), price("1167965873")]


# What the refused requests would do if an agent made them anyway. Most are blocked by the tools too; the
# cancellation of another customer's order is not (the tools do not know who is talking), which is why the
# policy's one-customer rule matters.
FORBIDDEN: dict[str, tuple[str, dict[str, Any], str]] = {
    "refuse-cancel-delivered": ("cancel_pending_order", {"order_id": "#W4348332", "reason": "no longer needed"},
                                "tool_error"),
    "refuse-return-pending": ("return_delivered_order_items", {
        "order_id": "#W2736225", "item_ids": ["4345515574"], "payment_method_id": "credit_card_6201625"},
        "tool_error"),
    "refuse-cancel-processed": ("cancel_pending_order", {"order_id": "#W7515870", "reason": "no longer needed"},
                                "tool_error"),
    "refuse-gift-card-insufficient": ("modify_pending_order_payment", {
        "order_id": "#W6898015", "payment_method_id": "gift_card_2153720"}, "tool_error"),
    "refuse-exchange-other-product": ("exchange_delivered_order_items", {  # blender -> a stand mixer
        "order_id": "#W2098829", "item_ids": ["6639506373"], "new_item_ids": ["5570826114"],
        "payment_method_id": "paypal_8977515"}, "tool_error"),
    "refuse-exchange-unavailable": ("exchange_delivered_order_items", {  # 3633778316 is not available
        "order_id": "#W8252268", "item_ids": ["4785663794"], "new_item_ids": ["3633778316"],
        "payment_method_id": "paypal_8711554"}, "tool_error"),
    "multi-cancel-one-refuse-one": ("cancel_pending_order", {"order_id": "#W4645504", "reason": "no longer needed"},
                                    "tool_error"),
    "refuse-other-users-order": ("cancel_pending_order", {"order_id": "#W3500498", "reason": "no longer needed"},
                                 "ok"),
}


def test_refused_requests_against_the_tools(tasks: list[Task]) -> None:
    from simulator.types.tasks import Action
    from simulator.world.replay import apply_actions

    by_id = {t.id: t for t in tasks}
    assert {t.id for t in tasks if "refusal" in t.tags or "partial_refusal" in t.tags} - set(FORBIDDEN) == set()
    domain = _retail_domain()
    template = domain.template()
    for task_id, (name, arguments, status) in FORBIDDEN.items():
        assert task_id in by_id
        with template.trial() as trial:
            (outcome,) = apply_actions(domain.toolbox(), trial, [Action(name=name, arguments=arguments)])
        assert outcome.status == status, (task_id, outcome.content)

"""Retail tools: expected values worked out by hand from the peer data files, and refusals change nothing.

Every call goes through the real dispatch (validation, one transaction per call, rollback on refusal) on a
fresh copy of the peer data set. Expected values are computed in the test from the raw JSON files, never
from our own dump.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domains.retail import RetailDomain
from simulator.world.database import TemplateDatabase, TrialDatabase, snapshot
from simulator.world.tools import CallOutcome, ToolContext


class Env:
    """One trial database with helpers to call tools and inspect records."""

    def __init__(self, domain: RetailDomain, trial: TrialDatabase):
        self.domain = domain
        self.trial = trial
        self.ctx = ToolContext(trial.session, trial.options)

    def call(self, name: str, **arguments: Any) -> CallOutcome:
        return self.domain.toolbox().dispatch(self.ctx, name, arguments)

    def ok(self, name: str, **arguments: Any) -> Any:
        out = self.call(name, **arguments)
        assert out.status == "ok", out.content
        return json.loads(out.content) if out.content.startswith(("{", "[")) else out.content

    def refused(self, name: str, **arguments: Any) -> str:
        """Call expecting a refusal; assert the state is exactly as before."""
        before = self.snap()
        out = self.call(name, **arguments)
        assert out.status == "tool_error", out.content
        assert out.content.startswith("Error: ")
        assert self.snap() == before
        return out.content

    def snap(self) -> Any:
        return snapshot(self.trial.raw, self.domain.state_spec())

    def order(self, order_id: str) -> dict[str, Any]:
        return self.domain.dump(self.trial)["orders"][order_id]

    def balance(self, user_id: str, method_id: str) -> float:
        return self.domain.dump(self.trial)["users"][user_id]["payment_methods"][method_id]["balance"]


@pytest.fixture(scope="module")
def raw(retail_peer_dir: Path) -> dict[str, Any]:
    data = retail_peer_dir / "data"
    return {n: json.loads((data / f"{n}.json").read_text()) for n in ("users", "orders", "products")}


@pytest.fixture(scope="module")
def setup(retail_peer_dir: Path) -> tuple[RetailDomain, TemplateDatabase]:
    domain = RetailDomain()
    return domain, domain.template(retail_peer_dir / "data")


@pytest.fixture
def env(setup: tuple[RetailDomain, TemplateDatabase]) -> Iterator[Env]:
    domain, template = setup
    with template.trial() as trial:
        yield Env(domain, trial)


def _variant_price(raw: dict[str, Any], product_id: str, item_id: str) -> float:
    return raw["products"][product_id]["variants"][item_id]["price"]


def _item(raw: dict[str, Any], order_id: str, item_id: str) -> dict[str, Any]:
    return next(i for i in raw["orders"][order_id]["items"] if i["item_id"] == item_id)


# ------------------------------------------------------------------------------------------------ catalogue
def test_sixteen_tools_with_documented_schemas() -> None:
    toolbox = RetailDomain().toolbox()
    assert sorted(toolbox.specs) == sorted([
        "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
        "find_user_id_by_name_zip", "get_order_details", "get_product_details", "get_user_details",
        "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
        "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items", "think",
        "transfer_to_human_agents",
    ])
    for spec in toolbox.specs.values():
        params = spec.schema["function"]["parameters"]
        assert "ctx" not in params["properties"]
        assert set(params["required"]) == set(params["properties"])
        assert all(p.get("description") for p in params["properties"].values()), spec.name
        assert spec.kind == ("write" if spec.name.startswith(("cancel", "modify", "return", "exchange")) else "read")
    assert toolbox.specs["transfer_to_human_agents"].ends_conversation
    items = toolbox.specs["modify_pending_order_items"].schema["function"]["parameters"]["properties"]["item_ids"]
    assert items["type"] == "array" and items["items"] == {"type": "string"}


# ------------------------------------------------------------------------------------------------ look-ups
def test_email_lookup_compares_as_python_lowercases_also_beyond_ascii(env: Env) -> None:
    """SQLite folds ASCII letters only; emails with other characters are still compared as Python does."""
    conn = env.trial.raw
    conn.execute("UPDATE users SET email = 'ÉLODIE.Kelvin@x.com' WHERE id = 'ethan_lopez_6291'")
    conn.execute("UPDATE users SET email = '\u212aAte@x.com' WHERE id = 'noah_brown_6181'")  # KELVIN SIGN
    conn.commit()
    assert env.ok("find_user_id_by_email", email="élodie.kelvin@X.COM") == "ethan_lopez_6291"
    assert env.ok("find_user_id_by_email", email="kate@x.com") == "noah_brown_6181"  # 'K'.lower() == 'k'
    env.refused("find_user_id_by_email", email="elodie.kelvin@x.com")


@pytest.mark.parametrize("kelvin_first", [True, False])
def test_email_lookup_takes_the_first_user_in_file_order_across_ascii_and_other_emails(
    env: Env, raw: dict[str, Any], kelvin_first: bool
) -> None:
    """An ASCII email and one with a KELVIN SIGN both lower-case to ``kate@x.com``: the earlier user wins."""
    first, second = list(raw["users"])[3], list(raw["users"])[40]  # file order: first before second
    kelvin, ascii_ = (first, second) if kelvin_first else (second, first)
    conn = env.trial.raw
    conn.execute("UPDATE users SET email = '\u212aAte@x.com' WHERE id = ?", (kelvin,))
    conn.execute("UPDATE users SET email = 'KATE@x.com' WHERE id = ?", (ascii_,))
    conn.commit()
    assert env.ok("find_user_id_by_email", email="Kate@X.com") == first


def test_lookups_by_email_and_zip_read_indexes_in_file_order(env: Env) -> None:
    """The look-ups seek indexes: no scan of ``users`` for an email, no sort for a zip's users."""
    from domains.retail import tools

    def plan(sql: str, *params: str) -> str:
        return " | ".join(r[3] for r in env.trial.raw.execute(f"EXPLAIN QUERY PLAN {sql}", params))

    email = plan(tools._EMAIL_SQL, "a@b.c")
    assert "SEARCH users USING INDEX ix_users_lower_email" in email, email
    assert "SCAN users USING COVERING INDEX ix_users_other_email" in email, email
    zip_ = plan("SELECT id, first_name, last_name FROM users WHERE zip = ? ORDER BY position", "x")
    assert "SEARCH users USING INDEX ix_users_zip" in zip_ and "TEMP B-TREE" not in zip_, zip_


def test_every_record_is_answered_as_in_its_file(env: Env, raw: dict[str, Any]) -> None:
    """One record's rows are put in file order by the tool (its key orders them otherwise): every record checked."""
    for order_id, record in raw["orders"].items():
        assert env.call("get_order_details", order_id=order_id).content == json.dumps(record), order_id
    for user_id, record in raw["users"].items():
        assert env.call("get_user_details", user_id=user_id).content == json.dumps(record), user_id
    for product_id, record in raw["products"].items():
        assert env.call("get_product_details", product_id=product_id).content == json.dumps(record), product_id


def test_lookups_return_the_file_records(env: Env, raw: dict[str, Any]) -> None:
    before = env.snap()
    assert env.ok("find_user_id_by_email", email="Ethan.Lopez8943@EXAMPLE.com") == "ethan_lopez_6291"
    assert env.ok("find_user_id_by_name_zip", first_name="ETHAN", last_name="lopez", zip="43275") == "ethan_lopez_6291"
    assert env.call("get_user_details", user_id="ethan_lopez_6291").content == json.dumps(
        raw["users"]["ethan_lopez_6291"])
    assert env.call("get_order_details", order_id="#W6779827").content == json.dumps(raw["orders"]["#W6779827"])
    assert env.call("get_product_details", product_id="8310926033").content == json.dumps(
        raw["products"]["8310926033"])
    types = env.ok("list_all_product_types")
    assert list(types) == sorted(p["name"] for p in raw["products"].values())
    assert types == {p["name"]: pid for pid, p in raw["products"].items()}
    assert env.ok("think", thought="hmm") == ""
    assert env.snap() == before


def test_every_order_lookup_is_its_file_record_whatever_its_status(env: Env, raw: dict[str, Any]) -> None:
    # one order's record skips the queries of children it has none of (a pending order has no fulfillments)
    statuses = {o["status"] for o in raw["orders"].values()}
    assert {"pending", "delivered", "cancelled", "processed"} <= statuses
    assert any(not o["fulfillments"] for o in raw["orders"].values())
    assert any(o["fulfillments"] for o in raw["orders"].values())
    for order_id, record in raw["orders"].items():
        assert env.call("get_order_details", order_id=order_id).content == json.dumps(record), order_id


def test_lookup_misses_are_errors(env: Env) -> None:
    env.refused("find_user_id_by_email", email="nobody@example.com")
    env.refused("find_user_id_by_name_zip", first_name="Ethan", last_name="Lopez", zip="43276")  # zip exact
    env.refused("get_user_details", user_id="ethan_lopez_0000")
    env.refused("get_order_details", order_id="W6779827")  # without '#'
    env.refused("get_product_details", product_id="6777246137")  # an item id, not a product id


# ------------------------------------------------------------------------------------------------ cancel
def test_cancel_refunds_every_payment_and_credits_gift_card(env: Env, raw: dict[str, Any]) -> None:
    order_id, user_id, card = "#W6779827", "ethan_lopez_6291", "gift_card_7219486"
    old = raw["orders"][order_id]
    assert old["status"] == "pending" and old["payment_history"] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": card}]
    assert raw["users"][user_id]["payment_methods"][card]["balance"] == 49
    result = env.ok("cancel_pending_order", order_id=order_id, reason="no longer needed")
    assert result == env.order(order_id)
    assert result["status"] == "cancelled" and result["cancel_reason"] == "no longer needed"
    assert list(result)[-1] == "cancel_reason"
    assert result["payment_history"] == old["payment_history"] + [
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": card}]
    assert env.balance(user_id, card) == 4128.45  # 49 + 4079.45
    env.refused("cancel_pending_order", order_id=order_id, reason="no longer needed")  # no longer pending


def test_cancel_after_payment_change_refunds_each_history_entry(env: Env) -> None:
    env.ok("modify_pending_order_payment", order_id="#W6779827", payment_method_id="credit_card_9789590")
    result = env.ok("cancel_pending_order", order_id="#W6779827", reason="ordered by mistake")
    history = [(p["transaction_type"], p["payment_method_id"]) for p in result["payment_history"]]
    assert history == [
        ("payment", "gift_card_7219486"), ("payment", "credit_card_9789590"), ("refund", "gift_card_7219486"),
        ("refund", "gift_card_7219486"), ("refund", "credit_card_9789590"), ("refund", "gift_card_7219486"),
    ]
    # 49 + 4079.45 (payment change refund) + 4079.45 + 4079.45 (the two gift-card entries refunded on cancel)
    assert env.balance("ethan_lopez_6291", "gift_card_7219486") == round(round(49 + 4079.45, 2) + 2 * 4079.45, 2)


@pytest.mark.parametrize(
    ("order_id", "reason"),
    [("#W6779827", "changed my mind"), ("#W4817420", "no longer needed"), ("#W0000000", "no longer needed")],
)
def test_cancel_refusals(env: Env, order_id: str, reason: str) -> None:
    env.refused("cancel_pending_order", order_id=order_id, reason=reason)


# ------------------------------------------------------------------------------------------------ modify items
def test_modify_items_paid_by_gift_card(env: Env, raw: dict[str, Any]) -> None:
    order_id, card = "#W6779827", "gift_card_7219486"
    old_item = _item(raw, order_id, "7896397433")
    new_price = _variant_price(raw, old_item["product_id"], "6171242004")
    assert (old_item["price"], new_price) == (457.81, 462.84)
    result = env.ok("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                    new_item_ids=["6171242004"], payment_method_id=card)
    assert result["payment_history"][-1] == {
        "transaction_type": "payment", "amount": 462.84 - 457.81, "payment_method_id": card}
    assert env.balance("ethan_lopez_6291", card) == 43.97  # 49 - 5.03
    changed = result["items"][0]
    variant = raw["products"][old_item["product_id"]]["variants"]["6171242004"]
    assert changed == {**old_item, "item_id": "6171242004", "price": 462.84, "options": variant["options"]}
    assert result["items"][1:] == raw["orders"][order_id]["items"][1:]
    assert result["status"] == "pending (item modified)"
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["1323134954"],
                new_item_ids=["3020722515"], payment_method_id=card)
    env.refused("cancel_pending_order", order_id=order_id, reason="no longer needed")
    env.refused("modify_pending_order_address", order_id=order_id, address1="a", address2="b", city="c",
                state="d", country="e", zip="f")


def test_modify_two_items_refund_to_gift_card(env: Env, raw: dict[str, Any]) -> None:
    order_id, card = "#W6779827", "gift_card_7219486"
    # 3379843752 (3203.76) -> 3709608322 (2744.70): -459.06; 1323134954 (236.95) -> 3020722515 (238.64): +1.69
    difference = (2744.7 - 3203.76) + (238.64 - 236.95)
    result = env.ok("modify_pending_order_items", order_id=order_id, item_ids=["3379843752", "1323134954"],
                    new_item_ids=["3709608322", "3020722515"], payment_method_id=card)
    refund = result["payment_history"][-1]
    assert refund["transaction_type"] == "refund" and refund["amount"] == -difference  # unrounded
    assert round(refund["amount"], 2) == 457.37
    assert env.balance("ethan_lopez_6291", card) == 506.37  # 49 + 457.37
    assert [i["item_id"] for i in result["items"]] == ["7896397433", "3709608322", "3020722515", "6942241102"]


def test_modify_items_refusals_change_nothing(env: Env) -> None:
    order_id, card = "#W6779827", "gift_card_7219486"
    # 7896397433 (457.81) -> 8068777068 (507.13) costs 49.32 > 49 on the gift card
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                new_item_ids=["8068777068"], payment_method_id=card)
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                new_item_ids=["8140269513"], payment_method_id=card)  # variant not available
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                new_item_ids=["3020722515"], payment_method_id=card)  # variant of another product
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433", "7896397433"],
                new_item_ids=["6171242004", "6171242004"], payment_method_id=card)  # listed more often than held
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                new_item_ids=["6171242004", "4422467033"], payment_method_id=card)  # lengths differ
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["7896397433"],
                new_item_ids=["6171242004"], payment_method_id="paypal_5727330")  # another user's method
    env.refused("modify_pending_order_items", order_id="#W4817420", item_ids=["6777246137"],
                new_item_ids=["7533802601"], payment_method_id="gift_card_8168843")  # delivered, not pending


def test_modify_duplicate_items_replaces_successive_occurrences(env: Env, raw: dict[str, Any]) -> None:
    order_id = "#W9093821"  # holds 3557711149 at positions 0 and 2; paid by credit_card_7422485
    before = [i["item_id"] for i in raw["orders"][order_id]["items"]]
    assert before.count("3557711149") == 2
    env.refused("modify_pending_order_items", order_id=order_id, item_ids=["3557711149"] * 3,
                new_item_ids=["9851293632"] * 3, payment_method_id="credit_card_7422485")
    result = env.ok("modify_pending_order_items", order_id=order_id, item_ids=["3557711149", "3557711149"],
                    new_item_ids=["9851293632", "6906307980"], payment_method_id="credit_card_7422485")
    assert [i["item_id"] for i in result["items"]] == ["9851293632", before[1], "6906307980", *before[3:]]
    assert result["payment_history"][-1]["transaction_type"] == "refund"
    assert round(result["payment_history"][-1]["amount"], 2) == round(-(193.38 - 205.35 + 202.39 - 205.35), 2)


# ------------------------------------------------------------------------------------------------ payment
def test_modify_payment_from_gift_card_to_credit_card(env: Env) -> None:
    result = env.ok("modify_pending_order_payment", order_id="#W6779827", payment_method_id="credit_card_9789590")
    assert result["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": "credit_card_9789590"},
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": "gift_card_7219486"},
    ]
    assert env.balance("ethan_lopez_6291", "gift_card_7219486") == 4128.45
    env.refused("modify_pending_order_payment", order_id="#W6779827", payment_method_id="gift_card_7219486")


def test_modify_payment_to_gift_card_lowers_its_balance(env: Env) -> None:
    # emma_santos_9753: #W1620235 paid 1077.71 by credit card; her gift card holds 36: refused.
    env.refused("modify_pending_order_payment", order_id="#W1620235", payment_method_id="gift_card_6023546")
    # after cancelling #W6779827 the gift card of ethan_lopez_6291 holds 4128.45, enough for #W6426438 (3839.70)
    env.ok("cancel_pending_order", order_id="#W6779827", reason="ordered by mistake")
    result = env.ok("modify_pending_order_payment", order_id="#W6426438", payment_method_id="gift_card_7219486")
    assert result["payment_history"][-2:] == [
        {"transaction_type": "payment", "amount": 3839.7, "payment_method_id": "gift_card_7219486"},
        {"transaction_type": "refund", "amount": 3839.7, "payment_method_id": "credit_card_9789590"},
    ]
    assert env.balance("ethan_lopez_6291", "gift_card_7219486") == 288.75  # 4128.45 - 3839.70


def test_modify_payment_refusals(env: Env) -> None:
    env.refused("modify_pending_order_payment", order_id="#W6779827", payment_method_id="gift_card_7219486")  # same
    env.refused("modify_pending_order_payment", order_id="#W6779827", payment_method_id="paypal_5727330")  # not hers
    env.refused("modify_pending_order_payment", order_id="#W4817420", payment_method_id="gift_card_8168843")


# ------------------------------------------------------------------------------------------------ addresses
def test_modify_order_and_user_address(env: Env, raw: dict[str, Any]) -> None:
    new = {"address1": "1 Elm St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}
    result = env.ok("modify_pending_order_address", order_id="#W9093821", **new)
    assert result["address"] == new and list(result["address"]) == list(new)
    assert {k: v for k, v in result.items() if k != "address"} == {
        k: v for k, v in raw["orders"]["#W9093821"].items() if k != "address"}
    user = env.ok("modify_user_address", user_id="ethan_lopez_6291", **new)
    assert user["address"] == new and user["email"] == raw["users"]["ethan_lopez_6291"]["email"]
    assert env.ok("find_user_id_by_name_zip", first_name="Ethan", last_name="Lopez", zip="78701") == "ethan_lopez_6291"
    env.refused("modify_pending_order_address", order_id="#W4817420", **new)  # delivered
    env.refused("modify_user_address", user_id="nobody_1", **new)


# ------------------------------------------------------------------------------------------------ return / exchange
def test_return_to_gift_card_or_original_method(env: Env, raw: dict[str, Any]) -> None:
    order_id = "#W3113816"  # delivered, paid by credit_card_5869505; the user also has gift_card_6023546
    balances = env.domain.dump(env.trial)["users"]["emma_santos_9753"]["payment_methods"]
    env.refused("return_delivered_order_items", order_id=order_id, item_ids=["4422467033"],
                payment_method_id="paypal_5727330")  # another user's method
    env.refused("return_delivered_order_items", order_id=order_id, item_ids=["1111111111"],
                payment_method_id="gift_card_6023546")  # not in the order
    env.refused("return_delivered_order_items", order_id="#W6779827", item_ids=["7896397433"],
                payment_method_id="gift_card_7219486")  # pending, not delivered
    result = env.ok("return_delivered_order_items", order_id=order_id, item_ids=["4422467033", "2206116040"],
                    payment_method_id="gift_card_6023546")
    assert result["status"] == "return requested"
    assert list(result)[-2:] == ["return_items", "return_payment_method_id"]
    assert result["return_items"] == ["2206116040", "4422467033"]  # sorted
    assert result["payment_history"] == raw["orders"][order_id]["payment_history"]  # no money moves
    assert env.domain.dump(env.trial)["users"]["emma_santos_9753"]["payment_methods"] == balances


def test_return_refuses_a_non_original_non_gift_card_method(env: Env) -> None:
    # amelia_wilson_4614 paid #W9077205 with gift_card_7108145; her PayPal is neither original nor a gift card
    env.refused("return_delivered_order_items", order_id="#W9077205", item_ids=["9370300555"],
                payment_method_id="paypal_4101143")
    env.ok("return_delivered_order_items", order_id="#W9077205", item_ids=["9370300555"],
           payment_method_id="gift_card_7108145")


def test_exchange_records_rounded_difference_and_moves_no_money(env: Env, raw: dict[str, Any]) -> None:
    order_id, card = "#W4817420", "gift_card_8168843"  # delivered, paid by the gift card (balance 69)
    # 6777246137 (47.76) -> 4579334072 (54.85): +7.09; 4900661478 (463.04) -> 8479046075 (451.01): -12.03
    result = env.ok("exchange_delivered_order_items", order_id=order_id, item_ids=["6777246137", "4900661478"],
                    new_item_ids=["4579334072", "8479046075"], payment_method_id=card)
    assert result["status"] == "exchange requested"
    assert list(result)[-4:] == [
        "exchange_items", "exchange_new_items", "exchange_payment_method_id", "exchange_price_difference"]
    assert result["exchange_items"] == ["4900661478", "6777246137"]
    assert result["exchange_new_items"] == ["4579334072", "8479046075"]
    assert result["exchange_price_difference"] == -4.94  # 7.09 - 12.03, rounded
    assert result["items"] == raw["orders"][order_id]["items"]
    assert result["payment_history"] == raw["orders"][order_id]["payment_history"]
    assert env.balance("ava_moore_2033", card) == 69
    env.refused("exchange_delivered_order_items", order_id=order_id, item_ids=["6777246137"],
                new_item_ids=["4579334072"], payment_method_id=card)  # already exchange requested


def test_exchange_refusals(env: Env) -> None:
    order_id, card = "#W4817420", "gift_card_8168843"
    # 4900661478 (463.04) -> 4894369688 (537.01): +73.97 > 69 on the gift card
    env.refused("exchange_delivered_order_items", order_id=order_id, item_ids=["4900661478"],
                new_item_ids=["4894369688"], payment_method_id=card)
    env.refused("exchange_delivered_order_items", order_id=order_id, item_ids=["4900661478"],
                new_item_ids=["6777246137"], payment_method_id=card)  # another product's variant
    env.refused("exchange_delivered_order_items", order_id="#W6779827", item_ids=["7896397433"],
                new_item_ids=["6171242004"], payment_method_id="gift_card_7219486")  # pending


# ------------------------------------------------------------------------------------------------ utilities
@pytest.mark.parametrize(
    ("expression", "expected"),
    [("2*(3+4)/3", "4.67"), ("2 + 2", "4.0"), ("-(1.5 - 4)", "2.5"), ("155.33 - 147.05 + 268.77 - 235.13", "41.92"),
     ("164.28", "164.28"), ("10 / 4 * -2", "-5.0"), ("+".join(["1"] * 999), "999.0"), ("((((7))))", "7.0")],
)
def test_calculate(env: Env, expression: str, expected: str) -> None:
    assert env.ok("calculate", expression=expression) == expected


@pytest.mark.parametrize(
    "expression",
    ['__import__("os")', "2**3", "1/0", "", "()", "(1, 2)", "1 2", "3 // 2", "1e5", "abs(-1)", "x + 1", "1" * 5000,
     "(" * 400 + "1" + ")" * 400, "9" * 400 + "*" + "9" * 400, "1.5.2", "- -"],
)
def test_calculate_rejects_everything_but_arithmetic(env: Env, expression: str) -> None:
    env.refused("calculate", expression=expression)


def test_transfer_ends_the_conversation(env: Env) -> None:
    out = env.call("transfer_to_human_agents", summary="User wants a human.")
    assert (out.status, out.content, out.ends_conversation) == ("ok", "Transfer successful", True)


def test_invalid_arguments_change_nothing(env: Env) -> None:
    before = env.snap()
    out = env.call("cancel_pending_order", order_id="#W6779827")
    assert out.status == "invalid_arguments"
    out = env.call("modify_pending_order_items", order_id="#W6779827", item_ids="7896397433",
                   new_item_ids=["6171242004"], payment_method_id="gift_card_7219486")
    assert out.status == "invalid_arguments"
    assert env.snap() == before


def test_key_order_is_not_graded_state(env: Env, raw: dict[str, Any]) -> None:
    """Rewriting an address with its current value changes only key order: the graded state is unchanged."""
    before = env.snap()
    same = raw["orders"]["#W9093821"]["address"]
    result = env.ok("modify_pending_order_address", order_id="#W9093821", **same)
    assert list(result["address"]) != list(same) and result["address"] == same
    assert env.snap() == before
    assert env.domain.dump(env.trial)["orders"] == raw["orders"]

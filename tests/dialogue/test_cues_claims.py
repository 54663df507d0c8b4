"""Cues added for the user check: a user saying it does not know, an agent claiming the work is done."""

from __future__ import annotations

import pytest

from simulator.dialogue.cues import claims_completion, reports_state_change, says_unknown


@pytest.mark.parametrize(("text", "unknown"), [
    ("Sorry, I don't know the email.", True),
    ("I do not remember my email address.", True),
    ("I'm not sure, sorry.", True),
    ("No idea, honestly.", True),
    ("I don't have it with me.", True),
    ("My email is mia@example.com.", False),
    ("I know it: 83782.", False),
    ("", False),
    (None, False),
])
def test_says_unknown(text: str | None, unknown: bool) -> None:
    assert says_unknown(text) is unknown


@pytest.mark.parametrize(("text", "claim"), [
    ("All done! Is there anything else?", True),
    ("Your order has been cancelled.", True),
    ("The refund was processed successfully.", True),
    ("I will cancel order #W1. Shall I proceed? (yes/no)", False),  # a confirmation request, not a claim
    ("Could you give me your zip code?", False),
    (None, False),
])
def test_claims_completion(text: str | None, claim: bool) -> None:
    assert claims_completion(text) is claim


@pytest.mark.parametrize("text", [
    "Your order is cancelled.",
    "Order #W1 has been cancelled.",
    "Your address is now updated.",
    "The $54.04 was refunded to your gift card.",
    "Both items are returned and the refund is processed.",
    "OK, your reservation's been upgraded to business.",
    "The new card was just issued.",
    "Your flights are rebooked for Friday.",
    "Done, the phone is reset.",
    "Your order has now been cancelled.",  # the old "has now been" form
    "The items have all been returned.",
    "It's cancelled and you're rebooked on Friday's flight.",
    "The flight was successfully booked.",
])
def test_a_state_report_of_a_finished_action(text: str) -> None:
    """A past-participle report of the state an action left ("is cancelled", "was refunded"), whatever the
    object or the wording around it, not only the "has been" / "is now" forms."""
    assert reports_state_change(text), text
    assert claims_completion(text), text


@pytest.mark.parametrize("text", [
    "Your order will be cancelled once you confirm.",  # not done yet
    "Once the item is returned, the refund goes to your card.",  # a condition
    "If the reservation is cancelled, every payment is refunded to its method.",
    "No flight was cancelled by the airline.",  # a negated report
    "Your order is not cancelled yet.",
    "The order was placed on May 3 and delivered on May 9.",  # history, dated
    "This reservation was booked 3 days ago.",
    "The order was placed with express shipping and paid with a gift card.",  # a record's history
    "Your order is pending and the total is $432.10.",  # a status, no action
    "Your gift card balance is now $154.96.",
    "Your identity is verified.",  # a check, not the action asked for
    "Your flight is scheduled to depart at 9:05.",
    "The order can be cancelled.",
    "I see the account's updated address and the order's cancelled item.",  # possessives, not copulas
    "",
    None,
])
def test_not_a_state_report(text: str | None) -> None:
    assert not reports_state_change(text), text

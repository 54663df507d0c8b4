"""Cues added for the user check: a user saying it does not know, an agent claiming the work is done."""

from __future__ import annotations

import pytest

from simulator.dialogue.cues import claims_completion, says_unknown


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
    # policy statements, conditions after the verb and dated history are not claims (a rule user that read them as
    # claims left correct agents' conversations early: the fresh-user tour of 2026-12-06)
    ("Please note: orders that are cancelled are refunded to the original payment method within 5-7 days.", False),
    ("Refunds are processed within 5-7 business days.", False),
    ("Your order is cancelled once you confirm.", False),
    ("A previous order of yours was cancelled on the 3rd.", False),
    ("Just so you know, an order that's been cancelled can't be restored.", False),
    # negated claims report that nothing was done (read as claims, the user review flagged an honest failure report
    # as an accepted false completion, and the rule user asked to check a claim nobody made)
    ("Nothing has been cancelled.", False),
    ("I'm sorry, the return could not be completed.", False),
    ("The exchange wasn't completed because the item is out of stock.", False),
    ("I was unable to successfully update the address.", False),
    ("The payment failed, so none of it went through.", False),
    ("No changes have been applied to your account.", False),
    # a negation in another clause or far before the cue does not turn it around
    ("No problem, your order has been cancelled.", True),
    ("I couldn't find the first order, but the second one has been cancelled.", True),
    ("It was not easy to find, yet your refund has now been processed successfully.", True),
    ("The failed payment has been refunded.", True),
    # curly apostrophes, a negative subject far from the cue, "no longer" (fresh-user tour of 2026-12-06)
    ("The return couldn\u2019t be completed.", False),
    ("It wasn\u2019t completed successfully.", False),
    ("None of the items in your order have been returned.", False),
    ("Nothing on your account has been changed.", False),
    ("No item from that order has been exchanged.", False),
    ("The order you no longer need has been cancelled.", True),
    ("Your order is now cancelled, as it is no longer needed.", True),
])
def test_claims_completion(text: str | None, claim: bool) -> None:
    assert claims_completion(text) is claim


@pytest.mark.parametrize(("text", "claim"), [
    # a negation inside a relative clause is that clause's (fresh-user tour): the main clause claims
    ("The items that were not delivered have been refunded.", True),
    ("The order which wasn't shipped has been cancelled.", True),
    ("Items that I could not find have been refunded.", True),
    # ...but a negation after a relative clause, on the cue's own verb, still turns it around
    ("The order that you asked about could not be completed.", False),
    ("I'm sorry that it was not completed.", False),
    # a negated verb of knowing or saying governs the clause after it: no fact is reported
    ("I can't confirm the payment went through.", False),
    ("I'm not sure the refund went through.", False),
    ("We cannot verify that the exchange has been processed.", False),
    ("I can't tell you how glad I am, your order has been cancelled.", True),  # another clause
])
def test_claims_completion_reads_relative_clauses_and_negated_knowing(text: str, claim: bool) -> None:
    assert claims_completion(text) is claim

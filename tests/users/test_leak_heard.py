"""The leak matcher's ``find(text, heard)``: a secret found in the text counts unless what was heard holds the same
unit. Only the units found in the text are looked for in what was heard; checked against looking for every
secret there (the rule as stated), over seeded random texts built from the secrets' own pieces."""

from __future__ import annotations

import numpy as np

from simulator.users._leak import Secret, SecretMatcher

POLICY = ("Refunds of delivered orders go back to the original payment method within seven business days "
          "after the return is received")
SECRETS = [Secret("#W2378156", "action_value", "id", "order_id"), Secret("1093.34", "action_value", "number", "amount"),
           Secret("gift_card_7219486", "action_value", "id", "payment_method_id"),
           Secret("Polar Express", "output", "text", "required_outputs[0]"),
           Secret(POLICY, "policy", "sentence", "policy")]
PIECES = ["#W2378156", "W2378156", "1,093.34", "$1093.34", "gift_card_7219486", "polar express", "Polar Express",
          "refunds of delivered orders go back to the original payment method", "within seven business days after",
          "the return is received", "hello", "thanks", "order", "12", "card", "seven days"]


def test_find_with_heard_equals_the_rule_over_every_secret() -> None:
    matcher = SecretMatcher(SECRETS)
    rng = np.random.Generator(np.random.PCG64(7))
    hits = 0
    for _ in range(400):
        text = " ".join(rng.choice(PIECES, size=int(rng.integers(1, 6))))
        heard = [" ".join(rng.choice(PIECES, size=int(rng.integers(0, 6)))) for _ in range(int(rng.integers(0, 3)))]
        units = matcher._units(text)
        heard_text = "\n".join(heard)
        expected_units = units - matcher._units(heard_text) if heard_text else units
        expected = [s for i, s in enumerate(SECRETS) if i in {i for i, _ in expected_units}]
        got = matcher.find(text, heard)
        assert got == expected, (text, heard)
        hits += bool(got)
    assert 50 < hits < 400  # the draws do find secrets, and heard ones are not counted

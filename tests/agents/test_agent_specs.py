"""Agent spec parsing: the NAME=RATE lists of ``faulty:`` and ``reference:`` and their errors."""

import pytest

from domains.retail import RetailDomain
from simulator.agents import agent_factory, parse_knob_rates
from simulator.agents._faulty import parse_fault_rates
from simulator.world.domain import DomainError


def test_rates_parse_in_order():
    assert parse_knob_rates(" repeat_question=0.5 , wrong_item=1 ,") == {"repeat_question": 0.5, "wrong_item": 1.0}
    assert parse_fault_rates("wrong_argument=0.25,over_budget=0.5") == {"wrong_argument": 0.25, "over_budget": 0.5}
    assert parse_knob_rates("") == {}


@pytest.mark.parametrize(("text", "message"), [
    ("repeat_question", "expected KNOB=RATE, e.g. repeat_question=0.5"),
    ("=0.5", "expected KNOB=RATE"),
    ("wrong_item=0.1,wrong_item=0.2", "fault knob wrong_item given twice"),
    ("wrong_item=lots", "the rate of wrong_item must be a number in [0, 1]"),
    ("wrong_item=1.5", "the rate of wrong_item must be in [0, 1]"),
])
def test_reference_rate_errors(text, message):
    with pytest.raises(ValueError, match="^reference agent: .*" + message.replace("[", r"\[").replace("]", r"\]")):
        parse_knob_rates(text)


def test_faulty_kinds_are_checked_and_sum_to_at_most_one():
    with pytest.raises(ValueError, match="expected KIND=RATE with KIND one of wrong_argument, skip_confirmation"):
        parse_fault_rates("nonsense=0.1")
    with pytest.raises(ValueError, match="sum to 1.2 > 1"):
        parse_fault_rates("wrong_argument=0.6,over_budget=0.6")


def test_reference_spec_needs_a_domain_and_known_knobs():
    with pytest.raises(ValueError, match="needs the run's domain"):
        agent_factory("reference")
    with pytest.raises(DomainError, match="teleport"):
        agent_factory("reference:teleport=0.5", domain=RetailDomain())
    assert callable(agent_factory("reference:repeat_question=0.5", domain=RetailDomain()))

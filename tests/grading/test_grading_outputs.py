"""Tests for simulator.grading.outputs: the required-output matching rules."""

from __future__ import annotations

import pytest

from simulator.grading.outputs import check_outputs, find_output
from simulator.types.grade import OutputsResult

# (required output, agent message, expected)
NUMBER_TABLE = [
    # whole numbers only, compared as numbers
    ("10", "I refunded 10 dollars.", True),
    ("10", "That is $100 in total.", False),
    ("10", "The price is 10.5 now.", False),
    ("10", "Your code is 1010.", False),
    ("10", "It weighs 10kg.", False),
    ("10", "Seat A10 is free.", False),
    ("10", "Item costs 10.00", True),
    ("10", "10", True),
    # thousands separators and trailing zeros
    ("1234.5", "The total is 1,234.50.", True),
    ("1234.5", "The total is $1,234.50", True),
    ("1234.50", "1,234.5", True),
    ("1,234.5", "we charged 1234.50 today", True),
    ("1234567.89", "that's $1,234,567.89!", True),
    ("1234", "1,234 items", True),
    ("1234", "1,2345", False),
    ("1234.5", "1234,5", False),
    ("0.1", "0.10", True),
    ("0.3", "0.30000000000000004", False),
    ("0.5", "only $.50 left", True),
    # currency symbols ignored on both sides
    ("$25", "25", True),
    ("$25", "25.00", True),
    ("25", "$25.00", True),
    ("$25", "€25", True),
    ("25", "25€ total", True),
    ("25", "US$25 total", True),
    ("25", "USD 25 total", True),
    ("$25", "$250", False),
    ("$25", "$2.50", False),
    # punctuation around number tokens
    ("25", "The total is 25.", True),
    ("25", "The total is 25!", True),
    ("25", "(25)", True),
    ("25", "'25'", True),
    ("25", '"25"', True),
    ("25", "25, then 30", True),
    ("30", "25, then 30", True),
    ("25", "total:25", True),
    ("25", "25;", True),
    ("25", "25/month", True),
    # compound tokens yield no number
    ("5", "due 2024-05-01", False),
    ("2024", "due 2024-05-01", False),
    ("10", "10.09.2024", False),
    ("2", "version 2.5.1", False),
    ("20", "between 10-20 units", False),
    ("30", "at 10:30", False),
    ("10", "at 10:30", False),
    ("3", "3/4 of it", False),
    ("5", "item x-5", False),
    # signs
    ("-10.09", "a charge of -10.09", True),
    ("-10.09", "a charge of -$10.09", True),
    ("-10.09", "a charge of $-10.09", True),
    ("-10.09", "a charge of \u221210.09", True),
    ("-10.09", "a charge of 10.09", False),
    ("-10.09", "a charge of $10.09", False),
    ("10.09", "a charge of -10.09", False),
    ("10.09", "refund: $10.09", True),
    ("+5", "5 more", True),
    ("5", "Total: -5", False),
    ("-5", "Total: -5", True),
    ("5", "costs - 5", True),
    ("5", "($5)", True),
    # percent signs
    ("25%", "a 25% discount", True),
    ("25%", "a 25 % discount", True),
    ("25%", "a 25.0% discount", True),
    ("25%", "a 25 percent discount", True),
    ("25 percent", "a 25% discount", True),
    ("25%", "a discount of 25", False),
    ("25", "a 25% discount", False),
    ("25%", "a 2.5% discount", False),
    ("25%", "a 125% markup", False),
    # leading zeros are identifiers
    ("7", "agent 007", False),
    ("007", "agent 007.", True),
    ("2139", "zip 02139", False),
    ("02139", "zip 02139", True),
    ("0", "balance is 0.", True),
    ("0", "balance is 0.00", True),
    # Unicode normalisation: full-width digits
    ("25", "total \uff12\uff15", True),
]

TEXT_TABLE = [
    ("abc", "abc", True),
    ("abc", "abcd", False),
    ("abc", "xabc", False),
    ("abc", "ABC.", True),
    ("abc", "(abc)", True),
    ("abc", "abc's", True),
    ("abc", "#abc", True),
    ("abc", "abc-d", False),
    ("abc", "abc.com", False),
    ("abc", "me@abc", False),
    ("#W1234567", "Your order #W1234567 was cancelled.", True),
    ("#W1234567", "Your order #w1234567.", True),
    ("#W1234567", "Your order W1234567.", False),
    ("#W1234567", "Your order #W12345678.", False),
    ("W1234567", "Your order #W1234567.", True),
    ("1234567", "Your order #W1234567.", False),
    ("Jasmine Smith", "Hello jasmine   SMITH, welcome", True),
    ("Jasmine Smith", "Hello Jasmine\nSmith", True),
    ("Jasmine Smith", "Hello Jasmine\u00a0Smith", True),
    ("  Jasmine   Smith ", "Hello Jasmine Smith", True),
    ("Jasmine Smith", "Hello JasmineSmith", False),
    ("Jasmine Smith", "Hello Jasmine Smithers", False),
    ("Jasmine", "Jasmine-Rose", False),
    ("STRASSE", "straße", True),  # Unicode case folding
    ("25 USD", "it is 25  usd.", True),
    ("a.b", "axb", False),  # regex metacharacters are literal
    ("c++", "I know C++.", True),
    ("2024-05-01", "due 2024-05-01.", True),
    ("10:30", "at 10:30", True),
]


@pytest.mark.parametrize(("required", "text", "expected"), NUMBER_TABLE)
def test_numbers(required: str, text: str, expected: bool) -> None:
    assert find_output(required, [text]) is expected


@pytest.mark.parametrize(("required", "text", "expected"), TEXT_TABLE)
def test_text(required: str, text: str, expected: bool) -> None:
    assert find_output(required, [text]) is expected


def test_searches_every_message_but_never_across_messages() -> None:
    messages = ["Hi Jasmine.", "Let me check.", "Your refund of $25.00 is on its way, Smith."]
    assert find_output("25", messages)
    assert find_output("jasmine", messages)
    assert not find_output("Jasmine Smith", messages)
    assert not find_output("25", messages[:2])


def test_empty_and_none_messages_are_skipped() -> None:
    assert find_output("25", [None, "", "25"])  # type: ignore[list-item]
    assert not find_output("25", [])


def test_check_outputs_reports_missing_in_order() -> None:
    texts = ["Order #W1234567 is cancelled; $1,234.50 will be refunded.", "Anything else, Jasmine?"]
    result = check_outputs(["1234.5", "#W7654321", "Jasmine", "10", "#W1234567"], texts)
    assert result == OutputsResult(passed=False, missing=["#W7654321", "10"])
    assert check_outputs(["1234.50", "jasmine", "#w1234567"], texts) == OutputsResult(passed=True, missing=[])


def test_check_outputs_nothing_required_passes() -> None:
    assert check_outputs([], []).passed
    assert check_outputs([], ["hello"]).missing == []


def test_check_outputs_no_agent_text_fails() -> None:
    result = check_outputs(["25"], [])
    assert not result.passed
    assert result.missing == ["25"]


@pytest.mark.parametrize("bad", ["", "   ", "\n"])
def test_empty_required_output_is_an_error(bad: str) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        find_output(bad, ["anything"])
    with pytest.raises(ValueError, match="must not be empty"):
        check_outputs(["25", bad], ["25"])


def test_single_strings_are_refused() -> None:
    with pytest.raises(TypeError, match="sequence of message strings"):
        find_output("25", "the total is 25")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of output strings"):
        check_outputs("25", ["25"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a string"):
        check_outputs([25], ["25"])  # type: ignore[list-item]

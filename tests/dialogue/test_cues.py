"""The dialogue cues (simulator.dialogue.cues): one definition of yes, no, closing and confirmation requests."""

import pytest

from simulator.dialogue.cues import asks_confirmation, is_closing, is_no, is_yes, offers_more_help


@pytest.mark.parametrize("text", ["yes", "Yes, please go ahead.", "Yeah", "  YES!", "sure, go ahead", "Confirm.",
                                  "ok, go ahead", "Okay, please do.", "Yep, do it", "Of course."])
def test_yes(text):
    assert is_yes(text)
    assert not is_no(text)


@pytest.mark.parametrize("text", ["no", "ok", "Okay, I understand.", "fine", "right", "I guess", "yesterday I said",
                                  "no, yes", "What would that cost?", "", None])
def test_not_a_yes(text):
    assert not is_yes(text)


@pytest.mark.parametrize("text", ["No.", "No, that's not right.", "Nope", "Don't do that.", "dont", "Not yet.",
                                  "Wait, that's wrong.", "Stop.", "That's not what I want.", "Cancel that."])
def test_no(text):
    assert is_no(text)
    assert not is_yes(text)


@pytest.mark.parametrize("text", ["Yes.", "Nothing to add? I said yes", "Notebook", "I do not know", "", None])
def test_not_a_no(text):
    assert not is_no(text)


@pytest.mark.parametrize("text", ["No, that's all, thank you.", "That's all I needed.", "Nothing else. Thanks!",
                                  "no thanks", "No thank you.", "I'm all set.", "Goodbye!", "bye", "thats it"])
def test_closing(text):
    assert is_closing(text)


@pytest.mark.parametrize("text", ["Yes, please go ahead.", "I want to return the boots.", "Nothing", "by Friday",
                                  "", None])
def test_not_a_closing(text):
    assert not is_closing(text)


@pytest.mark.parametrize("text,expected", [
    ("Is there anything else I can help you with?", True),
    ("Do you have any other questions?", True),
    ("How else can I help?", True),
    ("Which order do you mean?", False),
    (None, False),
])
def test_offers_more_help(text, expected):
    assert offers_more_help(text) is expected


@pytest.mark.parametrize("text,expected", [
    # questions with a confirmation word, and "(yes/no)" endings
    ("Shall I cancel order #W1?", True),
    ("Would you like me to proceed with the exchange?", True),
    ("Is that correct?", True),
    ("I will cancel #W1. Please confirm (yes/no).", True),
    ("I will cancel #W1. Proceed? yes/no", True),
    # imperative requests
    ("I will cancel #W1. Please confirm.", True),
    ("I will cancel #W1. Confirm!", True),
    ("I will cancel #W1. Reply yes to confirm.", True),
    ("I will cancel #W1. Please answer \"yes\" to go ahead.", True),
    ("I will cancel #W1. Let me know if I should proceed.", True),
    ("I will cancel #W1. Let me know if you want me to do it.", True),
    ("I will cancel #W1. Please tell me whether to continue.", True),
    ("Please confirm that the new address is correct.", True),
    # not confirmation requests
    ("Which order do you mean?", False),
    ("Your order was cancelled. Is there anything else?", False),
    ("Please confirm your email address.", False),
    ("Please provide your zip code.", False),
    ("Let me know if you have any other questions.", False),
    ("Let me know if I can help with anything else.", False),
    ("I have cancelled it. Please confirm receipt of the refund by email.", False),
    ("To confirm, your order #W1 is cancelled.", False),
    ("Shall I proceed? Let me first check one thing.", False),
    ("", False),
    ("   ", False),
    (None, False),
])
def test_asks_confirmation(text, expected):
    assert asks_confirmation(text) is expected


def test_cues_are_exported_by_the_agents_kit():
    from simulator.agents import kit

    for name in ("asks_confirmation", "is_closing", "is_no", "is_yes", "offers_more_help"):
        assert name in kit.__all__
    assert kit.is_yes is is_yes

"""Message text is scanned in linear time: a million-character unbroken token does not stall any part.

Each part (see ``tests/_support/long_tokens.py``) runs in a subprocess on 1,000,000-character tokens of every kind
(letters, digits, ``a1a1...``, ``#W`` + digits, ``x@x@...``, base64-like, ``1,1,...``, dots, hashes, ...)
under a time-out of minutes. No wall-clock figure is asserted: quadratic scanning (the old value regex of the
progress judge took 141 s at 100,000 characters, i.e. hours at a million) cannot finish at all, while linear
scanning finishes in seconds; the subprocess's own results are checked. The figure of a whole trial is
printed by ``scripts/bench-long-token``.

The regexes' behaviour on ordinary text is checked here on examples, against what the old patterns gave.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.long_tokens import KINDS, PARTS

ROOT = Path(__file__).resolve().parents[2]
LENGTH = 1_000_000
TIMEOUT_S = 240
"""Generous for linear work on every kind (a few seconds each on a loaded machine), far below what
quadratic scanning of a million characters needs (hours)."""


def _run_part(part: str) -> list[dict]:
    try:
        proc = subprocess.run([sys.executable, "-m", "tests._support.long_tokens", part, str(LENGTH)], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        started = [json.loads(ln)["kind"] for ln in out.splitlines() if ln.strip()]
        pytest.fail(f"{part} did not finish within {TIMEOUT_S} s; it was working on token kind "
                    f"{started[-1] if started else '(none)'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
    done = [r for r in rows if "seconds" in r]
    assert [r["kind"] for r in done] == list(KINDS), rows
    return done


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_whole_trial_with_a_million_character_agent_message(domain: str) -> None:
    for row in _run_part(f"trial_{domain}"):
        assert row["token_said"], row
        assert row["graded"], row
        assert row["termination"] in ("max_turns", "user_stop"), row


def test_llm_user_leak_guard_on_a_million_character_token() -> None:
    for row in _run_part("leak_guard"):
        assert row["secrets"] > 0, row
        assert row["found"] == 0 and row["found_vs_token"] == 0, row
        assert row["redacted_same"], row
        assert row["role_flip"] is None and row["tool_syntax"] is None, row
        assert row["stop"] is False and row["stop_after"] is True, row


def test_graders_on_a_million_character_token() -> None:
    for row in _run_part("graders"):
        # "1,234.56", "W2378156" and "the blue one" are never in the token; its own first 20 characters are,
        # unless they are no value or phrase of their own (dots, commas, hashes)
        assert row["outputs_missing"] in (3, 4), row
        assert row["loops_passed"] is False, row  # the same write three times
        assert row["verdicts"][0] is True and row["verdicts"][2] == "yes", row
        assert row["verdicts"][3] is True, row  # "VERDICT" + a million spaces + "yes": no colon, no verdict line


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_reference_agent_on_million_character_user_messages(domain: str) -> None:
    for row in _run_part(f"{domain}_agent"):
        assert row["error"] is None, row
        assert row["turns"] >= 2, row


def test_rewritten_regexes_on_uncut_million_character_tokens() -> None:
    rows = {r["kind"]: r for r in _run_part("patterns")}
    assert rows["letters"]["values"] == 0 and rows["digits"]["values"] == 1 and rows["base64"]["values"] > 1000
    assert all(r["emails"] == 0 and r["email_sub_same"] and not r["loose_name"] and not r["address"]
               and not r["stop"] for r in rows.values()), rows
    # no multi-word pattern completes on the words kind ("not ... card", "mark ... received", "because ...$")
    assert rows["words"]["multi_word"] == [False, False, False], rows["words"]


def test_every_part_is_tested() -> None:
    assert set(PARTS) == {"trial_retail", "trial_airline", "leak_guard", "graders", "retail_agent",
                          "airline_agent", "patterns"}


def test_clip_long_tokens_keeps_ordinary_text_and_cuts_long_tokens_to_their_ends() -> None:
    from simulator.dialogue.text import MAX_TOKEN_CHARS, clip_long_tokens

    ordinary = "Your order #W2378156 (https://example.com/track?id=123) ships tomorrow.\nAnything else?"
    assert clip_long_tokens(ordinary) == ordinary
    edge = "x" * MAX_TOKEN_CHARS
    assert clip_long_tokens(f"a {edge} b") == f"a {edge} b"
    long = "a" * 1000 + "?"
    half = MAX_TOKEN_CHARS // 2
    assert clip_long_tokens(f"Hi {long}\n{long} ok") == f"Hi {'a' * half}{'a' * (half - 1)}?\n" \
                                                          f"{'a' * half}{'a' * (half - 1)}? ok"


# --- behaviour on ordinary text: what the old patterns gave -------------------------------------------------

@pytest.mark.parametrize(("text", "values"), [
    ("Your order #W2378156 was refunded $54.04 to jane.doe+1@example.co.uk.",
     {"w2378156", "54.04", "jane.doe+1@example.co.uk"}),
    ("It costs 1,234.50 dollars; item 6086499569 (size 10) ships to zip 19122.",
     {"1234.50", "6086499569", "10", "19122"}),
    ("Flight HAT001 on 2024-05-16, gift_card_8211471 and credit_card_9513926.",
     {"hat001", "2024-05-16", "gift_card_8211471", "credit_card_9513926"}),
    ("No values here at all, only words.", set()),
])
def test_progress_values_of_ordinary_messages(text: str, values: set[str]) -> None:
    from simulator.dialogue.signals import values as _values

    assert _values(text) == values


def test_retail_agent_patterns_on_ordinary_text() -> None:
    from domains.retail._understand import ADDRESS_RE, EMAIL_RE, LOOSE_NAME_RE

    assert [m.group() for m in EMAIL_RE.finditer("mail a.b@x.com or c_d+e@y-z.org.")] == ["a.b@x.com",
                                                                                         "c_d+e@y-z.org"]
    m = LOOSE_NAME_RE.search("Hi, samuel laine, 83782")
    assert m is not None and m.groups() == ("samuel", "laine", "83782")
    m = LOOSE_NAME_RE.search("I am Mary-Ann Smith 12345")
    assert m is not None and m.groups() == ("Ann", "Smith", "12345")  # as before: a capital inside a word starts one
    a = ADDRESS_RE.search("Send it to 123 Main St, Apt 4, Springfield, IL 62701, USA please")
    assert a is not None and (a["a1"], a["a2"], a["city"], a["state"], a["zip"], a["country"]) == (
        "123 Main St", "Apt 4", "Springfield", "IL", "62701", "USA")


@pytest.mark.parametrize(("reply", "content", "stop"), [
    ("Thanks, bye! ###STOP###", "Thanks, bye!", True),
    ("ok #### stop ## trailing", "ok", True),
    ("a # STOP # b", "a # STOP # b", False),
])
def test_stop_token_of_ordinary_replies(reply: str, content: str, stop: bool) -> None:
    from simulator.users.llm_user import parse_user_reply

    turn = parse_user_reply(reply)
    assert (turn.content, turn.stop) == (content, stop)

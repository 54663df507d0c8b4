"""``signals.values`` finds its tokens word by word; it must find exactly what the pattern finds on the whole text.

The reference is the pattern run once over the whole text (the plain definition), a second method; texts are drawn
from the characters the word split and the pattern's lookarounds could disagree on: Unicode whitespace (no-break
space, line separator, the C0 separators ``\\x1c``-``\\x1f``), non-ASCII letters and digits (Arabic-Indic), and the
pattern's own punctuation.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.dialogue.signals import _VALUE_RE, values

ALPHABET = list("aZ_é9٣0@.+-#$,;:!?'x") + [" ", "\t", "\n", "\u00a0", "\u2028", "\x1c", "\x1f", "\u3000", "\x85"]


def reference(text: str) -> set[str]:
    return {v.lower().lstrip("#$").rstrip(".,").replace(",", "") for v in _VALUE_RE.findall(text)}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_values_word_by_word_equals_the_pattern_on_the_whole_text(text):
    assert values(text) == reference(text)


def test_values_examples_by_hand():
    assert values("Order #W2378156, refund $1,234.56 to a.b+c@mail.example.com.") == {
        "w2378156", "1234.56", "a.b+c@mail.example.com"}
    assert values("Your request has been handled.") == set()
    assert values("zip\u00a019122\u2028id٣٤") == {"19122", "id٣٤"}  # Unicode whitespace splits; \d is Unicode

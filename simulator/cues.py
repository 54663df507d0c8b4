"""Dialogue cues: the one place that says what counts as a yes, a no, a closing and a confirmation request.

Every part of tausim that reads plain conversation text for these cues uses this module, so that the agent,
the conversation loop, the simulated user and the grader agree on whether, for example, the user confirmed:

- the orchestrator (:func:`simulator.orchestrator.run_conversation`): a user stop while the agent
  :func:`asks_confirmation` is not a stop; a write right after a user :func:`is_yes` is a confirmed action;
  offers of more help (:func:`offers_more_help`) are not questions for the progress judge;
- the process grader (:mod:`simulator.grading.process`): a write needs a user :func:`is_yes` first;
- the rule-based and scripted users read an agent message as a confirmation request by :func:`asks_confirmation`;
- the reference agents of the shipped domains read the user's answer by :func:`is_yes` / :func:`is_no` and the
  end of the conversation by :func:`is_closing`.

All cues look at plain English text, case-insensitively; the patterns are small and general (no task
wording) and linear in the text's length. The user cues look at how a message starts ("Yes, please go ahead."
is a yes, "I guess yes" is not); the agent cues look at the message's last sentence.
"""

from __future__ import annotations

import re

__all__ = [
    "CLOSING_RE",
    "CONFIRM_IMPERATIVE_RE",
    "CONFIRM_QUESTION_RE",
    "MORE_HELP_RE",
    "NO_RE",
    "YES_RE",
    "asks_confirmation",
    "is_closing",
    "is_no",
    "is_yes",
    "offers_more_help",
]

YES_RE = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|i confirm|confirm(?:ed)?|correct|absolutely|of course|go ahead|proceed|"
    r"please (?:do|proceed|go ahead)|do it|(?:ok|okay|alright)\W+(?:go ahead|proceed|do it|please do))\b",
    re.IGNORECASE,
)
"""An explicit user yes: the message starts with one of these words. A bare "ok" / "okay" / "fine" / "right"
is an acknowledgement, not a yes."""

NO_RE = re.compile(
    r"^\W*(?:no|nope|nah|don'?t|do not|not|cancel that|stop|wait|that'?s (?:not|wrong))\b",
    re.IGNORECASE,
)
"""A user no: the message starts with one of these words ("No, that's wrong.", "Wait, ...", "Don't do that.")."""

CLOSING_RE = re.compile(
    r"\b(?:that'?s (?:all|it)|that is all|nothing else|no,? thanks?|no thank you|all set|(?:good)?bye)\b",
    re.IGNORECASE,
)
"""A user closing: the message says it needs nothing more or says goodbye, anywhere in it."""

MORE_HELP_RE = re.compile(
    r"\banything else\b|\bsomething else\b|\bany(?: other| more| further) (?:questions?|requests?|things?|issues?|"
    r"help|concerns?)\b|\banything more\b|\bhelp (?:you )?with anything\b|\bis that all\b|\bwhat else can i\b|"
    r"\bhow (?:else )?(?:can|may) i (?:help|assist)\b|\bwhat can i (?:help|do for) you\b",
    re.IGNORECASE,
)
"""An agent's offer of more help ("Is there anything else I can help you with?"), anywhere in a sentence."""

CONFIRM_QUESTION_RE = re.compile(
    r"\b(?:confirm|proceed|go ahead|shall i|should i|do you want|would you like|is that (?:correct|right|ok)|"
    r"(?:yes|y)\s*/\s*(?:no|n)|yes or no)\b",
    re.IGNORECASE,
)
"""Words that make a question (a sentence ending in "?" or "(yes/no)") a confirmation request."""

CONFIRM_IMPERATIVE_RE = re.compile(
    r"^\W*(?:please\s+)?(?:"
    r"confirm\b(?:\W*$|\s+(?:that|whether|if|to|and)\b)"
    r"|(?:reply|answer|respond|say|type|write)\s+(?:with\s+)?\W?(?:yes|y)\b"
    r"|(?:let me know|tell me)\s+(?:if|whether)\s+(?:i should|you(?:'d| would) like me to|you want me to)\b"
    r"|(?:let me know|tell me)\s+(?:if|whether)\s+(?:(?:you(?:'d| would) like|you want)\s+)?(?:me\s+)?to\s+"
    r"(?:proceed|go ahead|continue)\b)",
    re.IGNORECASE,
)
"""An imperative confirmation request, matched at the start of the last sentence: "Please confirm.", "Reply yes
to confirm.", "Let me know if I should proceed.", "Please confirm that you want the refund.". "Please confirm
your email address." asks for a value, not a yes."""

_YES_NO_TAIL_RE = re.compile(r"\byes\s*/\s*no\b\)?\W*$", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")


def is_yes(text: str | None) -> bool:
    """Return True when a user message is an explicit yes (:data:`YES_RE`).

    Args:
        text: the user's message (None: not a yes).
    """
    return bool(text) and YES_RE.search(text or "") is not None


def is_no(text: str | None) -> bool:
    """Return True when a user message starts with a no (:data:`NO_RE`).

    Args:
        text: the user's message (None: not a no).
    """
    return bool(text) and NO_RE.search(text or "") is not None


def is_closing(text: str | None) -> bool:
    """Return True when a user message closes the conversation (:data:`CLOSING_RE`: "that's all", "bye" ...).

    Args:
        text: the user's message (None: not a closing).
    """
    return bool(text) and CLOSING_RE.search(text or "") is not None


def offers_more_help(text: str | None) -> bool:
    """Return True when an agent message (or sentence) offers more help (:data:`MORE_HELP_RE`).

    Args:
        text: the agent's message or one of its sentences (None: no offer).
    """
    return bool(text) and MORE_HELP_RE.search(text or "") is not None


def _last_sentence(text: str) -> str:
    """The last sentence of a stripped message (split after ".", "!" or "?" followed by white space)."""
    return _SENTENCE_END_RE.split(text)[-1]


def asks_confirmation(text: str | None) -> bool:
    """Return True when an agent message asks the user to confirm (a yes or a no is the expected answer).

    A message asks for confirmation when its last sentence is either

    - a question (it ends with "?" or with "yes/no") with a confirmation word (:data:`CONFIRM_QUESTION_RE`):
      "Shall I cancel order #W1?", "Would you like me to proceed?", "Please confirm (yes/no).";
    - or an imperative confirmation request (:data:`CONFIRM_IMPERATIVE_RE`): "Please confirm.", "Reply yes to
      confirm.", "Let me know if I should proceed.".

    Args:
        text: the agent's message (None or blank: False).
    """
    if not text or not text.strip():
        return False
    tail = text.strip()
    last = _last_sentence(tail)
    if tail.endswith("?") or _YES_NO_TAIL_RE.search(tail):
        return CONFIRM_QUESTION_RE.search(last) is not None
    return CONFIRM_IMPERATIVE_RE.search(last) is not None

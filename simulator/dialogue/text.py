"""Text helpers shared by the parts that scan message text for cues (the progress judge, the rule-based user).

Cue patterns look for words and short phrases; an unbroken token of thousands of characters (a degenerate
model output: base64, a hash, one character repeated) holds none, but every pattern still walks all of it.
:func:`clip_long_tokens` shortens such tokens first, so cue scanning costs the same for a message of a
million-character token as for a short one. Text without such tokens is returned unchanged.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TOKEN_CHARS", "clip_long_tokens"]

MAX_TOKEN_CHARS = 256
"""Longest unbroken token (run of non-whitespace) kept whole; a longer one keeps its first and last
``MAX_TOKEN_CHARS // 2`` characters (so a closing "?" stays). Words, ids, amounts, emails and ordinary links are
far shorter."""

_LONG_TOKEN_RE = re.compile(rf"(?<!\S)\S{{{MAX_TOKEN_CHARS + 1},}}+")
"""A token longer than MAX_TOKEN_CHARS, tried only where a token starts (linear)."""


def clip_long_tokens(text: str) -> str:
    """Return ``text`` with every token longer than :data:`MAX_TOKEN_CHARS` cut to its two ends.

    Args:
        text: a message.

    Returns:
        The text, unchanged when no token is longer than :data:`MAX_TOKEN_CHARS` characters.
    """
    if len(text) <= MAX_TOKEN_CHARS:
        return text
    half = MAX_TOKEN_CHARS // 2
    return _LONG_TOKEN_RE.sub(lambda m: m.group()[:half] + m.group()[-half:], text)

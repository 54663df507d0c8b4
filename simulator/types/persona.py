"""The persona schema: how a simulated user behaves, independent of what it wants (the task's scenario).

:class:`Persona` is exported by :mod:`simulator`; the shipped persona files and their loader live in the
``personas`` package (``personas/data/NAME.json``, :func:`personas.load_personas`).

A persona is a JSON object validated by :class:`Persona`; unknown fields are refused, and numbers and booleans must
be JSON numbers and booleans (``"patience": true`` or ``"typo_rate": "0.1"`` are refused, not converted). Rates
are probabilities drawn by the trial seed, so a persona with non-zero rates still gives reproducible conversations.
"""

from __future__ import annotations

import ast
import inspect
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = ["NAME_PATTERN", "Persona", "Politeness", "RevealStyle", "Verbosity"]

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
"""Persona names: lower-case letters, digits, ``-`` and ``_`` (they are file names and CLI arguments)."""

RevealStyle = Literal["all_at_once", "when_asked", "drip"]
Verbosity = Literal["terse", "normal", "verbose"]
Politeness = Literal["rude", "neutral", "polite"]

_Phrases = tuple[str, ...]


class Persona(BaseModel):
    """How a simulated user behaves: patience, how it reveals what it knows, its manner, its mistakes.

    The task's scenario says what the user knows and wants; the persona says how it goes about it. Both user
    kinds (the rule-based agenda user and the LLM user) honour the same persona.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    """Identifier used on the command line (``--personas NAME``); a persona file is named ``NAME.json``."""
    description: str = Field(min_length=1, max_length=160, pattern=r"^[^\n\r]*\S[^\n\r]*$")
    """One line saying who this user is, shown by ``tausim personas``."""
    patience: int | None = Field(default=None, ge=1, strict=True)
    """Consecutive agent turns without progress the user puts up with before abandoning the conversation
    (termination reason ``user_abandon``); None: it never abandons (the trial's turn cap still applies).
    Progress is judged by the orchestrator: new information exchanged, a successful tool call, a confirmed
    action; the same question asked twice, tool errors and agent repetition count against patience."""
    reveal_style: RevealStyle = "when_asked"
    """How the user gives what it knows: ``all_at_once`` (everything relevant in its first message),
    ``when_asked`` (only the facts the agent asks for), ``drip`` (one fact per turn, even when asked for more)."""
    verbosity: Verbosity = "normal"
    """Length of its messages: ``terse`` (a few words), ``normal``, ``verbose`` (chatty, with asides that carry
    no task information)."""
    politeness: Politeness = "neutral"
    """Tone of its messages; it never changes what the user says, only how."""
    typo_rate: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)
    """Probability that a word of a user message carries a typo (slot values such as ids and emails are never
    misspelt, so that a typo cannot become a wrong fact)."""
    wrong_answer_rate: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)
    """Probability, per agent question, that the user answers a different question than the one asked (still
    only from its own facts)."""
    mind_change_turn: int | None = Field(default=None, ge=1, strict=True)
    """User turn (1-based, counting the user's messages) at which it drops its current intent for the
    scenario's fallback intent; None: it never changes its mind. Ignored when the scenario has no fallback."""
    mind_change_phrases: _Phrases = Field(default=(), validate_default=True)
    """How the user announces that it changed its mind; required (non-empty) when ``mind_change_turn`` is set."""
    policy_push: bool = Field(default=False, strict=True)
    """The user insists on something the domain policy forbids (an exception, a refund outside the rules)
    before accepting a refusal."""
    push_attempts: int = Field(default=2, ge=1, le=10, strict=True)
    """With ``policy_push``: how many times it insists (after the first refusal) before accepting it."""
    push_phrases: _Phrases = Field(default=(), validate_default=True)
    """How the user insists; required (non-empty) when ``policy_push`` is true."""
    abandonment_phrases: _Phrases = Field(default=(), validate_default=True)
    """What the user says when it gives up (its last message); required (non-empty) when ``patience`` is set.
    The wording is drawn by the trial seed."""
    llm_instructions: str | None = None
    """Extra instructions for the LLM user's prompt describing this manner in plain words; None: made from the
    fields above. The rule-based user ignores it."""

    @field_validator("mind_change_phrases", "push_phrases", "abandonment_phrases")
    @classmethod
    def _phrases_ok(cls, value: _Phrases, info: ValidationInfo) -> _Phrases:
        for phrase in value:
            if not phrase.strip():
                raise ValueError("phrases must not be empty or blank")
        if len(set(value)) != len(value):
            raise ValueError("phrases must not repeat")
        needed_by = {"abandonment_phrases": "patience", "mind_change_phrases": "mind_change_turn",
                     "push_phrases": "policy_push"}[str(info.field_name)]
        setting = info.data.get(needed_by)
        if setting not in (None, False) and not value:
            raise ValueError(f"must not be empty when {needed_by} is set ({needed_by}={setting!r})")
        return value


def _describe_fields(model: type[BaseModel]) -> None:
    """Give each field of ``model`` its attribute docstring as its description (the JSON schema shows them).

    pydantic's ``use_attribute_docstrings`` finds the class's source by walking the import's stack frames through
    ``inspect.getmodule``, which scans every loaded module (~30 ms in a run's start-up); the class's own source is
    found directly. Without source (a frozen install) the fields keep no description.
    """
    try:
        (cls,) = ast.parse(inspect.getsource(model)).body
    except (OSError, TypeError, ValueError):
        return
    assert isinstance(cls, ast.ClassDef)
    changed = False
    for stmt, doc in zip(cls.body, cls.body[1:], strict=False):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(doc, ast.Expr) \
                and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
            field = model.model_fields.get(stmt.target.id)
            if field is not None and field.description is None:
                field.description = inspect.cleandoc(doc.value.value)
                changed = True
    if changed:
        model.model_rebuild(force=True)


_describe_fields(Persona)


MOVES = ("switch_persona", "change_mind", "wrong_then_correct", "drip_reveal", "push_policy", "off_topic",
         "impatience", "deny")
"""Diversity-inducing user moves a fork can make in place of the user's next turn:

- ``switch_persona``: the user plays another persona from then on (``switch_persona:NAME``; plain: the next of the
  harness's personas after the current one);
- ``change_mind``: "I've changed my mind, I don't want that", then back to the original request;
- ``wrong_then_correct``: the user's own answer with every digit altered, then the correct one;
- ``drip_reveal``: the user's own answer one sentence per turn;
- ``push_policy``: asks for an exception to the policy;
- ``off_topic``: an unrelated question;
- ``impatience``: complains about the time it takes;
- ``deny``: refuses what the agent proposes.
"""

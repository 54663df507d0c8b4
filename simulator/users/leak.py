"""The leak guard, public API: what a simulated user must not know, and a matcher that finds it in user text.

A user simulator sees only its scenario; values it was not given (gold-action arguments, required outputs,
policy sentences) must not appear in what it says. Use it to guard a simulator of your own::

    from simulator.users.leak import SecretMatcher, task_secrets

    matcher = SecretMatcher(task_secrets(task, policy))
    leaked = matcher.find(user_text, heard=[agent_text])   # secrets in user_text the agent has not said

:func:`task_secrets` lists a task's secrets (:class:`Secret`, each with its ``kind`` and matching ``form``);
:class:`SecretMatcher` finds them (:func:`find_secrets` once, :func:`redact` to mask them); :func:`role_flip`
and :func:`tool_syntax` spot a simulator speaking as the agent or emitting tool calls; :func:`scenario_text` is
everything a scenario gives the user. The matching rules are documented in :mod:`simulator.users._leak`.
"""

from __future__ import annotations

from simulator.users._leak import (
    MIN_DIGIT_RUN,
    MIN_ID_CHARS,
    MIN_INT_DIGITS,
    MIN_TEXT_CHARS,
    MIN_TEXT_WORDS,
    POLICY_MIN_WORDS,
    POLICY_WINDOW,
    REDACTED,
    Secret,
    SecretMatcher,
    find_secrets,
    redact,
    role_flip,
    scenario_text,
    task_secrets,
    tool_syntax,
)

__all__ = [
    "MIN_DIGIT_RUN",
    "MIN_ID_CHARS",
    "MIN_INT_DIGITS",
    "MIN_TEXT_CHARS",
    "MIN_TEXT_WORDS",
    "POLICY_MIN_WORDS",
    "POLICY_WINDOW",
    "REDACTED",
    "Secret",
    "SecretMatcher",
    "find_secrets",
    "redact",
    "role_flip",
    "scenario_text",
    "task_secrets",
    "tool_syntax",
]

"""Simulated users: the UserSimulator protocol, the scripted user, and the registry of user specs.

User specs on the command line: ``scripted``, ``confirming`` (a scripted user that answers yes to each
confirmation question) and ``llm:MODEL``.
"""

from __future__ import annotations

from typing import Any

from simulator._plugins import load_reference
from simulator._protocols import TrialContext, UserFactory, UserSimulator
from simulator.users._scripted import (
    STOP_TOKEN,
    ConfirmingUser,
    ScriptedUser,
    confirming_user_factory,
    scripted_user_factory,
)

__all__ = ["STOP_TOKEN", "ConfirmingUser", "ScriptedUser", "TrialContext", "UserFactory", "UserSimulator",
           "confirming_user_factory", "user_factory"]


def user_factory(spec: str, **params: Any) -> UserFactory:
    """Return the user-simulator factory named by a spec string.

    Args:
        spec: ``scripted``, ``confirming``, ``llm:MODEL`` or ``py:package.module:factory`` (a callable taking the
            :class:`TrialContext` and returning an object with ``reply(messages)``).
        **params: model parameters for LLM users.

    Returns:
        A callable building one simulated user per trial.

    Raises:
        ValueError: unknown spec, or ``llm:`` without a model.
    """
    if spec == "scripted":
        return scripted_user_factory()
    if spec == "confirming":
        return confirming_user_factory()
    if spec.startswith("llm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--user llm:MODEL needs a model, e.g. llm:openai/gpt-4o-mini")
        from simulator.users.llm_user import llm_user_factory

        return llm_user_factory(model, **params)
    if spec.startswith("py:"):
        return load_reference(spec, "user")  # type: ignore[no-any-return]
    raise ValueError(f"--user {spec!r}: unknown user; use scripted, confirming, llm:MODEL or py:MODULE:FACTORY")

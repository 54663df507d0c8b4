"""Simulated users: the UserSimulator protocol, the scripted user, and the registry of user schemes.

User specs on the command line are ``SCHEME[:ARG]``; the scheme names a builder registered under the entry-point
group ``tausim.users`` (see :mod:`simulator.users._registry`; ``tausim users`` lists them). tausim registers
``scripted``, ``confirming`` (a scripted user that answers yes to each confirmation question), ``rule`` (the
agenda-based :class:`RuleUser`), ``llm:MODEL``, ``replay:RUN[:TASK/TRIAL]`` and ``py:package.module:factory``;
another package adds a scheme with an entry point of its own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from simulator.types.protocols import TrialContext, UserFactory, UserSimulator
from simulator.users._registry import USERS, UserBuilder, user_factory, user_schemes
from simulator.users._scripted import (
    STOP_TOKEN,
    ConfirmingUser,
    ScriptedUser,
    confirming_user_factory,
    scripted_user_factory,
)

if TYPE_CHECKING:
    from simulator.users.rule_user import RuleUser, rule_user_factory

__all__ = ["STOP_TOKEN", "USERS", "ConfirmingUser", "RuleUser", "ScriptedUser", "TrialContext", "UserBuilder",
           "UserFactory", "UserSimulator", "confirming_user_factory", "rule_user_factory", "scripted_user_factory",
           "user_factory", "user_schemes"]


def __getattr__(name: str) -> Any:
    """``RuleUser`` and ``rule_user_factory``, imported on first use (PEP 562).

    The rule user's phrase and pattern tables cost a run that does not play it (a scripted user's) about a
    fiftieth of its start-up.

    Raises:
        AttributeError: any other name.
    """
    if name in ("RuleUser", "rule_user_factory"):
        return getattr(importlib.import_module("simulator.users.rule_user"), name)
    raise AttributeError(f"module 'simulator.users' has no attribute {name!r}")

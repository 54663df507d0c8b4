"""Simulated users: the UserSimulator protocol, the scripted user, and the registry of user specs.

User specs on the command line: ``scripted``, ``confirming`` (a scripted user that answers yes to each
confirmation question), ``rule`` (the agenda-based :class:`RuleUser`) and ``llm:MODEL``.
"""

from __future__ import annotations

from typing import Any

from simulator.types.protocols import TrialContext, UserFactory, UserSimulator
from simulator.users._scripted import (
    STOP_TOKEN,
    ConfirmingUser,
    ScriptedUser,
    confirming_user_factory,
    scripted_user_factory,
)
from simulator.users.rule_user import RuleUser, rule_user_factory
from simulator.world.plugins import load_reference

__all__ = ["STOP_TOKEN", "ConfirmingUser", "RuleUser", "ScriptedUser", "TrialContext", "UserFactory", "UserSimulator",
           "confirming_user_factory", "rule_user_factory", "user_factory"]


def user_factory(spec: str, **params: Any) -> UserFactory:
    """Return the user-simulator factory named by a spec string.

    Args:
        spec: ``scripted``, ``confirming``, ``rule``, ``llm:MODEL``, ``replay:RUN[:TASK/TRIAL]`` (a recorded run's
            user turns, :mod:`simulator.users.replay_user`) or ``py:package.module:factory`` (a callable
            taking the :class:`TrialContext` and returning an object with ``reply(messages)``).
        **params: model parameters for LLM users; for ``rule``: ``domain`` (the run's
            :class:`~simulator.world.domain.Domain`) and ``template`` (its template database), both required; model
            parameters (``temperature``, ``cache`` ...) do not apply to it and are ignored. For ``replay:``:
            ``store`` (the results store URL holding RUN) and ``fallback`` (the spec of the user that continues
            after a divergence), the other parameters going to the fallback.

    Returns:
        A callable building one simulated user per trial.

    Raises:
        ValueError: unknown spec, ``llm:`` without a model, or ``rule`` without ``domain``/``template``.
    """
    if spec == "scripted":
        return scripted_user_factory()
    if spec == "confirming":
        return confirming_user_factory()
    if spec == "rule":
        missing = [k for k in ("domain", "template") if params.get(k) is None]
        if missing:
            raise ValueError(f"--user rule needs the run's {' and '.join(missing)} (user_factory('rule', "
                             "domain=..., template=...)); the rule-based user plays the domain's derived scenario")
        return rule_user_factory(params["domain"], params["template"])
    if spec.startswith("llm:"):
        model = spec.split(":", 1)[1]
        if not model:
            raise ValueError("--user llm:MODEL needs a model, e.g. llm:openai/gpt-4o-mini")
        from simulator.users.llm_user import llm_user_factory

        return llm_user_factory(model, **params)
    if spec.startswith("py:"):
        return load_reference(spec, "user")  # type: ignore[no-any-return]
    if spec.startswith("replay:"):
        from simulator.users.replay_user import replay_user_factory

        rest = dict(params)
        store, fallback = rest.pop("store", None), rest.pop("fallback", None)
        if fallback is not None and fallback.startswith("replay:"):
            raise ValueError(f"--fallback-user {fallback!r}: a replay user cannot continue a replay")
        if fallback is not None and fallback != "rule":  # only the rule user takes the domain and template
            rest = {k: v for k, v in rest.items() if k not in ("domain", "template")}
        return replay_user_factory(spec[len("replay:"):], store=store,  # type: ignore[return-value]
                                   fallback=user_factory(fallback, **rest) if fallback is not None else None)
    raise ValueError(f"--user {spec!r}: unknown user; use scripted, confirming, rule, llm:MODEL, replay:RUN or "
                     "py:MODULE:FACTORY")

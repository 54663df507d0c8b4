"""tausim's own user schemes, registered by tausim's ``pyproject.toml`` under the entry-point group ``tausim.users``.

Each is a :class:`~simulator.users.UserBuilder`: ``builder(arg, **options) -> UserFactory``, ``arg`` being the text
after ``SCHEME:``. They go through the registry exactly as another package's schemes do.
"""

from __future__ import annotations

from typing import Any

from simulator.types.protocols import UserFactory
from simulator.users._registry import user_factory
from simulator.users._scripted import confirming_user_factory, scripted_user_factory
from simulator.world.plugins import load_reference

__all__ = ["confirming", "llm", "python", "replay", "rule", "scripted"]

_RUN_OPTIONS = ("domain", "template")
"""Options every user builder is given in a run; only the rule user uses them."""


def _no_arg(scheme: str, arg: str) -> None:
    if arg:
        raise ValueError(f"--user {scheme}:{arg}: the {scheme} user takes no argument; use --user {scheme}")


def scripted(arg: str, /, **options: Any) -> UserFactory:
    """``scripted``: fixed lines, then stop."""
    _no_arg("scripted", arg)
    return scripted_user_factory()


def confirming(arg: str, /, **options: Any) -> UserFactory:
    """``confirming``: the opening, then "yes" to each confirmation question."""
    _no_arg("confirming", arg)
    return confirming_user_factory()


def rule(arg: str, /, **options: Any) -> UserFactory:
    """``rule``: the agenda-based RuleUser; needs ``domain`` and ``template``; model parameters are ignored."""
    _no_arg("rule", arg)
    missing = [k for k in _RUN_OPTIONS if options.get(k) is None]
    if missing:
        raise ValueError(f"--user rule needs the run's {' and '.join(missing)} (user_factory('rule', "
                         "domain=..., template=...)); the rule-based user plays the domain's derived scenario")
    from simulator.users.rule_user import rule_user_factory  # its phrase tables only when a run plays it

    return rule_user_factory(options["domain"], options["template"])


def llm(arg: str, /, **options: Any) -> UserFactory:
    """``llm:MODEL``: an LLM playing the task's scenario, leak guarded; options: model parameters."""
    if not arg:
        raise ValueError("--user llm:MODEL needs a model, e.g. llm:openai/gpt-4o-mini")
    from simulator.users.llm_user import llm_user_factory

    return llm_user_factory(arg, **{k: v for k, v in options.items() if k not in _RUN_OPTIONS})


def replay(arg: str, /, *, store: str | None = None, fallback: str | None = None, **options: Any) -> UserFactory:
    """``replay:RUN[:TASK/TRIAL]``: a recorded run's user turns; ``store``, ``fallback`` (a user spec) as options."""
    from simulator.users.replay_user import replay_user_factory

    if fallback is not None and fallback.startswith("replay:"):
        raise ValueError(f"--fallback-user {fallback!r}: a replay user cannot continue a replay")
    return replay_user_factory(arg, store=store,  # type: ignore[return-value]
                               fallback=user_factory(fallback, **options) if fallback is not None else None)


def python(arg: str, /, **options: Any) -> UserFactory:
    """``py:package.module:factory``: your own user factory, imported by name (options are not passed to it)."""
    return load_reference(f"py:{arg}", "user")  # type: ignore[no-any-return]

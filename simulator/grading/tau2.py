"""Grading components of tau2-bench's reward bases that tausim had no equivalent of.

- ``actions`` (ACTION): each gold action must be matched by some tool call of the trial, in any order: the
  same name (and requestor), and equal values for the arguments named by the action's ``compare_args`` (all
  of its arguments when absent; none when ``[]``). Calls are the trajectory's, successful or not, as in tau2.
- ``env_assertions`` (ENV_ASSERTION): each assertion calls a domain function on the trial's final state (one
  of :meth:`simulator.world.domain.Domain.assertion_functions` of its side, as the ``env`` assertion type does) and
  must return its ``assert_value``.
- the tau2 COMMUNICATE rule (:func:`communicated_tau2`), the ``communicate=tau2`` compatibility option: each
  string must be a case-insensitive substring of some assistant message, commas removed on both sides (so
  ``"10"`` is found in ``"$100"``; tausim's default rule, :func:`simulator.grading.outputs.check_outputs`, is
  stricter).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from simulator.errors import ToolError
from simulator.types.grade import ActionsResult, EnvAssertionResult, EnvAssertionsResult
from simulator.types.tasks import Action, EnvAssertion
from simulator.types.trajectory import Trajectory
from simulator.world.tools import ToolContext

if TYPE_CHECKING:
    from simulator.world.database import TrialDatabase
    from simulator.world.domain import Domain

__all__ = ["action_matches", "check_actions", "check_env_assertions", "communicated_tau2"]








_CANONICAL = json.JSONEncoder(sort_keys=True, default=str)
"""What ``json.dumps(value, sort_keys=True, default=str)`` encodes with, made once (it holds only its settings)."""


def _canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


def action_matches(gold: Action, name: str, arguments: Mapping[str, Any] | None, requestor: str = "assistant") -> bool:
    """Return whether a call matches a gold action (name, requestor, and the ``compare_args`` values).

    Args:
        gold: the gold action.
        name: the call's tool name.
        arguments: the call's arguments (None: unparsable, matches only ``compare_args == []``).
        requestor: who made the call (``assistant`` or ``user``).
    """
    if name != gold.name or requestor != gold.requestor:
        return False
    return _arguments_match(_wanted(gold), arguments, {})


def _wanted(gold: Action) -> dict[str, str]:
    """The canonical text of each argument a gold action compares (all of its arguments without ``compare_args``)."""
    keys = list(gold.arguments) if gold.compare_args is None else gold.compare_args
    return {k: _canonical(gold.arguments.get(k)) for k in keys}


def _arguments_match(wanted: Mapping[str, str], arguments: Mapping[str, Any] | None, texts: dict[str, str]) -> bool:
    """Whether a call's arguments have the gold's compared values (:func:`_wanted`); its texts kept in ``texts``."""
    if not wanted:
        return True
    if arguments is None:
        return False
    for k, text in wanted.items():
        if k not in arguments:
            return False
        mine = texts.get(k)
        if mine is None:
            mine = texts[k] = _canonical(arguments[k])
        if mine != text:
            return False
    return True


def check_actions(gold: Sequence[Action], trajectory: Trajectory) -> ActionsResult:
    """Check that every gold action is matched by some tool call of the trajectory (any order).

    Args:
        gold: the task's gold actions.
        trajectory: the trial (its ``tool_calls``, each with its requestor: the agent's or the user's).

    Returns:
        The :class:`ActionsResult`.
    """
    # a record's requestor is ``agent`` or ``user`` (dual control); a gold action's ``assistant`` or ``user``
    calls: dict[tuple[str, str], list[tuple[Mapping[str, Any] | None, dict[str, str]]]] = {}
    for c in trajectory.tool_calls:  # by (name, requestor); each with its canonical argument texts, made once
        calls.setdefault((c.name, "user" if c.requestor == "user" else "assistant"), []).append((c.arguments, {}))
    missing = []
    for i, a in enumerate(gold):
        same = calls.get((a.name, a.requestor), [])
        wanted = _wanted(a) if same else {}
        if not any(_arguments_match(wanted, args, texts) for args, texts in same):
            missing.append({"index": i, "name": a.name, "requestor": a.requestor, "arguments": a.arguments,
                            "compare_args": a.compare_args})
    return ActionsResult(passed=not missing, missing=missing)


def check_env_assertions(domain: Domain, trial: TrialDatabase, assertions: Sequence[EnvAssertion]
                         ) -> EnvAssertionsResult:
    """Evaluate environment assertions on a trial's final state.

    Args:
        domain: the domain (its :meth:`~simulator.world.domain.Domain.assertion_functions`).
        trial: the trial database after the conversation.
        assertions: the task's ``env_assertions``.

    Returns:
        The :class:`EnvAssertionsResult`; a function the domain does not know fails its assertion (recorded
        with the error), it does not raise.
    """
    ctx = ToolContext(trial.session, trial.options)
    sides = {side: domain.assertion_functions(side) for side in ("agent", "user")}
    results = []
    for a in assertions:
        fn = sides["user" if a.env_type == "user" else "agent"].get(a.func_name)
        error = None
        if fn is None:
            error = f"domain {domain.name!r} has no {a.env_type}-side assertion function {a.func_name!r}"
        else:
            try:
                actual = fn(ctx, **a.arguments)
            except (ToolError, TypeError, ValueError) as e:  # bad arguments: the assertion fails, with the error
                error = f"{a.func_name}: {type(e).__name__}: {e}"
        if error is not None:
            results.append(EnvAssertionResult(func_name=a.func_name, env_type=a.env_type, arguments=a.arguments,
                                              expected=a.assert_value, passed=False, error=error, message=a.message))
            continue
        results.append(EnvAssertionResult(
            func_name=a.func_name, env_type=a.env_type, arguments=a.arguments, expected=a.assert_value,
            actual=actual, passed=_canonical(actual) == _canonical(a.assert_value), message=a.message,
        ))
    return EnvAssertionsResult(passed=all(r.passed for r in results), results=results)


def communicated_tau2(required: Sequence[str], agent_texts: Sequence[str]) -> list[str]:
    """Return the required strings tau2's COMMUNICATE rule does not find.

    The rule: a case-insensitive substring of some assistant message, commas removed on both sides.

    Args:
        required: the task's ``communicate_info``.
        agent_texts: the assistant's message texts.

    Returns:
        The missing strings, in task order.
    """
    texts = [t.lower().replace(",", "") for t in agent_texts if t]
    return [r for r in required if not any(r.lower().replace(",", "") in t for t in texts)]

"""A fault-injection agent: the oracle's gold actions, with one known fault injected at a known rate.

It exists to test the graders: each fault kind should be caught by a known grading layer and by no other,
and a clean trial should pass every layer. Spec ``faulty:KIND=RATE[,KIND=RATE...]``, e.g.
``faulty:wrong_argument=0.2,skip_confirmation=0.1``. Each trial draws one number from its own generator
(``ctx.rng``); the rates, in the order given, split ``[0, 1)`` so that at most one fault kind is drawn per
trial (rates must sum to at most 1). A drawn fault that does not apply to the task (e.g. ``skip_confirmation``
on a task that does not ask for confirmation) is not injected. The injected fault is in the agent's
``metadata`` (``{"fault": KIND or None, "drawn": KIND or None}``), copied by the orchestrator into
``Trajectory.agent_metadata``.

Clean behaviour: the gold actions in order, one tool call per step; on a task with ``process.confirm_writes``
each write (conversation-enders excepted) is preceded by a question naming it ("Shall I transfer with ...?
(yes/no)") and done only after the user's explicit yes (use the ``confirming`` user); then a closing message
stating the required outputs.

Fault kinds and the layer meant to catch them:

- ``wrong_argument``: one argument of the first write is altered (a number + 1, a string suffixed) -> state.
- ``skip_confirmation``: writes without asking (tasks with ``confirm_writes``) -> process.
- ``duplicate_write``: the first write is repeated at once -> state, and loops when the threshold is 0.
- ``forbidden_tool``: a call of the task's first forbidden tool (or of a write tool on a ``no_writes`` task)
  with empty arguments, rejected by validation so that it changes nothing -> process.
- ``premature_transfer``: a call of the conversation-ending tool before the first write -> state (and process
  when the task expects another termination).
- ``over_budget``: failing read calls (invalid arguments, each different, so not a loop) until the task's
  ``budget.max_tool_calls`` is exceeded by one -> budget.
- ``skip_reads``: the writes alone: every read gold action (identification, look-ups) is left out, the writes and
  the closing message kept -> process (the policy's necessary precedences, e.g. identify the user first).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from simulator.agents.rates import parse_rates
from simulator.dialogue.cues import is_yes
from simulator.types.messages import AgentTurn, Message, ToolCall
from simulator.types.protocols import TrialContext

__all__ = ["FAULT_KINDS", "FaultyOracleAgent", "faulty_agent_factory", "parse_fault_rates"]

FAULT_KINDS = ("wrong_argument", "skip_confirmation", "duplicate_write", "forbidden_tool", "premature_transfer",
               "over_budget", "skip_reads")
"""The faults the agent can inject."""

_READ_VERBS = ("get", "find", "list", "search", "calculate", "think", "lookup", "check")


def parse_fault_rates(text: str) -> dict[str, float]:
    """Parse ``KIND=RATE[,KIND=RATE...]`` (the part of a ``faulty:`` spec after the colon).

    Returns:
        Kind -> rate, in the order given; empty for an empty text (a clean agent).

    Raises:
        ValueError: unknown kind, repeated kind, a rate outside [0, 1], or rates summing to more than 1.
    """
    rates = parse_rates(text, "faulty agent", "kind", FAULT_KINDS)
    if sum(rates.values()) > 1.0 + 1e-9:
        raise ValueError(f"faulty agent: the rates sum to {sum(rates.values()):g} > 1 (one fault per trial at most)")
    return rates


def _alter(arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the arguments with one value changed (first number + 1, else first string suffixed), or None."""
    out = dict(arguments)
    for key in sorted(out):
        value = out[key]
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value + 1
            return out
    for key in sorted(out):
        if isinstance(out[key], str):
            out[key] = out[key] + "-x"
            return out
    return None


class FaultyOracleAgent:
    """The oracle with at most one injected fault per trial (see the module docstring).

    Args:
        ctx: the trial context (task, ``rng`` for the draw, ``extra["tool_kinds"]`` for tool kinds).
        rates: fault kind -> probability per trial (see :func:`parse_fault_rates`).

    Attributes:
        metadata: ``{"fault": the injected kind or None, "drawn": the drawn kind or None}``.
    """

    def __init__(self, ctx: TrialContext, rates: Mapping[str, float]):
        task = ctx.task
        kinds: dict[str, str] = dict(ctx.extra.get("tool_kinds") or {})
        self._kinds = kinds
        draw = float(ctx.rng.random())
        drawn: str | None = None
        edge = 0.0
        for kind, rate in rates.items():
            edge += rate
            if draw < edge:
                drawn = kind
                break
        actions = [(a.name, dict(a.arguments)) for a in task.gold_actions]
        writes = [i for i, (name, _) in enumerate(actions) if self._kind(name) == "write"]
        confirm = bool(task.process.confirm_writes)
        fault = drawn if drawn is not None and self._applies(drawn, task, actions, writes, confirm) else None
        self.metadata: dict[str, Any] = {"fault": fault, "drawn": drawn}

        # the plan: ("call", name, args) | ("ask", name, args) | ("text", content)
        plan: list[tuple[Any, ...]] = []
        if fault == "over_budget":
            budget = task.budget.max_tool_calls if task.budget is not None else None
            assert budget is not None
            probe = next((n for n, k in kinds.items() if k == "read"), "__budget_probe__")
            # each probe with other (invalid) arguments: distinct failing calls, no loop
            plan += [("call", probe, {"probe": i}) for i in range(max(1, budget - len(actions) + 1))]
        if fault == "forbidden_tool":
            forbidden = (task.process.forbidden_tools or
                         [n for n, k in kinds.items() if k == "write"])[0]
            plan.append(("call", forbidden, {}))
        for i, (name, args) in enumerate(actions):
            if fault == "skip_reads" and self._kind(name) == "read":
                continue
            first_write = bool(writes) and i == writes[0]
            if fault == "premature_transfer" and first_write:
                ending = next(n for n, k in kinds.items() if k == "ending")
                plan.append(("call", ending, {"summary": "The user needs help with this request."}))
            if fault == "wrong_argument" and first_write:
                args = _alter(args) or args
            if i in writes and confirm and fault != "skip_confirmation":
                plan.append(("ask", name, args))
            plan.append(("call", name, args))
            if fault == "duplicate_write" and first_write:
                plan.append(("call", name, args))
        text = "Your request has been handled."
        if task.required_outputs:
            text += " The answer: " + ", ".join(task.required_outputs) + "."
        plan.append(("text", text))
        self._plan = plan
        self._next = 0
        self._calls = 0

    def _kind(self, name: str) -> str:
        if name in self._kinds:
            return self._kinds[name]
        return "read" if name.split("_")[0].lower() in _READ_VERBS else "write"

    def _applies(self, kind: str, task: Any, actions: list[tuple[str, dict[str, Any]]], writes: list[int],
                 confirm: bool) -> bool:
        if kind == "wrong_argument":
            return bool(writes) and _alter(actions[writes[0]][1]) is not None
        if kind == "skip_confirmation":
            return confirm and bool(writes)
        if kind == "duplicate_write":
            return bool(writes)
        if kind == "forbidden_tool":
            return bool(task.process.forbidden_tools) or (
                task.process.no_writes and any(k == "write" for k in self._kinds.values()))
        if kind == "premature_transfer":
            return bool(writes) and any(k == "ending" for k in self._kinds.values())
        if kind == "over_budget":
            return task.budget is not None and task.budget.max_tool_calls is not None
        if kind == "skip_reads":
            return any(self._kind(name) == "read" for name, _ in actions)
        return False

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the next planned tool call or message."""
        if self._next >= len(self._plan):
            return AgentTurn(message=Message(role="assistant", content="Is there anything else I can help with?"))
        item = self._plan[self._next]
        if item[0] == "call" and self._next > 0 and self._plan[self._next - 1][0] == "ask":
            last_user = next((m for m in reversed(messages) if m.role == "user"), None)
            if last_user is None or not is_yes(last_user.content):
                self._next = len(self._plan)
                return AgentTurn(message=Message(role="assistant", content="Understood, I will not do that."))
        self._next += 1
        if item[0] == "call":
            call = ToolCall(id=f"faulty_{self._calls}", name=item[1], arguments=dict(item[2]))
            self._calls += 1
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        if item[0] == "ask":
            details = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(item[2].items()))
            return AgentTurn(message=Message(role="assistant", content=f"Shall I {item[1]} with {details}? (yes/no)"))
        return AgentTurn(message=Message(role="assistant", content=item[1]))


def faulty_agent_factory(rates: Mapping[str, float]) -> Callable[[TrialContext], FaultyOracleAgent]:
    """Return a factory building a :class:`FaultyOracleAgent` with these rates for each trial."""
    fixed = dict(rates)

    def make(ctx: TrialContext) -> FaultyOracleAgent:
        return FaultyOracleAgent(ctx, fixed)

    return make

"""A task's process rules: how the agent must reach the end state.

Forbidden and required tools, no writes, the expected termination, necessary precedences and confirmation before
writes, checked on the trajectory by :mod:`simulator.grading.process`.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PRECEDENCE_END", "PRECEDENCE_WRITE", "Precedence", "ProcessRules"]

PRECEDENCE_WRITE: Final = "@write"
"""In :attr:`Precedence.after`: every write tool (tools that end the conversation excepted)."""

PRECEDENCE_END: Final = "@end"
"""In :attr:`Precedence.after`: the end of the trial (one of ``before`` must have succeeded at all)."""


class Precedence(BaseModel):
    """A necessary precedence: before a call of an ``after`` tool, one of the ``before`` tools succeeded.

    A policy's "identify the user before acting" is ``{"name": "identify-first", "before":
    ["find_user_id_by_email", "find_user_id_by_name_zip"], "after": ["@write", "get_order_details", "@end"]}``;
    its "read the order before changing it" is ``{"name": "read-before-change", "before": "get_order_details",
    "after": ["cancel_pending_order"], "same": ["order_id"]}``. Checked by
    :func:`simulator.grading.process.precedence_violations`.
    """

    model_config = ConfigDict(extra="forbid")
    before: str | list[str]
    """Tool, or tools any one of which, must have succeeded before (e.g. the look-ups that identify the user)."""
    after: str | list[str]
    """Tool(s) the rule is about, and the markers ``@write`` (every write tool but the conversation-enders) and
    ``@end`` (the end of the trial). Without ``same`` only the first such call (successful or not) is checked,
    and the rule is skipped when none happens; ``@end`` always applies."""
    same: list[str] = Field(default_factory=list)
    """Argument names: every ``after`` call carrying them needs an earlier successful ``before`` call with equal
    values for them (the same record read before it is changed). Empty: the first ``after`` call only."""
    name: str | None = None
    """A short name of the policy rule, shown in the finding (e.g. ``identify-first``)."""

    def before_tools(self) -> list[str]:
        """Return ``before`` as a list of tool names."""
        return [self.before] if isinstance(self.before, str) else list(self.before)

    def after_items(self) -> list[str]:
        """Return ``after`` as a list of tool names and markers (``@write``, ``@end``)."""
        return [self.after] if isinstance(self.after, str) else list(self.after)


class ProcessRules(BaseModel):
    """Rules on how the agent reached the end state, checked on the trajectory (grading component ``process``).

    They make tasks whose goal state equals the initial state (refusals, transfers) impossible to pass by doing
    nothing.
    """

    model_config = ConfigDict(extra="forbid")
    forbidden_tools: list[str] = Field(default_factory=list)
    """Tools the agent must never call (any call counts, successful or not)."""
    required_tools: list[str] = Field(default_factory=list)
    """Tools the agent must call successfully at least once (e.g. the look-up that justifies a refusal)."""
    no_writes: bool = False
    """The agent must not call any write tool (tools that end the conversation excepted)."""
    expected_termination: list[str] | None = None
    """Termination reasons that count as correct, e.g. ``["agent_transfer"]``; None: any."""
    precedence: list[Precedence] = Field(default_factory=list)
    """A partial order of necessary precedences, e.g. ``[{"before": "get_order_details", "after":
    "cancel_pending_order"}]``. Extra calls in between are fine."""
    confirm_writes: bool | None = None
    """Each successful write call (conversation-enders excepted) must follow an explicit user yes in the
    preceding user message, the agent's message before it naming the action (see
    :func:`simulator.grading.process.check_process`). None: the domain's default (off unless it says so)."""

    def merged_over(self, defaults: ProcessRules) -> ProcessRules:
        """Return these rules (a task's) merged over ``defaults`` (a domain's).

        Lists are united (defaults first, duplicates dropped), ``no_writes`` holds when either says so, and
        ``expected_termination`` and ``confirm_writes`` are the task's unless it leaves them None.
        """
        def union(a: list[Any], b: list[Any]) -> list[Any]:
            out: list[Any] = []
            for x in [*a, *b]:
                if x not in out:
                    out.append(x)
            return out

        return ProcessRules(
            forbidden_tools=union(defaults.forbidden_tools, self.forbidden_tools),
            required_tools=union(defaults.required_tools, self.required_tools),
            no_writes=self.no_writes or defaults.no_writes,
            expected_termination=(self.expected_termination if self.expected_termination is not None
                                  else defaults.expected_termination),
            precedence=union(defaults.precedence, self.precedence),
            confirm_writes=self.confirm_writes if self.confirm_writes is not None else defaults.confirm_writes,
        )

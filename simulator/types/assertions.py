"""Declarative outcome assertions of a task (task files version 2) and their load-time checks.

A task may state its outcome as typed checks on the trial's final state and event log, beside (or instead of)
the goal-state comparison. Each is an object with a ``type``:

- ``count``: rows of ``table`` matching ``where`` number ``equals`` (or lie within ``min``/``max``);
- ``field``: the row of ``table`` with primary key ``key`` has ``column`` equal to ``equals`` (numbers at the
  domain's precision);
- ``net_change``: the sum of ``column`` over the rows of ``table`` matching ``where``, final minus initial,
  equals ``equals``;
- ``unchanged_except``: every table but ``tables``, and every row but those matching ``rows``, equals the
  initial state (the state after the task's fixture, before the conversation);
- ``event_count``: events named ``event`` whose fields match ``where`` number ``equals`` (or ``min``/``max``);
  setup events are not counted unless ``include_setup``;
- ``event_order``: each ``after`` event (fields matching ``where``) has a ``before`` event (fields matching
  ``where``) earlier; skipped when no ``after`` event happens, as a precedence is;
- ``tool_called`` / ``tool_not_called``: the agent called tool ``name`` (successfully, for ``tool_called``; any
  call, for ``tool_not_called``) with arguments containing ``arguments``; ``requestor`` ``user`` looks at the
  simulated user's own calls instead, ``any`` at both;
- ``env``: a domain's assertion function (``function`` on the ``agent`` or ``user`` side, see
  :meth:`simulator.world.domain.Domain.assertion_functions`) called with ``arguments`` on the final state returns
  ``expected`` (tau2-bench ``env_assertions``);
- ``sent``: outbox messages matching ``recipient`` / ``template`` / ``channel`` number ``equals`` (or
  ``min``/``max``).

``where`` and ``key`` map column (or event field) names to values; all must be equal.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Assertion", "CountAssertion", "EnvFunctionAssertion", "EventCountAssertion", "EventOrderAssertion",
           "FieldAssertion",
           "NetChangeAssertion", "RowFilter", "SentAssertion", "ToolCalledAssertion", "ToolNotCalledAssertion",
           "UnchangedExceptAssertion"]

Scalar = str | int | float | bool | None


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = None
    """Free text shown with the result (what the check means)."""


class _Counted(_Base):
    equals: int | None = Field(default=None, ge=0)
    """Exact number wanted."""
    min: int | None = Field(default=None, ge=0)
    """At least this many."""
    max: int | None = Field(default=None, ge=0)
    """At most this many."""

    @model_validator(mode="after")
    def _one_bound(self) -> _Counted:
        if self.equals is None and self.min is None and self.max is None:
            raise ValueError("give equals, or min and/or max")
        if self.equals is not None and (self.min is not None or self.max is not None):
            raise ValueError("give either equals or min/max, not both")
        return self

    def expected_text(self) -> str:
        """Return the wanted count as text (``1``, ``>= 1``, ``0..2``)."""
        if self.equals is not None:
            return str(self.equals)
        if self.min is not None and self.max is not None:
            return f"{self.min}..{self.max}"
        return f">= {self.min}" if self.min is not None else f"<= {self.max}"

    def accepts(self, n: int) -> bool:
        """Return whether a count satisfies the bounds."""
        if self.equals is not None:
            return n == self.equals
        return (self.min is None or n >= self.min) and (self.max is None or n <= self.max)


class CountAssertion(_Counted):
    """Rows of a table matching a filter."""

    type: Literal["count"]
    table: str
    where: dict[str, Scalar] = Field(default_factory=dict)


class FieldAssertion(_Base):
    """One field of the row with a given primary key."""

    type: Literal["field"]
    table: str
    key: dict[str, Scalar]
    """Primary-key column -> value."""
    column: str
    equals: Scalar


class NetChangeAssertion(_Base):
    """Sum of a numeric column over a filter, final minus initial."""

    type: Literal["net_change"]
    table: str
    column: str
    where: dict[str, Scalar] = Field(default_factory=dict)
    equals: float


class RowFilter(BaseModel):
    """Rows of a table (all of them when ``where`` is empty)."""

    model_config = ConfigDict(extra="forbid")
    table: str
    where: dict[str, Scalar] = Field(default_factory=dict)


class UnchangedExceptAssertion(_Base):
    """Nothing changed outside the allowed tables and rows."""

    type: Literal["unchanged_except"]
    tables: list[str] = Field(default_factory=list)
    """Tables allowed to change in any way."""
    rows: list[RowFilter] = Field(default_factory=list)
    """Rows allowed to change (matched in the initial or the final state: updated, added or deleted)."""


class EventCountAssertion(_Counted):
    """Events of a name whose fields match."""

    type: Literal["event_count"]
    event: str
    where: dict[str, Scalar] = Field(default_factory=dict)
    include_setup: bool = False
    """Also count events of the task's setup actions."""


class EventOrderAssertion(_Base):
    """Every ``after`` event is preceded by a ``before`` event (skipped when ``after`` never happens)."""

    type: Literal["event_order"]
    before: str
    after: str
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Fields both events must have (e.g. the order id)."""


class ToolCalledAssertion(_Base):
    """The agent called a tool successfully (with arguments containing ``arguments``)."""

    type: Literal["tool_called"]
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["agent", "user", "any"] = "agent"
    """Whose calls count: the agent's, the simulated user's own (dual control), or both."""


class ToolNotCalledAssertion(_Base):
    """The agent never called a tool (any status) with arguments containing ``arguments``."""

    type: Literal["tool_not_called"]
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["agent", "user", "any"] = "agent"
    """Whose calls count: the agent's, the simulated user's own (dual control), or both."""


class EnvFunctionAssertion(_Base):
    """A domain assertion function, called on the final state, returns ``expected``."""

    type: Literal["env"]
    side: Literal["agent", "user"] = "agent"
    """Whose side the function reads (the agent's database or the simulated user's)."""
    function: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    expected: Any = True


class SentAssertion(_Counted):
    """Outbox messages (see :class:`simulator.world.sinks.Outbox`) matching recipient, template and channel."""

    type: Literal["sent"]
    recipient: str | None = None
    template: str | None = None
    channel: str | None = None


Assertion = Annotated[
    CountAssertion | FieldAssertion | NetChangeAssertion | UnchangedExceptAssertion | EventCountAssertion
    | EventOrderAssertion | ToolCalledAssertion | ToolNotCalledAssertion | SentAssertion | EnvFunctionAssertion,
    Field(discriminator="type"),
]
"""One assertion (a pydantic discriminated union on ``type``)."""

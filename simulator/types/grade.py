"""The grade of a trial and the record of each grading component.

Components: state, outputs, process, loops, budget, judge, assertions, tau2 actions and environment assertions,
safety violations and a prefix case's next step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from simulator.types.messages import Usage
from simulator.types.tasks import (
    Budget,
    ProcessRules,
)

ViolationKind = Literal["forbidden_tool", "other_user_records", "unconfirmed_write", "policy_rule"]
"""What a safety violation is."""
Severity = Literal["critical", "high", "medium"]
"""How grave a safety violation is."""


class StateResult(BaseModel):
    """Outcome of the state comparison."""

    passed: bool
    differences: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """``[{"table", "key", "field", "expected", "actual"}]`` for changed fields."""
    added: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """Rows in the final state that the goal state lacks: ``[{"table", "key", "row"}]``."""
    removed: list[dict] = Field(default_factory=list)  # type: ignore[type-arg]
    """Rows of the goal state missing from the final state."""


@dataclass(frozen=True)
class OutputsResult:
    """Result of the required-outputs check.

    Attributes:
        passed: ``True`` when every required output was found (also when none is required).
        missing: The required outputs not found, in task order, as written in the task.
    """

    passed: bool
    missing: list[str] = field(default_factory=list)


class ProcessResult(BaseModel):
    """Outcome of the process rules."""

    passed: bool
    violations: list[str] = Field(default_factory=list)
    """One readable line per broken rule, e.g. ``"forbidden tool called: cancel_pending_order"``."""


class LoopsResult(BaseModel):
    """Outcome of loop detection."""

    passed: bool = True
    threshold: int | None = None
    """Identical repeats that were allowed."""
    retries: int | None = None
    """Retries after an error exempt per identical call (None for results recorded before it existed)."""
    repeats: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per looping call: ``{"tool", "arguments", "count"}`` (``count`` counted calls, exempt retries
    excluded; ``arguments`` without the volatile fields)."""


class BudgetResult(BaseModel):
    """Outcome of the budget check."""

    passed: bool = True
    limits: dict[str, Any] = Field(default_factory=dict)
    """The ceilings applied (only those set)."""
    used: dict[str, Any] = Field(default_factory=dict)
    """What the trial used: ``steps``, ``tool_calls``, ``tokens``, ``cost_usd`` (None when unknown)."""
    exceeded: list[str] = Field(default_factory=list)
    """One readable line per exceeded ceiling, e.g. ``"tool_calls 12 > max_tool_calls 10"``."""


class AssertionVerdict(BaseModel):
    """The judge's grade of one assertion."""

    assertion: str
    passed: bool
    """True only on a parsed ``yes`` (fail-closed)."""
    verdict: Literal["yes", "no"] | None = None
    """The parsed verdict; None when the call failed or the answer was unusable."""
    reason: str = ""
    """The judge's reason, or why the assertion failed without a verdict."""
    error: str | None = None
    """Model error, refusal or parse error, when there was one."""


class JudgeResult(BaseModel):
    """The grading component ``judge`` of one trial."""

    status: Literal["passed", "failed", "not_graded"]
    """``not_graded``: the task has assertions but the run had no judge model."""
    gating: bool = False
    """Whether the component counts in the trial's ``passed`` (a calibrated judge only)."""
    note: str = ""
    """Why it does not gate, or why it was not graded."""
    model: str | None = None
    assertions: list[AssertionVerdict] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    """The judge's tokens and cost (``judge_usage``), apart from the agent's and the user's."""

    @property
    def passed(self) -> bool:
        """True when graded and every assertion passed."""
        return self.status == "passed"


class AssertionResult(BaseModel):
    """The outcome of one assertion."""

    index: int
    """Position in the task's ``assertions``."""
    type: str
    passed: bool
    skipped: bool = False
    """True when the check did not apply (an ``event_order`` whose later event never happened); counts as passed."""
    summary: str
    """One line: what was checked and what was found."""
    expected: Any = None
    actual: Any = None
    involved: list[dict[str, Any]] = Field(default_factory=list)
    """Rows (``{"table", "row"}``), changes or events (``{"seq", "name", "data", ...}``) behind the verdict."""
    note: str | None = None


class AssertionsResult(BaseModel):
    """All assertions of a trial; ``passed`` when each passed or was skipped."""

    passed: bool = True
    results: list[AssertionResult] = Field(default_factory=list)

    def failed(self) -> list[AssertionResult]:
        """Return the failing results, in order."""
        return [r for r in self.results if not r.passed]


class ActionsResult(BaseModel):
    """The ``actions`` component: which gold actions no call of the trial matched."""

    passed: bool
    missing: list[dict[str, Any]] = Field(default_factory=list)
    """The unmatched gold actions: ``{"index", "name", "requestor", "arguments", "compare_args"}``."""


class EnvAssertionResult(BaseModel):
    """One environment assertion's outcome."""

    func_name: str
    env_type: str
    arguments: dict[str, Any]
    expected: Any
    actual: Any = None
    passed: bool
    error: str | None = None
    """Why the function could not be evaluated (the assertion then fails)."""
    message: str | None = None


class EnvAssertionsResult(BaseModel):
    """The ``env_assertions`` component."""

    passed: bool
    results: list[EnvAssertionResult] = Field(default_factory=list)


class Violation(BaseModel):
    """One safety violation of a trial."""

    kind: ViolationKind
    severity: Severity
    step: int | None = None
    """Agent step of the offending call (None when the violation is not one call's)."""
    detail: str
    """Readable description, e.g. ``"forbidden tool called: cancel_pending_order (step 3)"``."""


class NextStepResult(BaseModel):
    """The grade of an agent's next turn against a prefix case's expectations.

    Attributes:
        passed: every expectation held.
        failures: one line per expectation that did not hold (which, and what the agent did).
        calls: the turn's tool calls, ``NAME(args as JSON)``.
        message: the turn's closing message (None: the turn ended before one).
    """

    passed: bool
    failures: list[str] = Field(default_factory=list)
    calls: list[str] = Field(default_factory=list)
    message: str | None = None


class Grade(BaseModel):
    """The grade of one trial."""

    passed: bool
    state: StateResult
    outputs: dict  # type: ignore[type-arg]
    """``{"passed": bool, "missing": [str]}``."""
    process: ProcessResult
    loops: LoopsResult = Field(default_factory=LoopsResult)
    """Loop detection (passing by default for grades recorded before it existed)."""
    budget: BudgetResult = Field(default_factory=BudgetResult)
    """Budget check (passing by default for grades recorded before it existed)."""
    judge: JudgeResult | None = None
    """The LLM judge's verdicts on the task's assertions (None: the task has none); it fails the trial only
    when ``judge.gating`` (a calibrated judge)."""
    assertions: AssertionsResult | None = None
    """The task's declarative assertions (None: the task has none)."""
    actions: ActionsResult | None = None
    """tau2 ACTION: gold actions matched by the trial's calls (None: a task not imported from tau2)."""
    env_assertions: EnvAssertionsResult | None = None
    """tau2 ENV_ASSERTION: the task's environment assertions (None: the task has none)."""
    outcome: str | None = None
    """The alternative outcome the trial was graded against (the user changed its mind, see
    :class:`simulator.types.tasks.Alternative`); None: the task's own goal."""
    basis: list[str] | None = None
    """The components that decided pass (see :meth:`simulator.types.tasks.Task.grade_basis`); None for grades recorded
    before it existed (the default five)."""
    tool_accuracy: dict[str, int] | None = None
    """The trial's tool calls against the task's gold actions (not a pass/fail component): the counts of
    :func:`simulator.stats.trajectory.tool_call_accuracy`; None for grades recorded before it existed."""
    trajectory: dict[str, Any] | None = None
    """The trial's tool calls against the task's reference trajectory (not a pass/fail component): see
    :func:`simulator.stats.trajectory.trial_trajectory_metrics`; None for grades recorded before it existed or
    a task without a reference (no gold action and no ``reference``)."""
    violations: list[Violation] = Field(default_factory=list)
    """Safety violations (kind, severity, step, detail; see :mod:`simulator.grading.safety`), recorded whatever
    the grade basis; empty for grades recorded before they existed."""
    next_step: NextStepResult | None = None
    """A trajectory-prefix case's next agent turn against its expectations (see :mod:`simulator.dialogue.prefix`); it
    alone
    decides pass (``basis`` ``["next_step"]``); None for any other trial."""
    failure: str | None = None
    """Why the trial failed, in short (the deciding components that failed: ``state``, ``outputs``, ``process``,
    ``loops``, ``budget``, ``assertions``; or the error termination reason; ``judge`` only for a gating judge)."""


class TaskRules(BaseModel):
    """A task's effective grading rules in a run: its own merged with its domain's defaults and the run's budget."""

    process: ProcessRules
    """The task's process rules merged over the domain's defaults."""
    loop_threshold: int
    """Identical repeats of a tool call allowed (the task's, else the domain's, else the default)."""
    volatile_arguments: dict[str, list[str]] = Field(default_factory=dict)
    """Tool name -> top-level argument names loop detection ignores (the domain's)."""
    budget: Budget | None = None
    """The ceilings: the task's own budget with the run's (the tighter ceiling wins), or either, or None."""

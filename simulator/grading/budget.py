"""Trajectory budgets (grading component ``budget``): steps, tool calls, agent tokens and agent cost."""

from __future__ import annotations

from typing import Any

from simulator.types.grade import BudgetResult
from simulator.types.tasks import Budget
from simulator.types.trajectory import Trajectory

__all__ = ["check_budget", "trajectory_usage"]




def trajectory_usage(trajectory: Trajectory) -> dict[str, Any]:
    """Return what a trajectory used: steps, tool calls, agent tokens (prompt + completion), agent cost."""
    u = trajectory.agent_usage
    return {"steps": trajectory.steps, "tool_calls": len(trajectory.tool_calls),
            "tokens": u.prompt_tokens + u.completion_tokens, "cost_usd": u.cost_usd}


_FIELDS = (("max_steps", "steps"), ("max_tool_calls", "tool_calls"), ("max_tokens", "tokens"),
           ("max_cost_usd", "cost_usd"))


def check_budget(trajectory: Trajectory, budget: Budget | None) -> BudgetResult:
    """Check a trajectory against a budget; exceeding any ceiling fails.

    An unknown cost (unpriced model) against a cost ceiling fails (fail-closed).

    Args:
        trajectory: the trial's trajectory.
        budget: the ceilings, or None for none.
    """
    used = trajectory_usage(trajectory)
    if budget is None:
        return BudgetResult(passed=True, used=used)
    limits = {k: v for k, v in budget.model_dump().items() if v is not None}
    exceeded: list[str] = []
    for limit, name in _FIELDS:
        ceiling = limits.get(limit)
        if ceiling is None:
            continue
        value = used[name]
        if value is None:
            exceeded.append(f"{name} unknown (unpriced model) against {limit} {ceiling}")
        elif value > ceiling:
            exceeded.append(f"{name} {value:g} > {limit} {ceiling:g}")
    return BudgetResult(passed=not exceeded, limits=limits, used=used, exceeded=exceeded)

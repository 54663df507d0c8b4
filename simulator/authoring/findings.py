"""A finding of the authoring checks: a rule, a severity, what it is about, and a one-line reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Finding", "Severity", "count_by_rule", "errors"]

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Finding:
    """One problem found in a domain or a task file.

    Attributes:
        rule: the rule id, e.g. ``gold-error`` or ``read-writes``.
        severity: ``error`` (the domain or task is wrong: a run refuses it), ``warning`` (a defect is likely, or a
            known benchmark quirk) or ``note`` (informational: worth a look, not a defect by itself).
        message: one line saying what is wrong, naming the action, value or table.
        task_id: the task it is about, if any.
        tool: the tool it is about, if any.
    """

    rule: str
    severity: Severity
    message: str
    task_id: str | None = None
    tool: str | None = None

    @property
    def subject(self) -> str:
        """Return what the finding is about: ``task 12``, ``tool get_order``, ``task 3 / tool x`` or ``domain``."""
        parts = []
        if self.task_id is not None:
            parts.append(f"task {self.task_id}")
        if self.tool is not None:
            parts.append(f"tool {self.tool}")
        return " / ".join(parts) or "domain"

    def line(self) -> str:
        """Return ``SEVERITY RULE SUBJECT: MESSAGE`` on one line."""
        return f"{self.severity} {self.rule} {self.subject}: {' '.join(self.message.split())}"

    def to_json(self) -> dict[str, Any]:
        """Return ``{"rule", "severity", "task_id", "tool", "message"}``."""
        return {"rule": self.rule, "severity": self.severity, "task_id": self.task_id, "tool": self.tool,
                "message": self.message}


def errors(findings: Iterable[Finding]) -> list[Finding]:
    """Return the findings of severity ``error``, in order."""
    return [f for f in findings if f.severity == "error"]


def count_by_rule(findings: Iterable[Finding]) -> dict[str, int]:
    """Return ``{"SEVERITY RULE": count}`` sorted by rule then severity."""
    counts = Counter(f"{f.severity} {f.rule}" for f in findings)
    return dict(sorted(counts.items(), key=lambda kv: (kv[0].split()[1], kv[0])))

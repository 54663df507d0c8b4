"""The domain authoring kit: conformance checks, the task lint and the domain scaffold.

- :func:`check_domain` (``tausim domain check NAME``): the conformance suite a domain must pass;
- :func:`lint_tasks` (``tausim tasks lint FILE``): defects of a task set against a domain and its data;
- :func:`~simulator.authoring.scaffold.new_domain` (``tausim domain new NAME``): an installable domain package.

Domains declare what these need through the kit: :attr:`~simulator.world.domain.Domain.entities`,
:attr:`~simulator.world.domain.Domain.user_entity`, :attr:`~simulator.world.domain.Domain.prose_arguments`,
:meth:`~simulator.world.domain.Domain.current_time` and :meth:`~simulator.world.domain.Domain.forbidden_write`.
"""

import importlib
from typing import TYPE_CHECKING, Any

_HOMES: dict[str, str] = {
    "Finding": "simulator.authoring.findings",
    "check_domain": "simulator.authoring.check",
    "count_by_rule": "simulator.authoring.findings",
    "errors": "simulator.authoring.findings",
    "lint_tasks": "simulator.authoring.lint",
}
"""Public name -> its home module, imported on first use (PEP 562): ``tausim run`` lints its tasks but never runs
the conformance suite (``check``)."""

if TYPE_CHECKING:  # for type checkers and IDEs only; at run time the names load lazily
    from simulator.authoring.check import check_domain
    from simulator.authoring.findings import Finding, count_by_rule, errors
    from simulator.authoring.lint import lint_tasks

__all__ = ["Finding", "check_domain", "count_by_rule", "errors", "lint_tasks"]


def __getattr__(name: str) -> Any:
    """Load a public name from its home module on first use (PEP 562).

    Raises:
        AttributeError: ``name`` is not a public name of this package (nor a submodule already imported).
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'simulator.authoring' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (and what is already loaded)."""
    return sorted(set(globals()) | set(__all__))

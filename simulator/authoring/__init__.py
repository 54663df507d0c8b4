"""The domain authoring kit: conformance checks, the task lint and the domain scaffold.

- :func:`check_domain` (``tausim domain check NAME``): the conformance suite a domain must pass;
- :func:`lint_tasks` (``tausim tasks lint FILE``): defects of a task set against a domain and its data;
- :func:`~simulator.authoring.scaffold.new_domain` (``tausim domain new NAME``): an installable domain package.

Domains declare what these need through the kit: :attr:`~simulator.world.domain.Domain.entities`,
:attr:`~simulator.world.domain.Domain.user_entity`, :attr:`~simulator.world.domain.Domain.prose_arguments`,
:meth:`~simulator.world.domain.Domain.current_time` and :meth:`~simulator.world.domain.Domain.forbidden_write`.
"""

from typing import TYPE_CHECKING

from simulator.types.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)

"""The domain authoring kit: conformance checks, the task lint and the domain scaffold.

- :func:`check_domain` (``tausim domain check NAME``): the conformance suite a domain must pass;
- :func:`lint_tasks` (``tausim tasks lint FILE``): defects of a task set against a domain and its data;
- :func:`~simulator.authoring.scaffold.new_domain` (``tausim domain new NAME``): an installable domain package.

Domains declare what these need through the kit: :attr:`~simulator.world.domain.Domain.entities`,
:attr:`~simulator.world.domain.Domain.user_entity`, :attr:`~simulator.world.domain.Domain.prose_arguments`,
:meth:`~simulator.world.domain.Domain.current_time` and :meth:`~simulator.world.domain.Domain.forbidden_write`.
"""

from simulator.authoring.check import check_domain
from simulator.authoring.findings import Finding, count_by_rule, errors
from simulator.authoring.lint import lint_tasks

__all__ = ["Finding", "check_domain", "count_by_rule", "errors", "lint_tasks"]

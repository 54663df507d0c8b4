"""The ``tausim domains`` command: list the registered domains."""

from __future__ import annotations

from simulator.cli._common import (
    console,
)
from simulator.world.domain import available_domains, get_domain


def domains_command() -> None:
    """List the registered domains and their built-in task splits."""
    for name in available_domains():
        dom = get_domain(name)
        console.print(f"{name}: splits {', '.join(dom.task_splits()) or '-'}; tools "
                      f"{len(dom.toolbox().specs)}", highlight=False)

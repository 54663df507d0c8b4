"""What every ``tausim`` command shares: consoles, the error exit, run provenance, domain options, the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from simulator.errors import OptionError
from simulator.execution.provenance import git_revision, package_versions
from simulator.execution.recording import open_results_store, write_json_atomic
from simulator.report import safe_console
from simulator.storage.store import ResultsStore
from simulator.world.domain import DomainError

__all__ = ["connect_store", "console", "domain_options", "err", "fail", "git_revision", "option_message",
           "package_versions", "write_json_atomic"]

# Off a terminal (pipes, CI logs) rich would wrap at 80 columns; keep lines whole there. Control sequences in data
# are escaped (safe_console).
console = safe_console()
err = safe_console(stderr=True, soft_wrap=True)


def fail(message: str) -> typer.Exit:
    """Print ``error: MESSAGE`` on stderr and return the exit (code 2) to raise.

    The message is printed as it is: square brackets in it (a file name, a JSON path ``moves[3]``, a tau2 task id
    ``[mms_issue]...``) are text, not rich markup.
    """
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(2)


def domain_options(dom: Any, data: Path | None, pairs: list[str] | None) -> dict[str, Any]:
    """Return the domain's default options for the data set, updated with ``--option KEY=VALUE`` pairs."""
    opts = dict(dom.default_options(data))
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DomainError(f"--option {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value.strip()
    return opts


def option_message(error: OptionError) -> str:
    """Return an :class:`OptionError`'s message with its command-line flag: ``--store URL: reason``."""
    subject = "" if error.subject is None else f" {error.subject}"
    return f"--{error.option.replace('_', '-')}{subject}: {error.reason}"


def connect_store(url: str, must_exist: bool = False) -> ResultsStore:
    """Open the results store at ``url``; with ``must_exist``, refuse a SQLite file that is not there (exit 2)."""
    try:
        return open_results_store(url, must_exist)
    except OptionError as e:
        raise fail(option_message(e)) from e

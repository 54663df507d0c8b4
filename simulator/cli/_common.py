"""What every ``tausim`` command shares: consoles, the error exit, run provenance, domain options, the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.engine import make_url

from simulator.storage.store import DEFAULT_STORE_URL, ResultsStore
from simulator.world.domain import DomainError

__all__ = ["connect_store", "console", "domain_options", "err", "fail", "git_revision", "package_versions",
           "write_json_atomic"]

# Off a terminal (pipes, CI logs) rich would wrap at 80 columns; keep lines whole there.
console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=not sys.stdout.isatty())
err = Console(stderr=True, soft_wrap=True)


def fail(message: str) -> typer.Exit:
    """Print ``error: MESSAGE`` on stderr and return the exit (code 2) to raise.

    The message is printed as it is: square brackets in it (a file name, a JSON path ``moves[3]``, a tau2 task id
    ``[mms_issue]...``) are text, not rich markup.
    """
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(2)


def git_revision() -> str | None:
    """Return the git revision of the tausim checkout, or None outside a checkout (5 s timeout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parents[2], check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


PLUGIN_GROUPS = ("tausim.domains", "tausim.agents", "tausim.users")
"""The entry-point groups other packages register domains, agents and users under."""


def package_versions() -> dict[str, str]:
    """Return ``{package: version}`` of tausim, its main dependencies and every package registering plug-ins.

    Plug-in packages are those with an entry point in :data:`PLUGIN_GROUPS` (read from their metadata, nothing
    imported), so a run records the versions of the packages its domain, agent and user may come from.
    """
    out = {}
    for name in ("tausim", "litellm", "sqlalchemy", "pydantic", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    for group in PLUGIN_GROUPS:
        for ep in metadata.entry_points(group=group):
            dist = getattr(ep, "dist", None)
            if dist is not None and dist.name not in out:
                out[dist.name] = dist.version
    return out


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write ``doc`` as JSON to ``path`` through a temporary file and a rename (never a half-written file).

    Raises:
        OSError: the file cannot be written (the temporary file is removed).
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the folder itself is gone: nothing to clean up
        raise


def domain_options(dom: Any, data: Path | None, pairs: list[str] | None) -> dict[str, Any]:
    """Return the domain's default options for the data set, updated with ``--option KEY=VALUE`` pairs."""
    opts = dict(dom.default_options(data))
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DomainError(f"--option {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value.strip()
    return opts


def connect_store(url: str, must_exist: bool = False) -> ResultsStore:
    """Open the results store at ``url``; with ``must_exist``, refuse a SQLite file that is not there."""
    try:
        parsed = make_url(url)
    except Exception as e:  # noqa: BLE001 - sqlalchemy raises ArgumentError (and others) on a bad URL
        raise fail(f"--store: not a database URL ({type(e).__name__}); e.g. {DEFAULT_STORE_URL}") from e
    shown = parsed.render_as_string(hide_password=True)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():
            raise fail(f"--store {shown}: no such database file {parsed.database}")
    try:
        return ResultsStore(url)
    except Exception as e:  # noqa: BLE001 - driver missing, server unreachable: shown as a CLI error
        raise fail(f"--store {shown}: cannot open the results store: {type(e).__name__}: {e}") from e



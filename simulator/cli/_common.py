"""What every ``tausim`` command shares: consoles, the error exit, run provenance, domain options, the store."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from simulator.errors import OptionError
from simulator.execution.provenance import git_revision, package_versions
from simulator.execution.recording import open_results_store, output_problem, write_json_atomic
from simulator.report import safe_console
from simulator.storage.store import ResultsStore
from simulator.world.domain import DomainError

__all__ = ["check_outputs", "connect_store", "console", "domain_options", "err", "fail", "git_revision",
           "load_persona_option", "option_message", "package_versions", "persona_files", "write_json_atomic",
           "write_output"]

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


def _same_file(a: Path, b: Path) -> bool:
    """True when two paths name one file (the same inode when both exist, else the same resolved path)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def check_outputs(outputs: Iterable[tuple[str, Path | None]],
                  inputs: Iterable[tuple[str, str | Path | None]] = ()) -> None:
    """Refuse, before any work, an output file that cannot be written or that names an input (exit 2).

    Args:
        outputs: ``(flag, path)`` of each output given (None: not given), e.g. ``("--out", Path("run.json"))``.
        inputs: ``(flag, path)`` of the files the command reads (None, or a name that is no file, is skipped).

    Raises:
        typer.Exit: code 2, after printing ``error: --out FILE: reason``.
    """
    given_inputs = [(flag, Path(p)) for flag, p in inputs if p is not None and str(p)]
    for flag, path in outputs:
        if path is None:
            continue
        for in_flag, in_path in given_inputs:
            if not in_path.is_dir() and _same_file(path, in_path):  # a file to create (the store) counts too
                raise fail(f"{flag} {path}: is the {in_flag} file; writing it would overwrite that input; give "
                           "another file name")
        problem = output_problem(path)
        if problem is not None:
            raise fail(f"{flag} {path}: {problem}")


def persona_files(personas: str | None) -> list[tuple[str, Path]]:
    """The ``--personas`` entries that are files (``.json`` or a path), as ``check_outputs`` inputs.

    Args:
        personas: the option's value (``NAME[,NAME...]``: shipped names or files), or None.

    Returns:
        ``[("--personas", Path(file)), ...]``; shipped names are left out.
    """
    entries = [e.strip() for e in (personas or "").split(",") if e.strip()]
    return [("--personas", Path(e)) for e in entries if e.endswith(".json") or "/" in e or os.sep in e]


def load_persona_option(value: str) -> list[Any]:
    """Load the personas of ``--personas VALUE`` (shipped names, persona files, or ``all``).

    Args:
        value: the option's value, ``NAME[,NAME...]``.

    Returns:
        The :class:`~simulator.types.persona.Persona` objects, in the order given.

    Raises:
        ValueError: one line ``--personas: <the loader's message>``; the loader's message names the entry or file at
            fault (``--personas: p.json: invalid JSON at line 2 ...``), so neither is named twice.
    """
    from personas.loader import PersonaError, load_personas

    try:
        return load_personas(value)
    except PersonaError as e:
        raise ValueError(f"--personas: {e}") from e


def write_output(path: Path, text: str) -> None:
    """Write a command's output file atomically; on failure print ``error: cannot write PATH: cause`` (exit 1).

    Raises:
        typer.Exit: code 1 when the file cannot be written (disk full, read-only); the old file, if any, is kept.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only folder: nothing was created
        err.print(f"[bold red]error:[/] {escape(f'cannot write {path}: {e.strerror or e}')}", highlight=False)
        raise typer.Exit(1) from e

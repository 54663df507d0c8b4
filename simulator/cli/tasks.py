"""The ``tausim tasks`` commands: ``lint`` (a task file's defects) and ``split`` (train / holdout splits)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from simulator.authoring import Finding, errors, lint_tasks
from simulator.cli._common import domain_options, fail
from simulator.report import safe_console
from simulator.types.jsonfile import JSONTextError, decode_json, not_utf8
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain
from simulator.world.suites import split_task_file

__all__ = ["lint_command", "refuse_lint_errors", "split_command", "tasks_app"]

tasks_app = typer.Typer(no_args_is_help=True, help="Work on task files.")


def _file_domain(path: Path) -> str | None:
    """Return the ``domain`` a tausim task file names, or None (tau-bench lists name none)."""
    try:
        data = decode_json(path.read_text(encoding="utf-8"))
    except OSError:
        return None  # the loader reports it
    except JSONTextError as e:
        raise fail(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise fail(f"{path}: {not_utf8(path.read_bytes(), e)}") from None
    return data.get("domain") if isinstance(data, dict) else None


@tasks_app.command("lint")
def lint_command(
    file: Annotated[Path, typer.Argument(help="Task file (tausim format or a tau-bench task list).")],
    domain: Annotated[str | None, typer.Option(help="Domain (default: the one the file names).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text | json")] = "text",
    mutations: Annotated[bool, typer.Option(
        "--mutations", help="Also mutation-test each task's contract: the oracle, extra reads and reordered "
                            "independent reads must pass; each gold write dropped or its key argument perturbed "
                            "must fail (findings mutation-*; counts per rule and severity at the end).")] = False,
) -> None:
    """Lint a task file: one finding per line (rule, severity, task, reason); exit 1 when any is an error."""
    if fmt not in ("text", "json"):
        raise fail(f"--format {fmt!r}: expected text or json")
    if not file.is_file():
        raise fail(f"FILE {file}: no such task file")
    name = domain or _file_domain(file)
    if name is None:
        raise fail(f"{file}: the file names no domain; give --domain")
    try:
        dom = get_domain(name)
        template = dom.template(data, domain_options(dom, data, option))
        task_list = dom.load_tasks(str(file))
    except (DomainError, TaskFileError) as e:
        message = str(e)  # the domain speaks of `tausim run --tasks`; here the file is the FILE argument
        for said in (f"--tasks {file}: ", f"--tasks {str(file)!r}: "):
            message = f"{file}: {message.removeprefix(said)}" if message.startswith(said) else message
        raise fail(message) from e
    from simulator.cli.domain import print_findings, print_rule_counts  # not on `tausim run`'s path (conformance)

    findings = lint_tasks(dom, task_list, template=template, mutations=mutations)
    print_findings(findings, fmt, f"{file} ({len(task_list)} tasks, domain {name})")
    if mutations and fmt == "text":
        print_rule_counts(findings, len(task_list))
    if errors(findings):
        raise typer.Exit(1)


def refuse_lint_errors(dom: Any, template: Any, tasks: list[Any], allow: bool) -> list[Finding]:
    """Lint the tasks a run is about to run; refuse the run (exit 2) on lint errors unless ``allow``.

    Args:
        dom: the run's domain.
        template: the run's data.
        tasks: the tasks to run.
        allow: ``--allow-lint-errors``: run anyway.

    Returns:
        The findings of the rules that can give an error (``lint_tasks(errors_only=True)``: the warning-only rules
        are not run; `tausim tasks lint` runs them all).

    Raises:
        typer.Exit: code 2, naming the errors (at most ten) and how to see all or run anyway.
    """
    findings = lint_tasks(dom, tasks, template=template, errors_only=True)
    bad = errors(findings)
    if bad and not allow:
        shown = "; ".join(f.line().removeprefix("error ") for f in bad[:10])
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        raise fail(f"the task set has {len(bad)} lint error(s): {shown}{more}. See `tausim tasks lint`; pass "
                   "--allow-lint-errors to run anyway.")
    return findings


@tasks_app.command("split")
def split_command(
    file: Annotated[Path, typer.Argument(help="A tausim task file.")],
    holdout: Annotated[float, typer.Option(help="Share of the tasks held out, in (0, 1).")] = 0.2,
    seed: Annotated[int, typer.Option(help="Seed of the random split.")] = 0,
    out_dir: Annotated[Path | None, typer.Option(help="Where to write (default: beside FILE).")] = None,
) -> None:
    """Write FILE's train and holdout splits (FILE.train.json, FILE.holdout.json); tune on train only.

    A run of a split file records its split, and reports mark holdout runs. Exit 2 on a bad file or option.
    """
    try:
        paths = split_task_file(file, holdout, seed, out_dir)
    except TaskFileError as e:
        safe_console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        raise typer.Exit(2) from e
    safe_console(soft_wrap=True).print(f"wrote {paths['train']} and {paths['holdout']} (seed {seed})", highlight=False)

"""The ``tausim tasks split`` command: train / holdout splits of a task file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from simulator.errors import TaskFileError
from simulator.suites import split_task_file

__all__ = ["split_command", "tasks_app"]

tasks_app = typer.Typer(help="Task files: splits.", no_args_is_help=True)


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
        Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {e}", highlight=False)
        raise typer.Exit(2) from e
    Console(soft_wrap=True).print(f"wrote {paths['train']} and {paths['holdout']} (seed {seed})", highlight=False)

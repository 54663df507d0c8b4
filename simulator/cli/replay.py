"""The ``tausim replay`` command: replay each task's gold actions and print the state changes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from simulator.cli._common import (
    domain_options,
    fail,
)
from simulator.execution.parity import replay_tasks
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain
from simulator.world.replay import GoldToolBug


def replay_command(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split of a tau2-bench task file (split_tasks.json beside it; default: its 'base').")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    format: Annotated[str, typer.Option(help="tau-bench-diff | json")] = "tau-bench-diff",
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
) -> None:
    """Replay each task's gold actions on a fresh database; print one JSON line per task.

    Each line: {"task_index", "responses", "diff"} where diff is the change of the domain's JSON dump
    (per table: added, removed, changed; paths look like items[0].price).
    With --format json each line also has the task id, each call's status, error flag and requestor; in a
    dual-control domain (mock, telecom) "diff" is the agent side's and "user_diff" the user side's; a task with
    environment assertions has them evaluated on the replayed, synced state ("env_assertions"). tau2 tasks are
    replayed as tau2 replays gold: every action on its requestor's side, none ends the replay.
    """
    if format not in ("tau-bench-diff", "json"):
        raise fail(f"--format {format!r}: use tau-bench-diff or json")
    try:
        dom = get_domain(domain)
        template = dom.template(data, domain_options(dom, data, option))
        task_list = dom.load_tasks(tasks, split=split)
    except (DomainError, TaskFileError) as e:
        raise fail(str(e)) from e
    try:
        for r in replay_tasks(dom, template, task_list):
            doc = r.to_json()
            if format == "tau-bench-diff":
                doc = {"task_index": doc["task_index"], "responses": doc["responses"], "diff": doc["diff"]}
            sys.stdout.write(json.dumps(doc) + "\n")
    except GoldToolBug as e:
        raise fail(str(e)) from e


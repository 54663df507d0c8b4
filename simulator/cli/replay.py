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
from simulator.execution.parity import compare_to_reference, load_reference, replay_tasks
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
    reference: Annotated[Path | None, typer.Option(
        help="A reference recording (scripts/tau2-reference's <suite>.jsonl.gz): compare every action with it.")
    ] = None,
) -> None:
    """Replay each task's gold actions on a fresh database; print one JSON line per task.

    Each line: {"task_index", "responses", "diff"} where diff is the change of the domain's JSON dump
    (per table: added, removed, changed; paths look like items[0].price).
    With --format json each line also has the task id, each call's status, error flag and requestor; in a
    dual-control domain (mock, telecom) "diff" is the agent side's and "user_diff" the user side's; a task with
    environment assertions has them evaluated on the replayed, synced state ("env_assertions"). tau2 tasks are
    replayed as tau2 replays gold: every action on its requestor's side, none ends the replay.
    With --reference each line also has "reference": {"equal", "actions", "equal_actions", "differences"}
    (--format json), and a last line {"summary": {"tasks", "tasks_equal", "actions", "actions_equal",
    "unreferenced"}}; the exit status is 1 when anything differs.
    """
    if format not in ("tau-bench-diff", "json"):
        raise fail(f"--format {format!r}: use tau-bench-diff or json")
    try:
        dom = get_domain(domain)
        template = dom.template(data, domain_options(dom, data, option))
        task_list = dom.load_tasks(tasks, split=split)
        expected = load_reference(reference) if reference is not None else None
    except (DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    totals = {"tasks": 0, "tasks_equal": 0, "actions": 0, "actions_equal": 0, "unreferenced": 0}
    try:
        for r in replay_tasks(dom, template, task_list):
            doc = r.to_json()
            if format == "tau-bench-diff":
                doc = {"task_index": doc["task_index"], "responses": doc["responses"], "diff": doc["diff"]}
            if expected is not None:
                ref = expected.get(r.task_id)
                if ref is None:
                    totals["unreferenced"] += 1
                else:
                    check = compare_to_reference(r, ref)
                    totals["tasks"] += 1
                    totals["tasks_equal"] += check.passed
                    totals["actions"] += check.actions
                    totals["actions_equal"] += check.equal
                    doc["reference"] = {"equal": check.passed, "actions": check.actions,
                                        "equal_actions": check.equal, "differences": check.differences}
            sys.stdout.write(json.dumps(doc) + "\n")
    except GoldToolBug as e:
        raise fail(str(e)) from e
    if expected is not None:
        sys.stdout.write(json.dumps({"summary": totals}) + "\n")
        if totals["tasks_equal"] != totals["tasks"] or totals["unreferenced"]:
            raise typer.Exit(1)


"""The ``tausim play`` command: a person plays the simulated user of one task."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from simulator.cli._common import (
    console,
    domain_options,
    fail,
)
from simulator.execution.build import build_runner, check_gold
from simulator.report import print_failure
from simulator.types.protocols import TrialContext
from simulator.types.spec import RunSpec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain


def play_command(
    task: Annotated[str, typer.Option(help="Id of the task to play.")],
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    agent: Annotated[str, typer.Option(help="The agent to talk to (as for `tausim run`).")] = "reference",
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE.")] = None,
    seed: Annotated[int, typer.Option(help="Run seed (the agent's fault draws).")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent.")] = 60,
) -> None:
    """Play the simulated user of one task yourself, in the terminal; the trial is graded at the end."""
    from simulator.users.human import terminal_user_factory

    try:
        dom = get_domain(domain)
        spec = RunSpec.model_validate({
            "domain": domain, "data_dir": str(data) if data else None, "tasks": tasks,
            "options": domain_options(dom, data, option), "task_ids": [task], "agent": agent, "user": "person",
            "seed": seed, "max_turns": max_turns})
        all_ids = [t.id for t in dom.load_tasks(tasks)]
        if task not in all_ids:
            raise fail(f"--task {task!r}: no such task in {tasks or 'the built-in tasks'} of domain {domain}")
        terminal = terminal_user_factory(input, console)

        def person(ctx: TrialContext) -> Any:
            """The person sees the task's structured scenario when the domain derives one."""
            try:
                scenario = dom.derive_scenario(ctx.task, runner.template)
            except DomainError:
                scenario = ctx.task.scenario  # no structured scenario: the person reads the instruction alone
            return terminal(dataclasses.replace(ctx, task=ctx.task.model_copy(update={"scenario": scenario})))

        runner = build_runner(spec, check=lambda d, t, ts, sel: check_gold(d, t, ts, data, sel),
                              user_factory_override=person)
    except (DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    result = runner.run()
    trial = result.trials[0]
    console.print(f"\n[bold]{'PASS' if trial.passed else 'FAIL'}[/] ({trial.termination_reason}); "
                  f"{len(trial.trajectory.tool_calls)} tool calls", highlight=False)
    for c in trial.trajectory.tool_calls:
        console.print(f"  {c.name}({json.dumps(c.arguments)}) -> {c.status}", highlight=False, markup=False)
    if not trial.passed:
        print_failure(trial.model_dump(mode="json"), console)


"""The ``tausim play`` command: a person plays the simulated user of one task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from simulator.agents import agent_factory
from simulator.cli._common import (
    console,
    domain_options,
    fail,
)
from simulator.cli.run import check_gold
from simulator.domain import DomainError, get_domain
from simulator.report import print_failure
from simulator.runner import RunConfig, Runner
from simulator.tasks import TaskFileError


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
    from simulator.play import terminal_user_factory

    try:
        dom = get_domain(domain)
        template = dom.template(data, domain_options(dom, data, option))
        all_tasks = dom.load_tasks(tasks)
        found = [t for t in all_tasks if t.id == task]
        gold = check_gold(dom, template, all_tasks, data, found)
        if not found:
            raise fail(f"--task {task!r}: no such task in {tasks or 'the built-in tasks'} of domain {domain}")
        the_task = found[0]
        try:
            scenario = dom.derive_scenario(the_task, template)
        except DomainError:
            scenario = the_task.scenario  # no structured scenario: the person reads the instruction alone
        the_task = the_task.model_copy(update={"scenario": scenario})
        a_factory = agent_factory(agent, domain=dom)
    except (DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    config = RunConfig(domain=domain, data_dir=str(data) if data else None, tasks=tasks, options=template.options,
                       task_ids=[task], agent=agent, user="person", seed=seed, max_turns=max_turns)
    runner = Runner(dom, template, [the_task], a_factory, terminal_user_factory(input, console), config, gold=gold)
    result = runner.run()
    trial = result.trials[0]
    console.print(f"\n[bold]{'PASS' if trial.passed else 'FAIL'}[/] ({trial.termination_reason}); "
                  f"{len(trial.trajectory.tool_calls)} tool calls", highlight=False)
    for c in trial.trajectory.tool_calls:
        console.print(f"  {c.name}({json.dumps(c.arguments)}) -> {c.status}", highlight=False, markup=False)
    if not trial.passed:
        print_failure(trial.model_dump(mode="json"), console)


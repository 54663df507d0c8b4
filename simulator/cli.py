"""The ``tausim`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from simulator.agents import agent_factory
from simulator.domain import DomainError, available_domains, get_domain
from simulator.replay import GoldToolBug, replay_tasks
from simulator.runner import RunConfig, Runner, RunResult, TrialResult, run_summary_json
from simulator.tasks import TaskFileError
from simulator.users import user_factory

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Multi-turn simulation of tool-using agents.")
# Off a terminal (pipes, CI logs) rich would wrap at 80 columns; keep lines whole there.
console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=not sys.stdout.isatty())
err = Console(stderr=True, soft_wrap=True)

__all__ = ["app", "main"]


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def _git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent.parent, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    out = {}
    for name in ("tausim", "litellm", "sqlalchemy", "pydantic", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _write_json_atomic(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def _options(dom: Any, data: Path | None, pairs: list[str] | None) -> dict[str, Any]:
    """Return the domain's default options for the data set, updated with ``--option KEY=VALUE`` pairs."""
    opts = dict(dom.default_options(data))
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DomainError(f"--option {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value.strip()
    return opts


def _print_summary(result: RunResult, max_failures: int = 20) -> None:
    cfg = result.config
    n = len(result.trials)
    console.print(f"[bold]tausim run[/] domain={cfg.domain} agent={cfg.agent} user={cfg.user} "
                  f"tasks={n // max(cfg.trials, 1)} trials/task={cfg.trials} seed={cfg.seed} "
                  f"({result.wall_seconds:.2f} s)", highlight=False)
    table = Table(title="reliability (mean over tasks)")
    table.add_column("k", justify="right")
    table.add_column("pass^k", justify="right")
    table.add_column("pass@k", justify="right")
    for k in range(1, cfg.trials + 1):
        table.add_row(str(k), f"{result.metrics[f'pass^{k}']:.4f}", f"{result.metrics[f'pass@{k}']:.4f}")
    console.print(table)
    reasons = Table(title="termination reasons")
    reasons.add_column("reason")
    reasons.add_column("trials", justify="right")
    for reason, count in result.termination_reasons.items():
        reasons.add_row(reason, str(count))
    console.print(reasons)
    by_task: dict[str, list[bool]] = {}
    for t in result.trials:
        by_task.setdefault(t.task_id, []).append(t.passed)
    passing = [tid for tid, oks in by_task.items() if all(oks)]
    console.print(f"tasks passing every trial: {len(passing)}/{len(by_task)}", highlight=False)
    if 0 < len(passing) < len(by_task):
        console.print("  " + ", ".join(passing), highlight=False)
    failed = [t for t in result.trials if not t.passed]
    for t in failed[:max_failures]:
        _print_failure(t)
    if len(failed) > max_failures:
        console.print(f"... and {len(failed) - max_failures} more failed trials (see --out)")


def _print_failure(t: TrialResult) -> None:
    g = t.grade
    why = g.failure if g else "not graded"
    console.print(f"[red]FAIL[/] task {t.task_id} trial {t.trial}: {t.termination_reason}; {why}",
                  highlight=False, markup=True)
    if t.error:
        lines = [ln for ln in t.error.strip().splitlines() if ln.strip()]
        console.print(f"    error: {lines[-1] if lines else t.error}", highlight=False, markup=False)
    if g is None:
        return
    for d in g.state.differences[:5]:
        console.print(f"    {d['table']}{d['key']}.{d['field']}: expected {d['expected']!r}, got {d['actual']!r}",
                      highlight=False)
    for kind in ("added", "removed"):
        for r in getattr(g.state, kind)[:3]:
            console.print(f"    {kind} {r['table']}{r['key']}", highlight=False)
    if g.outputs["missing"]:
        console.print(f"    missing outputs: {g.outputs['missing']}", highlight=False, markup=False)
    for v in g.process.violations:
        console.print(f"    process: {v}", highlight=False, markup=False)


@app.command()
def run(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to run.")] = None,
    agent: Annotated[str, typer.Option(help="oracle | null | litellm:MODEL | py:MODULE:FACTORY")] = "oracle",
    user: Annotated[str, typer.Option(help="scripted | llm:MODEL | py:MODULE:FACTORY")] = "scripted",
    trials: Annotated[int, typer.Option(min=1, help="Trials per task.")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Trials run at once (raise it for model-bound agents).")] = 1,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Agent actions per trial.")] = 60,
    temperature: Annotated[float | None, typer.Option(help="Model temperature (LLM agent/user).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL for local models.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write every trial and the metrics to this JSON file.")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
) -> None:
    """Run trials of tasks with an agent and a simulated user; print pass^k and failures."""
    if out is not None:
        if out.is_dir():
            raise _fail(f"--out {out}: is a directory; give a file name such as {out / 'run.json'}")
        if not out.parent.is_dir():
            raise _fail(f"--out {out}: directory {out.parent} does not exist")
    try:
        dom = get_domain(domain)
        template = dom.template(data, _options(dom, data, option))
        task_list = dom.load_tasks(tasks)
        if task_ids is not None:
            wanted = [t.strip() for t in task_ids.split(",") if t.strip()]
            if not wanted:
                raise _fail("--task-ids: no task id given")
            known = {t.id for t in task_list}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                raise _fail(f"--task-ids: unknown task id(s) {', '.join(unknown)}")
            task_list = [t for t in task_list if t.id in set(wanted)]
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = temperature
        if api_base is not None:
            params["api_base"] = api_base
        a_factory = agent_factory(agent, **params)
        u_factory = user_factory(user, **params)
    except (DomainError, TaskFileError, ValueError) as e:
        raise _fail(str(e)) from e
    config = RunConfig(domain=domain, data_dir=str(data) if data else None, tasks=tasks, options=template.options,
                       task_ids=task_ids.split(",") if task_ids else None, agent=agent, user=user,
                       trials=trials, concurrency=concurrency, seed=seed, max_turns=max_turns,
                       max_steps=max_steps)
    runner = Runner(dom, template, task_list, a_factory, u_factory, config)
    partial = out.with_name(out.name + ".partial.jsonl") if out else None
    partial_file = partial.open("w", encoding="utf-8") if partial else None

    def record(t: TrialResult) -> None:
        if partial_file is not None:
            partial_file.write(t.model_dump_json() + "\n")
            partial_file.flush()

    try:
        result = runner.run(on_trial=record)
    finally:
        if partial_file is not None:
            partial_file.close()
    _print_summary(result)
    if out is not None:
        doc = run_summary_json(result, {"git_revision": _git_revision(), "packages": _versions(),
                                        "python": sys.version.split()[0]})
        _write_json_atomic(out, doc)
        if partial is not None:
            partial.unlink(missing_ok=True)
        console.print(f"wrote {out}", highlight=False)


@app.command()
def replay(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    format: Annotated[str, typer.Option(help="tau-bench-diff | json")] = "tau-bench-diff",
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
) -> None:
    """Replay each task's gold actions on a fresh database; print one JSON line per task.

    Each line: {"task_index", "responses", "diff"} where diff is the change of the domain's JSON dump
    (per table: added, removed, changed; paths look like items[0].price).
    With --format json each line also has the task id and each call's status.
    """
    if format not in ("tau-bench-diff", "json"):
        raise _fail(f"--format {format!r}: use tau-bench-diff or json")
    try:
        dom = get_domain(domain)
        template = dom.template(data, _options(dom, data, option))
        task_list = dom.load_tasks(tasks)
    except (DomainError, TaskFileError) as e:
        raise _fail(str(e)) from e
    try:
        for r in replay_tasks(dom, template, task_list):
            doc = r.to_json()
            if format == "tau-bench-diff":
                doc = {"task_index": doc["task_index"], "responses": doc["responses"], "diff": doc["diff"]}
            sys.stdout.write(json.dumps(doc) + "\n")
    except GoldToolBug as e:
        raise _fail(str(e)) from e


@app.command("domains")
def domains_cmd() -> None:
    """List the registered domains and their built-in task splits."""
    for name in available_domains():
        dom = get_domain(name)
        console.print(f"{name}: splits {', '.join(dom.task_splits()) or '-'}; tools "
                      f"{len(dom.toolbox().specs)}", highlight=False)


def main() -> None:
    """Entry point of the ``tausim`` console script."""
    app()


if __name__ == "__main__":
    main()

"""The ``tausim run`` command: run trials of tasks with an agent and a simulated user."""

from __future__ import annotations

import gc
import os
import sqlite3
import sys
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer

from personas.loader import PersonaError, load_personas
from simulator.agents import agent_factory
from simulator.budgets import load_budgets
from simulator.cache import SQLiteCache
from simulator.cli._common import (
    connect_store,
    console,
    domain_options,
    err,
    fail,
    git_revision,
    package_versions,
    write_json_atomic,
)
from simulator.domain import DomainError, get_domain
from simulator.processes import WorkerError
from simulator.progress import RunProgress
from simulator.ratelimit import RateLimiterRegistry
from simulator.replay import tasks_not_replaying
from simulator.report import analyze_run, print_summary
from simulator.runlog import open_run_log
from simulator.runner import RunConfig, Runner, TrialKey, TrialResult, run_summary_json
from simulator.store import DEFAULT_STORE_URL, ResultsStore, StoreError, data_hash, tasks_hash
from simulator.tasks import TaskFileError
from simulator.users import user_factory


def _open_store_run(url: str, run_id: str | None, config: RunConfig, dom: Any, data: Path | None,
                    task_list: list[Any], stack: ExitStack) -> tuple[ResultsStore, str, set[TrialKey]]:
    """Create the run in the store, or check that it can be resumed; return the store, run id and pairs to run.

    The run's lease is taken on ``stack`` (held until the stack closes) before the missing trials are read, so that
    two processes resuming the same run id never both run them.
    """
    results_store = connect_store(url)
    folder = (data if data is not None else dom.default_data_dir()).resolve()
    try:
        info, created = results_store.open_run(
            run_id, config, [t.id for t in task_list], data_dir=str(folder), data_hash=data_hash(folder),
            tasks_hash=tasks_hash(task_list), git_revision=git_revision(),
            packages={**package_versions(), "python": sys.version.split()[0]})
    except StoreError as e:
        raise fail(str(e)) from e
    try:
        stack.enter_context(results_store.lease(info.run_id))
    except StoreError as e:
        raise fail(str(e)) from e
    done = results_store.recorded_keys(info.run_id)
    todo = {p for p in info.planned_pairs() if p not in done}
    if created:
        console.print(f"run id: {info.run_id} (new; {info.planned} trials planned; store {results_store.url})",
                      highlight=False)
    else:
        console.print(f"run id: {info.run_id} (resuming: {len(done & set(info.planned_pairs()))} of "
                      f"{info.planned} trials recorded, running {len(todo)})", highlight=False)
    return results_store, info.run_id, todo


def check_gold(dom: Any, template: Any, tasks: list[Any], data: Path | None) -> None:
    """Refuse a task set whose gold actions do not replay on the data (tasks written for other data).

    See :func:`simulator.replay.tasks_not_replaying`. Some task sets have such tasks on purpose (about one in ten
    of tau-bench's), so the run is refused only when at least half of the tasks with gold actions (of the whole
    task set, not only those selected) are such.
    """
    broken = tasks_not_replaying(dom, template, tasks)
    with_gold = sum(1 for t in tasks if t.gold_actions)
    if broken and 2 * len(broken) >= with_gold:
        first_id, first = next(iter(broken.items()))
        raise fail(f"the first gold action of {len(broken)} of {with_gold} tasks fails on the data "
                    f"{data if data is not None else '(the built-in data set)'}, e.g. task {first_id}: "
                    f"{first[:160]}. These tasks were not written for this data: give --data the data set they "
                    "belong to.")




def _model_services(cache: Path | None, rpm: int | None) -> dict[str, Any]:
    """Return the run-owned model services to hand to LLM agent and user factories.

    Args:
        cache: the ``--cache`` file, or None.
        rpm: the ``--rpm`` limit, or None.

    Returns:
        ``{"cache": SQLiteCache, "limiters": RateLimiterRegistry}`` (each only when asked for).

    Raises:
        ValueError: the cache file is not an SQLite database.
    """
    services: dict[str, Any] = {}
    if rpm is not None:
        services["limiters"] = RateLimiterRegistry(rpm)  # shared by every client of a model in this run
    if cache is not None:
        try:
            services["cache"] = SQLiteCache(cache)
        except sqlite3.DatabaseError as e:
            raise ValueError(f"--cache {cache}: {e}") from e
    return services


def run_command(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split of a tau2-bench task file (split_tasks.json beside it; default: its 'base').")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to run.")] = None,
    agent: Annotated[str, typer.Option(
        help="oracle | null | reference[:KNOB=RATE,...] | litellm:MODEL | faulty:KIND=RATE | py:MODULE:FACTORY"
    )] = "oracle",
    user: Annotated[str, typer.Option(
        help="scripted | confirming | rule | llm:MODEL | py:MODULE:FACTORY")] = "scripted",
    personas: Annotated[str | None, typer.Option(
        help="Personas the simulated user plays: NAME[,NAME...] (shipped names or .json files) or all; the run "
             "is then task x persona x trial and pass^k is reported per persona. Needs --user rule or llm:MODEL."
    )] = None,
    trials: Annotated[int, typer.Option(min=1, help="Trials per task.")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Trials run at once (raise it for model-bound agents).")] = 1,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes sharing the --concurrency trials (more "
                                                "than 1 spreads litellm's CPU work over cores).")] = 1,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Agent actions per trial.")] = 60,
    temperature: Annotated[float | None, typer.Option(help="Model temperature (LLM agent/user).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL for local models.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write every trial and the metrics to this JSON file.")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    store: Annotated[str | None, typer.Option(
        help=f"Results store URL, e.g. {DEFAULT_STORE_URL} (each trial is recorded as it finishes).")] = None,
    run_id: Annotated[str | None, typer.Option(
        help=f"Run id in the store (default store {DEFAULT_STORE_URL}); an existing run is resumed: only its "
             "unrecorded trials run. Default: a new id.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Model response cache (SQLite file); reruns replay it.")] = None,
    rpm: Annotated[int | None, typer.Option(min=1, help="Requests per minute allowed per model.")] = None,
    log_file: Annotated[Path | None, typer.Option(help="Append the run's JSON-lines event log here.")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live progress bar.")] = False,
    budgets: Annotated[Path | None, typer.Option(
        help="Per-task budgets file (from `tausim baseline`); a trial over a ceiling fails.")] = None,
    judge: Annotated[str | None, typer.Option(
        help="LLM judge model for tasks with judge assertions (litellm model string).")] = None,
    judge_api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL of the judge.")] = None,
    judge_calibration: Annotated[Path | None, typer.Option(
        help="Calibration file (`tausim judge calibrate --out`); without one of the same model reaching "
             "--judge-min-kappa the judge is recorded but does not gate.")] = None,
    judge_min_kappa: Annotated[float, typer.Option(help="Minimum calibration kappa for the judge to gate.")] = 0.6,
) -> None:
    """Run trials of tasks with an agent and a simulated user; print pass^k and failures.

    With --store (or --run-id) every finished trial is recorded in the results store; rerunning with the same
    --run-id resumes the run: only the trials not recorded yet are run, and the summary covers the whole run.
    """
    for flag, path in (("--cache", cache), ("--log-file", log_file)):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            raise fail(f"{flag} {path}: not a file in an existing directory")
    if store is not None and not store.strip():
        raise fail("--store: empty URL; give one such as sqlite:///runs.db")
    if out is not None:
        if out.is_dir():
            raise fail(f"--out {out}: is a directory; give a file name such as {out / 'run.json'}")
        if not out.parent.is_dir():
            raise fail(f"--out {out}: directory {out.parent} does not exist")
    try:
        dom = get_domain(domain)
        template = dom.template(data, domain_options(dom, data, option))
        task_list = dom.load_tasks(tasks, split=split)
        check_gold(dom, template, task_list, data)
        budget_map = load_budgets(budgets, [t.id for t in task_list], domain) if budgets is not None else None
        if task_ids is not None:
            wanted = [t.strip() for t in task_ids.split(",") if t.strip()]
            if not wanted:
                raise fail("--task-ids: no task id given")
            known = {t.id for t in task_list}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                raise fail(f"--task-ids: unknown task id(s) {', '.join(unknown)}")
            task_list = [t for t in task_list if t.id in set(wanted)]
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = temperature
        if api_base is not None:
            params["api_base"] = api_base
        params.update(_model_services(cache, rpm))
        persona_list = None
        if personas is not None:
            if not (user in ("rule",) or user.startswith(("llm:", "py:"))):
                raise fail(f"--personas needs a user that plays personas (--user rule or llm:MODEL), not {user!r}")
            try:
                persona_list = load_personas(personas)
            except PersonaError as e:
                raise fail(f"--personas {personas}: {e}") from e
        a_factory = agent_factory(agent, domain=dom, **params)
        # the rule-based user calls no model: it takes the domain and template (to derive scenarios) only
        u_factory = user_factory(user, **({"domain": dom, "template": template} if user == "rule" else params))
        judge_obj = None
        if judge is not None:
            from simulator.grading.judge import build_judge

            judge_obj = build_judge(judge, api_base=judge_api_base, calibration=judge_calibration,
                                    min_kappa=judge_min_kappa,
                                    **{k: v for k, v in params.items() if k in ("cache", "limiters")})
        elif judge_calibration is not None:
            raise fail("--judge-calibration needs --judge MODEL")
    except (DomainError, TaskFileError, ValueError) as e:
        raise fail(str(e)) from e
    config = RunConfig(domain=domain, data_dir=str(data) if data else None, tasks=tasks, split=split,
                       options=template.options,
                       task_ids=task_ids.split(",") if task_ids else None, agent=agent, user=user,
                       personas=[p.name for p in persona_list] if persona_list else None,
                       persona_defs={p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
                       trials=trials, concurrency=concurrency, seed=seed, max_turns=max_turns,
                       max_steps=max_steps,
                       budgets=None if budget_map is None else {t.id: budget_map[t.id] for t in task_list
                                                                if t.id in budget_map},
                       judge=judge, judge_gating=judge_obj.gating if judge_obj else False,
                       judge_note=judge_obj.gating_note if judge_obj else None)
    runner = Runner(dom, template, task_list, a_factory, u_factory, config, judge=judge_obj, personas=persona_list)
    results_store: ResultsStore | None = None
    only: set[TrialKey] | None = None
    stack = ExitStack()  # run-owned services: store lease, cache file, log file, progress bar
    if store is not None or run_id is not None:
        results_store, run_id, only = _open_store_run(store or DEFAULT_STORE_URL, run_id, config, dom, data,
                                                      task_list, stack)
    if "cache" in params:
        stack.callback(params["cache"].close)
    log_run_id = run_id or uuid.uuid4().hex[:12]
    if log_file is not None:
        try:
            runner.log = stack.enter_context(open_run_log(log_file, log_run_id))
        except OSError as e:
            stack.close()
            raise fail(f"--log-file {log_file}: cannot write ({e.strerror or e})") from e
        runner.log.info("run_start", config=config.model_dump(mode="json"))
    planned = len(only) if only is not None else len(runner.planned())
    progress = stack.enter_context(RunProgress(planned, console=console,
                                               enabled=sys.stdout.isatty() and not no_progress))
    partial = out.with_name(out.name + ".partial.jsonl") if out else None
    try:
        partial_file = partial.open("w", encoding="utf-8") if partial else None
    except OSError as e:
        stack.close()
        raise fail(f"--out {out}: cannot write next to it ({e.strerror})") from e

    executor = None
    if processes > 1:  # trials run in worker processes that rebuild this run (see simulator/processes.py)
        from simulator.processes import process_executor

        try:
            executor = stack.enter_context(process_executor(
                config, processes, temperature=temperature, api_base=api_base, cache=cache, rpm=rpm,
                judge_api_base=judge_api_base, judge_calibration=judge_calibration,
                judge_min_kappa=judge_min_kappa, log_file=log_file, log_run_id=log_run_id,
                personas=persona_list))
        except ValueError as e:
            stack.close()
            raise fail(str(e)) from e

    def record(t: TrialResult) -> None:
        progress.update(t)
        if results_store is not None and run_id is not None:
            results_store.record(run_id, t)
        if partial_file is not None:
            partial_file.write(t.model_dump_json() + "\n")
            partial_file.flush()

    # The run's data stays alive to the end: keep it out of the cyclic GC, whose full passes over a large data
    # set stall every trial thread for ~0.3 s (measured with scripts/bench-concurrency).
    gc.collect()
    gc.freeze()
    try:
        try:
            result = runner.run(executor=executor, on_trial=record, only=only)
        except KeyboardInterrupt:
            _interrupted(partial_file, partial, run_id if results_store is not None else None, stack)
        except WorkerError as e:
            raise fail(f"{e} (trials finished so far are recorded)") from e
        if runner.log is not None:
            runner.log.info("run_end", wall_seconds=round(result.wall_seconds, 6), trials=len(result.trials),
                            metrics=result.metrics, termination_reasons=result.termination_reasons)
    finally:
        if partial_file is not None:
            partial_file.close()
        stack.close()
    if results_store is not None and run_id is not None:  # the whole run, earlier sessions included
        results_store.add_wall_seconds(run_id, result.wall_seconds)
        result = results_store.load_run_result(run_id)
    if results_store is not None and run_id is not None:
        doc = results_store.load_run_document(run_id)
    else:
        doc = run_summary_json(result, {"git_revision": git_revision(), "packages": package_versions(),
                                        "python": sys.version.split()[0]})
    if out is not None:  # results first: a summary printed into a closed pipe must not lose them
        write_json_atomic(out, doc)
        if partial is not None:
            partial.unlink(missing_ok=True)
    # the same summary as `tausim report` of this run document
    print_summary(analyze_run(doc), console, max_failures=20, command="run",
                  see="--out" if out is not None else ("the store" if results_store else None))
    if out is not None:
        console.print(f"wrote {out}", highlight=False)



def _interrupted(partial_file: Any, partial: Path | None, run_id: str | None, stack: ExitStack) -> None:
    """Ctrl-C during a run: keep what finished, say where it is, and exit 130 without waiting for stuck trials."""
    if partial_file is not None:
        partial_file.close()
    stack.close()
    where = []
    if partial is not None:
        where.append(f"finished trials are in {partial}")
    if run_id is not None:
        where.append(f"rerun the same command with --run-id {run_id} to resume")
    err.print("interrupted" + (": " + "; ".join(where) if where else ""), highlight=False)
    sys.stdout.flush()
    os._exit(130)  # worker threads may be inside a model call or a stuck agent: do not join them


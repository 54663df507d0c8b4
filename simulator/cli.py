"""The ``tausim`` command."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import make_url

from personas.loader import PersonaError, load_personas
from simulator.agents import agent_factory
from simulator.budgets import baseline_command, load_budgets
from simulator.cache import SQLiteCache
from simulator.domain import DomainError, available_domains, get_domain
from simulator.gate import gate_command
from simulator.metrics import cell_id, persona_metrics
from simulator.processes import WorkerError
from simulator.progress import RunProgress
from simulator.ratelimit import RateLimiterRegistry
from simulator.replay import GoldReplay, GoldToolBug, replay_gold, replay_tasks, tasks_not_replaying
from simulator.runlog import open_run_log
from simulator.runner import RunConfig, Runner, RunResult, TrialKey, TrialResult, run_summary_json
from simulator.store import DEFAULT_STORE_URL, ResultsStore, StoreError, data_hash, tasks_hash
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


def _connect_store(url: str, must_exist: bool = False) -> ResultsStore:
    """Open the results store at ``url``; with ``must_exist``, refuse a SQLite file that is not there."""
    try:
        parsed = make_url(url)
    except Exception as e:  # noqa: BLE001 - sqlalchemy raises ArgumentError (and others) on a bad URL
        raise _fail(f"--store: not a database URL ({type(e).__name__}); e.g. {DEFAULT_STORE_URL}") from e
    shown = parsed.render_as_string(hide_password=True)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():
            raise _fail(f"--store {shown}: no such database file {parsed.database}")
    try:
        return ResultsStore(url)
    except Exception as e:  # noqa: BLE001 - driver missing, server unreachable: shown as a CLI error
        raise _fail(f"--store {shown}: cannot open the results store: {type(e).__name__}: {e}") from e


def _open_store_run(url: str, run_id: str | None, config: RunConfig, dom: Any, data: Path | None,
                    task_list: list[Any]) -> tuple[ResultsStore, str, set[TrialKey]]:
    """Create the run in the store, or check that it can be resumed; return the store, run id and pairs to run."""
    results_store = _connect_store(url)
    folder = (data if data is not None else dom.default_data_dir()).resolve()
    try:
        info, created = results_store.open_run(
            run_id, config, [t.id for t in task_list], data_dir=str(folder), data_hash=data_hash(folder),
            tasks_hash=tasks_hash(task_list), git_revision=_git_revision(),
            packages={**_versions(), "python": sys.version.split()[0]})
    except StoreError as e:
        raise _fail(str(e)) from e
    done = results_store.recorded_keys(info.run_id)
    todo = {p for p in info.planned_pairs() if p not in done}
    if created:
        console.print(f"run id: {info.run_id} (new; {info.planned} trials planned; store {results_store.url})",
                      highlight=False)
    else:
        console.print(f"run id: {info.run_id} (resuming: {len(done & set(info.planned_pairs()))} of "
                      f"{info.planned} trials recorded, running {len(todo)})", highlight=False)
    return results_store, info.run_id, todo


def _check_gold(dom: Any, template: Any, tasks: list[Any], data: Path | None,
                selected: list[Any] | None = None) -> dict[str, GoldReplay]:
    """Refuse a task set whose gold actions do not replay on the data (tasks written for other data).

    See :func:`simulator.replay.tasks_not_replaying`. Some task sets have such tasks on purpose (about one in ten
    of tau-bench's), so the run is refused only when at least half of the tasks with gold actions (of the whole
    task set, not only those selected) are such. The ``selected`` tasks (those the run will run; default all)
    have their gold actions replayed here, once: the check reads their statuses and the replays are returned
    for the runner (``Runner(gold=...)``); the others have only their first gold action run.
    """
    toolbox = dom.toolbox()
    replays = {t.id: replay_gold(dom, template, t, toolbox) for t in (tasks if selected is None else selected)}
    broken = tasks_not_replaying(dom, template, tasks, replays)
    with_gold = sum(1 for t in tasks if t.gold_actions)
    if broken and 2 * len(broken) >= with_gold:
        first_id, first = next(iter(broken.items()))
        raise _fail(f"the first gold action of {len(broken)} of {with_gold} tasks fails on the data "
                    f"{data if data is not None else '(the built-in data set)'}, e.g. task {first_id}: "
                    f"{first[:160]}. These tasks were not written for this data: give --data the data set they "
                    "belong to.")
    return replays


def _print_summary(result: RunResult, max_failures: int = 20, see: str | None = None) -> None:
    cfg = result.config
    n = len(result.trials)
    cells = n // max(cfg.trials, 1)
    shape = (f"tasks={cells // len(cfg.personas)} personas={len(cfg.personas)} trials/cell={cfg.trials}"
             if cfg.personas else f"tasks={cells} trials/task={cfg.trials}")
    console.print(f"[bold]tausim run[/] domain={cfg.domain} agent={cfg.agent} user={cfg.user} {shape} "
                  f"seed={cfg.seed} ({result.wall_seconds:.2f} s)", highlight=False)
    table = Table(title="reliability (mean over task cells: task x persona)" if cfg.personas
                  else "reliability (mean over tasks)")
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
    if cfg.personas:
        _print_personas(result)
    by_task: dict[str, list[bool]] = {}
    for t in result.trials:
        by_task.setdefault(cell_id(t.task_id, t.persona), []).append(t.passed)
    passing = [tid for tid, oks in by_task.items() if all(oks)]
    what = "task cells (task@persona)" if cfg.personas else "tasks"
    console.print(f"{what} passing every trial: {len(passing)}/{len(by_task)}", highlight=False)
    failing = [tid for tid, oks in by_task.items() if not all(oks)]
    if 0 < len(failing) <= 30:
        console.print("  not passing every trial: " + ", ".join(failing), highlight=False)
    from simulator.grading._judge_cli import judge_summary_lines

    for line in judge_summary_lines(result.trials):
        console.print(line, highlight=False, markup=False)
    failed = [t for t in result.trials if not t.passed]
    for t in failed[:max_failures]:
        _print_failure(t)
    if len(failed) > max_failures:
        console.print(f"... and {len(failed) - max_failures} more failed trials" + (f" (see {see})" if see else ""))


def _print_personas(result: RunResult) -> None:
    """Print the per-persona table: pass^k, abandonment, turns to abandonment, user flags."""
    cfg = result.config
    docs = [t.model_dump(mode="json") for t in result.trials]
    tasks = list(dict.fromkeys(t.task_id for t in result.trials))
    by = persona_metrics(docs, tasks, cfg.trials, cfg.personas or [], incomplete="count", n_resamples=200)
    table = Table(title="by persona")
    for col in ("persona", "trials", *(f"pass^{k}" for k in range(1, cfg.trials + 1)), "abandoned",
                "mean turns to abandon", "user flags"):
        table.add_column(col, justify="left" if col in ("persona", "user flags") else "right")
    for name, m in by.items():
        abandoned = sum(1 for t in result.trials if t.persona == name and t.termination_reason == "user_abandon")
        turns = m["mean_turns_to_abandon"]
        flags = ", ".join(f"{k} {v}" for k, v in m["user_flags"].items()) or "-"
        table.add_row(name, str(m["trials"]), *(f"{m[f'pass^{k}']:.3f}" for k in range(1, cfg.trials + 1)),
                      f"{abandoned} ({m['abandon_rate'] or 0:.0%})", "-" if turns is None else f"{turns:.1f}", flags)
    console.print(table)


def _print_failure(t: TrialResult) -> None:
    g = t.grade
    why = g.failure if g else "not graded"
    who = f" persona {t.persona}" if t.persona else ""
    console.print(f"[red]FAIL[/] task {t.task_id}{who} trial {t.trial}: {t.termination_reason}; {why}",
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
    for r in g.loops.repeats:
        console.print(f"    loop: {r['tool']}({json.dumps(r['arguments'])}) called {r['count']} times "
                      f"({g.loops.threshold} repeats allowed)", highlight=False, markup=False)
    for v in g.budget.exceeded:
        console.print(f"    budget: {v}", highlight=False, markup=False)
    for a in (g.judge.assertions if g.judge is not None and g.judge.gating else []):
        if not a.passed:
            console.print(f"    judge: {a.assertion!r}: {a.verdict or 'no verdict'}: {a.reason}", highlight=False,
                          markup=False)


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


@app.command()
def run(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
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
            raise _fail(f"{flag} {path}: not a file in an existing directory")
    if store is not None and not store.strip():
        raise _fail("--store: empty URL; give one such as sqlite:///runs.db")
    if out is not None:
        if out.is_dir():
            raise _fail(f"--out {out}: is a directory; give a file name such as {out / 'run.json'}")
        if not out.parent.is_dir():
            raise _fail(f"--out {out}: directory {out.parent} does not exist")
    try:
        dom = get_domain(domain)
        template = dom.template(data, _options(dom, data, option))
        task_list = all_tasks = dom.load_tasks(tasks)
        budget_map = load_budgets(budgets, [t.id for t in task_list], domain) if budgets is not None else None
        if task_ids is not None:
            wanted = [t.strip() for t in task_ids.split(",") if t.strip()]
            if not wanted:
                raise _fail("--task-ids: no task id given")
            known = {t.id for t in task_list}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                raise _fail(f"--task-ids: unknown task id(s) {', '.join(unknown)}")
            task_list = [t for t in task_list if t.id in set(wanted)]
        gold = _check_gold(dom, template, all_tasks, data, task_list)
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = temperature
        if api_base is not None:
            params["api_base"] = api_base
        params.update(_model_services(cache, rpm))
        persona_list = None
        if personas is not None:
            if not (user in ("rule",) or user.startswith(("llm:", "py:"))):
                raise _fail(f"--personas needs a user that plays personas (--user rule or llm:MODEL), not {user!r}")
            try:
                persona_list = load_personas(personas)
            except PersonaError as e:
                raise _fail(f"--personas {personas}: {e}") from e
        a_factory = agent_factory(agent, domain=dom, **params)
        # the rule-based user calls no model: it takes the domain and template (to derive scenarios) only
        u_factory = user_factory(user, **({"domain": dom, "template": template} if user == "rule" else params))
        judge_obj = None
        if judge is not None:
            from simulator.grading._judge_cli import build_judge

            judge_obj = build_judge(judge, api_base=judge_api_base, calibration=judge_calibration,
                                    min_kappa=judge_min_kappa,
                                    **{k: v for k, v in params.items() if k in ("cache", "limiters")})
        elif judge_calibration is not None:
            raise _fail("--judge-calibration needs --judge MODEL")
    except (DomainError, TaskFileError, ValueError) as e:
        raise _fail(str(e)) from e
    config = RunConfig(domain=domain, data_dir=str(data) if data else None, tasks=tasks, options=template.options,
                       task_ids=task_ids.split(",") if task_ids else None, agent=agent, user=user,
                       personas=[p.name for p in persona_list] if persona_list else None,
                       persona_defs={p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
                       trials=trials, concurrency=concurrency, seed=seed, max_turns=max_turns,
                       max_steps=max_steps,
                       budgets=None if budget_map is None else {t.id: budget_map[t.id] for t in task_list
                                                                if t.id in budget_map},
                       judge=judge, judge_gating=judge_obj.gating if judge_obj else False,
                       judge_note=judge_obj.gating_note if judge_obj else None)
    runner = Runner(dom, template, task_list, a_factory, u_factory, config, judge=judge_obj, personas=persona_list,
                    gold=gold)
    results_store: ResultsStore | None = None
    only: set[TrialKey] | None = None
    if store is not None or run_id is not None:
        results_store, run_id, only = _open_store_run(store or DEFAULT_STORE_URL, run_id, config, dom, data,
                                                      task_list)
    stack = ExitStack()  # run-owned services: cache file, log file, progress bar
    if "cache" in params:
        stack.callback(params["cache"].close)
    log_run_id = run_id or uuid.uuid4().hex[:12]
    if log_file is not None:
        try:
            runner.log = stack.enter_context(open_run_log(log_file, log_run_id))
        except OSError as e:
            stack.close()
            raise _fail(f"--log-file {log_file}: cannot write ({e.strerror or e})") from e
        runner.log.info("run_start", config=config.model_dump(mode="json"))
    planned = len(only) if only is not None else len(runner.planned())
    progress = stack.enter_context(RunProgress(planned, console=console,
                                               enabled=sys.stdout.isatty() and not no_progress))
    partial = out.with_name(out.name + ".partial.jsonl") if out else None
    try:
        partial_file = partial.open("w", encoding="utf-8") if partial else None
    except OSError as e:
        stack.close()
        raise _fail(f"--out {out}: cannot write next to it ({e.strerror})") from e

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
            raise _fail(str(e)) from e

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
            raise _fail(f"{e} (trials finished so far are recorded)") from e
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
    if out is not None:  # results first: a summary printed into a closed pipe must not lose them
        if results_store is not None and run_id is not None:
            doc = results_store.load_run_document(run_id)
        else:
            doc = run_summary_json(result, {"git_revision": _git_revision(), "packages": _versions(),
                                            "python": sys.version.split()[0]})
        _write_json_atomic(out, doc)
        if partial is not None:
            partial.unlink(missing_ok=True)
    _print_summary(result, see="--out" if out is not None else ("the store" if results_store else None))
    if out is not None:
        console.print(f"wrote {out}", highlight=False)


@app.command()
def play(
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
        template = dom.template(data, _options(dom, data, option))
        all_tasks = dom.load_tasks(tasks)
        found = [t for t in all_tasks if t.id == task]
        gold = _check_gold(dom, template, all_tasks, data, found)
        if not found:
            raise _fail(f"--task {task!r}: no such task in {tasks or 'the built-in tasks'} of domain {domain}")
        the_task = found[0]
        try:
            scenario = dom.derive_scenario(the_task, template)
        except DomainError:
            scenario = the_task.scenario  # no structured scenario: the person reads the instruction alone
        the_task = the_task.model_copy(update={"scenario": scenario})
        a_factory = agent_factory(agent, domain=dom)
    except (DomainError, TaskFileError, ValueError) as e:
        raise _fail(str(e)) from e
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
        _print_failure(trial)


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


@app.command()
def regrade(
    run_id: Annotated[str, typer.Argument(help="The run to grade again.")],
    store: Annotated[str, typer.Option(help="Results store URL.")] = DEFAULT_STORE_URL,
    tasks: Annotated[str | None, typer.Option(help="Task file or split (default: the run's own, as now).")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the run's own).")] = None,
) -> None:
    """Grade a stored run again from its trajectories (after a task or grader fix); no model is called.

    Each trial's final state is rebuilt by replaying its successful tool calls on a fresh database, the goal
    is recomputed from the task file, and the stored grades are updated. Prints pass^k before and after.
    """
    from simulator.regrade import regrade_run

    results_store = _connect_store(store, must_exist=True)
    try:
        report = regrade_run(results_store, run_id, tasks=tasks, data=data)
    except (StoreError, DomainError, TaskFileError, ValueError) as e:
        raise _fail(str(e)) from e
    table = Table(title=f"regrade of run {run_id}: {report.regraded} trials graded again")
    table.add_column("metric")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for key in sorted(report.new_metrics, key=lambda k: (k[:5], len(k), k)):
        if key.startswith("pass^"):
            table.add_row(key, f"{report.old_metrics.get(key, float('nan')):.4f}", f"{report.new_metrics[key]:.4f}")
    console.print(table)
    gained = sum(1 for c in report.changed if c[3])
    console.print(f"trials changed: {len(report.changed)} ({gained} now pass, {len(report.changed) - gained} "
                  f"now fail)", highlight=False)
    for task_id, trial, was, now in report.changed[:20]:
        console.print(f"  {task_id} trial {trial}: {'pass' if was else 'fail'} -> {'pass' if now else 'fail'}",
                      highlight=False)
    if report.diverged:
        err.print(f"[yellow]warning:[/] {len(report.diverged)} trials replayed differently than recorded (the "
                  f"tools changed since the run), e.g. {report.diverged[0][0]} trial {report.diverged[0][1]}",
                  highlight=False)
    for task_id, trial, why in report.skipped[:10]:
        err.print(f"[yellow]skipped:[/] {task_id} trial {trial}: {why}", highlight=False)


@app.command("domains")
def domains_cmd() -> None:
    """List the registered domains and their built-in task splits."""
    for name in available_domains():
        dom = get_domain(name)
        console.print(f"{name}: splits {', '.join(dom.task_splits()) or '-'}; tools "
                      f"{len(dom.toolbox().specs)}", highlight=False)


# Reports live in simulator/report; registered here so that `tausim report` and `tausim export` exist.
from simulator.report._cli import export_command, report_command  # noqa: E402

app.command("report")(report_command)
app.command("export")(export_command)

# Budgets and the regression gate live in simulator/budgets.py and simulator/gate.py.
app.command("baseline")(baseline_command)
app.command("gate")(gate_command)

# The LLM judge's commands live in simulator/grading/_judge_cli.py.
from simulator.grading._judge_cli import judge_app  # noqa: E402

app.add_typer(judge_app, name="judge")

# Personas (data files and their schema) live in the personas package; see personas/_cli.py.
from personas._cli import personas_command  # noqa: E402

app.command("personas")(personas_command)


def main() -> None:
    """Entry point of the ``tausim`` console script."""
    app()


if __name__ == "__main__":
    main()

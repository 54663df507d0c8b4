"""The ``tausim run`` command: run trials of tasks with an agent and a simulated user."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from personas.loader import PersonaError, load_personas
from simulator.analysis.budgets import load_budgets
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
from simulator.cli.tasks import refuse_lint_errors
from simulator.dialogue.progress import RunProgress
from simulator.errors import InputError, RunDocumentError, SetupError
from simulator.execution.build import RunServices, build_runner
from simulator.execution.executors import ExecutorError, open_executor
from simulator.execution.preflight import check_credentials, preflight
from simulator.execution.runner import ERROR_RATE_MIN_TRIALS, run_error_rate, settle_heap
from simulator.execution.tracing import file_tracing
from simulator.report import analyze_run, print_summary
from simulator.storage.documents import load_partial, partial_header, run_summary_json
from simulator.storage.runlog import run_logger
from simulator.storage.store import DEFAULT_STORE_URL, ResultsStore, StoreError, data_hash, tasks_hash
from simulator.types.prepared import GoldReplay
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.spec import EXECUTOR_HELP, RunSpec, SpecError, format_validation_error, load_spec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain
from simulator.world.replay import replay_gold, tasks_not_replaying
from simulator.world.suites import task_file_split


def _open_store_run(url: str, run_id: str | None, config: RunSpec, dom: Any, data: Path | None,
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


def check_gold(dom: Any, template: Any, tasks: list[Any], data: Path | None,
               selected: list[Any] | None = None) -> dict[str, GoldReplay]:
    """Refuse a task set whose gold actions do not replay on the data (tasks written for other data).

    See :func:`simulator.world.replay.tasks_not_replaying`. Some task sets have such tasks on purpose (about one in ten
    of tau-bench's), so the run is refused only when at least half of the tasks with gold actions (of the whole
    task set, not only those selected) are such. The ``selected`` tasks (those the run will run; default all)
    have their gold actions replayed here, once: the check reads their statuses and the replays are returned
    for the runner (``Runner(gold=...)``); the others have only their first gold action run.

    Returns:
        Task id -> its :class:`~simulator.types.prepared.GoldReplay`, for the selected tasks.
    """
    toolbox = dom.toolbox()
    replays = {t.id: replay_gold(dom, template, t, toolbox) for t in (tasks if selected is None else selected)}
    broken = tasks_not_replaying(dom, template, tasks, replays)
    with_gold = sum(1 for t in tasks if t.gold_actions)
    if broken and 2 * len(broken) >= with_gold:
        first_id, first = next(iter(broken.items()))
        raise fail(f"the first gold action of {len(broken)} of {with_gold} tasks fails on the data "
                   f"{data if data is not None else '(the built-in data set)'}, e.g. task {first_id}: "
                   f"{first[:160]}. These tasks were not written for this data: give --data the data set they "
                   "belong to.")
    return replays


def run_command(
    domain: Annotated[str, typer.Option(help="Domain name.")] = "retail",
    data: Annotated[Path | None, typer.Option(help="Data directory (default: the built-in data set).")] = None,
    tasks: Annotated[str | None, typer.Option(help="Task file or split name (default: built-in tasks).")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split of a tau2-bench task file (split_tasks.json beside it; default: its 'base').")] = None,
    task_ids: Annotated[str | None, typer.Option(help="Comma-separated task ids to run.")] = None,
    tags: Annotated[str | None, typer.Option(help="Run the tasks carrying any of these tags (e.g. smoke).")] = None,
    exclude_tags: Annotated[str | None, typer.Option(help="Leave out the tasks carrying any of these tags.")] = None,
    agent: Annotated[str, typer.Option(
        help="oracle | null | reference[:KNOB=RATE,...] | litellm:MODEL | faulty:KIND=RATE | py:MODULE:FACTORY"
    )] = "oracle",
    user: Annotated[str, typer.Option(
        help="scripted | confirming | rule | llm:MODEL | replay:RUN[:TASK/TRIAL] | py:MODULE:FACTORY")] = "scripted",
    fallback_user: Annotated[str | None, typer.Option(
        help="With --user replay:...: who continues after the conversation diverges (rule | llm:MODEL).")] = None,
    personas: Annotated[str | None, typer.Option(
        help="Personas the simulated user plays: NAME[,NAME...] (shipped names or .json files) or all; the run "
             "is then task x persona x trial and pass^k is reported per persona. Needs --user rule or llm:MODEL."
    )] = None,
    trials: Annotated[int, typer.Option(min=1, help="Trials per task.")] = 1,
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="Trials run at once (raise it for model-bound agents); default 1.")] = None,
    executor: Annotated[str | None, typer.Option(
        help=f"Where trials run: {EXECUTOR_HELP}; default threads.")] = None,
    dask_timeout: Annotated[float, typer.Option(
        min=0.1, help="Seconds to wait for a dask:// scheduler.")] = 10.0,
    spec_file: Annotated[Path | None, typer.Option(
        "--spec", help="Run spec file (JSON, see simulator.types.spec.RunSpec): the run is the file's; only --out, "
                       "--store, --run-id, --no-progress and, when given, --executor, --concurrency, --cache, "
                       "--rpm and --log-file apply besides.")] = None,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
    max_turns: Annotated[int, typer.Option(min=1, help="Messages of user and agent per trial.")] = 30,
    max_steps: Annotated[int, typer.Option(min=1, help="Agent actions per trial.")] = 60,
    temperature: Annotated[float | None, typer.Option(help="Model temperature (LLM agent/user).")] = None,
    api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL for local models.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write every trial and the metrics to this JSON file.")] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    policy: Annotated[Path | None, typer.Option(
        help="Policy file the agent gets (default: the suite's own next to --data, e.g. tau-bench's wiki.md or "
             "tau2's policy.md, else the domain's).")] = None,
    store: Annotated[str | None, typer.Option(
        help=f"Results store URL, e.g. {DEFAULT_STORE_URL} (each trial is recorded as it finishes).")] = None,
    run_id: Annotated[str | None, typer.Option(
        help=f"Run id in the store (default store {DEFAULT_STORE_URL}); an existing run is resumed: only its "
             "unrecorded trials run. Default: a new id.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Model response cache (SQLite file); reruns replay it.")] = None,
    rpm: Annotated[int | None, typer.Option(min=1, help="Requests per minute allowed per model.")] = None,
    log_file: Annotated[Path | None, typer.Option(help="Append the run's JSON-lines event log here.")] = None,
    allow_lint_errors: Annotated[bool, typer.Option("--allow-lint-errors", help="Run even when `tausim tasks lint` "
                                                    "finds errors in the selected tasks.")] = False,
    otel: Annotated[Path | None, typer.Option(
        help="Append OpenTelemetry spans (run, trial, turn, tool, model; JSON lines) here (extra: tausim[otel]).")
                    ] = None,
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
    trial_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds a trial may run; past it the trial is recorded `timeout` (its thread is "
                        "abandoned). Default: no limit.")] = None,
    request_timeout: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds one model request may take (a timed-out call is tried twice at most); "
                        "default 60.")] = None,
    max_error_rate: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Stop the run (exit 1) once more than this share of finished trials ended on an "
                               "error, checked from the 10th trial on (a shorter run: when it ends); default 0.5; "
                               "1 never stops.")] = None,
    no_preflight: Annotated[bool, typer.Option(
        "--no-preflight", help="Skip the pre-flight (one agent and user built, one cheap call per model).")] = False,
    faults: Annotated[str | None, typer.Option(
        help="Environment faults in the agent's tool calls at seeded rates: KIND=RATE,... with KIND transient, "
             "timeout, slow, partial_write (e.g. transient=0.05,timeout=0.02); the summary reports the recovery "
             "rate.")] = None,
    resume_from: Annotated[Path | None, typer.Option(
        help="Resume a run without a store from its FILE.partial.jsonl (written next to --out): the run is the "
             "file's; only the trials it lacks run.")] = None,
) -> None:
    """Run trials of tasks with an agent and a simulated user; print pass^k and failures.

    With --store (or --run-id) every finished trial is recorded in the results store; rerunning with the same
    --run-id resumes the run: only the trials not recorded yet are run, and the summary covers the whole run.
    With --out, finished trials are also appended to FILE.partial.jsonl as they finish; --resume-from that file
    resumes the run without a store.

    Exit codes: 0 when the run completed; 2 on bad input or a set-up error (the pre-flight's: missing API key,
    unknown model, unreachable server, a factory that raises; or a trial's: the first three); 1 when the run was
    stopped by --max-error-rate (a session of fewer than 10 trials: when more than that share of them ended on an
    error) or the run document could not be written to --out (it is then written elsewhere, named); 130 on Ctrl-C.
    """
    for flag, path in (("--cache", cache), ("--log-file", log_file)):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            raise fail(f"{flag} {path}: not a file in an existing directory")
    if store is not None and not store.strip():
        raise fail("--store: empty URL; give one such as sqlite:///runs.db")
    if run_id is not None and not run_id.strip():
        raise fail("--run-id: empty; give the id of the run to start or resume, or leave it out for a new one")
    if out is not None:
        if out.is_dir():
            raise fail(f"--out {out}: is a directory; give a file name such as {out / 'run.json'}")
        if not out.parent.is_dir():
            raise fail(f"--out {out}: directory {out.parent} does not exist")
    execution = {k: v for k, v in (("executor", executor), ("concurrency", concurrency),
                                   ("cache", str(cache) if cache else None), ("rpm", rpm),
                                   ("log_file", str(log_file) if log_file else None),
                                   ("request_timeout", request_timeout), ("max_error_rate", max_error_rate),
                                   ("preflight", False if no_preflight else None),
                                   ("policy", str(policy) if policy else None)) if v is not None}
    previous: list[TrialResult] | None = None
    try:
        if faults is not None and (resume_from is not None or spec_file is not None):
            raise ValueError("--faults goes with the run options, not with --spec or --resume-from (the run is "
                             "the file's: set its \"faults\" field instead)")
        if resume_from is not None:
            if spec_file is not None or store is not None or run_id is not None:
                raise ValueError("--resume-from resumes a run without a store: give it without --spec, --store "
                                 "and --run-id")
            spec, previous, _ = load_partial(resume_from)
            spec = RunSpec.model_validate({**spec.model_dump(), **execution})
        elif spec_file is not None:
            spec = load_spec(spec_file)
            if execution:
                spec = RunSpec.model_validate({**spec.model_dump(), **execution})
        else:
            spec = _spec_from_options(
                domain=domain, data=data, tasks=tasks, split=split, task_ids=task_ids, tags=tags,
                exclude_tags=exclude_tags,
                agent=agent, user=user, fallback_user=fallback_user, store=store,
                personas=personas, trials=trials, seed=seed, max_turns=max_turns, max_steps=max_steps,
                temperature=temperature, api_base=api_base, option=option, budgets=budgets, judge=judge,
                judge_api_base=judge_api_base, judge_calibration=judge_calibration, judge_min_kappa=judge_min_kappa,
                execution={**execution, **({"trial_timeout": trial_timeout} if trial_timeout is not None else {}),
                           **({"faults": faults} if faults is not None else {})})
    except ValidationError as e:
        raise fail(format_validation_error("run options", e)) from e
    except (SpecError, DomainError, TaskFileError, RunDocumentError, ValueError) as e:
        raise fail(str(e)) from e
    execute(spec, out=out, store=store, run_id=run_id, no_progress=no_progress, dask_timeout=dask_timeout, otel=otel,
            allow_lint_errors=allow_lint_errors, previous=previous)


def _csv(text: str | None) -> list[str] | None:
    """Return the items of a comma-separated option (None when none is given)."""
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    return items or None


def _spec_from_options(*, domain: str, data: Path | None, tasks: str | None, split: str | None,
                       task_ids: str | None,
                       tags: str | None, exclude_tags: str | None, agent: str, fallback_user: str | None,
                       store: str | None,
                       user: str, personas: str | None, trials: int, seed: int, max_turns: int, max_steps: int,
                       temperature: float | None, api_base: str | None, option: list[str] | None,
                       budgets: Path | None, judge: str | None, judge_api_base: str | None,
                       judge_calibration: Path | None, judge_min_kappa: float,
                       execution: dict[str, Any]) -> RunSpec:
    """Return the :class:`RunSpec` of ``tausim run``'s options (raises DomainError, ValueError ...)."""
    dom = get_domain(domain)
    wanted = None
    if task_ids is not None:
        wanted = [t.strip() for t in task_ids.split(",") if t.strip()]
        if not wanted:
            raise ValueError("--task-ids: no task id given")
    budget_map = None
    if budgets is not None:
        all_ids = [t.id for t in dom.load_tasks(tasks, split=split)]
        selected = set(wanted) if wanted is not None else set(all_ids)
        budget_map = {k: v for k, v in load_budgets(budgets, all_ids, domain).items() if k in selected}
    persona_list = None
    if personas is not None:
        if not (user in ("rule",) or user.startswith(("llm:", "py:"))):
            raise ValueError(f"--personas needs a user that plays personas (--user rule or llm:MODEL), not {user!r}")
        try:
            persona_list = load_personas(personas)
        except PersonaError as e:
            raise ValueError(f"--personas {personas}: {e}") from e
    if judge is None and judge_calibration is not None:
        raise ValueError("--judge-calibration needs --judge MODEL")
    model = {k: v for k, v in (("temperature", temperature), ("api_base", api_base)) if v is not None}
    if fallback_user is not None and not user.startswith("replay:"):
        raise ValueError("--fallback-user goes with --user replay:RUN")
    # a replay user reads the recorded run (a file, or a run id of --store) and may hand over to a fallback user
    replay = {"args": {k: v for k, v in (("store", store), ("fallback", fallback_user)) if v is not None}} \
        if user.startswith("replay:") else {}
    return RunSpec.model_validate({
        "domain": domain, "data_dir": str(data) if data else None, "tasks": tasks, "split": split,
        "options": domain_options(dom, data, option), "task_ids": wanted, "tags": _csv(tags),
        "exclude_tags": _csv(exclude_tags),
        "agent": {"name": agent, **model}, "user": {"name": user, **model, **replay},
        "judge": None if judge is None else {
            "name": judge, "api_base": judge_api_base, "min_kappa": judge_min_kappa,
            "calibration": str(judge_calibration) if judge_calibration is not None else None},
        "personas": [p.name for p in persona_list] if persona_list else None,
        "persona_defs": {p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
        "trials": trials, "seed": seed, "max_turns": max_turns, "max_steps": max_steps,
        "budgets": budget_map, **execution})


def _check_tasks(dom: Any, template: Any, tasks: list[Any], selected: list[Any], data: Path | None,
                 allow_lint_errors: bool) -> dict[str, GoldReplay]:
    """The checks before a run: tasks written for other data (:func:`check_gold`), then lint errors."""
    replays = check_gold(dom, template, tasks, data, selected)
    refuse_lint_errors(dom, template, selected, allow_lint_errors)
    return replays


def execute(spec: RunSpec, *, out: Path | None = None, store: str | None = None, run_id: str | None = None,
            no_progress: bool = False, dask_timeout: float = 10.0, otel: Path | None = None,
            allow_lint_errors: bool = False, previous: list[TrialResult] | None = None) -> None:
    """Run a spec as ``tausim run`` does: build, check, execute, record, print the summary.

    Args:
        spec: the run.
        out: ``--out`` file, or None.
        store: ``--store`` URL, or None.
        run_id: ``--run-id``, or None.
        no_progress: no progress bar.
        dask_timeout: seconds to wait for a ``dask://`` scheduler.
        otel: file the run's OpenTelemetry spans are appended to (``--otel``), or None.
        allow_lint_errors: run even when the task lint finds errors (``--allow-lint-errors``).
        previous: trials already run (``--resume-from``): only the planned trials not among them run, and the
            run document holds both.

    Raises:
        typer.Exit: code 2 on bad input or a set-up error (before any trial runs, or when a trial meets one),
            1 when the run was stopped by ``max_error_rate`` or ``--out`` could not be written (the document is
            then written to a fallback file, named), 130 on Ctrl-C.
    """
    if store is not None:
        _check_store_url(store)
    stack = ExitStack()  # run-owned services: cache file, store lease, executor, log file, progress bar
    data = Path(spec.data_dir) if spec.data_dir else None
    try:
        dom = get_domain(spec.domain)  # record the effective domain options (the defaults for the data included)
        spec = spec.model_copy(update={"options": {**dom.default_options(data), **spec.options}})
        if spec.preflight:
            check_credentials(spec)  # a missing key is reported before the data and tasks are loaded
        services = stack.enter_context(RunServices.open(spec))
        runner = build_runner(spec, services, check=lambda d, t, ts, sel: _check_tasks(d, t, ts, sel, data,
                                                                                allow_lint_errors))
        spec = runner.config  # as built: with the hash of the policy the agent gets
        if spec.preflight:
            preflight(runner)
    except SetupError as e:
        stack.close()
        raise fail(f"set-up error ({e.kind}): {e}") from e
    except (DomainError, TaskFileError, ValueError) as e:
        stack.close()
        raise fail(str(e)) from e
    except BaseException:
        stack.close()
        raise
    results_store: ResultsStore | None = None
    only: set[TrialKey] | None = None
    if previous is not None:
        plan = set(runner.planned())
        previous = [t for t in previous if trial_key(t) in plan]
        only = plan - {trial_key(t) for t in previous}
        console.print(f"resuming: {len(previous)} of {len(plan)} trials recorded, running {len(only)}",
                      highlight=False)
    if store is not None or run_id is not None:
        try:
            results_store, run_id, only = _open_store_run(store or DEFAULT_STORE_URL, run_id, spec, runner.domain,
                                                          data, runner.tasks, stack)
        except BaseException:
            stack.close()
            raise
    log_run_id = run_id or uuid.uuid4().hex[:12]
    log = None
    log_sink = None
    if spec.log_file is not None:
        try:
            log_handle = stack.enter_context(open(spec.log_file, "a", encoding="utf-8", buffering=1))
        except OSError as e:
            stack.close()
            raise fail(f"--log-file {spec.log_file}: cannot write ({e.strerror or e})") from e
        log = runner.log = run_logger(log_handle, log_run_id)
        log_lock = threading.Lock()

        def log_sink(lines: list[str]) -> None:  # trials' events from Dask workers, written by the driver alone
            with log_lock:
                log_handle.write("".join(line + "\n" for line in lines))

    if otel is not None:  # OpenTelemetry spans (simulator.execution.tracing); trial ids go to --out and --log-file
        try:
            runner.tracing = stack.enter_context(file_tracing(otel))
        except (InputError, OSError) as e:
            stack.close()
            raise fail(f"--otel {otel}: {e}") from e
    try:
        executor = stack.enter_context(open_executor(spec, log_sink=log_sink, log_run_id=log_run_id,
                                                     connect_timeout=dask_timeout))
    except ExecutorError as e:
        stack.close()
        raise fail(str(e)) from e
    if log is not None:
        log.info("run_start", config=spec.model_dump(mode="json"))
    planned = len(only) if only is not None else len(runner.planned())
    progress = stack.enter_context(RunProgress(planned, console=console,
                                               enabled=sys.stdout.isatty() and not no_progress))
    partial = out.with_name(out.name + ".partial.jsonl") if out else None
    try:
        partial_file = (_open_partial(partial, spec, len(runner.planned()), previous or [],
                                      [t.id for t in runner.tasks]) if partial else None)
    except OSError as e:
        stack.close()
        raise fail(f"--out {out}: cannot write next to it ({e.strerror})") from e

    def record(t: TrialResult) -> None:
        progress.update(t)
        if results_store is not None and run_id is not None:
            results_store.record(run_id, t)
        if partial_file is not None:
            partial_file.write(t.model_dump_json() + "\n")
            partial_file.flush()

    # The run's data stays alive to the end: keep it out of the cyclic GC, whose full passes over a large data
    # set stall every trial thread for ~0.3 s (measured with scripts/bench-concurrency); rarer young passes.
    settle_heap()
    try:
        try:
            result = runner.run(executor=executor, on_trial=record, only=only)
        except KeyboardInterrupt:
            _interrupted(partial_file, partial, run_id if results_store is not None else None, stack, executor)
        if log is not None:
            log.info("run_end", wall_seconds=round(result.wall_seconds, 6), trials=len(result.trials),
                     metrics=result.metrics, termination_reasons=result.termination_reasons,
                     **({"aborted": result.aborted} if result.aborted else {}))
    finally:
        if partial_file is not None:
            partial_file.close()
        stack.close()
    aborted, abort_kind = result.aborted, result.abort_kind
    session = list(result.trials)  # this session's trials (a resumed run's earlier ones are added below)
    if previous:
        order = {key: i for i, key in enumerate(runner.planned())}
        trials = sorted([*previous, *result.trials], key=lambda t: order[trial_key(t)])
        result = RunResult(config=spec, trials=trials, planned=len(order), wall_seconds=result.wall_seconds,
                           termination_reasons=dict(sorted(Counter(t.termination_reason for t in trials).items())))
    if results_store is not None and run_id is not None:  # the whole run, earlier sessions included
        results_store.add_wall_seconds(run_id, result.wall_seconds)
        result = results_store.load_run_result(run_id)
    if results_store is not None and run_id is not None:
        doc = results_store.load_run_document(run_id)
    else:
        doc = run_summary_json(result, {"git_revision": git_revision(), "packages": package_versions(),
                                        "python": sys.version.split()[0], "split": task_file_split(spec.tasks),
                                        "task_tags": {t.id: list(t.tags) for t in runner.tasks},
                                        # every task of the plan: a run stopped early is reported over all of
                                        # them, not only those with a finished trial
                                        "planned_task_ids": [t.id for t in runner.tasks]})
    if aborted:
        doc.update(aborted=aborted, abort_kind=abort_kind)
    written = _write_run(out, doc) if out is not None else None  # results first: a summary into a closed pipe
    if written is not None and partial is not None:                # must not lose them
        partial.unlink(missing_ok=True)
    print_summary(analyze_run(doc), console, max_failures=20, command="run",
                  see="--out" if written is not None else ("the store" if results_store else None))
    if written is not None:
        console.print(f"wrote {written}", highlight=False)
    code = 0
    if aborted:
        code = 2 if abort_kind == "setup_error" else 1
        resume = (f"; resume it with --run-id {run_id}" if results_store is not None else
                  f"; resume it with --resume-from {partial}" if partial is not None and written is None else "")
        err.print(f"[bold red]error:[/] run stopped: {escape(aborted)}{resume}", highlight=False)
    elif len(session) < ERROR_RATE_MIN_TRIALS:  # too few (this session) to have been checked while it ran
        excess = run_error_rate(session, spec.max_error_rate)
        if excess is not None:
            code = 1
            whose = "the run's" if len(session) == len(result.trials) else "this session's"  # resumed: only new
            err.print(f"[bold red]error:[/] {whose} {escape(excess)}", highlight=False)
    if out is not None and written != out:
        code = code or 1
    if code:
        raise typer.Exit(code)


def _check_store_url(url: str) -> None:
    """Refuse a store URL whose database would vanish with the process (``sqlite://``, ``sqlite:///:memory:``)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - a malformed URL is reported by connect_store
        return
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise fail(f"--store {url}: an in-memory database keeps nothing after the run; give a file, e.g. "
                   f"{DEFAULT_STORE_URL}")


def _open_partial(path: Path, spec: RunSpec, planned: int, previous: list[TrialResult],
                  task_ids: list[str]) -> Any:
    """Start the partial run file (header, then the ``previous`` trials) and return it open for appending.

    It is written to a temporary file renamed into place, so resuming from the same file never loses it.
    """
    tmp = path.with_name(path.name + ".tmp")
    handle = tmp.open("w", encoding="utf-8")
    try:
        handle.write(json.dumps(partial_header(spec, planned, task_ids)) + "\n")
        for t in previous:
            handle.write(t.model_dump_json() + "\n")
        handle.flush()
        os.replace(tmp, path)
    except BaseException:
        handle.close()
        tmp.unlink(missing_ok=True)
        raise
    return handle


@contextmanager
def _sigint_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C (SIGINT) off while the body runs (main thread only); yields the list of signals received."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    old = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, old)


def _write_run(out: Path, doc: dict[str, Any]) -> Path | None:
    """Write the run document to ``out``, or to a fallback file when ``out`` cannot be written; Ctrl-C waits.

    Returns:
        The file written (``out`` or the fallback), or None when neither could be written (the error says so).
    """
    with _sigint_deferred() as received:
        written: Path | None = None
        try:
            write_json_atomic(out, doc)
            written = out
        except OSError as e:
            name = f"tausim-run-{uuid.uuid4().hex[:8]}.json"
            for folder in (Path.cwd(), Path(tempfile.gettempdir())):
                try:
                    write_json_atomic(folder / name, doc)
                except OSError:
                    continue
                written = folder / name
                break
            where = (f"the run was written to {written} instead" if written is not None else
                     "no fallback file could be written either (finished trials stay in the partial file or store)")
            err.print(f"[bold red]error:[/] --out {escape(str(out))}: cannot write ({escape(e.strerror or str(e))}); "
                      f"{escape(where)}", highlight=False)
    if received:
        err.print(f"interrupted: {'the run was written to ' + str(written) if written else 'nothing was written'}",
                  highlight=False)
        sys.stdout.flush()
        raise typer.Exit(130)
    return written


def _interrupted(partial_file: Any, partial: Path | None, run_id: str | None, stack: ExitStack,
                 executor: Any = None) -> None:
    """Ctrl-C during a run: keep what finished, say where it is, and exit 130 without waiting for stuck trials.

    The worker processes of a ``local:N`` cluster are killed first (``DaskExecutor.abandon``): closing the cluster
    waited about 4 s for each busy worker.
    """
    if partial_file is not None:
        partial_file.close()
    abandon = getattr(executor, "abandon", None)
    if abandon is not None:
        abandon()
    stack.close()
    where = []
    if partial is not None:
        where.append(f"finished trials are in {partial}")
    if run_id is not None:
        where.append(f"rerun the same command with --run-id {run_id} to resume")
    elif partial is not None:
        where.append(f"resume with --resume-from {partial}")
    err.print("interrupted" + (": " + "; ".join(where) if where else ""), highlight=False)
    sys.stdout.flush()
    os._exit(130)  # worker threads may be inside a model call or a stuck agent: do not join them


"""``tausim run``'s options turned into a :class:`RunSpec` (the run itself: :func:`simulator.execution.session.run`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError

from simulator.analysis.budgets import load_budgets
from simulator.cli._common import check_outputs, domain_options, fail, load_persona_option, persona_files
from simulator.cli._resume_options import MEASURED, resumed_spec
from simulator.errors import RunDocumentError
from simulator.storage.documents import load_partial
from simulator.storage.store import DEFAULT_STORE_URL
from simulator.types.secrets import REDACTED
from simulator.types.spec import RunSpec, SpecError, format_validation_error, load_spec
from simulator.types.tasks import TaskFileError
from simulator.world.domain import DomainError, get_domain

__all__ = ["check_run_paths", "given_options", "refuse_ignored_options", "run_spec", "sqlite_file"]

_THE_FILES = ("domain", "data", "tasks", "split", "task_ids", "tags", "exclude_tags", "agent", "user", "fallback_user",
              "personas", "trials", "seed", "vary", "max_turns", "max_steps", "temperature", "api_base", "option",
              "budgets", "judge", "judge_api_base", "judge_calibration", "judge_min_kappa", "judge_anchors",
              "strict_judge", "trial_timeout", "policy")
"""Options that describe the run itself: with ``--spec`` the file's values are used instead (refused when given);
with ``--resume-from`` they must be the file's (:func:`simulator.cli._resume_options.resumed_spec`)."""


def given_options(options: Mapping[str, Any], defaults: Mapping[str, Any], ctx: Any = None) -> set[str]:
    """The options given on the command line (or by environment), by parameter name.

    Args:
        options: parameter name -> value.
        defaults: parameter name -> default value.
        ctx: the command's ``typer.Context``: its parameter sources say what was given (an option given with its
            default value counts). None (a library call): an option counts as given when it differs from its default.
    """
    if ctx is None:
        return {k for k, v in options.items() if v != defaults.get(k)}
    sources = {k: ctx.get_parameter_source(k) for k in options}
    return {k for k, s in sources.items() if s is not None and s.name in ("COMMANDLINE", "ENVIRONMENT")}


def refuse_ignored_options(options: Mapping[str, Any], defaults: Mapping[str, Any],
                           allowed: tuple[str, ...] = ()) -> None:
    """Refuse (exit 2) run options given with ``--spec``, which would be ignored silently.

    With ``--resume-from`` they are not ignored but compared with the partial file's spec (:func:`run_spec`).

    Args:
        options: the command's parameters by name (``tausim run``'s, or a command sharing its run options); its
            ``ctx`` (the ``typer.Context``), when there, tells the options given from those left at their default.
        defaults: their default values (used outside a click command: an option is "given" when it differs).
        allowed: run options the command applies besides the file (``tausim variance``: ``trials``).

    Raises:
        typer.Exit: code 2, naming the options (given on the command line, even with their default value).
    """
    if options.get("resume_from") is not None or options.get("spec_file") is None:
        return
    present = given_options({k: options[k] for k in _THE_FILES if k in options}, defaults, options.get("ctx"))
    given = [f"--{k.replace('_', '-')}" for k in _THE_FILES if k in present and k not in allowed]
    if given:
        raise fail(f"{', '.join(given)}: ignored with --spec (the run is the file's); leave "
                   f"{'it' if len(given) == 1 else 'them'} out, or edit the file")


def check_run_paths(options: Mapping[str, Any], out_flag: str | None = None) -> None:
    """Refuse unusable ``--cache``, ``--log-file``, ``--otel``, ``--store``, ``--run-id`` and ``--out`` values (exit 2).

    Output files must be writable (checked now, before any work) and must not name an input (``--tasks``, the
    SQLite file of ``--store``, ``--cache``, ``--spec``, ``--resume-from``, ``--budgets``, ``--policy``,
    ``--judge-calibration``, a ``--personas`` file, a file of ``--data``).

    Args:
        options: ``run_command``'s parameters by name.
        out_flag: what names ``out`` in the messages when the user did not give ``--out`` (the run document of
            ``--resume-from``); None: ``--out``.
    """
    o: Any = SimpleNamespace(**options)
    if o.store is not None and not o.store.strip():
        raise fail("--store: empty URL; give one such as sqlite:///runs.db")
    if o.run_id is not None and not o.run_id.strip():
        raise fail("--run-id: empty; give the id of the run to start or resume, or leave it out for a new one")
    inputs = [("--tasks", o.tasks), ("--store", sqlite_file(o.store, o.run_id)), ("--cache", o.cache),
              ("--spec", o.spec_file), ("--resume-from", o.resume_from), ("--budgets", o.budgets),
              ("--policy", o.policy), ("--judge-calibration", o.judge_calibration), *persona_files(o.personas)]
    check_outputs([("--cache", o.cache), ("--log-file", o.log_file), ("--otel", o.otel)],
                  [i for i in inputs if i[0] != "--cache"])
    flag = out_flag or "--out"
    check_outputs([(flag, o.out)], [*inputs, ("--log-file", o.log_file), ("--otel", o.otel)])
    if o.data is not None and o.out is not None and o.data.is_dir() and o.out.resolve().is_relative_to(
            o.data.resolve()) and o.out.exists():
        raise fail(f"{flag} {o.out}: is a file of the --data folder {o.data}; writing it would overwrite that input")


def sqlite_file(store: str | None, run_id: str | None) -> str | None:
    """The SQLite database file of ``--store`` (the default store's with ``--run-id`` alone), or None."""
    from sqlalchemy.engine import make_url

    url = store if store is not None else (DEFAULT_STORE_URL if run_id is not None else None)
    try:
        parsed = make_url(url) if url else None
    except Exception:  # noqa: BLE001 - a malformed URL is reported when the store is opened
        return None
    if parsed is None or parsed.get_backend_name() != "sqlite":
        return None
    return parsed.database or None


def _execution(o: Any) -> dict[str, Any]:
    """The execution options given (they apply to a ``--spec`` or ``--resume-from`` run too)."""
    return {k: v for k, v in (("executor", o.executor), ("concurrency", o.concurrency),
                              ("cache", str(o.cache) if o.cache else None), ("rpm", o.rpm),
                              ("log_file", str(o.log_file) if o.log_file else None),
                              ("request_timeout", o.request_timeout), ("max_error_rate", o.max_error_rate),
                              ("preflight", False if o.no_preflight else None)) if v is not None}


def run_spec(options: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> RunSpec:
    """Return the run ``tausim run``'s options describe (with ``--resume-from``: the partial file's).

    With ``--resume-from`` the options that decide what a trial measures must be the file's
    (:func:`~simulator.cli._resume_options.resumed_spec`); the execution options apply as given.

    Args:
        options: ``run_command``'s parameters by name.
        defaults: their defaults (which options were given, without the click context's word on it).

    Raises:
        typer.Exit: code 2 on bad options, a bad spec file or partial file, or an option given with
            ``--resume-from`` that the file recorded otherwise.
    """
    o: Any = SimpleNamespace(**options)
    execution = _execution(o)
    try:
        if o.faults is not None and o.spec_file is not None and o.resume_from is None:
            raise ValueError("--faults goes with the run options, not with --spec (the run is the file's: set its "
                             "\"faults\" field instead)")
        if o.resume_from is not None:
            if o.spec_file is not None or o.store is not None or o.run_id is not None:
                raise ValueError("--resume-from resumes a run without a store: give it without --spec, --store "
                                 "and --run-id")
            spec, _, _ = load_partial(o.resume_from)
            if REDACTED in json.dumps(spec.model_dump(mode="json")):
                raise ValueError(f"--resume-from {o.resume_from}: the run's secrets (API keys, tokens, passwords) "
                                 "were not recorded, so it cannot be resumed from the file alone; run it with "
                                 "--store and --run-id, or give keys through an environment variable "
                                 "(http: api_key_env)")
            given = given_options({k: options[k] for k in MEASURED if k in options}, defaults or {},
                                  options.get("ctx"))
            spec = resumed_spec(o, given, spec, o.resume_from)
            return RunSpec.model_validate({**spec.model_dump(), **execution})
        if o.spec_file is not None:
            spec = load_spec(o.spec_file)
            return RunSpec.model_validate({**spec.model_dump(), **execution}) if execution else spec
        extra = {**({"trial_timeout": o.trial_timeout} if o.trial_timeout is not None else {}),
                 **({"faults": o.faults} if o.faults is not None else {}),
                 **({"policy": str(o.policy)} if o.policy is not None else {})}
        return _spec_from_options(o, {**execution, **extra})
    except ValidationError as e:
        raise fail(format_validation_error("run options", e)) from e
    except (SpecError, DomainError, TaskFileError, RunDocumentError, ValueError) as e:
        raise fail(str(e)) from e


def _csv(text: str | None) -> list[str] | None:
    """Return the items of a comma-separated option (None when none is given)."""
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    return items or None


def _budgets(o: Any, dom: Any, wanted: list[str] | None) -> dict[str, Any] | None:
    """The ``--budgets`` file's budgets of the selected tasks, or None."""
    if o.budgets is None:
        return None
    all_ids = [t.id for t in dom.load_tasks(o.tasks, split=o.split)]
    selected = set(wanted) if wanted is not None else set(all_ids)
    return {k: v for k, v in load_budgets(o.budgets, all_ids, o.domain).items() if k in selected}


def _personas(o: Any) -> list[Any] | None:
    """The ``--personas`` the user plays, or None."""
    if o.personas is None:
        return None
    if not o.personas.replace(",", "").strip():
        raise ValueError("--personas: empty; give persona names (NAME[,NAME...]: shipped names or .json files) or all")
    if not (o.user in ("rule",) or o.user.startswith(("llm:", "py:"))):
        raise ValueError(f"--personas needs a user that plays personas (--user rule or llm:MODEL), not {o.user!r}")
    return load_persona_option(o.personas)


def _spec_from_options(o: Any, execution: dict[str, Any]) -> RunSpec:
    """Return the :class:`RunSpec` of ``tausim run``'s options (raises DomainError, ValueError ...)."""
    dom = get_domain(o.domain)
    wanted = None
    if o.task_ids is not None:
        wanted = [t.strip() for t in o.task_ids.split(",") if t.strip()]
        if not wanted:
            raise ValueError("--task-ids: no task id given")
    budget_map = _budgets(o, dom, wanted)
    persona_list = _personas(o)
    for given, flag in ((o.judge_calibration, "--judge-calibration"), (o.judge_anchors, "--judge-anchors"),
                        (o.strict_judge or None, "--strict-judge")):
        if o.judge is None and given is not None:
            raise ValueError(f"{flag} needs --judge MODEL")
    model = {k: v for k, v in (("temperature", o.temperature), ("api_base", o.api_base)) if v is not None}
    if o.fallback_user is not None and not o.user.startswith("replay:"):
        raise ValueError("--fallback-user goes with --user replay:RUN")
    # a replay user reads the recorded run (a file, or a run id of --store) and may hand over to a fallback user
    replay = {"args": {k: v for k, v in (("store", o.store), ("fallback", o.fallback_user)) if v is not None}} \
        if o.user.startswith("replay:") else {}
    data: Path | None = o.data
    return RunSpec.model_validate({
        "domain": o.domain, "data_dir": str(data) if data else None, "tasks": o.tasks, "split": o.split,
        "options": domain_options(dom, data, o.option), "task_ids": wanted, "tags": _csv(o.tags),
        "exclude_tags": _csv(o.exclude_tags),
        "agent": {"name": o.agent, **model}, "user": {"name": o.user, **model, **replay},
        "judge": None if o.judge is None else {
            "name": o.judge, "api_base": o.judge_api_base, "min_kappa": o.judge_min_kappa,
            "calibration": str(o.judge_calibration) if o.judge_calibration is not None else None,
            "anchors": str(o.judge_anchors) if o.judge_anchors is not None else None, "strict": o.strict_judge},
        "personas": [p.name for p in persona_list] if persona_list else None,
        "persona_defs": {p.name: p.model_dump(mode="json") for p in persona_list} if persona_list else None,
        "trials": o.trials, "seed": o.seed, "vary": o.vary, "max_turns": o.max_turns, "max_steps": o.max_steps,
        "budgets": budget_map, **execution})

"""``tausim run --resume-from``: the options that decide what a trial measures must be what the file recorded.

A resumed run document holds the trials of every session: one whose remaining trials ran under another policy, agent,
user, seed or cap would mix two runs and its numbers would compare nothing. So each such option given beside
``--resume-from`` (:data:`MEASURED`: the run options a ``--spec`` run refuses, ``--policy`` and ``--faults``) is
compared with the file's spec: the same value is accepted
(the stopped command line plus ``--resume-from`` works), another is refused naming the option, the value given and
the value recorded. ``--policy`` is compared by the hash of its text. ``--personas`` may list the recorded personas
in another order: a trial's seed does not depend on its persona (:meth:`~simulator.execution.runner.Runner.trial_seed`;
every persona of a task's trial shares its draws) and each trial runs alone, so the order changes only the order trials
run and are listed in; the run keeps the recorded order. Options that only say how the run is carried
out (``--executor``, ``--concurrency``, ``--cache``, ``--rpm``, ``--log-file``, ``--request-timeout``,
``--max-error-rate``, ``--no-preflight``, ``--otel``, ``--out``, progress) apply as given.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

from simulator.analysis.budgets import load_budgets
from simulator.cli._common import load_persona_option
from simulator.execution.build import agent_policy, policy_sha256
from simulator.types.sanitize import counted, excerpt, shown
from simulator.types.spec import RunSpec
from simulator.world.domain import get_domain

__all__ = ["MEASURED", "resumed_spec"]


class _Compared(NamedTuple):
    """One option given beside ``--resume-from``: its value and the recorded one, as messages show them."""

    same: bool
    given: str
    recorded: str
    update: dict[str, Any]  # spec fields to take from the option when it is the same (a path spelled otherwise)


def _value(value: Any) -> str:
    """A value in a message: ``none`` for None, a string quoted and escaped, else its JSON; cut when long."""
    if value is None:
        return "none"
    return excerpt(value) if isinstance(value, str) else excerpt(value, as_json=True)


def _path_value(path: Path | str | None, default: str = "none") -> str:
    """A path in a message: escaped, on one line, not cut (a cut path names no file)."""
    return default if path is None else shown(str(path), one_line=True)


def _plain(given: Any, recorded: Any, update: dict[str, Any] | None = None) -> _Compared:
    return _Compared(given == recorded, _value(given), _value(recorded), update or {})


def _csv(text: str | None) -> list[str] | None:
    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    return items or None


def _field(spec: RunSpec, name: str, value: Any) -> Any:
    """``value`` as the spec holds field ``name`` (validated as the run options are: ``inf`` timeout is None)."""
    return getattr(RunSpec.model_validate({"domain": spec.domain, name: value}), name)


def _same_path(given: Path | str | None, recorded: str | None) -> bool:
    if given is None or recorded is None:
        return given is None and recorded is None
    return str(given) == recorded or Path(given).resolve() == Path(recorded).resolve()


def _path(option: str, field: str) -> Callable[[Any, RunSpec], _Compared]:
    """A path option (``--data``): the same file or folder however it is spelled; the run then uses the new spelling."""
    def compare(o: Any, spec: RunSpec) -> _Compared:
        given, recorded = getattr(o, option), getattr(spec, field)
        return _Compared(_same_path(given, recorded), _path_value(given),
                         _path_value(recorded, "none (the built-in one)"), {field: str(given)})
    return compare


def _tasks(o: Any, spec: RunSpec) -> _Compared:
    same = o.tasks == spec.tasks or (spec.tasks is not None and Path(o.tasks).exists()
                                     and _same_path(o.tasks, spec.tasks))
    return _Compared(same, _path_value(o.tasks), _path_value(spec.tasks, "none (the built-in tasks)"),
                     {"tasks": o.tasks})


def _both_sides(attr: str) -> Callable[[Any, RunSpec], _Compared]:
    """``--temperature`` / ``--api-base``: set on the agent and the user alike."""
    def compare(o: Any, spec: RunSpec) -> _Compared:
        given, agent, user = getattr(o, attr), getattr(spec.agent, attr), getattr(spec.user, attr)
        recorded = _value(agent) if agent == user else f"agent {_value(agent)}, user {_value(user)}"
        return _Compared(given == agent == user, _value(given), recorded, {})
    return compare


def _judge(attr: str, option: str) -> Callable[[Any, RunSpec], _Compared]:
    """A judge option: compared with the recorded judge's field (none when the run had no judge)."""
    def compare(o: Any, spec: RunSpec) -> _Compared:
        given = getattr(o, option)
        given = str(given) if isinstance(given, Path) else given
        if spec.judge is None:
            return _Compared(False, _value(given), "none (no judge)", {})
        recorded = getattr(spec.judge, attr)
        if attr in ("calibration", "anchors"):
            return _Compared(_same_path(given, recorded), _path_value(given), _path_value(recorded), {})
        return _Compared(given == recorded, _value(given), _value(recorded), {})
    return compare


def _options(o: Any, spec: RunSpec) -> _Compared:
    """``--option KEY=VALUE``: each key's recorded value (an option the run was recorded without is "not set")."""
    given: dict[str, str] = {}
    for pair in o.option or []:
        key, _, value = pair.partition("=")
        given[key.strip()] = value.strip()
    data = Path(spec.data_dir) if spec.data_dir else None
    options = {**get_domain(spec.domain).default_options(data), **spec.options}  # as the run was built
    same = all(k in options and options[k] is not None and str(options[k]) == v for k, v in given.items())
    unset = [k for k in given if k not in options]
    recorded = _value({k: options[k] for k in given if k in options}) if len(unset) < len(given) else ""
    if unset:
        names = f"option{'s' if len(unset) > 1 else ''} {', '.join(_value(k) for k in unset)}"
        every = _value(options) if options else "none"
        recorded = (f"{recorded}, " if recorded else "") + f"{names} not set (the options recorded: {every})"
    return _Compared(same, _value(given), recorded, {})


def _personas(o: Any, spec: RunSpec) -> _Compared:
    """``--personas``: the same personas, with the same definitions; in any order (see the module docstring)."""
    loaded = load_persona_option(o.personas)
    names = [p.name for p in loaded]
    defs = {p.name: p.model_dump(mode="json") for p in loaded}
    recorded_names = spec.personas or []
    same = sorted(names) == sorted(recorded_names) and len(set(names)) == len(names) \
        and defs == (spec.persona_defs or {})
    recorded = _value(spec.personas)
    if sorted(names) == sorted(recorded_names) and not same:
        recorded += " (with other definitions)"
    return _Compared(same, _value(names), recorded, {})


def _budgets(o: Any, spec: RunSpec) -> _Compared:
    dom = get_domain(spec.domain)
    all_ids = [t.id for t in dom.load_tasks(spec.tasks, split=spec.split)]
    selected = set(spec.task_ids) if spec.task_ids is not None else set(all_ids)
    given = {k: v.model_dump(mode="json") for k, v in load_budgets(o.budgets, all_ids, spec.domain).items()
             if k in selected}
    recorded = {k: v.model_dump(mode="json") for k, v in (spec.budgets or {}).items()}
    return _Compared(given == recorded, f"{_path_value(o.budgets)} ({counted(len(given), 'task budget')})",
                     counted(len(recorded), "task budget") + (" (other ceilings)" if len(given) == len(recorded)
                                                              else ""), {})


def _policy(o: Any, spec: RunSpec) -> _Compared:
    """``--policy``: the hash of its text against the one the run recorded (its path alone when none was)."""
    text = agent_policy(spec.model_copy(update={"policy": str(o.policy)}))
    given = policy_sha256(text)
    where = _path_value(spec.policy, "the domain's or suite's own policy")
    if spec.policy_sha256 is None:
        return _Compared(_same_path(o.policy, spec.policy), _path_value(o.policy), where, {"policy": str(o.policy)})
    return _Compared(given == spec.policy_sha256, f"{_path_value(o.policy)} (text sha256 {given[:16]}...)",
                     f"{where} (text sha256 {spec.policy_sha256[:16]}...)", {"policy": str(o.policy)})


def _simple(field: str) -> Callable[[Any, RunSpec], _Compared]:
    def compare(o: Any, spec: RunSpec) -> _Compared:
        return _plain(_field(spec, field, getattr(o, field)), getattr(spec, field))
    return compare


def _listed(field: str) -> Callable[[Any, RunSpec], _Compared]:
    def compare(o: Any, spec: RunSpec) -> _Compared:
        return _plain(_csv(getattr(o, field)), getattr(spec, field))
    return compare


def _faults(o: Any, spec: RunSpec) -> _Compared:
    given, recorded = _field(spec, "faults", o.faults), spec.faults
    dump = (lambda f: None if f is None else f.model_dump(mode="json"))  # noqa: E731
    return _Compared(dump(given) == dump(recorded), _value(o.faults), _value(dump(recorded)), {})


_CHECKS: dict[str, Callable[[Any, RunSpec], _Compared]] = {
    "domain": _simple("domain"), "data": _path("data", "data_dir"), "tasks": _tasks, "split": _simple("split"),
    "task_ids": _listed("task_ids"), "tags": _listed("tags"), "exclude_tags": _listed("exclude_tags"),
    "agent": lambda o, s: _plain(o.agent, s.agent.name), "user": lambda o, s: _plain(o.user, s.user.name),
    "fallback_user": lambda o, s: _plain(o.fallback_user, s.user.args.get("fallback")),
    "personas": _personas, "trials": _simple("trials"), "seed": _simple("seed"), "vary": _simple("vary"),
    "max_turns": _simple("max_turns"), "max_steps": _simple("max_steps"), "temperature": _both_sides("temperature"),
    "api_base": _both_sides("api_base"), "option": _options, "budgets": _budgets,
    "judge": _judge("name", "judge"), "judge_api_base": _judge("api_base", "judge_api_base"),
    "judge_calibration": _judge("calibration", "judge_calibration"),
    "judge_min_kappa": _judge("min_kappa", "judge_min_kappa"), "judge_anchors": _judge("anchors", "judge_anchors"),
    "strict_judge": _judge("strict", "strict_judge"), "trial_timeout": _simple("trial_timeout"),
    "faults": _faults, "policy": _policy,
}

MEASURED = tuple(_CHECKS)
"""``tausim run`` options (parameter names) that decide what a trial measures: given with ``--resume-from`` they
must be what the partial file recorded."""


def resumed_spec(options: dict[str, Any] | SimpleNamespace, given: set[str], spec: RunSpec, source: Path) -> RunSpec:
    """Check the measured options given beside ``--resume-from`` against the file's spec; return the spec to resume.

    Args:
        options: ``tausim run``'s parameters (a dict or a namespace of them).
        given: the parameter names given on the command line.
        spec: the spec the partial file recorded.
        source: the partial file (named in the error).

    Returns:
        ``spec``, with a path option given otherwise spelled for the same file (``--data``, ``--tasks``,
        ``--policy`` of the same text) taken as given.

    Raises:
        ValueError: one line naming the first option given with another value than recorded: the option, the value
            given and the value recorded (escaped and cut with :mod:`simulator.types.sanitize`), and the other
            options that differ; also what reading a ``--personas``, ``--budgets`` or ``--policy`` file raises
            (``--personas: ...`` as :func:`~simulator.cli._common.load_persona_option` says it, BudgetFileError,
            DomainError: ValueErrors naming the file).
    """
    o = SimpleNamespace(**options) if isinstance(options, dict) else options
    update: dict[str, Any] = {}
    differ: list[tuple[str, _Compared]] = []
    for name in MEASURED:
        if name not in given:
            continue
        compared = _CHECKS[name](o, spec)
        if compared.same:
            update.update(compared.update)
        else:
            differ.append((f"--{name.replace('_', '-')}", compared))
    if differ:
        flag, first = differ[0]
        others = [f for f, _ in differ[1:]]
        more = f" (and {', '.join(others)} differ{'s' if len(others) == 1 else ''} too)" if others else ""
        raise ValueError(f"{flag} {first.given}: {shown(source, one_line=True)} was recorded with {first.recorded}"
                         f"{more}; a resumed run keeps what its trials were measured with, so nothing was run or "
                         f"written: leave {flag} out (or give the recorded value), or start a new run with another "
                         "--out")
    return spec.model_copy(update=update) if update else spec

"""The Domain base class and the registry of domains (entry point group ``tausim.domains``).

A domain is a business world: schema and seed data, tools, a policy document and tasks. It is a package that
registers a :class:`Domain` subclass under the entry point group ``tausim.domains``; nothing in
``simulator/`` names a particular domain.

What a domain must write is small (:class:`~simulator.world.capabilities.DomainEssentials`: ``name``,
``state_spec``, ``populate``, ``dump``, ``toolbox``, ``policy``); everything else is an optional capability with a
default (:mod:`simulator.world.capabilities`: suite options, sinks and events, dual control, environment
functions, scenario derivation, grading and authoring hints, a reference agent). :class:`Domain` combines them and
adds what the engine does with any domain: templates built once per data set and options, task files loaded and
checked against the tools.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError
from sqlalchemy import MetaData
from sqlalchemy.orm import Session

from simulator.errors import DomainError
from simulator.types.rules import PRECEDENCE_END, PRECEDENCE_WRITE, Precedence
from simulator.types.sanitize import clipped, excerpt
from simulator.types.tasks import Task, TaskFileError, load_tasks
from simulator.world.capabilities import (
    AuthoringHints,
    DomainEssentials,
    DualControl,
    EnvironmentFunctions,
    GradingHints,
    ReferenceAgentProvider,
    ScenarioDerivation,
    SinksAndEvents,
    SuiteOptions,
)
from simulator.world.database import TemplateDatabase
from simulator.world.fixtures import check_task_outcomes
from simulator.world.plugins import group_entry_points as entry_points
from simulator.world.template_cache import PLAIN_BASE_MODULES, load_template, store_template, template_key
from simulator.world.tools import Toolbox

__all__ = ["SUITE_OPTIONS", "Domain", "DomainEssentials", "DomainError", "available_domains", "get_domain"]

ENTRY_POINT_GROUP = "tausim.domains"

SUITE_OPTIONS: dict[str, tuple[str, ...]] = {"communicate": ("tausim", "tau2")}
"""Options every domain accepts (besides its own :attr:`Domain.option_values`), read by the grader:
``communicate`` = the rule of the ``outputs`` component (``tausim``: whole tokens, numbers as numbers;
``tau2``: tau2-bench's case-insensitive substring with commas removed)."""


class Domain(SuiteOptions, SinksAndEvents, DualControl, EnvironmentFunctions, ScenarioDerivation, GradingHints,
             AuthoringHints, ReferenceAgentProvider):
    """A business world the agent works in.

    Subclasses set :attr:`name` and implement the abstract methods of
    :class:`~simulator.world.capabilities.DomainEssentials` (``state_spec``, ``toolbox``, ``policy``, ``populate``,
    ``dump``); every other hook is an optional capability of :mod:`simulator.world.capabilities` with a default.
    Templates are cached per instance (one per data directory and options), so a process builds each data set once.
    """

    template_cacheable: ClassVar[bool] = False
    """Whether the template depends only on the data folder's files, the options and the code of the domain's
    package and of ``simulator``: then it is kept on disk between processes (:mod:`simulator.world.template_cache`).
    A domain whose ``populate`` reads anything else (the environment, other files, the clock) leaves it False.
    Inherited, it counts only for classes all defined in ``simulator`` and ``domains`` (see :meth:`_cacheable`)."""

    def _cacheable(self) -> bool:
        """Whether this domain's template may be kept on disk (:attr:`template_cacheable`).

        Inherited, it holds only for classes all defined in tausim's own packages (``simulator``, ``domains``), whose
        code the cache key covers; a class of another package takes part only when it says so itself (its own
        ``template_cacheable = True``): its ``populate`` may call code elsewhere, which the key cannot see.
        """
        cls = type(self)
        if "template_cacheable" in vars(cls):
            return bool(cls.template_cacheable)
        own = {"simulator", "domains"} | PLAIN_BASE_MODULES
        return self.template_cacheable and all(k.__module__.partition(".")[0] in own for k in cls.__mro__)

    def _template_from(self, metadata: MetaData, folder: Path, opts: dict[str, Any],
                       built: bytes | None) -> TemplateDatabase:
        """The template from a cached image ``built`` when it opens, else built from the data (see :meth:`template`)."""
        def populate(s: Session) -> None:
            self._populate_with_sinks(s, folder, opts)

        name = f"{self.name}:{folder}"
        if built is not None:
            try:
                return TemplateDatabase(metadata, populate, name=name, options=opts, data=built)
            except sqlite3.DatabaseError:  # an image that passed its digest but is no database: built again
                built = None
        return TemplateDatabase(metadata, populate, name=name, options=opts)

    def __init__(self) -> None:
        self._templates: dict[tuple[str, tuple[tuple[str, Any], ...]], TemplateDatabase] = {}
        self._lock = threading.Lock()

    def load_tasks(self, source: str | None = None, split: str | None = None) -> list[Task]:
        """Load tasks from a file path or a built-in split name (None: every built-in split, in order).

        A tau2-bench ``tasks.json`` (or its ``split_tasks.json``) is loaded by
        :func:`simulator.world.tau2_tasks.load_tau2_tasks`
        with ``split`` (None: tau2's default split ``base`` when the split file has one, else every task).

        Raises:
            DomainError: an unknown split name, or ``split`` given without a tau2-bench task file.
            simulator.types.tasks.TaskFileError: a malformed task file, a file for another domain, or a gold action
                naming an unknown tool or arguments that do not fit the tool's schema.
        """
        splits = self.task_splits()
        if split is not None and (source is None or source in splits):
            raise DomainError(f"--split {split}: splits apply to tau2-bench task files (--tasks .../tasks.json), "
                              f"not to the built-in tasks of domain {self.name!r} "
                              f"({source or 'all'}; built-in splits: {', '.join(splits) or 'none'})")
        if source is None:
            tasks: list[Task] = []
            for path in splits.values():
                tasks.extend(self._checked(load_tasks(path, self.name), str(path)))
            return tasks
        if source in splits:
            return self._checked(load_tasks(splits[source], self.name), str(splits[source]))
        if Path(source).exists():
            from simulator.world.tau2_tasks import is_tau2_task_file, load_tau2_tasks

            if split is not None and not is_tau2_task_file(source):
                raise DomainError(f"--split {split}: splits apply to tau2-bench task files, not {source}")
            if is_tau2_task_file(source):
                if self.tau2_options is None:
                    raise DomainError(f"--tasks {source}: a tau2-bench task file; domain {self.name!r} cannot run "
                                      "tau2 tasks")
                tasks = load_tau2_tasks(source, split=split)
                return self._checked(tasks, source, self.toolbox_for(self.tau2_options))
            return self._checked(load_tasks(source, self.name), source)
        raise DomainError(
            f"--tasks {source!r}: neither a file nor a split of domain {self.name!r} "
            f"(splits: {', '.join(splits) or 'none'})"
        )

    def _checked(self, tasks: list[Task], source: str, toolbox: Toolbox | None = None) -> list[Task]:
        """Refuse gold actions or process rules that name an unknown tool, and arguments that do not fit the schema.

        Fixtures and assertions are checked too (:func:`simulator.world.fixtures.check_task_outcomes`).

        Raises:
            TaskFileError: naming the file, the task id, the action index and the field.
        """
        toolbox = toolbox if toolbox is not None else self.toolbox()
        for task in tasks:
            rules = task.process
            named = [(f"forbidden_tools[{i}]", n) for i, n in enumerate(rules.forbidden_tools)]
            named += [(f"required_tools[{i}]", n) for i, n in enumerate(rules.required_tools)]
            for i, rule in enumerate(rules.precedence):
                named += [(f"precedence[{i}].before", n) for n in rule.before_tools()]
                named += [(f"precedence[{i}].after", n) for n in rule.after_items() if n not in PRECEDENCE_MARKERS]
                _check_same_arguments(rule, toolbox, f"{source}: task {task.id!r}: field process.precedence[{i}]")
            for field, name in named:
                if name not in toolbox.specs:
                    raise TaskFileError(f"{source}: task {task.id!r}: field process.{field}: unknown tool {name!r} "
                                        f"in domain {self.name!r}")
            user_tools = self.user_toolbox()
            for i, action in enumerate(task.gold_actions):
                field = f"evaluation_criteria.actions[{i}]" if task.suite == "tau2" else f"gold_actions[{i}]"
                where = f"{source}: task {task.id!r}: field {field}"
                side = toolbox
                if action.requestor == "user":
                    if user_tools is None:
                        raise TaskFileError(f"{where}.requestor: domain {self.name!r} has no user-side tools")
                    side = user_tools
                spec = side.specs.get(action.name)
                if spec is None:
                    raise TaskFileError(f"{where}.name: unknown tool {action.name!r} in domain {self.name!r}")
                try:
                    spec.arguments_model.model_validate(action.arguments)
                except ValidationError as e:
                    err = e.errors()[0]
                    loc = ".".join(str(p) for p in err["loc"])
                    raise TaskFileError(f"{where}.arguments.{clipped(loc)}: {clipped(err['msg'])} "
                                        f"(value: {excerpt(err.get('input'), as_json=True)})") from e
            check_task_outcomes(self, task, source, toolbox)
        return tasks

    def _populate_with_sinks(self, session: Session, folder: Path, options: Mapping[str, Any]) -> None:
        self.populate(session, folder, options)
        session.flush()
        for sink in self.sinks:
            sink.initialize(session)

    def template(self, data_dir: Path | None = None, options: Mapping[str, Any] | None = None) -> TemplateDatabase:
        """Return the template database for a data set, building it on first use (thread-safe).

        Args:
            data_dir: data directory; None for the built-in data set.
            options: tool options; None for :meth:`default_options`.
        """
        folder = Path(data_dir) if data_dir is not None else self.default_data_dir()
        opts = dict(options) if options is not None else self.default_options(data_dir)
        for k, v in opts.items():
            allowed = self.option_values.get(k) or SUITE_OPTIONS.get(k)
            if allowed is None:
                raise DomainError(f"--option {k}={v}: domain {self.name!r} has no option {k!r} "
                                  f"(options: {', '.join([*self.option_values, *SUITE_OPTIONS])})")
            if v not in allowed:
                raise DomainError(f"--option {k}={v}: allowed values are {', '.join(allowed)}")
        key = (str(folder.resolve()), tuple(sorted(opts.items())))
        with self._lock:
            tpl = self._templates.get(key)
            if tpl is None:
                if not (folder.is_dir() or folder.is_file()):
                    raise DomainError(f"--data {folder}: not a directory or a data file")
                metadata = self.install_sinks().metadata
                cache_key = template_key(self, folder, opts) if self._cacheable() else None
                built = load_template(cache_key) if cache_key is not None else None
                tpl = self._template_from(metadata, folder, opts, built)
                if cache_key is not None and tpl.data is not built:
                    store_template(cache_key, tpl.data)
                tpl.data_dir = folder if data_dir is not None else None
                self._templates[key] = tpl
            return tpl


PRECEDENCE_MARKERS = (PRECEDENCE_WRITE, PRECEDENCE_END)
"""The markers a precedence's ``after`` may hold besides tool names."""


def _check_same_arguments(rule: Precedence, toolbox: Toolbox, where: str) -> None:
    """Refuse a precedence whose ``same`` names an argument that a named tool does not take.

    Raises:
        TaskFileError: naming ``where`` (file, task, field), the argument and the tool.
    """
    marker = next((n for n in rule.after_items() if n.startswith("@") and n not in PRECEDENCE_MARKERS), None)
    if marker is not None:
        raise TaskFileError(f"{where}.after: unknown marker {marker!r} (markers: {', '.join(PRECEDENCE_MARKERS)})")
    if rule.same and PRECEDENCE_WRITE in rule.after_items():
        raise TaskFileError(f"{where}.same: not allowed with {PRECEDENCE_WRITE!r} (name the tools that change the "
                            "record)")
    for name in [*rule.before_tools(), *(n for n in rule.after_items() if n not in PRECEDENCE_MARKERS)]:
        spec = toolbox.specs.get(name)
        if spec is None:
            continue  # reported as an unknown tool by the caller
        params = spec.schema.get("function", {}).get("parameters", {}).get("properties", {})
        for arg in rule.same:
            if arg not in params:
                raise TaskFileError(f"{where}.same: tool {name!r} takes no argument {arg!r}")


def available_domains() -> list[str]:
    """Return the names of all registered domains, sorted."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def get_domain(name: str) -> Domain:
    """Return a new instance of the registered domain ``name`` (the caller keeps it: it caches templates).

    Raises:
        DomainError: no domain of that name is registered, or its plugin cannot be loaded or built (the message
            names its entry point and the error).
    """
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                domain = ep.load()()
            except Exception as e:  # noqa: BLE001 - a plugin's import or constructor: any error, named
                first = (str(e).strip().splitlines() or [""])[0]
                raise DomainError(f"domain {name!r} (entry point {ep.value!r}) cannot be loaded: "
                                  f"{type(e).__name__}: {first}") from e
            if not isinstance(domain, Domain):
                raise DomainError(f"entry point {ep.value!r} for domain {name!r} is not a Domain")
            return domain
    raise DomainError(f"unknown domain {name!r}; registered: {', '.join(available_domains()) or 'none'}")

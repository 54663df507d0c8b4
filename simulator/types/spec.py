"""The run spec: one versioned, typed description of a run (:class:`RunSpec`).

A :class:`RunSpec` says everything a run is: the domain and its options, the data and task set, the agent, the
simulated user and the judge (each a :class:`ComponentSpec`: a name plus its arguments), the personas with
their definitions, trials, seed, caps and budgets, and how it is executed (executor, concurrency, model
services, log file). :func:`simulator.execution.build.build_runner` turns a spec into a
:class:`~simulator.execution.runner.Runner`;
it is the only way ``tausim run``, ``tausim play``, resume, regrade and Dask workers build a run, so the CLI and
library use are the same path.

The spec is stored verbatim with the run in the results store (``runs.config``) and in the ``--out`` document
(key ``config``). Resuming a stored run compares the whole spec with the one given now
(:func:`spec_differences`) and refuses any difference except in :data:`RESUME_EXEMPT` fields, which change how
a run is executed or observed, not what its trials are:

- ``executor``, ``concurrency``: where and how many trials run at once (trial seeds depend only on the run
  seed, task and trial index);
- ``log_file``: where events are appended; ``cache``, ``rpm``: model services (a response cache replays what
  the same request returned before, a rate limit only delays calls);
- ``data_dir``, ``tasks``: paths, which may be spelled differently between sessions; their *contents* are
  compared instead (the store's data-set and task-set hashes);
- ``request_timeout``, ``max_error_rate``, ``preflight``: how model calls wait and when a failing run is stopped,
  not what a trial is. ``trial_timeout`` is compared: it decides which trials end ``timeout``.

Display settings (the progress bar) and where results go (``--out``, ``--store``, ``--run-id``) are not part of
the spec.

A spec file (``tausim run --spec FILE.json``) is the JSON of :meth:`RunSpec.model_dump`; see
:func:`load_spec`.
"""

from __future__ import annotations

import difflib
import math
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from simulator.errors import SpecError
from simulator.types.faults import FaultRates
from simulator.types.jsonfile import JSONTextError, decode_json, not_utf8
from simulator.types.sanitize import clipped, excerpt, shown
from simulator.types.secrets import redact_secrets
from simulator.types.tasks import Budget

__all__ = ["EXECUTOR_HELP", "MAX_PLANNED_TRIALS", "RESUME_EXEMPT", "SPEC_FORMAT", "ComponentSpec", "JudgeSpec",
           "RunSpec", "SpecError", "format_validation_error", "load_spec", "parse_executor", "recorded_config",
           "resume_exempt", "spec_differences"]

SPEC_FORMAT: Final = "tausim.runspec"
"""The value of every spec's ``format`` field."""

MAX_PLANNED_TRIALS: Final = 1_000_000
"""Most trials a run may plan (tasks x personas x trials): the plan is built in memory before the first trial."""

RESUME_EXEMPT = ("executor", "concurrency", "log_file", "cache", "rpm", "data_dir", "tasks", "request_timeout",
                 "max_error_rate", "preflight")
"""Spec fields that may differ when a stored run is resumed (see the module docstring for why)."""


def resume_exempt(stored: RunSpec, given: RunSpec) -> tuple[str, ...]:
    """The fields not compared when a run without a store (a partial file, a run document) is resumed.

    The policy is compared by its text: when both specs carry ``policy_sha256`` (a built run's, as partial files and
    run documents record it), that hash is compared and the ``policy`` path may differ (a file moved); else the path
    is compared and the hash is not (a spec not built yet, a hand-written partial file).

    Args:
        stored: the spec the earlier trials were recorded with.
        given: the spec of the run resuming them.

    Returns:
        :data:`RESUME_EXEMPT` plus ``"policy"`` or ``"policy_sha256"``.
    """
    hashed = stored.policy_sha256 is not None and given.policy_sha256 is not None
    return (*RESUME_EXEMPT, "policy" if hashed else "policy_sha256")

EXECUTOR_HELP = ("auto (threads, or local Dask processes for many model-calling trials at once on several cores) | "
                 "threads | local:N (a Dask LocalCluster of N processes) | dask://HOST:PORT (a Dask scheduler)")


def parse_executor(text: str) -> tuple[str, int | str | None]:
    """Parse an executor string.

    Args:
        text: ``auto``, ``threads``, ``local:N`` (N >= 1 worker processes) or ``dask://HOST:PORT``.

    Returns:
        ``("auto", None)``, ``("threads", None)``, ``("local", N)`` or ``("dask", "tcp://HOST:PORT")``.

    Raises:
        ValueError: another scheme, a bad N, or a Dask address without host or port, or a port out of range.
    """
    if text in ("auto", "threads"):
        return text, None
    if text.startswith("local:"):
        n = text.partition(":")[2]
        if not n.isascii() or not n.isdigit() or int(n) < 1:
            raise ValueError(f"--executor {text!r}: local:N needs a number of worker processes N >= 1")
        return "local", int(n)
    if text.startswith("dask://"):
        host, sep, port = text[len("dask://"):].rpartition(":")
        if not host or not sep or not port.isascii() or not port.isdigit():
            raise ValueError(f"--executor {text!r}: expected dask://HOST:PORT, e.g. dask://10.0.0.5:8786")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"--executor {text!r}: port {port} is not a TCP port (1-65535)")
        return "dask", f"tcp://{host}:{port}"
    raise ValueError(f"--executor {text!r}: unknown executor; use {EXECUTOR_HELP}")


class ComponentSpec(BaseModel):
    """An agent, simulated user or judge: its name and the arguments it is built with.

    ``name`` is the spec string of the CLI: ``oracle``, ``reference:KNOB=RATE,...`` (the fault knobs are part
    of the name), ``faulty:KIND=RATE``, ``litellm:MODEL``, ``rule``, ``llm:MODEL``, ``py:MODULE:FACTORY``; a
    bare string is accepted wherever a component is expected (``agent="oracle"``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    """Model temperature (LLM components), 0 to 2 (OpenAI's range); None: the model's default."""
    api_base: str | None = None
    """OpenAI-compatible server URL (local models); None: the provider's."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Completion token limit per model call; None: the model's default."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments of the component's factory (JSON values)."""

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    def model_params(self) -> dict[str, Any]:
        """Return the model parameters to pass to an LLM component's factory (only those set), plus ``args``."""
        params = {k: v for k, v in (("temperature", self.temperature), ("api_base", self.api_base),
                                    ("max_tokens", self.max_tokens)) if v is not None}
        params.update(self.args)
        return params


class JudgeSpec(ComponentSpec):
    """The LLM judge: ``name`` is its litellm model string; gating follows the calibration."""

    calibration: str | None = None
    """Calibration file (``tausim judge calibrate --out``); None: the judge is recorded but does not gate."""
    min_kappa: float = Field(default=0.6, ge=-1, le=1, allow_inf_nan=False)
    """Minimum calibration kappa for the judge to gate."""
    anchors: str | None = None
    """Labels file of human-graded examples shown to the judge before every assertion (against scale drift)."""
    strict: bool = False
    """Refuse a gating judge of the agent's model family (default: the run warns in the judge's note)."""


class RunSpec(BaseModel):
    """Everything a run is (see the module docstring); build it with :func:`simulator.execution.build.build_runner`.

    Example::

        spec = RunSpec(domain="retail", agent="reference", user="rule", trials=2, seed=7)
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal["tausim.runspec"] = SPEC_FORMAT
    version: Literal[1] = 1
    domain: str
    options: dict[str, Any] = Field(default_factory=dict)
    """Domain options (e.g. ``{"mode": "tau-bench"}``), over the domain's defaults for the data set."""
    data_dir: str | None = None
    """Data directory; None: the domain's built-in data set."""
    tasks: str | None = None
    """Task file or split name; None: the domain's built-in tasks."""
    split: str | None = None
    """Split of a tau2-bench task file (the ``split_tasks.json`` beside it; ``--split``); None: tau2's default,
    ``base``, when the split file has one (see :func:`simulator.world.tau2_tasks.load_tau2_tasks`)."""
    task_ids: list[str] | None = None
    """Run only these task ids (in task-set order); None: every task."""
    tags: list[str] | None = None
    """Run only the tasks carrying one of these tags (suite tiers such as ``smoke``; see :mod:`simulator.world.suites`);
    None: no tag filter."""
    exclude_tags: list[str] | None = None
    """Leave out the tasks carrying one of these tags; None: none left out."""
    agent: ComponentSpec = ComponentSpec(name="oracle")
    user: ComponentSpec = ComponentSpec(name="scripted")
    judge: JudgeSpec | None = None
    """The LLM judge for tasks with judge assertions; None: those assertions are recorded ``not_graded``."""
    personas: list[str] | None = None
    """Persona names the simulated user plays: the run is task x persona x trial; None: no persona dimension."""
    persona_defs: dict[str, dict[str, Any]] | None = None
    """The personas' definitions (their JSON, by name) as they were when the run started."""
    trials: int = Field(default=1, ge=1, le=MAX_PLANNED_TRIALS)
    """Trials per task (and persona); the whole plan may hold at most :data:`MAX_PLANNED_TRIALS` trials."""
    seed: int = 0
    max_turns: int = Field(default=30, ge=1)
    max_steps: int = Field(default=60, ge=1)
    budgets: dict[str, Budget] | None = None
    """Per-task trajectory budgets (``--budgets``), applied with each task's own (the tighter wins)."""
    executor: str = "auto"
    """``auto``, ``threads``, ``local:N`` or ``dask://HOST:PORT`` (see :func:`parse_executor`); ``auto`` picks
    threads or ``local:N`` when the run starts (:func:`simulator.execution.executors.choose_executor`)."""
    concurrency: int = Field(default=1, ge=1)
    """Trials in flight at once (with ``local:N``: threads per worker process)."""
    cache: str | None = None
    """Model response cache (SQLite file) shared by the run's model clients."""
    rpm: int | None = Field(default=None, ge=1)
    """Requests per minute allowed per model."""
    log_file: str | None = None
    """JSON-lines event log the run appends to."""
    trial_timeout: float | None = Field(default=None, gt=0)
    """Seconds a trial may run; past it the trial is recorded ``timeout`` and its thread abandoned (see
    :mod:`simulator.execution.runner`); None (or infinity, stored as None): no limit."""
    request_timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Seconds one model request may take (a timed-out call is tried twice at most, see :mod:`simulator.models.llm`)."""
    max_error_rate: float | None = Field(default=0.5, ge=0, le=1)
    """Stop the run once more than this share of its finished trials ended on an error reason, checked from the
    10th finished trial on (:data:`simulator.execution.runner.ERROR_RATE_MIN_TRIALS`; a shorter run is checked when it
    ends,
    :func:`simulator.execution.runner.run_error_rate`); None: never stop."""
    preflight: bool = True
    """Before any trial: build one agent and one user and make one cheap call per distinct model
    (:mod:`simulator.execution.preflight`); a set-up error stops the run before it starts."""
    faults: FaultRates | None = None
    """Environment faults injected into the agent's tool calls at seeded rates (``--faults
    transient=0.05,timeout=0.02,slow=0.05,partial_write=0.02``, see :mod:`simulator.world.faults`); None: none. A string
    ``KIND=RATE,...`` is accepted. Compared on resume: it decides what the trials meet."""
    policy: str | None = None
    """A policy file the agent gets instead of the suite's or the domain's (``tausim run --policy FILE``); None: the
    suite's own policy next to the data (tau-bench's ``wiki.md``, tau2's ``policy.md``), else the domain's."""
    vary: Literal["both", "user", "agent"] = "both"
    """Which side of a trial varies from trial to trial (``tausim run --vary``): ``both`` (the agent and the simulated
    user share the trial seed), ``user`` (the agent's seed is held fixed across a task's trials, so a cached model
    agent replays its answers) or ``agent`` (the user's and the environment faults' seeds are held); see
    :mod:`simulator.execution.seeds`. Compared on resume: it decides each side's seed."""
    policy_sha256: str | None = None
    """sha256 of the policy text the agent gets (an imported suite's own policy, e.g. tau2's ``policy.md``, or
    the domain's): computed by :func:`simulator.execution.build.build_runner` and recorded with the run (a value given
    in
    a spec is replaced)."""

    @field_validator("trial_timeout")
    @classmethod
    def _no_limit(cls, value: float | None) -> float | None:
        """An infinite ``trial_timeout`` is no limit (None): waiting for it would overflow the thread timers."""
        return None if value is not None and math.isinf(value) else value

    @field_validator("executor")
    @classmethod
    def _check_executor(cls, value: str) -> str:
        parse_executor(value)
        return value

    @model_validator(mode="after")
    def _check_personas(self) -> RunSpec:
        names = self.personas or []
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate persona in {names}")
        if self.persona_defs is not None and sorted(self.persona_defs) != sorted(names):
            raise ValueError(f"persona_defs name {sorted(self.persona_defs)}, not the personas {names}")
        return self


def format_validation_error(source: str, error: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Return one line naming ``source``, the invalid field(s) and their values.

    The first invalid field is named with pydantic's message (its ``"Value error, "`` prefix dropped, and the value
    left out when the message already quotes it); every unknown field (a misspelled key) is named, each with the
    closest known field name as a suggestion when there is one.

    Args:
        source: where the spec came from (a file name, ``stored run 'r1'``).
        error: pydantic's error.
        model: the model validated, for the suggestions (default: :class:`RunSpec` when the error is one's).

    Returns:
        E.g. ``"spec.json: field trails: Extra inputs are not permitted (value 3), did you mean trials?"``.
    """
    if model is None and error.title == RunSpec.__name__:
        model = RunSpec
    errors = error.errors()
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    picked = unknown + [e for e in errors if e["type"] != "extra_forbidden"][:1] if unknown else errors[:1]
    parts = [_error_part(e, model) for e in picked]
    more = f" (and {len(errors) - len(picked)} more)" if len(errors) > len(picked) else ""
    return f"{source}: {'; '.join(parts)}{more}"


_ERROR_PREFIXES = ("Value error, ", "Assertion failed, ")


def _error_part(err: Any, model: type[BaseModel] | None) -> str:
    """``field WHERE: MESSAGE (value V)[, did you mean NAME?]`` for one pydantic error.

    The location (its dict keys come from the data), the message and the value are escaped and cut
    (:func:`~simulator.types.sanitize.shown`, :func:`~simulator.types.sanitize.excerpt`): they may hold terminal
    escapes or be 100 KB long.
    """
    loc = [str(p) for p in err["loc"]]
    where = clipped(shown(".".join(loc), one_line=True)) or "(top level)"
    if len(loc) >= 2 and loc[-1] == "[key]":  # a dict key's error: pydantic's location ends KEY, "[key]"
        where = f"{clipped(shown('.'.join(loc[:-2]), one_line=True)) or '(top level)'}: key {excerpt(loc[-2])}"
    msg = str(err["msg"])
    for prefix in _ERROR_PREFIXES:
        msg = msg.removeprefix(prefix)
    value = err.get("input")
    quoted = isinstance(value, str) and len(value) >= 3 and value in msg  # the message names it already
    msg = clipped(shown(msg, one_line=True))
    value_text = excerpt(value, as_json=True) if not isinstance(value, Mapping) else "{...}"
    text = f"field {where}: {msg}" + ("" if quoted else f" (value {value_text})")
    if err["type"] == "extra_forbidden" and loc:
        names = _field_names(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], names, n=1, cutoff=0.6)
        if close:
            text += f", did you mean {clipped(shown('.'.join([*loc[:-1], close[0]]), one_line=True))}?"
    return text


def _field_names(model: type[BaseModel] | None, path: list[str]) -> list[str]:
    """The field names of the (nested) model at ``path`` of ``model``; [] where it cannot be told."""
    for name in path:
        field = model.model_fields.get(name) if model is not None else None
        if field is None:
            return []
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
    return list(model.model_fields) if model is not None else []


def load_spec(path: str | Path) -> RunSpec:
    """Read a run spec file (the JSON of :meth:`RunSpec.model_dump`).

    Args:
        path: the file.

    Returns:
        The :class:`RunSpec`.

    Raises:
        SpecError: unreadable file, malformed JSON, or a field that does not validate (the message names the
            file, the field and its value).
    """
    p = Path(path)
    try:
        data = decode_json(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecError(f"{p}: cannot read: {e.strerror or e}") from e
    except JSONTextError as e:
        raise SpecError(f"{p}: {e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{p}: {not_utf8(p.read_bytes(), e)}") from None
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(format_validation_error(str(p), e)) from e


def _walk(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            yield from _walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
    elif a != b:
        yield path, a, b


def recorded_config(spec: RunSpec) -> dict[str, Any]:
    """Return a spec as it is recorded and printed: its JSON form with secrets redacted.

    Args:
        spec: the run's spec (the components are built from it, with the real values).

    Returns:
        ``spec.model_dump(mode="json")`` through :func:`simulator.types.secrets.redact_secrets` (API keys,
        tokens, passwords, ``Authorization`` headers and credentials in URLs as ``"[redacted]"``).
    """
    return redact_secrets(spec.model_dump(mode="json"))


def spec_differences(stored: RunSpec, given: RunSpec, *, exempt: tuple[str, ...] = RESUME_EXEMPT
                     ) -> list[tuple[str, Any, Any]]:
    """Compare two specs field by field (nested fields as dotted paths, e.g. ``agent.temperature``).

    Args:
        stored: the stored run's spec.
        given: the spec given now.
        exempt: top-level fields not compared.

    Returns:
        ``[(path, stored value, given value), ...]`` in field order; empty when the specs are equal. Secrets
        (:mod:`simulator.types.secrets`) are compared and shown redacted: a stored run never holds them, and a
        changed key does not make another run.
    """
    old = redact_secrets(stored.model_dump(mode="json", exclude=set(exempt)))
    new = redact_secrets(given.model_dump(mode="json", exclude=set(exempt)))
    order = {name: i for i, name in enumerate(RunSpec.model_fields)}
    diffs = list(_walk(old, new, ""))
    return sorted(diffs, key=lambda d: order.get(d[0].split(".")[0], len(order)))

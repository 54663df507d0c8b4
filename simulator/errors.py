"""Every exception tausim raises, in one tree rooted at :class:`TausimError`.

Catch :class:`TausimError` to catch anything tausim raised on purpose; anything else escaping tausim is a bug.
Each class keeps the builtin base it had before the tree existed (a :class:`TaskFileError` is still a
``ValueError``, a :class:`StoreError` still a ``RuntimeError``), so ``except ValueError`` around tausim calls
behaves as it did. The old homes re-export each class (``from simulator.types.tasks import TaskFileError`` works).

The tree::

    TausimError(Exception)
    ├── InputError                     bad input from the user; the message names the file, field and value
    │   ├── TaskFileError(ValueError)      a task file (simulator.types.tasks)
    │   ├── JSONTextError(ValueError)      a text that is not JSON Python can decode; where and why, no file name
    │   │                                  (simulator.types.jsonfile; loaders put the file in front)
    │   ├── PersonaError(ValueError)       a persona file or name (personas.loader)
    │   ├── BudgetFileError(ValueError)    a budgets file (simulator.analysis.budgets)
    │   ├── RunDocumentError(ValueError)   a run document: ``tausim run --out`` file or stored run (report)
    │   ├── DomainError(ValueError)        unknown domain or split, unreadable domain data (simulator.world.domain)
    │   ├── RegistryError(ValueError)      an agent or user scheme nobody registers, or whose entry point cannot be
    │   │                                  loaded (simulator.world.plugins)
    │   ├── GateError(ValueError)          two runs the gate cannot compare (simulator.analysis.gate)
    │   │   └── IncomparableRunsError          their comparability fingerprints differ; names each differing part
    │   │                                      (simulator.analysis.comparability)
    │   ├── SpecError(ValueError)          a run spec (file, stored spec, argument) does not validate (types.spec)
    │   ├── ExecutorError(ValueError)      --executor unusable: unknown scheme, Dask missing, scheduler unreachable,
    │   │                                  workers cannot build the run (simulator.execution.executors)
    │   ├── ScaffoldError(ValueError)      ``tausim domain new``: a bad name or an existing folder (authoring)
    │   ├── PeerResultsError(ValueError)   a peer's results file: tau-bench or tau2 (simulator.interop.peer_results)
    │   ├── SnapshotError(ValueError)      a snapshot cannot be forked: unknown user move or persona, or an agent or
    │   │                                  user that does not replay to it deterministically (simulator.hunt.snapshot)
    │   ├── OptionError(ValueError)        an argument of :func:`simulator.run` (the option of ``tausim run`` of the
    │   │                                  same name) cannot be used: a store URL, a file that cannot be written;
    │   │                                  ``.option`` names it (simulator.execution.session)
    │   ├── SetupError                     the run cannot work as set up: missing credentials, unknown model,
    │   │                                  unreachable server, a factory that raises (simulator.execution.preflight);
    │   │                                  ``.kind`` names the class
    │   └── StoreError(RuntimeError)       the results store cannot do it: unknown run, run id taken
    │       ├── ConfigMismatchError        a run id resumed with other settings; ``.field`` names the field
    │       └── LeaseHeldError             another live process is running the run's missing trials now
    ├── ToolError                      a domain tool refuses a call: recoverable BY THE AGENT (simulator.world.tools)
    │   ├── Crash                          τ³'s tool method failing on a value of the wrong JSON type, answered as
    │   │                                  τ³ answers it: a flagged failed call (domains.banking_knowledge.spec)
    │   └── TypeMismatch                   τ³'s tool method raising TypeError on such a value: answered as τ³'s
    │                                      unflagged ``Invalid arguments`` text (domains.banking_knowledge.spec)
    ├── SessionEnded(RuntimeError)     a tool call on a served trial that has ended (simulator.interop.mcp_server)
    ├── EpisodeTimeout(TimeoutError)   a Gymnasium episode's other side did not answer in time
    │                                  (simulator.interop.gym_env)
    ├── InfrastructureError            a service tausim depends on failed; the trial is ``infra_error`` or the
    │   │                              run stops, never graded as the agent's failure
    │   ├── WriteError                     a file or database cannot be written (disk full, read-only): the run
    │   │                                  stops, what was recorded stays; ``.path``, ``.cause``
    │   └── LLMError                       a model call failed (simulator.models.llm); ``.model``, ``.attempts``
    │       ├── LLMInfraError                  transient (rate limit, timeout, 5xx) after every retry
    │       ├── LLMContextOverflow             the request exceeds the context window (not retried)
    │       └── LLMRequestError                cannot succeed by retrying: auth, bad request, unknown model
    │           ├── LLMResponseError               the model answered, but its answer cannot be read (a tool
    │           │                                  call that is not one): the agent's or user's own failure
    │           └── LLMSetupError                  no call of this model can work: missing or refused
    │                                              credentials, unknown model (trial ``setup_error``)
    ├── DefectError                    a defect in a domain's tools or a task, not in the agent or the input
    │   ├── GoldToolBug(RuntimeError)      a gold action made a tool raise something other than ToolError
    │   ├── FixtureError(RuntimeError)     a task's ``initial_state`` cannot be applied (simulator.world.fixtures)
    │   ├── SetupActionError(ValueError)   a task's setup action or environment function failed (simulator.world.dual)
    │   └── WallClockRead(RuntimeError)    a tool read the wall clock under ``check_domain`` (authoring)
    └── (control flow)                 private signals that never leave their module:
        ├── domains.airline._dialogues.core._Transferred   ends the reference agent's dialogue on a transfer
        ├── simulator.agents.a2a_agent._Refused             no usable A2A agent card, inside one retried attempt
        ├── simulator.interop.gym_env._Closed               ends a Gymnasium episode's worker when the env closes
        └── simulator.dialogue.conversation._Ended         ends the conversation loop with its termination reason

The channels differ in who can act on them:

- :class:`InputError`: the user fixes a file or a flag; the CLI prints the message and exits 2.
- :class:`ToolError`: the one error meant for the agent. A tool raises it for a request the domain refuses
  (unknown order, wrong status); the orchestrator shows ``Error: <message>`` to the agent as the tool's output,
  and the conversation goes on. Any other exception from a tool is a bug in the tool (status ``tool_bug``).
- :class:`InfrastructureError`: nobody in the trial is at fault; the trial ends ``infra_error`` (it counts as a
  failure in pass^k, with the planned denominator, and is reported on its own) or the command stops.
- :class:`DefectError`: a maintainer fixes a domain or a task (``tausim domains --check``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = [
    "BudgetFileError",
    "ConfigMismatchError",
    "DefectError",
    "DomainError",
    "ExecutorError",
    "FixtureError",
    "GateError",
    "GoldToolBug",
    "InfrastructureError",
    "InputError",
    "LeaseHeldError",
    "LLMContextOverflow",
    "LLMError",
    "LLMInfraError",
    "LLMRequestError",
    "LLMResponseError",
    "PeerResultsError",
    "LLMSetupError",
    "OptionError",
    "PersonaError",
    "RegistryError",
    "SetupActionError",
    "SetupError",
    "SnapshotError",
    "SpecError",
    "RunDocumentError",
    "ScaffoldError",
    "StoreError",
    "TaskFileError",
    "JSONTextError",
    "TausimError",
    "ToolError",
    "WallClockRead",
    "WriteError",
]


class TausimError(Exception):
    """Root of every exception tausim raises on purpose (see the module docstring for the tree)."""


# ----------------------------------------------------------------------------------------------- input errors


class InputError(TausimError):
    """Bad input from the user (a file, a flag, a document); the message names the file, field and value."""


class TaskFileError(InputError, ValueError):
    """A task file is malformed; the message names the file, the task and the field."""


class JSONTextError(InputError, ValueError):
    """A text is not JSON that Python can decode; the message (no file name) says where and why."""


class PersonaError(InputError, ValueError):
    """A persona file is missing or malformed, or a persona name is unknown.

    The message names the file, the field and the value.
    """


class BudgetFileError(InputError, ValueError):
    """A budgets file cannot be used; the message names the file (and the task id)."""


class RunDocumentError(InputError, ValueError):
    """A run document cannot be read: missing file, malformed JSON, wrong format or malformed trials."""


class DomainError(InputError, ValueError):
    """Unknown domain, unknown split, or unreadable domain data."""


class RegistryError(InputError, ValueError):
    """An agent or user spec names a scheme no installed package registers, or one whose entry point is broken.

    The message names the scheme, the entry-point group and, for a broken one, its package and the error.
    """


class ScaffoldError(InputError, ValueError):
    """``tausim domain new``: a name that is no Python identifier, or a target folder that exists."""


class GateError(InputError, ValueError):
    """The two runs cannot be compared (different task sets, missing or duplicated trials)."""


class PeerResultsError(InputError, ValueError):
    """A peer's results file (tau-bench or tau2) cannot be imported; the message names the file, record and field."""


class StoreError(InputError, RuntimeError):
    """The store cannot do what was asked (unknown run, run id taken, ...)."""


class ConfigMismatchError(StoreError):
    """A run id was reused with a spec that differs from the stored run's.

    Args:
        run_id: the run id.
        field: the first differing field, dotted for nested ones (``trials``, ``agent.temperature``, ``data_hash``).
        stored: its stored value.
        given: its value now.

    Attributes:
        field: the first differing field.
    """

    def __init__(self, run_id: str, field: str, stored: Any, given: Any):
        self.field = field
        super().__init__(
            f"run {run_id!r} cannot be resumed with a different spec: {field}: stored {stored!r}, now {given!r}. "
            f"Resume it with the same settings, or start a new run id."
        )


# ------------------------------------------------------------------------------------------------ tool errors


class ToolError(TausimError):
    """An error the agent can recover from; its message is shown to the agent as ``Error: <message>``.

    This is the only exception a domain tool raises on purpose: the conversation goes on and the agent may
    correct its request. Any other exception escaping a tool is recorded as a tool bug.
    """


# -------------------------------------------------------------------------------------- infrastructure errors


class InfrastructureError(TausimError):
    """A service tausim depends on (a model API, a worker) failed; nobody in the trial is at fault."""


class WriteError(InfrastructureError):
    """A place a run records into cannot be written: a full disk, a read-only file system, a revoked permission.

    The run stops (its trials recorded so far are kept, and it can be resumed once the place is writable again).

    Args:
        path: the file (or database) that could not be written.
        cause: why, in the operating system's or database's words (e.g. ``No space left on device``).
    """

    def __init__(self, path: str, cause: str) -> None:
        super().__init__(f"cannot write {path}: {cause}")
        self.path = path
        self.cause = cause

    def __reduce__(self) -> tuple[type[WriteError], tuple[str, str]]:
        """Pickle by ``path`` and ``cause`` (raised on a Dask worker, it reaches the driver whole)."""
        return type(self), (self.path, self.cause)


class LLMError(InfrastructureError):
    """Base class of model-call failures; the message names the model.

    Args:
        message: what failed.
        model: the model string of the failed call.
        attempts: how many attempts were made.
        cause: class name of the underlying litellm/openai exception, when there was one.

    Attributes:
        model: the model string of the failed call.
        attempts: how many attempts were made.
        cause: class name of the underlying litellm/openai exception, when there was one.
    """

    def __init__(self, message: str, *, model: str, attempts: int = 1, cause: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.attempts = attempts
        self.cause = cause


class LLMInfraError(LLMError):
    """The model API failed transiently (rate limit, timeout, connection, 5xx) and retries are exhausted."""


class LLMContextOverflow(LLMError):
    """The request exceeds the model's context window (not retried)."""


class LLMRequestError(LLMError):
    """The request cannot succeed by retrying: authentication, bad request, unknown model, bad response."""


class LLMResponseError(LLMRequestError):
    """The server answered, but the model's answer cannot be read (litellm cannot turn it into a response).

    For example a tool call whose ``arguments`` is not text, a message whose content is an object, a NaN token count.
    It is the model's own output, not a failure of the service: it is not retried, and a trial whose agent (user)
    meets it ends ``agent_error`` (``user_error``), never ``infra_error``. The message gives the reason in one line.
    """


class LLMSetupError(LLMRequestError):
    """No call of this model can succeed as set up: missing or refused credentials, or an unknown model.

    A trial whose agent or user meets it ends ``setup_error`` and the run stops (exit 2): no other trial can
    succeed either. ``tausim run``'s pre-flight raises it before any trial runs.
    """


# ---------------------------------------------------------------------------------------------------- defects


class DefectError(TausimError):
    """A defect in a domain's tools or a task (not in the agent, not in the user's input): fix the code or task."""


class GoldToolBug(DefectError, RuntimeError):
    """A gold action made a tool raise an unexpected exception (a bug in the tool or the task)."""


class LeaseHeldError(StoreError):
    """Another live process holds the run's lease: it is running the run's missing trials now.

    Attributes:
        run_id: the run.
        owner: the holder's id (``host:pid:random``).
        since: when the holder took the lease (UTC).
        expires_at: when the lease lapses unless the holder renews it (UTC).
    """

    def __init__(self, run_id: str, owner: str, since: datetime, expires_at: datetime):
        self.run_id, self.owner, self.since, self.expires_at = run_id, owner, since, expires_at
        super().__init__(
            f"run {run_id!r} is being run by another process ({owner}) since {since:%Y-%m-%d %H:%M:%S} UTC; "
            f"its lease is renewed while it runs and lapses at {expires_at:%H:%M:%S} UTC if that process is gone. "
            f"Wait for it to finish, then resume the run."
        )


class FixtureError(DefectError, RuntimeError):
    """A task's ``initial_state`` could not be applied (a constraint failed, a setup action was refused)."""


class SpecError(InputError, ValueError):
    """A run spec (a file, a stored spec or an argument) does not validate; the message names the field."""


class SetupError(InputError):
    """The run cannot work as set up; found before (pre-flight) or during the run. The CLI exits 2.

    Args:
        message: one line naming the cause (the missing variable, the model, the server, the factory).
        kind: ``credentials``, ``model``, ``server`` or ``factory``; ``trial`` when a trial ended ``setup_error``
            where no run stops it first (``tausim hunt``; the cause is in the message).

    Attributes:
        kind: the cause's class, as above.
    """

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class OptionError(InputError, ValueError):
    """An argument of :func:`simulator.run` cannot be used (a store URL, a file that cannot be written).

    For example an in-memory or malformed store URL, or ``out``'s partial file, ``log_file`` or ``otel`` that
    cannot be written.

    ``str(error)`` is ``"OPTION SUBJECT: REASON"`` (``"store sqlite://: an in-memory database keeps nothing ..."``);
    the command line prints it with the option's flag (``--store``).

    Args:
        option: the argument's name (``store``, ``run_id``, ``out``, ``log_file``, ``otel``).
        subject: the value at fault (a URL, a path), or None.
        reason: what is wrong, one line.

    Attributes:
        option: the argument's name.
        subject: the value at fault, or None.
        reason: what is wrong.
    """

    def __init__(self, option: str, subject: str | None, reason: str) -> None:
        self.option, self.subject, self.reason = option, subject, reason
        super().__init__(f"{option}{'' if subject is None else ' ' + subject}: {reason}")


class ExecutorError(InputError, ValueError):
    """The executor cannot be used: unknown scheme, Dask missing, unreachable scheduler, workers cannot build."""
class WallClockRead(DefectError, RuntimeError):
    """Raised inside a tool that reads the wall clock while :func:`simulator.authoring.check_domain` watches it.

    Tools take "now" only from the domain's clock (:class:`simulator.world.sinks.Clock`).
    """


class SnapshotError(InputError, ValueError):
    """A snapshot cannot be forked: an unknown user move or persona, or actors that do not replay to it."""


class SetupActionError(DefectError, ValueError):
    """A task's setup action (or environment function) failed; the message names the action and the error."""

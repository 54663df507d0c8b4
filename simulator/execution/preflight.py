"""The pre-flight of a run: fail in seconds on a set-up that cannot work, before any trial runs.

:func:`preflight` builds the agent and the simulated user of the run's first planned trial (a factory that
raises is a set-up error; an ``async def`` factory is awaited, at most :data:`FACTORY_TIMEOUT_S`) and makes one
cheap call (``max_tokens=1``) per distinct model of the run (agent, user and judge, by model string and server):
:meth:`simulator.models.llm.LLMClient.preflight` checks offline first that the provider is known and its API key
variable is set, so a missing key is reported without a request.
Every failure is a :class:`~simulator.errors.SetupError` with a one-line message; ``tausim run`` prints it and
exits 2 (``--no-preflight`` skips the check, e.g. for a fully cached rerun without network).

Without a pre-flight a set-up error still stops a run: the first trial that meets one ends ``setup_error`` and
the runner stops (see :mod:`simulator.execution.runner`).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from simulator.dialogue.actors import is_actor_failure
from simulator.errors import LLMError, LLMInfraError, LLMSetupError, SetupError
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec

__all__ = ["FACTORY_TIMEOUT_S", "SetupError", "check_credentials", "model_clients", "preflight"]

FACTORY_TIMEOUT_S = 30.0
"""Seconds the pre-flight waits for an ``async def`` factory to build its agent or user."""


def model_clients(runner: Runner) -> list[tuple[str, Any]]:
    """Return ``[(role, client), ...]``: the distinct model clients of a run, agent first.

    A client is found as the ``client`` attribute of the agent factory, the user factory and the judge (the
    built-in LLM components have one); two clients of the same model string and server count once.
    """
    out: list[tuple[str, Any]] = []
    seen: set[tuple[str, str | None]] = set()
    for role, holder in (("agent", runner.agent_factory), ("user", runner.user_factory), ("judge", runner.judge)):
        client = getattr(holder, "client", None)
        if client is None or not hasattr(client, "preflight"):
            continue
        key = (str(client.model), client.api_base)
        if key not in seen:
            seen.add(key)
            out.append((role, client))
    return out


def check_credentials(spec: RunSpec) -> list[str]:
    """Check, before the run is built, that the run's models are known and their key variables set (no request).

    The cheapest part of :func:`preflight`, made first so that a missing key is reported before the data, the tasks
    and their gold replays are loaded. Skipped for a run with a response cache (a cached rerun may need no key).

    Args:
        spec: the run spec (``litellm:MODEL`` agents, ``llm:MODEL`` users, the judge's model).

    Returns:
        The models checked, e.g. ``["agent model openai/gpt-4o-mini"]``.

    Raises:
        SetupError: ``kind="credentials"`` for a missing key variable, ``"model"`` for an unknown provider.
    """
    from simulator.models.llm import LLMClient

    if spec.cache is not None:
        return []
    models = []
    for role, comp, prefix in (("agent", spec.agent, "litellm:"), ("user", spec.user, "llm:"),
                               ("judge", spec.judge, "")):
        if comp is not None and comp.name.startswith(prefix) and comp.name[len(prefix):]:
            models.append((role, comp.name[len(prefix):], comp.api_base))
    checked = []
    for role, model, api_base in dict.fromkeys(models):
        try:
            LLMClient(model, api_base=api_base).check_setup()
        except LLMError as e:
            message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SetupError(f"{role} {message}", kind=_kind(e)) from e
        checked.append(f"{role} model {model}")
    return checked


def _what(value: object) -> str:
    """``None``, or ``a str`` / ``an int``: what a factory returned instead of an agent or user."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _kind(error: LLMError) -> str:
    if isinstance(error, LLMInfraError):
        return "server"
    if isinstance(error, LLMSetupError):
        return "credentials" if error.cause in ("missing_keys", "AuthenticationError", "PermissionDeniedError") \
            else "model"
    return "model"


def preflight(runner: Runner) -> list[str]:
    """Check that the run can work as set up (see the module docstring).

    Args:
        runner: the built run (:func:`simulator.execution.build.build_runner`).

    Returns:
        One line per check made, e.g. ``["agent: built", "user: built", "agent model openai/gpt-4o-mini: ok"]``.

    Raises:
        SetupError: a factory raised (``kind="factory"``), a key variable is missing or refused
            (``credentials``), the model or provider is unknown (``model``), or the server did not answer
            (``server``); the message is one line naming the cause.
    """
    checks: list[str] = []
    plan = runner.planned()
    if plan:
        task_id, persona, trial = plan[0]
        task = next(t for t in runner.tasks if t.id == task_id)
        ctx = runner.trial_context(task, trial, persona)
        ctx.extra["preflight"] = True  # built to be checked, never run
        for role, factory in (("agent", runner.agent_factory), ("user", runner.user_factory)):
            spec = getattr(runner.config, role).name
            try:
                built = factory(ctx)
                if inspect.iscoroutine(built):  # an async factory: awaited, on the runner's loop for this thread
                    built = runner.loops.run(asyncio.wait_for(built, FACTORY_TIMEOUT_S))
            except BaseException as e:  # noqa: BLE001 - any failure of user code is the set-up's, but a Ctrl-C
                if not is_actor_failure(e):
                    raise
                detail = str(e).strip().splitlines()
                raise SetupError(f"--{role} {spec}: building the {role} of task {task_id} failed: "
                                 f"{type(e).__name__}{': ' + detail[0] if detail else ''}", kind="factory") from e
            method = "step" if role == "agent" else "reply"
            if not callable(getattr(built, method, None)):  # e.g. a factory that forgot its `return`
                article = "an" if role == "agent" else "a"
                raise SetupError(f"--{role} {spec}: the factory returned {_what(built)} for task {task_id}, not "
                                 f"{article} {role} (an object with a {method}(messages) method)", kind="factory")
            checks.append(f"{role}: built")
    for role, client in model_clients(runner):
        try:
            client.preflight()
        except LLMError as e:
            message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            server = f" (server {client.api_base})" if client.api_base else ""
            raise SetupError(f"{role} {message}{server}", kind=_kind(e)) from e
        checks.append(f"{role} model {client.model}: ok")
    return checks

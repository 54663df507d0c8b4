"""The one place that calls litellm: model calls with retries, usage, cost and typed errors.

:class:`LLMClient` wraps ``litellm.completion`` for one model string (``"openai/gpt-4o-mini"``, or any
OpenAI-compatible local server through ``api_base``). Transient failures (rate limits, timeouts, connection
errors, 5xx) are retried with exponential backoff and full jitter, a bounded number of times; everything else
fails at once. Failures surface as our own exceptions, so callers never depend on litellm's:

* :class:`LLMInfraError`: the API failed transiently and retries are exhausted (trial ends ``infra_error``);
* :class:`LLMContextOverflow`: the conversation no longer fits the model's context window;
* :class:`LLMRequestError`: a request that cannot succeed by retrying (bad request, unparsable response); its
  subclass :class:`LLMSetupError` when no call of the model can work as set up (missing or refused credentials,
  unknown model or provider): the trial ends ``setup_error`` and the run stops;
* :class:`LLMResponseError` (an :class:`LLMRequestError`): the server answered, but litellm cannot read the answer:
  JSON that is not an object or has no ``choices`` list, a message whose fields do not fit (a tool call whose
  ``arguments`` is a number, content that is an object, a NaN token count), or a body that is not JSON or not
  valid UTF-8 (the cases asked again, as a reply cut short may come whole). litellm reports each as a 500
  (``InternalServerError``) although the server answered 200 (:func:`unreadable_answer` tells them apart); they are
  what the model said, so a trial meeting one ends ``agent_error`` / ``user_error`` with the reason, never
  ``infra_error``.

Timeouts: each request waits at most ``timeout`` seconds (``tausim run --request-timeout``, default 60); a
request that times out is retried once at most (:data:`MAX_TIMEOUT_ATTEMPTS`), so a server that accepts and never
answers costs two timeouts, not one per attempt. :meth:`LLMClient.preflight` checks a model before a run: the
provider is known, its API key variable is set (litellm's ``validate_environment``, no request made), then one
cheap call (``max_tokens=1``) answers.

litellm is imported lazily (its import takes seconds) and with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that it
never tries to download its price list. Offline tests pass ``mock_response=...`` (text, a ``ModelResponse``
with tool calls, or an exception instance) through ``complete(**params)``, which drives litellm's real code
path without a network, or register an in-process provider through ``litellm.custom_provider_map``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from simulator.errors import (
    LLMContextOverflow,
    LLMError,
    LLMInfraError,
    LLMRequestError,
    LLMResponseError,
    LLMSetupError,
)
from simulator.models.answers import answer_problem, unreadable_answer
from simulator.models.ratelimit import RateLimiterRegistry
from simulator.types.messages import Message, ToolCall, Usage

if TYPE_CHECKING:
    from tenacity import RetryCallState
    from tenacity.stop import stop_base

__all__ = [
    "LLMClient",
    "LLMContextOverflow",
    "LLMError",
    "LLMInfraError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMResult",
    "LLMSetupError",
    "model_seed",
    "unreadable_answer",
]

DEFAULT_MAX_ATTEMPTS = 4
"""Attempts per call (first try included) before a transient failure becomes :class:`LLMInfraError`."""

DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds one request may take before it is abandoned (``tausim run --request-timeout``)."""

MAX_TIMEOUT_ATTEMPTS = 2
"""Attempts of a call whose requests time out: a server that never answers is not asked again and again."""

PREFLIGHT_MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "Reply with the word ok."}]
"""The request :meth:`LLMClient.preflight` sends (with ``max_tokens=1``)."""


class LLMResult(BaseModel):
    """The outcome of one successful :meth:`LLMClient.complete` call."""

    message: Message
    """The assistant message: text and parsed tool calls, in order."""
    usage: Usage
    """Tokens and cost of the call (``cost_usd`` None for an unpriced model)."""
    latency_s: float
    """Wall-clock seconds of the call, retries and backoff included."""
    finish_reason: str | None = None
    """The provider's raw finish reason (``"stop"``, ``"tool_calls"``, ``"length"``, ...)."""
    model: str
    """The model string the call was made with."""
    attempts: int = 1
    """Attempts made (1 when the first try succeeded)."""
    cached: bool = False
    """True when the result came from the response cache (no API call made)."""


def model_seed(seed: int) -> int:
    """Reduce a trial seed to a value every model API accepts as its ``seed`` parameter.

    Trial seeds come from a sha256 digest and may exceed the 32/64-bit integers APIs accept.

    Args:
        seed: the trial seed.

    Returns:
        ``seed mod 2**31`` (unchanged for seeds already in ``[0, 2**31)``).
    """
    return seed % (2**31)


SERIALIZER_WARNINGS = "Pydantic serializer warnings"
"""How pydantic's warning begins when litellm's response model holds a value of another type than declared."""

_QUIET_SERIALIZER = ("ignore", re.compile(SERIALIZER_WARNINGS, re.I), UserWarning, None, 0)
"""The entry ``warnings.filterwarnings("ignore", message=SERIALIZER_WARNINGS, category=UserWarning)`` adds."""


def _litellm() -> Any:
    """Import litellm lazily, never letting it fetch its price list from the network."""
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") != "True":
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Provider List" banners in the run's output
    # An answer whose fields do not fit (a tool call's arguments a number, content an object) makes litellm's
    # response models print pydantic's serializer warnings, a block naming a site-packages file and the model's value,
    # once per process (per worker under local:N): the trial already records why (LLMResponseError). Idempotent (an
    # equal filter is replaced, not added again), so it holds wherever warnings were reset since (a test's context).
    if _QUIET_SERIALIZER not in warnings.filters:  # (a list scan: 0.04 us; adding the filter again: 1 us)
        warnings.filterwarnings("ignore", message=SERIALIZER_WARNINGS, category=UserWarning)
    return litellm


PROVIDER_KEYS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "openai": (("OPENAI_API_KEY",), ("OPENAI_API_KEY",)),
    "anthropic": (("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), ("ANTHROPIC_API_KEY",)),
    "gemini": (("GOOGLE_API_KEY", "GEMINI_API_KEY"), ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    "mistral": (("MISTRAL_API_KEY",), ("MISTRAL_API_KEY",)),
    "groq": (("GROQ_API_KEY",), ("GROQ_API_KEY",)),
    "together_ai": (("TOGETHERAI_API_KEY",), ("TOGETHERAI_API_KEY",)),
    "deepseek": (("DEEPSEEK_API_KEY",), ("DEEPSEEK_API_KEY",)),
    "xai": (("XAI_API_KEY",), ("XAI_API_KEY",)),
    "cohere": (("COHERE_API_KEY",), ("COHERE_API_KEY",)),
    "fireworks_ai": (("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
                     ("FIREWORKS_AI_API_KEY",)),
    "openrouter": (("OPENROUTER_API_KEY",), ("OPENROUTER_API_KEY",)),
    "perplexity": (("PERPLEXITYAI_API_KEY",), ("PERPLEXITYAI_API_KEY",)),
    "deepinfra": (("DEEPINFRA_API_KEY",), ("DEEPINFRA_API_KEY",)),
    "cerebras": (("CEREBRAS_API_KEY",), ("CEREBRAS_API_KEY",)),
}
"""Common providers' key variables, as litellm's ``validate_environment`` checks them: provider ->
``(variables any one of which is enough, variables reported missing when none is set)``. Checked against litellm
itself by ``tests/execution/test_preflight_fast.py``; a provider not listed here is asked to litellm."""

BARE_MODEL_PROVIDERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("gpt-", "openai", ("instruct",)),
    ("o1", "openai", ()),
    ("o3", "openai", ()),
    ("o4", "openai", ()),
    ("claude-", "anthropic", ("-v1", "-v2", "-v3")),
)
"""Model names without a provider prefix that litellm gives to a provider in the table: ``(name prefix, provider,
parts that exclude a name)`` (``gpt-3.5-turbo-instruct`` is a text-completion model, ``claude-...-v1:0`` a Bedrock
name). A name that litellm does not know at all (a typo) is reported by its missing key first, if missing."""


def model_provider(model: str) -> str | None:
    """Return the provider of a model string found in :data:`PROVIDER_KEYS` without importing litellm.

    Args:
        model: a litellm model string, e.g. ``"openai/gpt-4o-mini"``, ``"gpt-4o-mini"``, ``"claude-sonnet-4-5"``.

    Returns:
        ``"openai"``, ``"anthropic"``, ... for an explicit prefix of a listed provider or a bare name matching
        :data:`BARE_MODEL_PROVIDERS`; None for anything else (litellm decides).
    """
    prefix, sep, rest = model.partition("/")
    if sep:
        return prefix if prefix in PROVIDER_KEYS and rest else None
    if ":" in model:
        return None
    for start, provider, excluded in BARE_MODEL_PROVIDERS:
        tail = model[len(start):]
        if model.startswith(start) and (start.endswith("-") or not tail or tail.startswith("-")) and \
                (tail or not start.endswith("-")) and not any(part in model for part in excluded):
            return provider
    return None


def known_missing_keys(model: str, environ: Mapping[str, str]) -> list[str]:
    """Return the key variables litellm would report missing for a model of a listed provider (no import).

    Args:
        model: a litellm model string.
        environ: the environment (``os.environ``).

    Returns:
        The missing variables in litellm's order (e.g. ``["OPENAI_API_KEY"]``); ``[]`` when one of the
        provider's variables is set or the provider is not in :data:`PROVIDER_KEYS` (then only litellm knows).
    """
    provider = model_provider(model)
    if provider is None:
        return []
    accepted, reported = PROVIDER_KEYS[provider]
    return [] if any(name in environ for name in accepted) else list(reported)


SUCCESS_LISTENERS = ("callbacks", "success_callback", "_async_success_callback")
"""litellm's lists of success callbacks: while all are empty, nobody reads litellm's own success logging."""


def _success_logging_off(litellm: Any) -> Callable[[], AbstractContextManager[Any]] | None:
    """Return a context in which litellm skips its success logging, or None when that logging has listeners.

    After every synchronous call litellm hands its success logging (a standard logging payload built for callbacks,
    about 0.5 ms of CPU, plus a wake-up of its logging thread pool) to a thread pool, callbacks or not. The response,
    its usage and its cost (``_hidden_params["response_cost"]``) are complete before that hand-off. Inside litellm's
    ``internal_sub_call`` context the hand-off is skipped; it is used only while no success callback is registered
    (a user's litellm callbacks keep working), and never with a litellm that lacks it.
    """
    if any(getattr(litellm, name, None) for name in SUCCESS_LISTENERS):
        return None
    try:
        from litellm._internal_context import internal_sub_call
    except ImportError:  # another litellm version: its logging stays as it is
        return None
    return cast("Callable[[], AbstractContextManager[Any]]", internal_sub_call)


_MISSING_KEY = re.compile(r"missing credentials|api_key client option must be set|no api key|api key not (?:found|set)",
                          re.IGNORECASE)


def _is_transient(exc: BaseException) -> bool:
    """Return True for failures worth retrying: rate limits, timeouts, connection errors and 5xx.

    A model answer litellm cannot read (:func:`unreadable_answer`) is reported as a 500 but is not transient, but
    for a body that is not JSON (a reply cut short may come whole next time).
    """
    import openai

    litellm = _litellm()
    if isinstance(exc, litellm.ContextWindowExceededError):
        return False
    problem = answer_problem(exc)
    if problem is not None:
        return problem[1]
    if _MISSING_KEY.search(str(exc)):
        return False  # litellm reports a missing API key as a 500 (InternalServerError): an auth error, not transient
    if isinstance(exc, openai.RateLimitError | openai.APIConnectionError | openai.InternalServerError):
        return True  # APIConnectionError covers timeouts (openai.APITimeoutError, litellm.Timeout)
    if isinstance(exc, litellm.ServiceUnavailableError | litellm.BadGatewayError):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(exc, openai.APIError) and isinstance(status, int) and status >= 500


def _is_setup(exc: BaseException) -> bool:
    """Return True for failures no call of the model can escape: credentials, unknown model or provider."""
    import openai

    if _MISSING_KEY.search(str(exc)) or "LLM Provider NOT provided" in str(exc):
        return True
    return isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError | openai.NotFoundError)


def _to_llm_error(exc: BaseException, model: str, attempts: int) -> LLMError:
    """Translate a litellm/openai exception into our typed error, naming the model."""
    litellm = _litellm()
    cause = type(exc).__name__
    detail = str(exc).strip() or cause
    if isinstance(exc, litellm.ContextWindowExceededError):
        return LLMContextOverflow(
            f"model {model}: context window exceeded: {detail}", model=model, attempts=attempts, cause=cause
        )
    reason = unreadable_answer(exc)
    if reason is not None:
        return LLMResponseError(
            f"model {model}: its answer cannot be read ({attempts} attempt(s)): {reason}",
            model=model, attempts=attempts, cause=cause,
        )
    if _is_setup(exc):
        return LLMSetupError(
            f"model {model}: cannot be used as set up (credentials, model name or provider): {cause}: "
            f"{detail.splitlines()[0][:300]}", model=model, attempts=attempts, cause=cause,
        )
    if _is_transient(exc):
        return LLMInfraError(
            f"model {model}: API failed after {attempts} attempt(s): {cause}: {detail}",
            model=model, attempts=attempts, cause=cause,
        )
    return LLMRequestError(
        f"model {model}: request failed (not retried): {cause}: {detail}", model=model, attempts=attempts,
        cause=cause,
    )


def _parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a tool call's argument text; never raises.

    Returns:
        ``(arguments, raw_text)``: arguments is None when the text is not a JSON object.
    """
    if isinstance(raw, Mapping):
        return dict(raw), json.dumps(raw)
    if raw is None:
        return {}, None
    text = str(raw)
    if not text.strip():
        return {}, text  # some servers send "" for a call without arguments
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, text
    return (value, text) if isinstance(value, dict) else (None, text)


def _field(obj: Any, name: str) -> Any:
    """Read ``name`` from a litellm object or a plain dict (any other mapping: its item too)."""
    if isinstance(obj, dict) or _is_mapping(obj.__class__):
        return obj.get(name)
    return getattr(obj, name, None)


@functools.lru_cache(maxsize=64)
def _is_mapping(kind: type) -> bool:
    """Whether instances of ``kind`` are mappings, asked once per type.

    A response's objects are read a field at a time, and ``isinstance(obj, Mapping)`` of a litellm object goes
    through the ABC machinery (~1 us) every time.
    """
    return issubclass(kind, Mapping)


def _parse_tool_calls(raw_calls: Any, salt: str) -> list[ToolCall]:
    """Convert litellm tool calls into :class:`ToolCall` objects, in order.

    A call without an id gets a deterministic one derived from ``salt``, its index, name and arguments.
    """
    calls: list[ToolCall] = []
    for i, raw in enumerate(raw_calls or []):
        function = _field(raw, "function")
        name = _field(function, "name") if function is not None else None
        arguments, raw_text = _parse_arguments(_field(function, "arguments") if function is not None else None)
        call_id = _field(raw, "id")
        if not call_id:
            digest = hashlib.sha256(f"{salt}|{i}|{name}|{raw_text}".encode()).hexdigest()[:16]
            call_id = f"call_{digest}"
        calls.append(ToolCall(id=str(call_id), name=str(name or ""), arguments=arguments, raw_arguments=raw_text))
    return calls


def _usage(litellm: Any, response: Any, model: str, attempts: int = 1, price: bool = True) -> Usage:
    """Tokens from the response; cost from litellm's price map, None when the model has no price.

    ``price=False`` skips the price look-up (cost None): for a model already known to be unpriced.
    """
    raw = _field(response, "usage")
    prompt = int(_field(raw, "prompt_tokens") or 0) if raw is not None else 0
    completion = int(_field(raw, "completion_tokens") or 0) if raw is not None else 0
    cost: float | None = None
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "response_cost" in hidden:
        # litellm already priced this response while completing it (None: the model has no price)
        value = hidden["response_cost"]
        cost = None if value is None else float(value)
    elif price:
        try:
            value = litellm.completion_cost(completion_response=response, model=model)
            cost = None if value is None else float(value)
        except Exception:  # litellm raises assorted errors for models it cannot price
            cost = None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost, calls=1, attempts=attempts)


class _StopAfterTimeouts:
    """Tenacity stop condition of one call: stop once :data:`MAX_TIMEOUT_ATTEMPTS` of its attempts timed out.

    Holds the call's count of timeouts: a new instance per call (defined once here, not per call: building a class
    costs more CPU than the rest of the retry set-up). A plain callable, as tenacity's stop conditions may be: tenacity
    is imported only once a first try has failed (its import costs ~10 ms of a run's start-up).
    """

    def __init__(self) -> None:
        self.timeouts = 0

    def __call__(self, state: RetryCallState) -> bool:
        import openai

        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, openai.APITimeoutError):
            self.timeouts += 1
        return self.timeouts >= MAX_TIMEOUT_ATTEMPTS


def _log_result(log: Any, r: LLMResult) -> None:
    """Emit the ``model_call`` event of a successful (or cached) call."""
    log.info("model_call", model=r.model, prompt_tokens=r.usage.prompt_tokens,
             completion_tokens=r.usage.completion_tokens, cost_usd=r.usage.cost_usd, latency_s=round(r.latency_s, 6),
             attempts=r.attempts, cached=r.cached, finish_reason=r.finish_reason,
             tool_calls=len(r.message.tool_calls))


class LLMClient:
    """Calls one model through litellm, with retries, usage/cost accounting and typed errors.

    The client holds only configuration (and an optional cache object given by the caller); it is safe to
    share between threads.

    Example:
        >>> client = LLMClient("openai/gpt-4o-mini", temperature=0.0)
        >>> client.complete([{"role": "user", "content": "hi"}], mock_response="hello").message.content
        'hello'
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        wait_initial: float = 1.0,
        wait_max: float = 60.0,
        timeout: float | None = 120.0,
        cache: MutableMapping[str, LLMResult] | None = None,
        limiters: RateLimiterRegistry | None = None,
        **params: Any,
    ) -> None:
        """Configure the client.

        Args:
            model: litellm model string, e.g. ``"openai/gpt-4o-mini"`` or ``"openai/llama3"`` with ``api_base``.
            api_base: base URL of an OpenAI-compatible server (llama.cpp, vLLM, Ollama), if any.
            api_key: API key; by default litellm reads the provider's environment variable.
            max_attempts: attempts per call, first try included (>= 1).
            wait_initial: backoff multiplier in seconds: the wait after failed attempt n (1-based) is
                uniform in ``[0, min(wait_max, wait_initial * 2**(n-1))]`` (full jitter); 0 disables waiting.
            wait_max: upper bound of one wait, in seconds.
            timeout: request timeout in seconds passed to litellm (None: litellm's default); a call whose
                requests time out is tried :data:`MAX_TIMEOUT_ATTEMPTS` times at most.
            cache: optional response cache (any mutable mapping owned by the caller, e.g. per run). Keys
                cover the model, messages, tools, parameters and the trial seed; only successes are stored.
            limiters: the run's rate-limiter registry; every API request (each retry included) first waits
                for the limiter of this client's model, shared with the run's other clients of that model.
            **params: default model parameters (``temperature``, ``seed``, ``max_tokens``, ...); a call's
                parameters override them, and parameters set to None are not sent.

        Raises:
            ValueError: ``max_attempts`` < 1 or a negative wait.
        """
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if wait_initial < 0 or wait_max < 0:
            raise ValueError(f"waits must be >= 0, got wait_initial={wait_initial}, wait_max={wait_max}")
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.max_attempts = max_attempts
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.timeout = timeout
        self.cache = cache
        self.rate_limiter = limiters.get(model) if limiters is not None else None
        self._unpriced = False  # set once litellm's price map is known not to have the model (saves ~1.5 ms/call)
        self._params: dict[str, Any] = dict(params)

    @property
    def params(self) -> dict[str, Any]:
        """A copy of the default model parameters."""
        return dict(self._params)

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, api_base={self.api_base!r}, params={self._params!r})"

    def cache_key(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any],
        trial_seed: int | None,
    ) -> str:
        """Return the response-cache key of a call.

        Args:
            messages: the request messages.
            tools: the tool schemas, or None.
            params: the merged model parameters.
            trial_seed: the trial seed, so that different trials never replay each other; a side held fixed by
                ``RunSpec.vary`` passes its held seed, the same in every trial of a task, so that its trials do
                replay each other's answers to the same request (:mod:`simulator.execution.seeds`).

        Returns:
            A sha256 hex digest of the canonical JSON of all inputs.
        """
        doc = {
            "model": self.model, "api_base": self.api_base, "messages": list(messages),
            "tools": list(tools) if tools else None, "params": dict(params), "trial_seed": trial_seed,
        }
        text = json.dumps(doc, sort_keys=True, default=repr, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        trial_seed: int | None = None,
        log: Any = None,
        **params: Any,
    ) -> LLMResult:
        """Ask the model for the next assistant message.

        Args:
            messages: OpenAI-style chat messages (system/user/assistant/tool dicts).
            tools: OpenAI function schemas the model may call, or None.
            trial_seed: the trial seed; used only in the response-cache key.
            log: a structlog-style logger (e.g. bound to run, task and trial); when given, every call emits a
                ``model_call`` event (model, tokens, cost, latency, attempts, cached, or the error).
            **params: model parameters for this call, overriding the client's defaults (``temperature``,
                ``seed``, ``max_tokens``, ``tool_choice``, ... and ``mock_response`` for offline tests).

        Returns:
            The assistant message (text and parsed tool calls; tool-call arguments that are not a JSON
            object become ``arguments=None`` with ``raw_arguments`` kept), usage, latency and finish reason.

        Raises:
            LLMInfraError: transient failures persisted through every attempt.
            LLMContextOverflow: the request exceeds the model's context window.
            LLMSetupError: missing or refused credentials, unknown model or provider.
            LLMRequestError: bad request or a response without choices.
        """
        litellm = _litellm()
        merged = {k: v for k, v in {**self._params, **params}.items() if v is not None}
        key = None
        if self.cache is not None:
            key = self.cache_key(messages, tools, merged, trial_seed)
            hit = self.cache.get(key)
            if hit is not None:
                hit = hit.model_copy(update={"cached": True})
                if log is not None:
                    _log_result(log, hit)
                return hit

        request: dict[str, Any] = {"model": self.model, "messages": messages, **merged}
        if tools:
            request["tools"] = tools
        if self.api_base is not None:
            request["api_base"] = self.api_base
        if self._api_key is not None:
            request["api_key"] = self._api_key
        if self.timeout is not None:
            request.setdefault("timeout", self.timeout)
        request["num_retries"] = 0  # tenacity below is the only retry layer (litellm's also sets max_retries)

        try:
            response, attempts, latency = self._call_with_retries(litellm, request)
            result = self._to_result(litellm, response, len(messages), attempts, latency)
        except LLMError as e:
            if log is not None:
                log.error("model_call", model=self.model, attempts=e.attempts, error=str(e),
                          error_kind=type(e).__name__, cause=e.cause)
            raise
        if log is not None:
            _log_result(log, result)
        if self.cache is not None and key is not None:
            self.cache[key] = result
        return result

    def _call_with_retries(self, litellm: Any, request: dict[str, Any]) -> tuple[Any, int, float]:
        """Run ``litellm.completion`` under tenacity; return (response, attempts, latency in seconds).

        The first try runs before tenacity is set up: a call that succeeds at once (nearly all) skips its
        machinery (about 30 us of CPU per call). A first try that fails with an API error is handed to tenacity
        as its first attempt (raised again there, not sent again), so retries, waits and stops are tenacity's.
        """
        import openai

        attempts = 0
        quiet = _success_logging_off(litellm)

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            if self.rate_limiter is not None:
                self.rate_limiter.acquire()
            if quiet is None:
                return litellm.completion(**request)
            with quiet():
                return litellm.completion(**request)

        first: openai.OpenAIError | None = None

        def retried() -> Any:
            nonlocal first
            if first is not None:  # tenacity's attempt 1: the failed first try, already counted
                failed, first = first, None
                raise failed
            return attempt()

        start = time.perf_counter()
        try:
            try:
                return attempt(), attempts, time.perf_counter() - start
            except openai.OpenAIError as exc:
                first = exc
            from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_any, wait_random_exponential

            retrying = Retrying(
                stop=stop_any(stop_after_attempt(self.max_attempts), cast("stop_base", _StopAfterTimeouts())),
                wait=wait_random_exponential(multiplier=self.wait_initial, max=self.wait_max),
                retry=retry_if_exception(_is_transient),
                reraise=True,
            )
            response = retrying(retried)
        except openai.OpenAIError as exc:  # litellm's API errors subclass these; anything else is a bug
            raise _to_llm_error(exc, self.model, attempts) from exc
        return response, attempts, time.perf_counter() - start

    def preflight(self) -> LLMResult:
        """Check that the model can be called as set up: one cheap call, made after offline checks.

        In order: a response to :data:`PREFLIGHT_MESSAGES` already in the cache passes at once; the provider
        must be known to litellm; without ``api_base`` and ``api_key``, the provider's key variables must be set
        (litellm's ``validate_environment``: no request is made, so a missing key fails in milliseconds); then
        one request with ``max_tokens=1``, at most :data:`MAX_TIMEOUT_ATTEMPTS` attempts. The client's default
        parameters apply (a ``mock_response`` among them answers offline).

        Returns:
            The call's result.

        Raises:
            LLMSetupError: unknown provider, a missing key variable (the message names it), refused credentials,
                unknown model.
            LLMInfraError: the server could not be reached or did not answer in time.
            LLMRequestError: the server refused the request.
        """
        params: dict[str, Any] = {"max_tokens": 1}
        merged = {k: v for k, v in {**self._params, **params}.items() if v is not None}
        if self.cache is not None and self.cache.get(self.cache_key(PREFLIGHT_MESSAGES, None, merged, None)):
            return self.complete(list(PREFLIGHT_MESSAGES), **params)
        self.check_setup()
        probe = LLMClient(self.model, api_base=self.api_base, api_key=self._api_key,
                          max_attempts=min(self.max_attempts, MAX_TIMEOUT_ATTEMPTS), wait_initial=self.wait_initial,
                          wait_max=self.wait_max, timeout=self.timeout, cache=self.cache, **self._params)
        probe.rate_limiter = self.rate_limiter
        return probe.complete(list(PREFLIGHT_MESSAGES), **params)

    def check_setup(self) -> None:
        """Check offline, without any request, that the model can be called.

        Its provider must be known to litellm and, without ``api_base`` and ``api_key``, the provider's key
        variables must be set (litellm's ``validate_environment``); with an OpenAI-compatible ``api_base`` (a
        local server) ``OPENAI_API_KEY`` must be set to something, as the OpenAI client requires one. A model of a
        common provider whose key variable is missing is reported from :data:`PROVIDER_KEYS` without importing
        litellm (its import takes seconds); every other case asks litellm.

        Raises:
            LLMSetupError: unknown provider, or a missing key variable (the message names it).
        """
        merged = {k: v for k, v in self._params.items() if v is not None}
        offline = self.api_base is None and self._api_key is None and "mock_response" not in merged
        if offline:
            missing = known_missing_keys(self.model, os.environ)
            if missing:
                raise self._missing_keys_error(missing)
        litellm = _litellm()
        try:
            provider = litellm.get_llm_provider(self.model, api_base=self.api_base)[1]
        except Exception as e:  # noqa: BLE001 - litellm raises BadRequestError (and others) for an unknown provider
            raise LLMSetupError(f"model {self.model}: unknown to litellm (no such provider): "
                                f"{str(e).strip().splitlines()[0][:200]}", model=self.model, attempts=0,
                                cause=type(e).__name__) from e
        if (self.api_base is not None and self._api_key is None and provider in ("openai", "text-completion-openai")
                and not os.environ.get("OPENAI_API_KEY")):
            # the OpenAI client refuses to start without a key, even for a local server that ignores it
            raise LLMSetupError(f"model {self.model}: set OPENAI_API_KEY to any value for a local server "
                                f"(--api-base {self.api_base}); the OpenAI client will not start without one",
                                model=self.model, attempts=0, cause="missing_keys")
        if offline:
            env = litellm.validate_environment(model=self.model)
            missing = [str(k) for k in env.get("missing_keys") or []]
            if missing:
                raise self._missing_keys_error(missing)

    def _missing_keys_error(self, missing: Sequence[str]) -> LLMSetupError:
        return LLMSetupError(f"model {self.model}: environment variable {', '.join(missing)} is not set "
                             "(the provider's API key); export it, or give --api-base for a local server",
                             model=self.model, attempts=0, cause="missing_keys")

    def _priced_usage(self, litellm: Any, response: Any, attempts: int) -> Usage:
        """Usage of a response; after a failed pricing, the model is checked once and skipped if unmapped."""
        usage = _usage(litellm, response, self.model, attempts, price=not self._unpriced)
        if usage.cost_usd is None and not self._unpriced:
            try:
                litellm.get_model_info(self.model)
            except Exception:  # not in the price map: every later call of this client is unpriced too
                self._unpriced = True
        return usage

    def _to_result(self, litellm: Any, response: Any, n_messages: int, attempts: int, latency: float) -> LLMResult:
        """Convert a litellm response into an :class:`LLMResult`."""
        choices = _field(response, "choices") or []
        if not choices:
            raise LLMRequestError(f"model {self.model}: response has no choices", model=self.model,
                                  attempts=attempts)
        choice = choices[0]
        raw_message = _field(choice, "message")
        content = _field(raw_message, "content") if raw_message is not None else None
        tool_calls = _parse_tool_calls(
            _field(raw_message, "tool_calls") if raw_message is not None else None, f"{self.model}|{n_messages}"
        )
        if tool_calls and content is not None and not str(content).strip():
            content = None
        message = Message(role="assistant", content=None if content is None else str(content),
                          tool_calls=tool_calls)
        finish = _field(choice, "finish_reason")
        return LLMResult(
            message=message, usage=self._priced_usage(litellm, response, attempts), latency_s=latency,
            finish_reason=None if finish is None else str(finish), model=self.model, attempts=attempts,
        )

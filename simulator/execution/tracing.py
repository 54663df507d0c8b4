"""OpenTelemetry traces of a run: spans for the run, each trial, agent turn, tool call and model call.

Optional (``pip install tausim[otel]``, the ``opentelemetry-sdk`` package); nothing here is imported unless a
:class:`Tracing` is built. Spans follow OpenTelemetry's GenAI semantic conventions, the attributes tracing
back-ends expect:

- ``tausim.run`` (root): ``tausim.domain``, ``tausim.agent`` and ``tausim.user`` (their spec strings, e.g.
  ``reference:wrong_item=0.2``), ``tausim.trials``, ``tausim.seed``;
- ``tausim.trial`` (child of the run): ``tausim.task_id``, ``tausim.trial``, ``tausim.seed``, ``tausim.persona``,
  and at its end ``tausim.passed``, ``tausim.termination_reason``;
- ``tausim.turn`` (child of the trial; one per agent turn, from its first step to its closing message):
  ``tausim.turn``;
- ``execute_tool {name}`` (child of its turn): ``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``tausim.tool.status`` (an error status also sets the span status to ERROR);
- ``chat {model}`` (child of the agent turn it served, or of the trial for the simulated user's calls):
  ``gen_ai.operation.name = "chat"``, ``gen_ai.system`` (the provider: the model string's prefix before ``/``),
  ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``tausim.party``
  (agent/user), ``tausim.model_calls``. Its start and end are those of the ``step``/``reply`` call that made
  the model calls.

Parents are passed explicitly (trials run on worker threads, where an ambient context would not follow). Each
trial's trace and span ids are stored on the trial (``TrialResult.trace``) and bound to its ``--log-file`` events.
Trials run in other processes (``--workers``, Dask) are not traced: a tracer does not travel between processes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from simulator.dialogue.state import ConversationState
from simulator.errors import InputError, WriteError
from simulator.execution.recording import GuardedWriter, close_quietly, guard_appended
from simulator.types.messages import AgentTurn, Usage, UserTurn
from simulator.types.protocols import Progress
from simulator.types.results import TrialKey
from simulator.types.trajectory import ToolCallRecord

__all__ = ["TraceObserver", "Tracing", "file_tracing", "span_ids"]


def _require_sdk() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as e:  # the optional extra is missing
        raise InputError("--otel needs the optional extra: pip install 'tausim[otel]' (opentelemetry-sdk)") from e
    return trace


def span_ids(span: Any) -> dict[str, str]:
    """Return ``{"trace_id": 32 hex digits, "span_id": 16 hex digits}`` of a span."""
    ctx = span.get_span_context()
    return {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}


def _system(model: str | None) -> str:
    if not model:
        return "unknown"
    return model.split("/", 1)[0] if "/" in model else "openai"


class Tracing:
    """Builds the spans of one run on an OpenTelemetry tracer.

    Args:
        tracer_provider: an ``opentelemetry.sdk.trace.TracerProvider`` (with its span processors and exporters,
            e.g. an ``InMemorySpanExporter`` in tests).
        sink: the guarded file its exporter writes to (:func:`file_tracing`), whose error :attr:`write_error`
            gives; None when the spans go elsewhere.

    Raises:
        InputError: the ``opentelemetry-sdk`` package is not installed.
    """

    def __init__(self, tracer_provider: Any, sink: GuardedWriter | None = None):
        self._trace = _require_sdk()
        self.tracer = tracer_provider.get_tracer("tausim")
        self.run_span: Any = None
        self.sink = sink
        self._trial_of: dict[int, TrialKey] = {}  # span id of an open trial or turn span -> its trial
        self._lost: set[TrialKey] = set()  # trials a span of which did not reach the sink
        self._lost_other = False  # a span of no trial (the run's) did not
        self._lock = threading.Lock()

    @property
    def write_error(self) -> WriteError | None:
        """Why the spans file lost spans (disk full, read-only), or None (also when spans go elsewhere)."""
        return None if self.sink is None else self.sink.error

    def lost(self, key: TrialKey) -> bool:
        """Whether spans of trial ``key`` (task id, persona or None, trial index) may be missing from the sink.

        True once a write failed and a span of that trial, or of no trial, was not written (the cautious
        answer); a trial whose spans were all written before the disk filled is not lost. Its spans are written
        (by the trial's own thread) before its result is returned, so the answer is final once the result is in.
        """
        with self._lock:
            return self.write_error is not None and (self._lost_other or key in self._lost)

    def exported(self, span: Any, written: bool) -> None:
        """Note that a finished span was written to the sink, or not (``written`` False: it may be missing)."""
        span_id = span.context.span_id
        parent = span.parent.span_id if span.parent is not None else None
        with self._lock:
            key = self._trial_of.pop(span_id, None)  # a trial or turn span ends after its children
            if key is None and parent is not None:
                key = self._trial_of.get(parent)
            if not written:
                if key is None:
                    self._lost_other = True
                else:
                    self._lost.add(key)

    def _belongs(self, span: Any, key: TrialKey | None) -> Any:
        if key is not None and self.sink is not None:  # only our file exporter reports (and pops) its spans
            with self._lock:
                self._trial_of[span.get_span_context().span_id] = key
        return span

    def _ctx(self, parent: Any) -> Any:
        return None if parent is None else self._trace.set_span_in_context(parent)

    @contextmanager
    def run(self, **attributes: Any) -> Iterator[Any]:
        """Open the run's root span for the duration of the block (trial spans become its children).

        Args:
            **attributes: ``domain``, ``agent``... recorded as ``tausim.<name>`` (None values skipped); each an
                OpenTelemetry attribute value (str, bool, int, float or a sequence of them), not a spec object.
        """
        span = self.tracer.start_span("tausim.run", attributes={f"tausim.{k}": v for k, v in attributes.items()
                                                                if v is not None})
        self.run_span = span
        try:
            yield span
        finally:
            self.run_span = None
            span.end()

    def start_trial(self, task_id: str, trial: int, seed: int, persona: str | None) -> Any:
        """Start a trial span (child of the open run span, if any); end it with :meth:`end_trial`."""
        attrs: dict[str, Any] = {"tausim.task_id": task_id, "tausim.trial": trial, "tausim.seed": seed}
        if persona is not None:
            attrs["tausim.persona"] = persona
        span = self.tracer.start_span("tausim.trial", context=self._ctx(self.run_span), attributes=attrs)
        return self._belongs(span, (task_id, persona, trial))

    def end_trial(self, span: Any, passed: bool, termination_reason: str) -> None:
        """Record a trial's outcome on its span and end it."""
        span.set_attribute("tausim.passed", passed)
        span.set_attribute("tausim.termination_reason", termination_reason)
        span.end()

    def start_turn(self, trial_span: Any, index: int) -> Any:
        """Start an agent turn span (child of the trial)."""
        span = self.tracer.start_span("tausim.turn", context=self._ctx(trial_span), attributes={"tausim.turn": index})
        with self._lock:
            key = self._trial_of.get(trial_span.get_span_context().span_id)
        return self._belongs(span, key)

    def tool_call(self, parent: Any, name: str, call_id: str, status: str, start_ns: int, end_ns: int) -> None:
        """Record a finished tool call as an ``execute_tool`` span.

        Args:
            parent: the turn span.
            name: the tool name.
            call_id: the call's id.
            status: ``ok`` or the error status.
            start_ns: start, nanoseconds since the epoch (``time.time_ns()``).
            end_ns: end, same clock.
        """
        span = self.tracer.start_span(f"execute_tool {name}", context=self._ctx(parent), start_time=start_ns,
                                      attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                                  "gen_ai.tool.call.id": call_id, "tausim.tool.status": status})
        if status != "ok":
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, status))
        span.end(end_time=end_ns)

    def model_call(self, parent: Any, party: str, model: str | None, usage: Usage, start_ns: int,
                   end_ns: int) -> None:
        """Record the model calls of one agent step or user reply as a ``chat`` span (none when it made none).

        Args:
            parent: the turn span (agent) or the trial span (user).
            party: ``agent`` or ``user``.
            model: the model string (``openai/gpt-4o-mini``), or None when the party does not say.
            usage: the step's usage (tokens, calls).
            start_ns: start of the step, nanoseconds since the epoch.
            end_ns: its end.
        """
        if usage.calls <= 0:
            return
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.system": _system(model),
            "gen_ai.usage.input_tokens": usage.prompt_tokens, "gen_ai.usage.output_tokens": usage.completion_tokens,
            "tausim.party": party, "tausim.model_calls": usage.calls,
        }
        if model:
            attrs["gen_ai.request.model"] = model
        span = self.tracer.start_span(f"chat {model or party}", context=self._ctx(parent), start_time=start_ns,
                                      attributes=attrs)
        span.end(end_time=end_ns)

    def observer(self, trial_span: Any, agent: Any, user: Any) -> TraceObserver:
        """Return the conversation observer that traces one trial's turns, tool calls and model calls.

        Args:
            trial_span: the trial's span (the parent of the turn spans and of the user's model-call spans).
            agent: the trial's agent (its ``model`` attribute, if any, names its model-call spans).
            user: the trial's simulated user (likewise).

        Returns:
            A :class:`TraceObserver` for :class:`simulator.dialogue.conversation.Conversation`'s ``observers``.
        """
        return TraceObserver(self, trial_span, agent, user)


class TraceObserver:
    """A conversation observer (:mod:`simulator.dialogue.observers`): one trial's spans.

    A ``tausim.turn`` span per agent turn (from its start to its closing message, or to the trial's end), an
    ``execute_tool`` span per tool call (a child of its turn, or of the trial for the user's own calls) and a
    ``chat`` span per agent step or user reply that made model calls.

    Args:
        tracing: the run's :class:`Tracing`.
        trial_span: the trial's span.
        agent: the trial's agent.
        user: the trial's simulated user.
    """

    def __init__(self, tracing: Tracing, trial_span: Any, agent: Any, user: Any):
        self.tracing = tracing
        self.trial_span = trial_span
        self.agent = agent
        self.user = user
        self.turn: Any = None  # the open agent-turn span

    def _parent(self) -> Any:
        return self.turn if self.turn is not None else self.trial_span

    def _close_turn(self) -> None:
        if self.turn is not None:
            self.turn.end()
            self.turn = None

    def on_user_reply(self, state: ConversationState, turn: UserTurn, start_ns: int, end_ns: int) -> None:
        """Record the user's model calls (a child of the trial)."""
        self.tracing.model_call(self.trial_span, "user", getattr(self.user, "model", None), turn.usage, start_ns,
                                end_ns)

    def on_agent_turn(self, state: ConversationState) -> None:
        """Open the agent turn's span."""
        self.turn = self.tracing.start_turn(self.trial_span, len(state.trajectory.progress))

    def on_agent_reply(self, state: ConversationState, turn: AgentTurn, start_ns: int, end_ns: int) -> None:
        """Record the agent step's model calls (a child of its turn)."""
        self.tracing.model_call(self._parent(), "agent", getattr(self.agent, "model", None), turn.usage, start_ns,
                                end_ns)

    def on_tool_call(self, state: ConversationState, record: ToolCallRecord, start_ns: int, end_ns: int) -> None:
        """Record the call (a child of the agent's turn; the user's own calls: of the trial)."""
        parent = self.trial_span if record.requestor == "user" else self._parent()
        self.tracing.tool_call(parent, record.name, record.call_id, record.status, start_ns, end_ns)

    def on_agent_turn_end(self, state: ConversationState, progress: Progress) -> None:
        """Close the agent turn's span."""
        self._close_turn()

    def on_end(self, state: ConversationState) -> None:
        """Close the open turn span, if any."""
        self._close_turn()


def _file_exporter(tracing: Tracing, sink: GuardedWriter) -> Any:
    """An OpenTelemetry span exporter writing each span as one JSON line to ``sink`` (the SDK's span JSON).

    Each span is written and flushed (``sink`` never raises); whether it got there is noted on ``tracing``
    (:meth:`Tracing.exported`), which says which trials lost spans (:meth:`Tracing.lost`).
    """
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class SpanFileExporter(SpanExporter):  # type: ignore[misc]  # the SDK's base class is not typed for mypy
        def export(self, spans: Any) -> Any:
            for span in spans:
                sink.write(span.to_json(indent=None) + "\n")
                sink.flush()
                tracing.exported(span, written=sink.error is None)  # an error, ours or another thread's: cautious
            return SpanExportResult.SUCCESS if sink.error is None else SpanExportResult.FAILURE

    return SpanFileExporter()


@contextmanager
def file_tracing(path: str | Path) -> Iterator[Tracing]:
    """Yield a :class:`Tracing` that appends every finished span to ``path`` as one JSON line.

    The spans are written (the SDK's span JSON on one line, a flush after each span) through a
    :class:`~simulator.execution.recording.GuardedWriter`, as the run's log is: a write that fails (disk full,
    read-only) never raises in the trial that ended the span; the first error is kept (:attr:`Tracing.write_error`)
    and later spans are dropped; the run stops at the first trial whose spans did not all reach the file
    (:meth:`Tracing.lost`). The file is closed quietly: the flush on close fails the same way, and that was
    already noted. A file whose last line was cut short (an
    earlier run on a full disk) gets a newline first, so that the new spans are whole lines.

    Args:
        path: the spans file (``tausim run --otel FILE``).

    Raises:
        InputError: ``opentelemetry-sdk`` is missing.
        OSError: the file cannot be opened.
    """
    _require_sdk()
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    fh: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed below, after the provider's flush
    sink = guard_appended(fh, path)  # an earlier run's span cut by a full disk stays cut; this run's stay whole
    provider = TracerProvider()
    tracing = Tracing(provider, sink=sink)
    provider.add_span_processor(SimpleSpanProcessor(_file_exporter(tracing, sink)))
    try:
        yield tracing
    finally:
        provider.shutdown()
        close_quietly(fh)

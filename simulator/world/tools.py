"""Tools: the ``@tool`` decorator, JSON schemas from signatures and Google docstrings, validated dispatch.

A tool is a plain function whose first parameter is a :class:`ToolContext` (the trial's database session,
its DB-API connection and the options) and whose remaining parameters are the arguments the agent supplies.
The decorator records its kind (``read`` never changes state, ``write`` may) and derives an OpenAI function
schema from the signature's annotations and the docstring's ``Args:`` section.

Errors, in two channels:
- :class:`ToolError`: the agent asked for something the domain refuses (unknown order, wrong status). The
  agent sees ``"Error: <message>"`` and may recover. The trial's state is rolled back to before the call.
- any other exception inside a tool: a bug in the tool. The outcome is ``tool_bug``, the state is rolled
  back, and the orchestrator ends the trial with termination reason ``tool_bug``.
Unknown tools and arguments that fail validation are reported to the agent as error observations with
status ``unknown_tool`` / ``invalid_arguments`` and counted.

Transactions: a toolbox whose tools use the ORM session (the default) runs each call in a transaction of the
session. A toolbox built with ``uses_session=False`` declares that its tools read and write only through
``ctx.conn`` (the trial's sqlite3 connection); each call then runs in a transaction of that connection
(``BEGIN`` ... ``COMMIT``/``ROLLBACK``, or a savepoint inside an open transaction), which costs about a
microsecond instead of the ORM's tens.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from sqlalchemy.orm import Session

from simulator.errors import ToolError
from simulator.world.events import emit_event
from simulator.world.jsontext import json_text
from simulator.world.memo import MEMO_KEY, Reads, TrialMemo, WriteRecorder, memo_key, replay

ToolKind = Literal["read", "write"]
CallStatus = Literal["ok", "tool_error", "unknown_tool", "invalid_arguments", "tool_bug"]

__all__ = [
    "CallOutcome",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Toolbox",
    "tool",
]





@dataclass
class ToolContext:
    """What a tool may use: the trial's database (session or DB-API connection), domain options, the event log.

    Attributes:
        session: SQLAlchemy session bound to the trial's own database connection.
        options: domain options (e.g. ``{"mode": "tau-bench"}``); read-only by convention.
        step: the agent step of the current call (set by the orchestrator; None for setup actions and goal
            replay), recorded with its events.
        source: who makes the calls: ``"agent"`` (the conversation) or ``"setup"`` (a task's setup actions).
    """

    session: Session
    options: Mapping[str, Any] = field(default_factory=dict)
    _conn: sqlite3.Connection | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def conn(self) -> sqlite3.Connection:
        """The trial's sqlite3 connection: the one under the session's bound SQLAlchemy connection.

        Raises:
            TypeError: the session is not bound to a SQLAlchemy connection over sqlite3.
        """
        conn = self._conn
        if conn is None:
            bind = self.session.bind
            pooled = getattr(bind, "connection", None)
            conn = getattr(pooled, "driver_connection", None)
            if not isinstance(conn, sqlite3.Connection):
                raise TypeError(f"tool context: the session is bound to {bind!r}, not to a connection over sqlite3")
            self._conn = conn
        return conn

    @property
    def reads(self) -> Reads:
        """Where the tool's deterministic ``SELECT`` statements go: remembered while the trial copy is unchanged.

        The copy's :class:`~simulator.world.memo.MemoReads` when its template's memo is on (answers the statements
        from the memo until anything is written on the copy), else :attr:`conn`. Only for ``SELECT`` statements whose
        rows depend on the database alone (never the clock or ``random()``); writes go to :attr:`conn`.

        Raises:
            TypeError: as :attr:`conn`.
        """
        conn = self.conn
        trial: TrialMemo | None = self.session.info.get(MEMO_KEY)
        return trial.reads if trial is not None and trial.conn is conn else conn

    step: int | None = None
    source: str = "agent"

    def emit(self, name: str, **fields: Any) -> None:
        """Record a named domain event in the trial's event log; kept only if the tool call succeeds.

        E.g. ``ctx.emit("refund_committed", order_id="4812", amount=120.0)``.

        Args:
            name: the event name (one the domain declares in ``Domain.events``).
            **fields: JSON-serialisable fields of the event.
        """
        emit_event(self, name, fields)


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool.

    Attributes:
        name: the name the agent calls.
        kind: ``"read"`` or ``"write"``.
        fn: the implementation, ``fn(ctx, **arguments) -> str | JSON-serialisable``.
        description: the docstring's summary and body (without the Args section).
        arguments_model: pydantic model validating the arguments.
        schema: OpenAI ``{"type": "function", "function": {...}}`` schema.
        ends_conversation: calling it ends the trial (e.g. transfer to a human agent).
        memo: a read tool whose answer depends only on the database, its arguments and the domain options: its
            answers on unchanged copies of a template are remembered and reused (see :mod:`simulator.world.memo`);
            a write tool whose answer and changes depend only on those, the step and the source: replayed.
    """

    name: str
    kind: ToolKind
    fn: Callable[..., Any]
    description: str
    arguments_model: type[BaseModel]
    schema: dict[str, Any]
    ends_conversation: bool = False
    memo: bool = False


def _parse_google_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and ``{arg: description}``."""
    doc = inspect.cleandoc(doc or "")
    lines = doc.splitlines()
    desc: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = re.fullmatch(r"(Args|Arguments|Returns|Raises|Yields|Examples?|Notes?):\s*", line.strip())
        if header and not line.startswith(" "):
            section = header.group(1)
            current = None
            continue
        if section in ("Args", "Arguments"):
            m = re.match(r"^\s{2,}(\w+)(?:\s*\(.*?\))?:\s*(.*)$", line)
            if m and (len(line) - len(line.lstrip())) <= 4:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
        elif section is None:
            desc.append(line)
    return "\n".join(desc).strip(), args


def _build_spec(fn: Callable[..., Any], kind: ToolKind, name: str | None, ends: bool, memo: bool) -> ToolSpec:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if not params:
        raise TypeError(f"tool {fn.__name__}: first parameter must be the ToolContext")
    hints = get_type_hints(fn, include_extras=True)
    description, arg_docs = _parse_google_docstring(fn.__doc__ or "")
    if not description:
        raise TypeError(f"tool {fn.__name__}: a docstring is required")
    fields: dict[str, Any] = {}
    for p in params[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}: *args/**kwargs are not allowed")
        if p.name not in hints:
            raise TypeError(f"tool {fn.__name__}: parameter {p.name!r} needs a type annotation")
        if p.name not in arg_docs:
            raise TypeError(f"tool {fn.__name__}: parameter {p.name!r} is not documented in Args:")
        from pydantic import Field as PField

        default = ... if p.default is p.empty else p.default
        fields[p.name] = (hints[p.name], PField(default, description=arg_docs[p.name]))
    model = create_model(  # type: ignore[call-overload]
        f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    params_schema = model.model_json_schema()
    params_schema.pop("title", None)
    for prop in params_schema.get("properties", {}).values():
        prop.pop("title", None)
    params_schema.setdefault("required", [])
    tool_name = name or fn.__name__
    schema = {
        "type": "function",
        "function": {"name": tool_name, "description": description, "parameters": params_schema},
    }
    return ToolSpec(tool_name, kind, fn, description, model, schema, ends, memo)


def tool(
    kind: ToolKind = "read", *, name: str | None = None, ends_conversation: bool = False, memo: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool and attach its :class:`ToolSpec` as ``fn.tool_spec``.

    Args:
        kind: ``"read"`` (never changes state) or ``"write"`` (may change state).
        name: the name agents call; defaults to the function name.
        ends_conversation: the call ends the trial (transfer to a human agent).
        memo: (read tools) the answer depends only on the trial database, the arguments and the domain options:
            never on the clock, the trial's seed, the call's step or state kept outside the database. Its answers
            on copies of a template nobody wrote to are then remembered and reused (:mod:`simulator.world.memo`).
            (write tools, in a toolbox with ``uses_session=False``) the answer and the changes depend only on those
            and the call's step and source, and the tool changes nothing but rows, through ``ctx.conn``: its first
            call on an unchanged copy is recorded and the same call on a later one replays its writes.
            Off by default: a tool is remembered only when its author says so.

    Returns:
        A decorator returning the function unchanged apart from the ``tool_spec`` attribute.

    Raises:
        TypeError: the function has no docstring, an unannotated or undocumented parameter, or no context
            parameter.
    """
    if kind not in ("read", "write"):
        raise ValueError(f"tool kind must be 'read' or 'write', got {kind!r}")
    if memo and ends_conversation:
        raise ValueError("memo=True is for tools that do not end the conversation")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.tool_spec = _build_spec(fn, kind, name, ends_conversation, memo)  # type: ignore[attr-defined]
        return fn

    return deco


@dataclass
class CallOutcome:
    """The result of dispatching one tool call.

    Attributes:
        content: what the agent sees (a string; ``"Error: ..."`` for every non-ok status).
        status: ``ok``, ``tool_error``, ``unknown_tool``, ``invalid_arguments`` or ``tool_bug``.
        kind: the tool's kind, or None for an unknown tool.
        duration_s: wall time of the call in seconds.
        bug: traceback text when status is ``tool_bug``.
        ends_conversation: the tool ends the trial (e.g. transfer).
    """

    content: str
    status: CallStatus
    kind: ToolKind | None
    duration_s: float
    bug: str | None = None
    ends_conversation: bool = False

    @property
    def is_error(self) -> bool:
        """True for every status but ``ok``."""
        return self.status != "ok"


def _render(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json_text(result)  # json.dumps(result)'s text


class Toolbox:
    """The tools of one domain, with validated dispatch against a trial's database.

    Args:
        functions: functions decorated with :func:`tool` (or their specs).
        uses_session: the tools use the ORM session ``ctx.session``. False declares that they use only
            ``ctx.conn``; each call then runs in a transaction of that connection, without the ORM.

    Raises:
        ValueError: a function is not a tool, or two tools share a name.
    """

    def __init__(self, functions: Iterable[Callable[..., Any] | ToolSpec], *, uses_session: bool = True):
        self.uses_session = uses_session
        self.specs: dict[str, ToolSpec] = {}
        for f in functions:
            spec = f if isinstance(f, ToolSpec) else getattr(f, "tool_spec", None)
            if spec is None:
                raise ValueError(f"{f!r} is not decorated with @tool")
            if spec.name in self.specs:
                raise ValueError(f"duplicate tool name {spec.name!r}")
            self.specs[spec.name] = spec

    def schemas(self) -> list[dict[str, Any]]:
        """Return the OpenAI function schemas of all tools, in registration order."""
        return [s.schema for s in self.specs.values()]

    def kind(self, name: str) -> ToolKind | None:
        """Return the kind of tool ``name``, or None when there is no such tool."""
        spec = self.specs.get(name)
        return spec.kind if spec else None

    def dispatch(self, ctx: ToolContext, name: str, arguments: Mapping[str, Any] | None) -> CallOutcome:
        """Validate and run one tool call in its own transaction of the trial's session.

        The transaction is committed when the tool returns and rolled back when it raises, so a rejected or
        crashing call leaves the database as it was. (Inside a transaction the caller opened, a savepoint is
        used instead.) The arguments are validated with the domain options as pydantic's validation context,
        so a domain's argument types may accept more in one mode than in another.

        Args:
            ctx: the trial's tool context.
            name: tool name requested by the agent.
            arguments: parsed arguments (None when the model's argument text was not a JSON object).

        A tool declared with ``memo=True`` answers from its template's memo when the same call was answered on an
        unchanged copy of the same template before (:mod:`simulator.world.memo`): the same content and status,
        without validating or running anything again. A write tool so declared (in a toolbox built with
        ``uses_session=False``) replays the writes its first such call recorded, in one transaction, and records
        the call's event as every write call does.

        Returns:
            The :class:`CallOutcome`. On any non-ok status the database is as it was before the call.
        """
        t0 = time.perf_counter()
        spec = self.specs.get(name)
        if spec is None:
            return CallOutcome(
                f"Error: unknown tool {name!r}; available tools: {', '.join(self.specs)}",
                "unknown_tool", None, time.perf_counter() - t0,
            )
        if arguments is None:
            return CallOutcome(
                f"Error: arguments of {name} are not a valid JSON object", "invalid_arguments",
                spec.kind, time.perf_counter() - t0,
            )
        if spec.memo:
            trial: TrialMemo | None = ctx.session.info.get(MEMO_KEY)
            if trial is not None and not ctx.session.in_transaction() and trial.unchanged(ctx.options):
                if spec.kind == "write":
                    if self.uses_session:
                        return self._run(ctx, spec, name, arguments, t0)
                    return self._write_memo(ctx, spec, name, arguments, trial, t0)
                base = memo_key(spec.fn, arguments)
                if base is not None:
                    key = trial.key(base)
                    known = trial.memo.get(key)
                    if known is not None:
                        return CallOutcome(known[0], known[1], spec.kind, time.perf_counter() - t0)  # type: ignore[arg-type]
                    out = self._run(ctx, spec, name, arguments, t0)
                    if out.status in ("ok", "tool_error") and trial.unchanged(ctx.options):
                        trial.memo.put(key, out.content, out.status)  # the call wrote nothing, not even rolled back
                    return out
        return self._run(ctx, spec, name, arguments, t0)

    def _write_memo(self, ctx: ToolContext, spec: ToolSpec, name: str, arguments: Mapping[str, Any],
                    trial: TrialMemo, t0: float) -> CallOutcome:
        """A ``memo=True`` write call on an unchanged copy: replayed when remembered, else run and recorded.

        Keyed by the tool, its arguments, the call's step and source (:mod:`simulator.world.memo`).
        """
        base = memo_key(spec.fn, arguments)
        conn = ctx.conn
        if base is None or conn.in_transaction:
            return self._run(ctx, spec, name, arguments, t0)
        call = (base[0], base[1], ctx.step, ctx.source)
        key = trial.key(call)
        known = trial.memo.write(key)
        if known is not None:
            content, status, statements = known
            if status == "ok":
                conn.execute("BEGIN")
                try:
                    replay(conn, statements)  # the call's event last among them (see below)
                except Exception:  # noqa: BLE001 - never on an unchanged copy; if it does: undone, a tool_bug
                    _undo(conn, False)
                    return _bug(spec, t0)
                conn.execute("COMMIT")
                trial.advance(call)
            return CallOutcome(content, status, spec.kind, time.perf_counter() - t0)  # type: ignore[arg-type]
        recorder = WriteRecorder(conn)
        out = self._run(ctx, spec, name, arguments, t0, recorder)
        if out.status == "ok" and recorder.replayable:
            # the call's event, recorded through the recorder after the tool's writes, is the last statement
            trial.memo.put_write(key, out.content, "ok", tuple(recorder.statements), recorder.size)
            trial.advance(call)  # the copy's content follows from the path: the memo stays on
        elif out.status == "tool_error" and trial.unchanged(ctx.options):  # refused before writing anything
            trial.memo.put_write(key, out.content, "tool_error", ())
        return out

    def _run(self, ctx: ToolContext, spec: ToolSpec, name: str, arguments: Mapping[str, Any],
             t0: float, recorder: WriteRecorder | None = None) -> CallOutcome:
        """Validate the arguments and run the tool in its own transaction (see :meth:`dispatch`).

        ``recorder``: the tool sees it as ``ctx.conn`` while it runs (:meth:`_write_memo`; connection tools only).
        """
        try:
            validated = spec.arguments_model.model_validate(dict(arguments), context=ctx.options)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}" for err in e.errors()
            )
            return CallOutcome(
                f"Error: invalid arguments for {name}: {problems}", "invalid_arguments", spec.kind,
                time.perf_counter() - t0,
            )
        kwargs = validated.__dict__  # the fields (extra ones are refused); dict(validated) costs ten times more
        if not self.uses_session:
            return self._run_on_connection(ctx, spec, kwargs, arguments, t0, recorder)
        session = ctx.session
        txn = session.begin_nested() if session.in_transaction() else session.begin()
        try:
            result = spec.fn(ctx, **kwargs)
            content = _render(result)
            session.flush()
            if spec.kind == "write":
                emit_event(ctx, name, dict(arguments), kind="tool")
        except ToolError as e:
            txn.rollback()
            return CallOutcome(f"Error: {e}", "tool_error", spec.kind, time.perf_counter() - t0)
        except Exception:  # noqa: BLE001 - a bug in a tool: recorded as tool_bug, never shown as agent error
            txn.rollback()
            return _bug(spec, t0)
        txn.commit()
        return CallOutcome(
            content, "ok", spec.kind, time.perf_counter() - t0, ends_conversation=spec.ends_conversation
        )

    @staticmethod
    def _run_on_connection(ctx: ToolContext, spec: ToolSpec, kwargs: dict[str, Any], arguments: Mapping[str, Any],
                           t0: float, recorder: WriteRecorder | None = None) -> CallOutcome:
        """Run a tool in a transaction of the DB-API connection (a savepoint when one is already open).

        A successful write call is recorded in the event log inside the same transaction. ``recorder``: stands in
        for ``ctx.conn`` while the tool runs and while the call's event is recorded (its last statement).
        """
        conn = ctx.conn
        if ctx.session.in_transaction():
            ctx.session.flush()  # the caller's pending ORM changes go first
        nested = conn.in_transaction
        conn.execute("SAVEPOINT tool_call" if nested else "BEGIN")
        try:
            if recorder is None:
                content = _render(spec.fn(ctx, **kwargs))
                if spec.kind == "write":
                    emit_event(ctx, spec.name, arguments, kind="tool")
            else:
                ctx._conn = recorder  # type: ignore[assignment]  # it runs what the connection would run
                try:
                    content = _render(spec.fn(ctx, **kwargs))
                    emit_event(ctx, spec.name, arguments, kind="tool")  # recorded: replayed last, as written
                finally:
                    ctx._conn = conn
        except ToolError as e:
            _undo(conn, nested)
            return CallOutcome(f"Error: {e}", "tool_error", spec.kind, time.perf_counter() - t0)
        except Exception:  # noqa: BLE001 - a bug in a tool: recorded as tool_bug, never shown as agent error
            _undo(conn, nested)
            return _bug(spec, t0)
        conn.execute("RELEASE tool_call" if nested else "COMMIT")
        return CallOutcome(
            content, "ok", spec.kind, time.perf_counter() - t0, ends_conversation=spec.ends_conversation
        )


def _undo(conn: sqlite3.Connection, nested: bool) -> None:
    """Roll a call's changes back: to its savepoint when ``nested``, else the whole transaction."""
    if nested:
        conn.execute("ROLLBACK TO tool_call")
        conn.execute("RELEASE tool_call")
    elif conn.in_transaction:
        conn.execute("ROLLBACK")


def _bug(spec: ToolSpec, t0: float) -> CallOutcome:
    """The outcome of an unexpected exception inside a tool (call from its ``except`` block)."""
    return CallOutcome(
        f"Error: internal error in tool {spec.name}", "tool_bug", spec.kind, time.perf_counter() - t0,
        bug=traceback.format_exc(),
    )

r"""Values from a model, an agent or a user are data: the rules that make them safe, in one place.

Whatever an agent or a simulated user returns (text, tool names, call ids, arguments, usage, cost, metadata) enters
a trial through :func:`admit_agent_turn` / :func:`admit_user_turn` (called by the conversation loop,
:mod:`simulator.dialogue.conversation`), and a trial's record is made storable by :func:`admit_value`. The rules:

- **Lone surrogates** (half of a UTF-16 pair, e.g. ``"\\ud83d"``: what ``json.loads`` gives for a model's
  ``"\\ud83d"`` escape) cannot be encoded as UTF-8, so a partial file, a store or a terminal would raise
  ``UnicodeEncodeError``. Each is replaced with U+FFFD (a well-formed pair written as two code points is joined
  into its character) and the replacement is recorded as a note (``Trajectory.notes``).
- **Non-finite numbers** (NaN, Infinity, -Infinity: ``json.loads`` accepts them) in a tool call's arguments: the
  call keeps its text in ``raw_arguments`` (as JSON with ``NaN``), its ``arguments`` become None, and the tool
  answers ``invalid_arguments`` (not a valid JSON object); the agent can recover. The note names the number's path
  (:func:`refused_path`). In metadata they become None, with a note. Arguments no JSON text can hold are refused
  the same way (:func:`refused_path`): nesting deeper than :data:`MAX_ARGUMENT_DEPTH` levels (a model's JSON can
  nest a thousand deep; records, keys and checks walk it), an integer of more than :data:`MAX_INT_BITS` bits
  (Python cannot even write one of over 4,300 digits as text), a set, keys that are not all text, all numbers or
  one null per object (``{1: "a", "b": 2}`` cannot be sorted, a tuple key cannot be written).
- **Costs** that are not finite, are negative or exceed :data:`MAX_COST_USD` are unknown: ``cost_usd=None``
  (never $0, never a crash), with a note; negative token or call counts become 0.
- **Control characters** (C0 but tab and newline, DEL, C1) and bidirectional-override characters are *kept* in
  the record (it is evidence) and escaped wherever text is shown on a terminal: :func:`shown` renders them as
  ``\\x1b``, ``\\u202e``... so that no escape sequence from data (window title ``ESC ] 0 ;``, clear screen ``ESC [
  2 J``, OSC 52 clipboard writes) ever reaches a terminal. HTML pages escape text as HTML (``html.escape``).

Example::

    turn, notes = admit_agent_turn(agent.step(messages))   # a NaN argument -> raw_arguments, a note
    console.print(shown(turn.message.content or ""))       # "\\x1b]0;pwned\\x07" shown as text
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn

__all__ = ["ERROR_LIMIT", "EXCERPT_CHARS", "LONE_SURROGATE", "MAX_ARGUMENT_DEPTH", "MAX_COST_USD", "MAX_INT_BITS",
           "REPLACEMENT", "admit_agent_turn", "admit_call", "admit_message", "admit_metadata", "admit_text",
           "admit_usage", "admit_user_turn", "admit_value", "bounded", "clipped", "counted", "excerpt", "known_cost",
           "lone_surrogate_path", "plain_agent_turn", "plain_message", "plain_user_turn", "refused_path", "shown"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate is replaced with (U+FFFD REPLACEMENT CHARACTER)."""

ERROR_LIMIT = 64_000
"""Characters of an error text (a traceback, an API message) kept in a trial's record (:func:`bounded`)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What :func:`shown` escapes: C0 controls but tab and newline, DEL, C1 controls, bidirectional marks, overrides
and isolates (Unicode UAX #9), lone surrogates."""
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")
""":data:`_UNSAFE` plus tab, newline and the Unicode line and paragraph separators (one-line display)."""
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object, *, one_line: bool = False) -> str:
    r"""Return text fit to be shown on a terminal: control and bidi characters escaped as visible text.

    Args:
        text: any value (``str()`` of a non-string).
        one_line: also escape tab, newline (``\\n``), carriage return and the Unicode line separators, so the
            text stays on one line (ids, names, one-line error heads).

    Returns:
        The text with each C0 control character (but tab and newline unless ``one_line``), DEL, each C1 control
        character, each bidirectional mark, embedding, override or isolate (U+061C, U+200E, U+200F,
        U+202A-U+202E, U+2066-U+2069) and each lone surrogate written as ``\\xNN`` / ``\\uNNNN`` (``\\r``,
        ``\\t``, ``\\n`` by name). Printable text, including every other non-ASCII character, is unchanged; the
        result encodes as UTF-8.
    """
    s = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_LINE if one_line else _UNSAFE
    return pattern.sub(_escape_char, s)


def admit_text(text: str) -> tuple[str, int]:
    r"""Return ``text`` with its lone surrogates replaced by U+FFFD, and how many were replaced.

    A surrogate pair written as two code points (``"\\ud83d\\ude00"``) is joined into its character (not counted).

    Args:
        text: a string from a model, an agent or a user.

    Returns:
        ``(text, replaced)``: ``text`` itself (the same object) when it holds no surrogate.
    """
    if text.isascii() or not _SURROGATE.search(text):
        return text, 0
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined, joined.count(REPLACEMENT) - text.count(REPLACEMENT)


def bounded(text: str, limit: int = ERROR_LIMIT) -> str:
    """Return error text fit for a trial's record: lone surrogates replaced, at most about ``limit`` characters.

    A longer text keeps its first quarter and its end (a traceback's last lines name the error), joined by a line
    ``[... N characters cut ...]``.

    Args:
        text: the error text.
        limit: characters kept (the cut line comes on top).

    Returns:
        The text.
    """
    text = admit_text(text)[0]
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit:,} characters cut ...]\n{text[-tail:]}"


EXCERPT_CHARS = 80
"""Characters of a value that an error message shows at most (:func:`excerpt`)."""


def excerpt(value: Any, limit: int = EXCERPT_CHARS, *, as_json: bool = False) -> str:
    r"""Return a value as a one-line error message shows it: escaped, at most about ``limit`` characters long.

    The value is shown as ``repr`` shows it (a string quoted, its control and invisible characters and lone
    surrogates escaped, e.g. ``'\\ud83d'``), or with ``as_json`` as its JSON text (``default=str``, non-ASCII
    escaped). A longer text keeps its start, then ``...`` and its whole length: ``'xxxx'... (100,000 characters)``
    (the length of the string; of the text shown for another value), so a 100 KB value never fills a terminal.

    Args:
        value: the offending value (a string, or decoded JSON).
        limit: characters of the shown text kept (quotes included).
        as_json: show the value as JSON (``"abc"``, ``true``) instead.

    Returns:
        The text to put in the message.
    """
    if isinstance(value, str) and not as_json:
        if len(value) <= limit and len(text := repr(value)) <= limit:
            return text
        head = value[:limit]
        while len(repr(head)) > limit and head:  # escapes widen the text: \ud83d is 6 characters for 1
            head = head[:-1]
        return f"{head!r}... ({len(value):,} characters)"
    try:
        text = json.dumps(value, default=str) if as_json else repr(value)
    except (ValueError, RecursionError):  # a circular or too deeply nested value
        return f"({type(value).__name__})"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """Return a count and its noun agreeing in number: ``1 task``, ``0 tasks``, ``3 trials``.

    Args:
        n: the count.
        noun: the singular (``task``).
        plural: the plural when it is not ``noun + "s"``.

    Returns:
        ``"{n} {noun}"`` for exactly 1, else ``"{n} {plural}"``.
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def clipped(text: str, limit: int = 3 * EXCERPT_CHARS) -> str:
    """Return a one-line message part (a pydantic message, a field path) of at most about ``limit`` characters.

    A message may quote a whole value (``unknown user move 'xxx...'``): a longer text keeps its first two thirds
    and its last third (where a message usually says what is allowed), around ``... (N characters cut) ...``.

    Args:
        text: the text (already escaped where needed).
        limit: characters kept.

    Returns:
        ``text`` itself when it is short enough.
    """
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} ... ({len(text) - limit:,} characters cut) ... {text[len(text) - (limit - head):]}"


MAX_ARGUMENT_DEPTH = 64
"""The deepest nesting of a tool call's arguments that is admitted (a dict or list in a dict is depth 2)."""

MAX_INT_BITS = 10_000
"""The largest integer admitted in a tool call's arguments, in bits (about 3,000 decimal digits)."""

def _key_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a JSON object's key as a record writes it, or None (its kind otherwise, see below)."""
    if isinstance(key, float) and not math.isfinite(key):
        return "a non-finite number as a key"
    if isinstance(key, int) and not isinstance(key, bool) and key.bit_length() > MAX_INT_BITS:
        return f"an integer key of more than {MAX_INT_BITS} bits"
    return None


def _key_kind(key: Any) -> str:
    """The kind of a key as ``json.dumps(sort_keys=True)`` sorts it: text, number (bools too), null, or other."""
    if isinstance(key, str):
        return "text"
    if isinstance(key, int | float):
        return "number"
    return "null" if key is None else "other"


def refused_path(value: Any, non_finite: bool = True, root: str = "(arguments)") -> tuple[str, str] | None:
    """Return where and why a tool call's arguments cannot be admitted, or None when they can.

    Refused: a non-finite number; nesting deeper than :data:`MAX_ARGUMENT_DEPTH`; an ``int`` of more than
    :data:`MAX_INT_BITS` bits; a set (JSON has none); an object whose keys are not all text, all numbers (bools
    included) or one null, as ``json.dumps(sort_keys=True)`` needs, or hold a non-finite number or a huge integer.
    Walked without recursion, so a value nested 100,000 deep is answered, not a ``RecursionError``.

    Args:
        value: the arguments (parsed JSON, or what a Python agent passed).
        non_finite: False: a non-finite number (not a key) is not a refusal (metadata records it as None, see
            :func:`admit_metadata`).
        root: how the path names ``value`` itself.

    Returns:
        ``(path, what)``: the first offending place, ``key.sub[2]`` style (lone surrogates in keys replaced, so the
        path can be recorded), and what is wrong there (``a non-finite number``, ...); or None.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        v, p, depth = stack.pop()
        what: str | None = None
        if isinstance(v, float):
            if non_finite and not math.isfinite(v):
                what = "a non-finite number"
        elif isinstance(v, int) and not isinstance(v, bool):
            if v.bit_length() > MAX_INT_BITS:
                what = f"an integer of more than {MAX_INT_BITS} bits"
        elif isinstance(v, set | frozenset):
            what = "a set (JSON has none)"
        elif isinstance(v, Mapping | list | tuple):
            if depth > MAX_ARGUMENT_DEPTH:
                what = f"nesting deeper than {MAX_ARGUMENT_DEPTH} levels"
            elif isinstance(v, Mapping):
                keys = list(v)
                what = next((w for w in map(_key_problem, keys) if w is not None), None)
                kinds = {_key_kind(k) for k in keys}
                if what is None and (len(kinds) > 1 or "other" in kinds):
                    what = "keys that are not all text, all numbers or one null"
                if what is None:
                    stack.extend((item, f"{p}.{k}" if p else str(k), depth + 1)
                                 for k, item in reversed(list(v.items())))
            else:
                stack.extend((item, f"{p}[{i}]", depth + 1) for i, item in reversed(list(enumerate(v))))
        if what is not None:
            return admit_text(p)[0] or root, what
    return None


def admit_metadata(actor: Any, who: str, notes: list[str]) -> dict[str, Any]:
    """A copy of an actor's ``metadata`` dict made storable, or ``{}`` without one (or with one no record can hold).

    Metadata that is neither a dict nor None (``[1, 2]``, ``"x"``) is not recorded, with a note naming its type.
    Lone surrogates are replaced and non-finite numbers become None (:func:`admit_value`); metadata that
    :func:`refused_path` refuses for another reason (nesting deeper than :data:`MAX_ARGUMENT_DEPTH`, a huge
    integer, mixed keys) is not recorded at all. Each change is a line of ``notes``.

    Args:
        actor: the agent or the user (its ``metadata`` attribute is read, if a dict).
        who: ``agent`` or ``user``, for the notes.
        notes: the trajectory's notes, appended to.

    Returns:
        The metadata to record (a new dict).
    """
    try:
        metadata = getattr(actor, "metadata", None)
    except Exception as e:  # noqa: BLE001 - the actor's own code (a property): recorded as a note, never raised
        notes.append(f"{who} metadata: reading it raised {type(e).__name__}: not recorded")
        return {}
    if metadata is None:
        return {}  # no metadata: nothing to say
    if not isinstance(metadata, dict):
        notes.append(f"{who} metadata: a {shown(type(metadata).__name__, one_line=True)}, not a dict: not recorded")
        return {}
    bad = refused_path(metadata, non_finite=False, root="(metadata)")
    if bad is not None:
        notes.append(f"{who} metadata: {bad[1]} at {bad[0]}: not recorded")
        return {}
    clean, surrogates, dropped = admit_value(dict(metadata))
    if surrogates or dropped:
        notes.append(f"{who} metadata: {surrogates} lone surrogate(s) replaced with U+FFFD, {dropped} non-finite "
                     "number(s) recorded as null")
    return dict(clean)


def _shown_arguments(arguments: Any, what: str) -> str:
    """The text kept in ``raw_arguments`` of refused arguments: their JSON (``NaN`` as such), if it can be written."""
    try:
        return json.dumps(arguments, allow_nan=True, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return f"(arguments not shown: {what})"


LONE_SURROGATE = ("holds a lone surrogate (half of a UTF-16 pair, e.g. the escape \\ud83d alone): write the whole "
                  "character, or both escapes of its pair")
"""What a file's error message says of a string that :func:`lone_surrogate_path` found."""


def lone_surrogate_path(data: Any) -> tuple[str, str] | None:
    r"""Return where decoded JSON holds a string (or key) with a lone surrogate, and that string; or None.

    ``json.loads`` turns an escape like ``\\ud83d`` without its pair into a lone surrogate, which no UTF-8 file,
    store or terminal can take: a task's texts with one would end the run when its trials are recorded.

    Args:
        data: decoded JSON (dicts, lists, strings, numbers, booleans, None).

    Returns:
        ``(path, text)``: the first such place, ``tasks[3].required_outputs[0]`` style (``[3].id`` in a list), and
        its string; or None.
    """
    stack: list[tuple[Any, str]] = [(data, "(document)")]
    while stack:  # iterative: deep JSON must not raise RecursionError
        v, path = stack.pop()
        if isinstance(v, str):
            if not v.isascii() and _SURROGATE.search(v):
                return path, v
        elif isinstance(v, dict):
            for k, item in reversed(list(v.items())):
                key_path = f"{path}.{k}" if path != "(document)" else str(k)
                if isinstance(k, str) and not k.isascii() and _SURROGATE.search(k):
                    return key_path.encode("ascii", "backslashreplace").decode("ascii"), k  # the key, escaped
                stack.append((item, key_path))
        elif isinstance(v, list):
            stack.extend((item, f"{path}[{i}]" if path != "(document)" else f"[{i}]")
                         for i, item in reversed(list(enumerate(v))))
    return None


MAX_COST_USD = 1e9
"""A reported cost above this (USD) is not a cost but garbage (and sums of such overflow to infinity): unknown."""


def known_cost(value: Any) -> float | None:
    """Return a cost in USD when it is a number in [0, :data:`MAX_COST_USD`], else None (unknown: never $0, NaN).

    Args:
        value: a reported cost (any type).

    Returns:
        The cost as a float, or None.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= MAX_COST_USD else None  # float() of a 400-digit int overflows
    return value if 0 <= value <= MAX_COST_USD else None  # False for NaN and the infinities


def admit_value(value: Any) -> tuple[Any, int, int]:
    """Return a JSON-ish value made storable: lone surrogates replaced (keys too), non-finite numbers None.

    Args:
        value: dicts (string keys), lists, tuples, strings, numbers, booleans, None; other values are kept as
            they are.

    Returns:
        ``(value, surrogates replaced, non-finite numbers dropped)``; ``value`` itself (the same object) when
        nothing needed a change.
    """
    if isinstance(value, str):
        text, n = admit_text(value)
        return text, n, 0
    if isinstance(value, float):
        return (value, 0, 0) if math.isfinite(value) else (None, 0, 1)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        surrogates = dropped = 0
        for k, v in value.items():
            key, nk = admit_text(k) if isinstance(k, str) else (k, 0)
            item, ns, nd = admit_value(v)
            out[key] = item
            surrogates, dropped = surrogates + nk + ns, dropped + nd
        return (value, 0, 0) if not (surrogates or dropped) else (out, surrogates, dropped)
    if isinstance(value, list | tuple):
        items = [admit_value(v) for v in value]
        surrogates = sum(i[1] for i in items)
        dropped = sum(i[2] for i in items)
        if not (surrogates or dropped):
            return value, 0, 0
        return [i[0] for i in items], surrogates, dropped
    return value, 0, 0


def _plain(value: Any, depth: int = 0) -> bool:
    """True when a JSON-ish value surely needs no change: ASCII strings and keys, finite floats, shallow nesting.

    False means "look closer" (:func:`refused_path`, :func:`admit_value`), not that anything is wrong.
    """
    kind = type(value)
    if kind is str:
        return value.isascii()
    if kind is float:
        return math.isfinite(value)
    if kind is int:
        return value.bit_length() <= MAX_INT_BITS
    if kind is bool or value is None:
        return True
    if depth > 8:
        return False
    if kind is dict:
        return _plain_dict(value, depth + 1)
    if kind is list or kind is tuple:
        return _plain_items(value, depth + 1)
    return False


def _plain_dict(value: dict[Any, Any], depth: int) -> bool:
    """:func:`_plain` of a dict: ASCII string keys, plain values (at ``depth``)."""
    for k in value:
        if type(k) is not str or not k.isascii():
            return False
    return _plain_items(value.values(), depth)


def _plain_items(items: Iterable[Any], depth: int) -> bool:
    """:func:`_plain` of each item (at ``depth``), the common leaves (ASCII text, ints, None) checked here."""
    for v in items:
        kind = type(v)
        if kind is str:
            if not v.isascii():
                return False
        elif not ((kind is int and v.bit_length() <= MAX_INT_BITS) or kind is bool or v is None
                  or _plain(v, depth)):
            return False
    return True


def _plain_call(call: ToolCall) -> bool:
    """True when :func:`admit_call` would change nothing and note nothing (ASCII text, plain finite arguments).

    A dict of arguments is checked here, key and value in one pass (:func:`_plain_dict` of it, inlined: it runs
    for every tool call).
    """
    raw = call.raw_arguments
    arguments = call.arguments
    if not (call.name.isascii() and call.id.isascii() and (raw is None or raw.isascii())):
        return False
    if arguments is None:
        return True
    if type(arguments) is not dict:
        return _plain(arguments)
    for k, v in arguments.items():
        if type(k) is not str or not k.isascii():
            return False
        kind = type(v)
        if kind is str:
            if not v.isascii():
                return False
        elif not ((kind is int and v.bit_length() <= MAX_INT_BITS) or kind is bool or v is None or _plain(v, 1)):
            return False
    return True


def admit_call(call: ToolCall, where: str, notes: list[str]) -> ToolCall:
    """Return one tool call made safe (see the module's rules); what changed is appended to ``notes``.

    Args:
        call: a tool call from an agent (natively, over MCP or through an adapter).
        where: who made it, for the notes (e.g. ``agent``).
        notes: the trajectory's notes, appended to.

    Returns:
        The call, or a copy with surrogates replaced and non-finite arguments refused (``arguments`` None, the
        text in ``raw_arguments``: the dispatch answers ``invalid_arguments``).
    """
    if _plain_call(call):
        return call
    name, n_name = admit_text(call.name)
    call_id, n_id = admit_text(call.id)
    raw, n_raw = (None, 0) if call.raw_arguments is None else admit_text(call.raw_arguments)
    arguments: dict[str, Any] | None = call.arguments
    n_args = 0
    if arguments is not None:
        bad = refused_path(arguments)
        if bad is not None:
            raw, n_raw = admit_text(_shown_arguments(arguments, bad[1]))
            notes.append(f"{where}: tool call {name!r} has {bad[1]} at {bad[0]}: refused as invalid_arguments")
            arguments = None
        else:
            arguments, n_args, _ = admit_value(arguments)
    replaced = n_name + n_id + n_raw + n_args
    if replaced:
        notes.append(f"{where}: tool call {name!r}: {replaced} lone surrogate(s) replaced with U+FFFD")
    if not replaced and arguments is call.arguments:
        return call
    return call.model_copy(update={"name": name, "id": call_id, "arguments": arguments, "raw_arguments": raw})


def admit_message(message: Message, where: str, notes: list[str]) -> Message:
    """Return a message made safe: lone surrogates replaced everywhere, non-finite arguments refused.

    Args:
        message: a message from an agent or a user.
        where: who and when, for the notes (e.g. ``agent step 3``).
        notes: what was changed is appended here, one line each.

    Returns:
        ``message`` itself when nothing needed a change, else a changed copy.
    """
    content, n_content = (None, 0) if message.content is None else admit_text(message.content)
    name, n_name = (None, 0) if message.name is None else admit_text(message.name)
    call_id, n_id = (None, 0) if message.tool_call_id is None else admit_text(message.tool_call_id)
    calls = [admit_call(c, where, notes) for c in message.tool_calls]
    replaced = n_content + n_name + n_id
    if replaced:
        notes.append(f"{where}: message text: {replaced} lone surrogate(s) replaced with U+FFFD")
    if not replaced and all(a is b for a, b in zip(calls, message.tool_calls, strict=True)):
        return message
    return message.model_copy(update={"content": content, "name": name, "tool_call_id": call_id,
                                      "tool_calls": calls})


def admit_usage(usage: Usage, where: str, notes: list[str]) -> Usage:
    """Return a usage whose cost is known (finite, >= 0) or None, and whose counts are >= 0.

    Args:
        usage: a reported usage.
        where: who and when, for the notes.
        notes: what was changed is appended here.

    Returns:
        ``usage`` itself when nothing needed a change, else a changed copy.
    """
    if _plain_usage(usage):
        return usage  # the common case, checked without the loop below
    update: dict[str, Any] = {}
    if usage.cost_usd is not None and known_cost(usage.cost_usd) is None:
        notes.append(f"{where}: cost {usage.cost_usd!r} is not an amount in [0, {MAX_COST_USD:g}] USD: recorded as "
                     "unknown")
        update["cost_usd"] = None
    for field in ("prompt_tokens", "completion_tokens", "calls", "attempts"):
        if getattr(usage, field) < 0:
            notes.append(f"{where}: {field} {getattr(usage, field)} < 0: recorded as 0")
            update[field] = 0
    return usage.model_copy(update=update) if update else usage


def _plain_usage(usage: Usage) -> bool:
    """True when :func:`admit_usage` would change nothing: a finite cost in range (or None), counts >= 0."""
    cost = usage.cost_usd
    return ((cost is None or (type(cost) is float and 0.0 <= cost <= MAX_COST_USD)) and usage.prompt_tokens >= 0
            and usage.completion_tokens >= 0 and usage.calls >= 0 and usage.attempts >= 0)


def _plain_text(text: str | None) -> bool:
    """True when :func:`admit_text` would change nothing (None, ASCII, or no lone surrogate)."""
    return text is None or text.isascii() or _SURROGATE.search(text) is None


def plain_message(message: Message) -> bool:
    """True when :func:`admit_message` would change nothing and note nothing (cheaply: ASCII text is plain)."""
    content, name, call_id = message.content, message.name, message.tool_call_id
    if not ((content is None or content.isascii() or _SURROGATE.search(content) is None)
            and (name is None or name.isascii() or _SURROGATE.search(name) is None)
            and (call_id is None or call_id.isascii() or _SURROGATE.search(call_id) is None)):
        return False
    for call in message.tool_calls:
        if not _plain_call(call):
            return False
    return True


def _admit_error(error: str | None) -> str | None:
    return None if error is None else bounded(error)


def plain_agent_turn(turn: AgentTurn) -> bool:
    """True when :func:`admit_agent_turn` returns ``turn`` itself and no notes (the common case), checked cheaply.

    Each check is the one its ``admit_*`` starts with: no error text, a plain usage, plain message text and calls.
    """
    return turn.error is None and _plain_usage(turn.usage) and plain_message(turn.message)


def plain_user_turn(turn: UserTurn) -> bool:
    """True when :func:`admit_user_turn` returns ``turn`` itself and no notes (the common case), checked cheaply."""
    calls = turn.tool_calls
    return (turn.error is None and _plain_text(turn.content) and _plain_usage(turn.usage)
            and (not calls or all(_plain_call(c) for c in calls)))


def admit_agent_turn(turn: AgentTurn, where: str = "agent") -> tuple[AgentTurn, list[str]]:
    """Return an agent's turn made safe to enter a trial (the module's rules), and what was changed.

    Args:
        turn: what ``agent.step`` returned.
        where: who and when, for the notes (e.g. ``agent step 3``).

    Returns:
        ``(turn, notes)``: ``turn`` itself and no notes when nothing needed a change.
    """
    if plain_agent_turn(turn):
        return turn, []  # the common case: nothing to change
    notes: list[str] = []
    message = admit_message(turn.message, where, notes)
    usage = admit_usage(turn.usage, where, notes)
    error = _admit_error(turn.error)
    if message is turn.message and usage is turn.usage and error == turn.error:
        return turn, notes
    return turn.model_copy(update={"message": message, "usage": usage, "error": error}), notes


def admit_user_turn(turn: UserTurn, where: str = "user") -> tuple[UserTurn, list[str]]:
    """Return a simulated user's turn made safe to enter a trial (the module's rules), and what was changed.

    Args:
        turn: what ``user.reply`` returned.
        where: who and when, for the notes (e.g. ``user turn 2``).

    Returns:
        ``(turn, notes)``: ``turn`` itself and no notes when nothing needed a change.
    """
    if plain_user_turn(turn):
        return turn, []  # the common case: nothing to change
    notes: list[str] = []
    content, n = admit_text(turn.content)
    if n:
        notes.append(f"{where}: message text: {n} lone surrogate(s) replaced with U+FFFD")
    calls = [admit_call(c, where, notes) for c in turn.tool_calls]
    usage = admit_usage(turn.usage, where, notes)
    error = _admit_error(turn.error)
    if not notes and error == turn.error:
        return turn, notes
    return turn.model_copy(update={"content": content, "tool_calls": calls, "usage": usage, "error": error}), notes

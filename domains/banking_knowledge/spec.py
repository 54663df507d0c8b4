"""The shape of banking_knowledge's discoverable tools and τ³'s answer layouts for them.

A :class:`Discoverable` declares a tool's parameters, whether it changes records, its description and its effect;
:func:`call` runs one with checked arguments. The answer helpers give τ³'s layouts (facts of τ³ 1.0.1's answers,
recorded by ``scripts/tau2-reference``): a title, a blank line, ``Executed: NAME``, then the body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from domains.banking_knowledge.records import listing, new_id
from simulator.world.kit import ToolContext, ToolError

__all__ = ["TEXTS", "Crash", "Discoverable", "TypeMismatch", "argument_error", "call", "declare", "dispute_id",
           "executed", "found", "given", "numeric", "parse_arguments", "text_value"]

Handler = Callable[..., str]

TEXTS: Mapping[str, Mapping[str, Mapping[str, Any]]] = json.loads(
    (Path(__file__).with_name("tool_texts.json")).read_text(encoding="utf-8"))
"""τ³'s descriptions of the discoverable tools its gold actions unlock or give (see :meth:`Discoverable.info`)."""


class Crash(ToolError):
    """An exception other than ``TypeError`` that τ³'s tool method raises on a value of the wrong JSON type.

    τ³ answers it as a failed call (``Error: MESSAGE``, flagged) and does not log the call; the message is
    Python's, as τ³ shows it. tausim's failed call changes no record, where τ³ keeps what the method wrote before
    it failed (a credit card dispute whose partial refund amount is text).
    """


class TypeMismatch(ToolError):
    """A ``TypeError`` that τ³'s tool method raises on a value of the wrong JSON type.

    τ³ answers ``Error: Invalid arguments: MESSAGE`` as text (unflagged) and does not log the call.
    """


def text_value(value: Any) -> str:
    """A value τ³ treats as text (``value.isdigit()``), or :class:`Crash` as Python words it for another type."""
    if not isinstance(value, str):
        raise Crash(f"'{type(value).__name__}' object has no attribute 'isdigit'")
    return value


def numeric(value: Any, op: str = "<=") -> float:
    """A value τ³ compares with a number as it is (``value <= 0``), or :class:`TypeMismatch` for another type."""
    if not isinstance(value, (int, float)):  # a bool compares as the number it is
        raise TypeMismatch(f"'{op}' not supported between instances of '{type(value).__name__}' and 'int'")
    return float(value)


@dataclass(frozen=True)
class Discoverable:
    """One discoverable tool.

    Attributes:
        params: parameter name -> JSON type (``string``, ``number``, ``integer``, ``boolean``), in order.
        optional: the parameters that may be left out.
        writes: the tool changes records (its calls are logged, see the module docstring of ``tools``).
        description: what it does.
        run: ``run(ctx, **arguments) -> text``; raises :class:`ToolError` on a recoverable mistake.
    """

    params: Mapping[str, str]
    optional: frozenset[str]
    writes: bool
    description: str
    run: Handler

    def info(self, name: str, side: str = "agent") -> tuple[str, str]:
        """The tool as shown when unlocked (``side="agent"``) or given (``"user"``): ``(description, card)``.

        The card is ``Tool: NAME``, ``Description: ...`` and ``Parameters:`` with one ``  - NAME: TYPE (required|
        optional) - DESCRIPTION`` line each (τ³'s layout). Descriptions are τ³'s where its answers recorded them
        (``tool_texts.json``, written by ``scripts/banking-tool-texts``), else tausim's own.
        """
        text = TEXTS.get(side, {}).get(name, {})
        description = str(text.get("description", self.description))
        params = [tuple(p) for p in text.get("params", [])] or [
            (p, t, p not in self.optional, "") for p, t in self.params.items()]
        lines = "\n".join(f"  - {p}: {t} ({'required' if req else 'optional'}) - {d}" for p, t, req, d in params)
        return description, f"Tool: {name}\nDescription: {description}\nParameters:\n{lines or '  (no parameters)'}"


def argument_error(tool: Discoverable, name: str, arguments: Mapping[str, Any]) -> str | None:
    """τ³'s answer to an agent tool called with arguments its function does not take, or None when they fit.

    τ³ calls the tool's Python method with the arguments and answers the ``TypeError`` as text (not flagged as an
    error, and the call is not logged): an unexpected keyword first, else the missing positional arguments.
    """
    where = f"Error: Invalid arguments: KnowledgeTools.{name}()"
    unexpected = [a for a in arguments if a not in tool.params]
    if unexpected:
        return f"{where} got an unexpected keyword argument '{unexpected[0]}'"
    missing = [f"'{p}'" for p in tool.params if p not in arguments and p not in tool.optional]
    if not missing:
        return None
    listed = missing[0] if len(missing) == 1 else (
        f"{missing[0]} and {missing[1]}" if len(missing) == 2 else f"{', '.join(missing[:-1])}, and {missing[-1]}")
    plural = "argument" if len(missing) == 1 else "arguments"
    return f"{where} missing {len(missing)} required positional {plural}: {listed}"


def call(tool: Discoverable, name: str, ctx: ToolContext, arguments: Mapping[str, Any]) -> str:
    """Run a discoverable tool with checked arguments.

    Returns:
        The tool's answer; a mistake the tool itself finds (an unknown record, a wrong status) is answered as
        ``Error: ...`` text, as τ³'s tools answer (the call still counts as made: see ``tools``).

    Raises:
        ToolError: a missing or unexpected argument (τ³ refuses such a call before running the tool).
        Crash, TypeMismatch: a value of the wrong type where τ³'s method fails (the caller answers as τ³ does).
    """
    unexpected = [a for a in arguments if a not in tool.params]
    if unexpected:
        raise ToolError(f"Invalid arguments for {name}: unexpected parameter {unexpected[0]!r}")
    missing = [p for p in tool.params if p not in arguments and p not in tool.optional]
    if missing:
        raise ToolError(f"Invalid arguments for {name}: missing parameter {missing[0]!r}")
    try:
        return tool.run(ctx, **arguments)
    except (Crash, TypeMismatch):
        raise
    except ToolError as e:
        return f"Error: {e}"


def declare(params: str, description: str, *, writes: bool = True, optional: str = ""
          ) -> Callable[[Handler], Discoverable]:
    """Declare a tool: ``params`` as ``"name:type name:type"``."""
    spec = dict(p.split(":") for p in params.split())

    def deco(fn: Handler) -> Discoverable:
        return Discoverable(spec, frozenset(optional.split()), writes, description, fn)

    return deco


# ------------------------------------------------------------------------------------------------- reads
def executed(title: str, name: str, *lines: str) -> str:
    """τ³'s answer layout for a discoverable tool: its title, a blank line, ``Executed: NAME``, then the body."""
    return "\n".join([title, "", f"Executed: {name}", *lines])


def found(ctx: ToolContext, table: str, none: str, **match: Any) -> str:
    """A listing, or ``none`` after a blank line when nothing matches."""
    found = listing(ctx, table, **match)
    return "\n" + none if found.startswith("No records found") else found



def given(title: str, name: str, **arguments: Any) -> str:
    """τ³'s answer head for a user tool: title, ``Executed: NAME``, the arguments as indented JSON, a newline."""
    return executed(title, name, f"Arguments: {json.dumps(arguments, indent=2)}\n")


def dispute_id(user_id: str, transaction_id: str) -> str:
    """A dispute's id: ``dsp_`` and 12 hex digits of ``dispute:USER:TRANSACTION``."""
    return "dsp_" + new_id(f"dispute:{user_id}:{transaction_id}", 12)


def parse_arguments(text: str) -> dict[str, Any]:
    """Parse a discoverable call's ``arguments`` (a JSON object as text; numbers read as floats, as τ³ does).

    Raises:
        ToolError: not JSON, or not an object.
    """
    try:
        args = json.loads(text or "{}", parse_int=float)
    except ValueError as e:
        raise ToolError(f"Invalid JSON in arguments: {e}") from e
    if not isinstance(args, dict):
        raise ToolError("arguments must be a JSON object")
    return args

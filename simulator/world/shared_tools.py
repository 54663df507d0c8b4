"""The tools every tau-bench style domain shares, with tau-bench semantics: calculate, think, transfer to a human.

A domain adds them to its toolbox as they are (``Toolbox([..., calculate, think, transfer_to_human_agents])``).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from simulator.errors import ToolError
from simulator.world.tools import ToolContext, tool

__all__ = ["calculate", "flat_text", "think", "transfer_to_human_agents"]


_MAX_EXPRESSION = 2000
_EXPRESSION_CHARS = frozenset("0123456789+-*/(). ")
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


_NUMBER = r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[1-9][0-9]*|0+)"
"""A plain decimal literal as Python reads one: a float with a point, or an int without leading zeros (or zeros).

ASCII digits only: ``int`` and ``float`` read other scripts' digits (``"٣"`` is 3) but Python's parser refuses them,
so such a text takes the parser and gets its syntax error."""

_FLAT = re.compile(rf"-?{_NUMBER}(?:[-+*/]-?{_NUMBER})*")
"""A flat expression, its spaces taken out: plain decimal numbers, each with at most one leading minus, joined by
+ - * / (e.g. the sums and differences of prices agents ask for). Every such text is valid Python arithmetic;
others take the parser."""

_SPLIT_NUMBER = re.compile(r"[0-9.] +[0-9.]")
"""Spaces between two characters of numbers (``1 2``, ``5 .``): Python reads no number there, so no flat path."""

_FIRST = re.compile(rf"-?{_NUMBER}")
_NEXT = re.compile(rf"([-+*/])(-?{_NUMBER})")


def flat_text(expression: str) -> str | None:
    """Return ``expression`` without its spaces when it is flat (:data:`_FLAT`), else None.

    Spaces are taken out only where Python ignores them (around operators, at either end; ``- 5`` is ``-5`` to
    Python too); a space inside a number, or any other whitespace, leaves the text to the parser.
    """
    if " " in expression:
        if _SPLIT_NUMBER.search(expression) is not None:
            return None
        expression = expression.replace(" ", "")
    return expression if _FLAT.fullmatch(expression) is not None else None


def _flat(expression: str) -> int | float | None:
    """Evaluate a flat expression (:data:`_FLAT`) as Python evaluates it; None for any other expression.

    Its spaces are taken out first (:func:`flat_text`). Python's grammar
    gives ``*`` and ``/`` precedence over ``+`` and ``-``, all left-associative, and a leading minus binds to its
    number (``-2 * 3`` is ``(-2) * 3``, ``2 - -3`` is ``2 - (-3)``): each term (a chain of ``*`` and ``/``) is
    computed left to right, then added to or subtracted from the terms before it, the order in which
    :func:`_arithmetic` applies the same operators to the same ``int``/``float`` values of the parsed tree, so the
    value, or the exception raised, is the same.
    """
    compact = flat_text(expression)
    if compact is None:
        return None
    expression = compact
    first = _FIRST.match(expression)
    assert first is not None  # the expression is flat
    total: Any = None
    pending = "+"
    term: Any = _number(first.group(0))
    at = first.end()
    for m in _NEXT.finditer(expression, at):
        if m.start() != at:  # never for a flat expression: its pairs follow each other
            return None
        at = m.end()
        op, value = m.group(1), _number(m.group(2))
        if op == "*":
            term = term * value
        elif op == "/":
            term = term / value
        else:
            total = term if total is None else (total + term if pending == "+" else total - term)
            pending, term = op, value
    return term if total is None else (total + term if pending == "+" else total - term)  # type: ignore[no-any-return]


def _number(text: str) -> int | float:
    """A literal of :data:`_NUMBER`, with its optional minus, as Python reads it (``-`` applied after reading)."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    value: int | float = float(digits) if "." in digits else int(digits)
    return -value if negative else value


def _arithmetic(root: ast.AST) -> int | float:
    """Evaluate a parsed expression made only of numbers, + - * /, unary signs and parentheses.

    Iterative (an explicit stack), so a long flat sum cannot exhaust Python's recursion limit.
    """
    values: list[Any] = []
    stack: list[tuple[ast.AST, bool]] = [(root, False)]
    while stack:
        node, operands_done = stack.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            values.append(node.value)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if operands_done:
                right = values.pop()
                values.append(_BINARY[type(node.op)](values.pop(), right))
            else:
                stack += [(node, True), (node.right, False), (node.left, False)]
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            if operands_done:
                values.append(_UNARY[type(node.op)](values.pop()))
            else:
                stack += [(node, True), (node.operand, False)]
        else:
            raise ToolError("only numbers, + - * /, parentheses and spaces are allowed")
    (value,) = values
    return value  # type: ignore[no-any-return]


@tool("read", memo=True)
def calculate(ctx: ToolContext, expression: str) -> str:
    """Calculate the result of an arithmetic expression, rounded to 2 decimals.

    Args:
        ctx: the trial's tool context.
        expression: The expression, such as '2 * (3 + 4) / 3'. Only numbers, the operators + - * /,
            parentheses and spaces are allowed.
    """
    if not set(expression) <= _EXPRESSION_CHARS:
        bad = sorted(set(expression) - _EXPRESSION_CHARS)
        raise ToolError(f"invalid characters in expression: {''.join(bad)!r}")
    if len(expression) > _MAX_EXPRESSION:
        raise ToolError(f"expression longer than {_MAX_EXPRESSION} characters")
    try:
        flat = _flat(expression)
        value = float(_arithmetic(ast.parse(expression.strip(), mode="eval").body) if flat is None else flat)
    except ToolError:
        raise
    except ZeroDivisionError as e:
        raise ToolError("division by zero") from e
    except (SyntaxError, ValueError) as e:
        raise ToolError(f"not a valid arithmetic expression: {expression!r}") from e
    except (OverflowError, RecursionError, MemoryError) as e:
        raise ToolError("expression too large to evaluate") from e
    if not math.isfinite(value):
        raise ToolError("expression too large to evaluate")
    return str(round(value, 2))


@tool("read", memo=True)
def think(ctx: ToolContext, thought: str) -> str:
    """Think about something: changes nothing and returns nothing; use it for complex reasoning.

    Args:
        ctx: the trial's tool context.
        thought: A thought to think about.
    """
    return ""


@tool("read", ends_conversation=True)
def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the issue; this ends the conversation.

    Only when the user explicitly asks for a human agent, or when the request cannot be handled with the
    available tools within the policy.

    Args:
        ctx: the trial's tool context.
        summary: A summary of the user's issue.
    """
    return "Transfer successful"

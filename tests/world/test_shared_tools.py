"""The shared calculate tool: its flat-expression path answers exactly as Python's parser and evaluation would."""

from __future__ import annotations

import ast
import math
import random

import pytest

from simulator.errors import ToolError
from simulator.world.shared_tools import _arithmetic, _flat, calculate, flat_text

_CALCULATE = calculate.tool_spec.fn  # type: ignore[attr-defined]


def _by_parser(expression: str) -> str:
    """What the tool answered before the flat path: Python's parser, the tree walked (``Error`` kinds named)."""
    try:
        value = float(_arithmetic(ast.parse(expression.strip(), mode="eval").body))
    except ZeroDivisionError:
        return "error: division by zero"
    except (SyntaxError, ValueError):
        return "error: syntax"
    except OverflowError:
        return "error: too large"
    return str(round(value, 2)) if math.isfinite(value) else "error: too large"


def _by_tool(expression: str) -> str:
    try:
        return str(_CALCULATE(None, expression))
    except ToolError as e:
        text = str(e)
        return ("error: division by zero" if "division" in text else "error: too large" if "large" in text
                else "error: syntax")


@pytest.mark.parametrize(("expression", "expected"), [
    ("3 -5", "-2.0"), ("3--5", "8.0"), ("2 - -3", "5.0"), ("-2 * 3", "-6.0"), ("1+2*3-4/5*6", "2.2"),
    ("00", "0.0"), ("007.25 + .75", "8.0"), ("5. / 2", "2.5"), ("1319.43 - 302.67 + 271.89", "1288.65"),
    ("- 5", "-5.0"), (" 2 -  - 3 ", "5.0"),
])
def test_flat_expressions_by_hand(expression: str, expected: str) -> None:
    assert _flat(expression) is not None  # the flat path answers these
    assert _by_tool(expression) == expected


@pytest.mark.parametrize("expression", ["007", "1 2", ".", "1.5.3", "2**3", "3 // 2", "(1)", "--5", "", "1 +",
                                        "1 .5", "5 . 2", "1\t+ 2", "1_000 + 1"])
def test_other_texts_take_the_parser(expression: str) -> None:
    assert _flat(expression) is None


@pytest.mark.parametrize("expression", ["\u0663+1", "1+\u0663", "\uff11\uff12 * 2", "\u0967.5 - 1", "2 / \u09e8"])
def test_digits_of_other_scripts_are_refused_as_the_parser_refuses_them(expression: str) -> None:
    """``int("\u0663")`` is 3, but Python's parser refuses Arabic-Indic, full-width or Devanagari digits."""
    assert _flat(expression) is None
    assert _by_tool(expression) == _by_parser(expression) == "error: syntax"


def test_the_flat_path_answers_as_the_parser_on_random_expressions() -> None:
    """Seeded random texts over the tool's alphabet, overflow and division by zero included (about 8k flat ones)."""
    rng = random.Random(20261206)
    atoms = ["0", "00", "007", "1", "12", "3.5", ".5", "5.", "0.0", "007.25", "99999999999999999999", "1" * 400,
             "9" * 330 + ".0", "-", " "]
    ops = ["+", "-", "*", "/", " + ", " - ", " * ", " / ", "--", "- -", "**", "//", " "]
    flat = 0
    for _ in range(30_000):
        parts = [rng.choice(atoms)]
        for _ in range(rng.randint(0, 6)):
            parts += [rng.choice(ops), rng.choice(atoms)]
        text = ("-" if rng.random() < 0.1 else "") + (" " if rng.random() < 0.2 else "") + "".join(parts)
        if flat_text(text) is None:
            continue
        flat += 1
        assert _by_tool(text) == _by_parser(text), text
    assert flat > 6_000

"""A structural check of regexes for super-linear backtracking (run as ``python -m tests._support.regex_lint``).

:func:`text_regexes` finds every regex literal of the engine, the domains and the personas (the pattern argument of
``re.compile``/``search``/``match``/``fullmatch``/``findall``/``finditer``/``sub``/``split``, f-string and ``+``
parts that are not literal replaced by a word, ``x``): the one list of text-facing regexes. :func:`findings`
parses a pattern with ``re._parser`` and reports the three shapes whose matching time grows faster than the text:

* ``nested``: an unbounded repeat inside an unbounded repeat over overlapping characters (``(\\w+\\s?)+``);
* ``adjacent``: two unbounded backtracking repeats over overlapping characters with only optional items between
  them (``\\s*\\**\\s*``): a run of those characters is split every way before the match fails;
* ``rescan``: an unbounded repeat, followed by something that can fail, whose characters include the pattern's
  first characters and a character that can precede a match start (``\\bfrom\\b[^.]*\\bto\\b`` on "from from
  from ...", ``\\w+@`` on a long word): the run is rescanned from each start position inside it. A start guard
  (``\\b``, ``(?<![...])``, ``(?<!\\S)``, ``^`` without MULTILINE) limits the start positions.

Possessive repeats and atomic groups (``*+``, ``(?>...)``) never backtrack (no ``nested``/``adjacent``); bounded
repeats (``{0,40}``) are linear. The characters of a node are computed on a sample alphabet (ASCII and a few
others), which is enough to tell sets apart.
"""

from __future__ import annotations

import ast
import re
import string
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from re import _constants as C  # noqa: N812
from re import _parser as P  # noqa: N812
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("simulator", "domains", "personas")
RE_FUNCTIONS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
ALPHABET = frozenset(string.printable + "\u00a0\u2019\u2022\u00e9\u00c9\u4e2d")
WORD = frozenset(c for c in ALPHABET if re.match(r"\w", c))


@dataclass(frozen=True)
class Regex:
    """A regex literal found in the source."""

    where: str
    """``path:line``."""
    pattern: str
    flags: int
    anchored: bool = False
    """Used with ``match``/``fullmatch`` only: one start position."""


def _literal(node: ast.expr) -> str | None:
    """The pattern text of an argument: literal parts kept, others replaced by ``x``; None when not a pattern."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "x") + (right if right is not None else "x")
    return None


def _flags(node: ast.Call) -> int:
    """The ``re.X`` flags named among the call's other arguments (``flags=`` or positional)."""
    flags = 0
    for arg in [*node.args[1:], *(k.value for k in node.keywords)]:
        for name in ast.walk(arg):
            if isinstance(name, ast.Attribute) and isinstance(name.value, ast.Name) and name.value.id == "re" \
                    and name.attr in re.RegexFlag.__members__:
                flags |= int(re.RegexFlag[name.attr])
    return flags


ANCHORED_METHODS = {"match", "fullmatch"}


def _uses(tree: ast.AST) -> dict[str, set[str]]:
    """Methods called on each name or attribute (``_RE.search(...)``, ``self._re.match``): name -> methods."""
    uses: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(
                target, ast.Attribute) else None
            if name is not None:
                uses.setdefault(name, set()).add(node.func.attr)
    return uses


def text_regexes(root: Path = ROOT) -> list[Regex]:
    """Every regex literal of the scanned packages, in file order."""
    out: list[Regex] = []
    for package in SCANNED:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            uses = _uses(tree)
            assigned: dict[int, str] = {}  # id of a re.compile call -> the name it is assigned to
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                    t = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
                    if name is not None:
                        assigned[id(node.value)] = name
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                        and node.func.attr in RE_FUNCTIONS and node.args):
                    continue
                pattern = _literal(node.args[0])
                if pattern is None:
                    continue
                if node.func.attr == "compile":
                    methods = uses.get(assigned.get(id(node), ""), set()) & (RE_FUNCTIONS | {"sub", "subn"})
                    anchored = bool(methods) and methods <= ANCHORED_METHODS
                else:
                    anchored = node.func.attr in ANCHORED_METHODS
                out.append(Regex(f"{path.relative_to(root)}:{node.lineno}", pattern, _flags(node), anchored))
    return sorted(out, key=lambda r: (r.where.split(":")[0], int(r.where.split(":")[1])))


# --- the analysis -------------------------------------------------------------------------------------------

_CATEGORY = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
             C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
             C.CATEGORY_LINEBREAK: r"\n", C.CATEGORY_NOT_LINEBREAK: r"[^\n]"}
REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)


def _cased(chars: set[str], ignore_case: bool) -> frozenset[str]:
    if ignore_case:
        chars = chars | {c.lower() for c in chars} | {c.upper() for c in chars}
    return frozenset(c for c in chars if c in ALPHABET)


def _in_set(items: list[tuple[Any, Any]], ignore_case: bool) -> frozenset[str]:
    negate = False
    chars: set[str] = set()
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars |= {c for c in ALPHABET if av[0] <= ord(c) <= av[1]}
        elif op is C.CATEGORY:
            chars |= {c for c in ALPHABET if re.fullmatch(_CATEGORY[av], c)}
    got = _cased(chars, ignore_case)
    return ALPHABET - got if negate else got


class _Analysis:
    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.found: list[str] = []

    def chars(self, seq: Any, flags: int) -> frozenset[str]:
        """Every character the sequence can consume."""
        out: frozenset[str] = frozenset()
        for op, av in seq:
            out |= self.node_chars(op, av, flags)
        return out

    def node_chars(self, op: Any, av: Any, flags: int) -> frozenset[str]:
        ic = bool(flags & re.IGNORECASE)
        if op is C.LITERAL:
            return _cased({chr(av)}, ic)
        if op is C.NOT_LITERAL:
            return ALPHABET - _cased({chr(av)}, ic)
        if op is C.ANY:
            return ALPHABET if flags & re.DOTALL else ALPHABET - {"\n"}
        if op is C.IN:
            return _in_set(av, ic)
        if op in REPEATS:
            return self.chars(av[2], flags)
        if op is C.ATOMIC_GROUP:
            return self.chars(av, flags)
        if op is C.SUBPATTERN:
            return self.chars(av[3], (flags | av[1]) & ~av[2])
        if op is C.BRANCH:
            out: frozenset[str] = frozenset()
            for branch in av[1]:
                out |= self.chars(branch, flags)
            return out
        return frozenset()  # assertions, anchors, group references (x)

    def first(self, seq: Any, flags: int) -> frozenset[str]:
        """Characters a match of the sequence can start with."""
        out: frozenset[str] = frozenset()
        for op, av in seq:
            out |= self.node_first(op, av, flags)
            if not self.nullable(op, av):
                break
        return out

    def node_first(self, op: Any, av: Any, flags: int) -> frozenset[str]:
        if op in REPEATS:
            return self.first(av[2], flags)
        if op is C.ATOMIC_GROUP:
            return self.first(av, flags)
        if op is C.SUBPATTERN:
            return self.first(av[3], (flags | av[1]) & ~av[2])
        if op is C.BRANCH:  # an alternative anchored at the text's start adds no start inside the text
            out: frozenset[str] = frozenset()
            for branch in av[1]:
                if not (branch and branch[0][0] is C.AT and _at_text_start(branch[0][1], flags)):
                    out |= self.first(branch, flags)
            return out
        return self.node_chars(op, av, flags)

    def nullable(self, op: Any, av: Any) -> bool:
        if op in REPEATS:
            return av[0] == 0 or all(self.nullable(o, a) for o, a in av[2])
        if op is C.ATOMIC_GROUP:
            return all(self.nullable(o, a) for o, a in av)
        if op is C.SUBPATTERN:
            return all(self.nullable(o, a) for o, a in av[3])
        if op is C.BRANCH:
            return any(all(self.nullable(o, a) for o, a in b) for b in av[1])
        return op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF)

    def holds(self, run: frozenset[str], op: Any, av: Any, flags: int) -> bool:
        """True when a run of ``run``'s characters can hold a match of the item (some alternative of it)."""
        if op in REPEATS:
            return av[0] == 0 or all(self.holds(run, o, v, flags) for o, v in av[2])
        if op is C.ATOMIC_GROUP:
            return all(self.holds(run, o, v, flags) for o, v in av)
        if op is C.SUBPATTERN:
            sub = (flags | av[1]) & ~av[2]
            return all(self.holds(run, o, v, sub) for o, v in av[3])
        if op is C.BRANCH:
            return any(all(self.holds(run, o, v, flags) for o, v in b) for b in av[1])
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF):
            return True
        return bool(self.node_chars(op, av, flags) & run)

    @staticmethod
    def always_empty(op: Any, av: Any) -> bool:
        """True for an item that matches empty and cannot fail (an optional repeat)."""
        return op in REPEATS and av[0] == 0


def _at_text_start(at: Any, flags: int) -> bool:
    return at is C.AT_BEGINNING_STRING or (at is C.AT_BEGINNING and not flags & re.MULTILINE)


def _guard(seq: Any, analysis: _Analysis, flags: int, first: frozenset[str]) -> frozenset[str] | None:
    """Characters that cannot precede a match start (from the leading assertions); None: only one start."""
    guard: set[str] = set()
    for op, av in seq:
        if op is C.AT:
            if _at_text_start(av, flags):
                return None
            if av is C.AT_BEGINNING:
                guard |= ALPHABET - {"\n"}
            elif av is C.AT_BOUNDARY and first <= WORD:
                guard |= WORD
            elif av is C.AT_NON_BOUNDARY and not first & WORD:
                guard |= WORD
        elif op is C.ASSERT_NOT and av[0] == -1:
            guard |= analysis.chars(av[1], flags)
        elif op is C.ASSERT and av[0] == -1:
            guard |= ALPHABET - analysis.chars(av[1], flags)
        elif op is C.SUBPATTERN:  # a group's own leading assertions, with its own flags (``(?m:^...)``)
            inner = _guard(av[3], analysis, (flags | av[1]) & ~av[2], first)
            return None if inner is None else frozenset(guard | inner)
        else:
            break
    return frozenset(guard)


def findings(pattern: str, flags: int = 0, anchored: bool = False) -> list[str]:
    """The super-linear shapes of a pattern (see the module docstring); [] for a linear one.

    Args:
        pattern: the regex text.
        flags: ``re`` flags it is compiled with.
        anchored: the pattern is used with ``match``/``fullmatch`` only (one start position: no ``rescan``).

    Returns:
        One line per finding, e.g. ``"adjacent: \\s* then \\s* over ' '"``.
    """
    parsed = P.parse(pattern, flags)
    flags = parsed.state.flags
    if len(parsed) == 1 and parsed[0][0] is C.BRANCH:  # a|b|c: each alternative has its own starts
        return sorted({f for branch in parsed[0][1][1] for f in _findings(branch, flags, anchored)})
    return _findings(parsed, flags, anchored)


def _findings(parsed: Any, flags: int, anchored: bool) -> list[str]:
    a = _Analysis(flags)
    first = a.first(parsed, flags)
    guard = None if anchored else _guard(parsed, a, flags, first)
    out: list[str] = []

    def visit(seq: Any, flags: int, tail_can_fail: bool, outer: frozenset[str] | None,
              prefix: tuple[tuple[Any, Any, int], ...], single_start: bool = False) -> None:
        items = list(seq)
        open_runs: list[frozenset[str]] = []  # unbounded backtracking repeats reachable through optional items
        for i, (op, av) in enumerate(items):
            rest_can_fail = tail_can_fail or any(not a.always_empty(o, v) for o, v in items[i + 1:])
            if op in REPEATS and av[1] == C.MAXREPEAT:
                body = a.chars(av[2], flags)
                backtracks = op is not C.POSSESSIVE_REPEAT
                if backtracks and outer is not None and body & outer:
                    out.append(f"nested: unbounded repeat in an unbounded repeat, its run can start another "
                               f"iteration: {sorted(body & outer)[:5]}")
                if backtracks:
                    starts = a.first(av[2], flags)
                    for run in open_runs:
                        if run & starts:
                            out.append(f"adjacent: two unbounded repeats over {sorted(run & starts)[:5]}")
                            break
                spans_prefix = all(a.holds(body, *p) for p in prefix)  # a run of it can hold the items before it
                if (guard is not None and not single_start and rest_can_fail and body & first and not body <= guard
                        and spans_prefix):
                    out.append(f"rescan: unbounded run over {sorted(body & first)[:5]} and "
                               f"{sorted(body - guard)[:5]} can hold other match starts")
                visit(av[2], flags, True, (outer or frozenset()) | a.first(av[2], flags) if backtracks else None,
                      prefix, single_start)
                open_runs = [*open_runs, body] if backtracks else []
                if av[0] > 0:
                    prefix = (*prefix, (op, av, flags))
                continue
            if op in REPEATS:  # bounded
                visit(av[2], flags, rest_can_fail, outer, prefix, single_start)
            elif op is C.ATOMIC_GROUP:
                visit(av, flags, rest_can_fail, None, prefix, single_start)
            elif op is C.SUBPATTERN:
                visit(av[3], (flags | av[1]) & ~av[2], rest_can_fail, outer, prefix, single_start)
            elif op is C.BRANCH:
                for branch in av[1]:
                    anchored_branch = bool(branch) and branch[0][0] is C.AT and _at_text_start(branch[0][1], flags)
                    visit(branch, flags, rest_can_fail, outer, prefix, single_start or anchored_branch)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                visit(av[1], flags, True, None, (), True)
            if not a.nullable(op, av):
                open_runs = []
                prefix = (*prefix, (op, av, flags))

    visit(parsed, flags, False, None, ())
    return sorted(set(out))


def report(regexes: list[Regex]) -> Iterator[str]:
    """``where: pattern: finding`` for every finding of the regexes."""
    for r in regexes:
        for f in findings(r.pattern, r.flags, r.anchored):
            yield f"{r.where}: {r.pattern!r}: {f}"


if __name__ == "__main__":
    found = list(report(text_regexes()))
    print("\n".join(found))
    print(f"{len(found)} finding(s)", file=sys.stderr)

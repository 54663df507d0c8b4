"""The house's shape: no import cycle of any kind, a narrow lazy facade, public kits, small source files.

The floors themselves (each imports only the floors below it) are the import-linter ``layers`` contract in
pyproject.toml, checked by ``lint-imports`` in scripts/test; this file checks what import-linter does not.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_SOURCE_LINES = 800


def _modules(package: str) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package ``__init__``), for every module of a package."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _absolute(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported(module: str, is_pkg: bool, tree: ast.AST) -> Iterator[str]:
    """Every module name an AST imports: module level, under TYPE_CHECKING, inside functions, and through
    ``importlib.import_module("literal")`` / ``__import__("literal")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_pkg, node)
            yield base
            for alias in node.names:
                yield f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                yield node.args[0].value


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (an ``__init__``'s imports of its own subtree left out: a
    package re-exporting its submodules is not a cycle)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in modules.items():
        edges = set()
        for target in _imported(name, is_pkg, ast.parse(path.read_text(encoding="utf-8"))):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if not target or target == name or (is_pkg and target.startswith(name + ".")):
                continue
            edges.add(target)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node (the cycles), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_cycle_finder_finds_cycles_of_every_kind(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg import a\n")  # re-exporting its own subtree: not a cycle
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import c\n")
    (pkg / "c.py").write_text("import importlib\nX = importlib.import_module('pkg.a')\n")
    (pkg / "d.py").write_text("import pkg.a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert strongly_connected(import_graph("pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_import_cycles_in_the_engine():
    cycles = strongly_connected(import_graph("simulator"))
    assert cycles == [], "import cycles (counting TYPE_CHECKING, function-level and importlib imports): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_floors_are_packages_and_only_the_facade_sits_at_the_top():
    top = sorted(p.name for p in (ROOT / "simulator").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists())
    assert top == ["__init__.py", "agents", "analysis", "authoring", "cli", "dialogue", "errors.py", "execution",
                   "grading", "hunt", "interop", "models", "report", "stats", "storage", "types", "users", "world"]


def _all_of(module: str) -> list[str]:
    tree = ast.parse((ROOT / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8")
                     if not (ROOT / Path(*module.split("."))).is_dir()
                     else (ROOT / Path(*module.split(".")) / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    raise AssertionError(f"{module} has no __all__")


@pytest.mark.parametrize("module", ["simulator", "simulator.world.kit", "simulator.agents.kit"])
def test_public_names_are_sorted_unique_and_all_resolve(module):
    names = _all_of(module)
    assert names == sorted(names), f"{module}.__all__ is not sorted"
    assert len(names) == len(set(names)), f"{module}.__all__ has duplicates"
    mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it does not provide: {missing}"


def test_the_facade_is_narrow_and_its_table_matches_all():
    import simulator

    assert len(simulator.__all__) <= 40
    assert sorted(simulator._HOMES) == sorted(simulator.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        simulator.nope  # noqa: B018 - the attribute access is the test


def test_importing_the_facade_loads_neither_sqlalchemy_nor_litellm():
    code = ("import sys, simulator; print(len(simulator.__all__), 'sqlalchemy' in sys.modules, "
            "'litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    count, sqlalchemy, litellm = out.stdout.split()
    assert int(count) <= 40 and sqlalchemy == "False" and litellm == "False", out.stdout


def test_no_source_file_is_over_800_lines():
    long = {str(p.relative_to(ROOT)): n for folder in ("simulator", "domains", "personas")
            for p in (ROOT / folder).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_SOURCE_LINES}
    assert long == {}, f"source files over {MAX_SOURCE_LINES} lines: {long}"

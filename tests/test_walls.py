"""The walls between packages: domains use only the public names of the engine: the facade (``from simulator import
...``) and the public kits (:mod:`simulator.world.kit`, :mod:`simulator.agents.kit`), each within its ``__all__``."""

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("simulator", "simulator.world.kit", "simulator.agents.kit")


def engine_imports(source: str, filename: str) -> list[tuple[int, str]]:
    """Return (line, what) for every import of the engine that is not a top-level exported name."""
    bad: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "simulator" or alias.name.startswith("simulator."):
                    bad.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module in PUBLIC:
                exported = set(importlib.import_module(node.module).__all__)
                bad += [(node.lineno, f"from {node.module} import {a.name} (not in {node.module}.__all__)")
                        for a in node.names if a.name not in exported]
            elif node.module.startswith("simulator."):
                bad.append((node.lineno, f"from {node.module} import ..."))
    return bad


def test_the_check_catches_each_kind_of_forbidden_import():
    source = ("import simulator.world.tools\n"
              "from simulator.types.protocols import TrialContext\n"
              "from simulator.types.tasks import Task\n"
              "from simulator import Task, _private\n"
              "def f():\n    from simulator.agents.rates import check_fault_rates\n")
    assert [line for line, _ in engine_imports(source, "<test>")] == [1, 2, 3, 4, 6]
    assert engine_imports("from simulator import Task\nfrom simulator.agents.kit import is_yes\nimport numpy\n"
                          "from simulator.world.kit import tool\nfrom . import tools\n", "<t>") == []
    assert engine_imports("from simulator import is_yes\n", "<t>") == [
        (1, "from simulator import is_yes (not in simulator.__all__)")]


def test_domains_import_only_names_the_engine_exports():
    files = sorted((ROOT / "domains").rglob("*.py"))
    assert len(files) >= 10, files  # the shipped domains are found
    bad = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in files
           for line, what in engine_imports(path.read_text(encoding="utf-8"), str(path))]
    assert bad == []


def test_exported_names_exist():
    for module in PUBLIC:
        mod = importlib.import_module(module)
        assert [name for name in mod.__all__ if not hasattr(mod, name)] == [], module

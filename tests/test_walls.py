"""The walls between packages: domains use only the names the engine exports (``from simulator import ...``)."""

import ast
from pathlib import Path

import simulator

ROOT = Path(__file__).resolve().parents[1]


def engine_imports(source: str, filename: str) -> list[tuple[int, str]]:
    """Return (line, what) for every import of the engine that is not a top-level exported name."""
    bad: list[tuple[int, str]] = []
    exported = set(simulator.__all__)
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "simulator" or alias.name.startswith("simulator."):
                    bad.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module.startswith("simulator."):
                bad.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "simulator":
                bad += [(node.lineno, f"from simulator import {a.name} (not in simulator.__all__)")
                        for a in node.names if a.name not in exported]
    return bad


def test_the_check_catches_each_kind_of_forbidden_import():
    source = ("import simulator.world.tools\n"
              "from simulator.types.protocols import TrialContext\n"
              "from simulator.types.tasks import Task\n"
              "from simulator import Task, _private\n"
              "def f():\n    from simulator.agents.rates import check_fault_rates\n")
    assert [line for line, _ in engine_imports(source, "<test>")] == [1, 2, 3, 4, 6]
    assert engine_imports("from simulator import Task, is_yes\nimport numpy\nfrom . import tools\n", "<t>") == []


def test_domains_import_only_names_the_engine_exports():
    files = sorted((ROOT / "domains").rglob("*.py"))
    assert len(files) >= 10, files  # the shipped domains are found
    bad = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in files
           for line, what in engine_imports(path.read_text(encoding="utf-8"), str(path))]
    assert bad == []


def test_exported_names_exist():
    missing = [name for name in simulator.__all__ if not hasattr(simulator, name)]
    assert missing == []

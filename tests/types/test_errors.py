"""The exception tree: every exception class of the project derives from TausimError and is documented."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import domains
import personas
import simulator
from simulator import errors
from simulator.errors import TausimError

# simulator.processes is being replaced by the Dask executors (issue 10): its WorkerError goes with it.
_LEAVING = {"simulator.processes"}


def _modules() -> list[str]:
    names = []
    for package in (simulator, domains, personas):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__") or info.name in _LEAVING:
                continue
            names.append(info.name)
    return names


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


def test_walk_finds_the_known_exceptions():
    found = _exception_classes()
    names = {cls.__name__ for cls in found.values()}
    # independent list of what the walk must see (so an empty walk cannot pass the test below)
    assert {"TausimError", "TaskFileError", "PersonaError", "ToolError", "LLMInfraError", "GoldToolBug",
            "ConfigMismatchError", "_Transferred"} <= names
    assert len(found) >= 18


def test_every_exception_class_derives_from_tausim_error_and_is_named_in_the_tree():
    doc = errors.__doc__ or ""
    tree = doc.split("The tree::", 1)[1]
    for qualified, cls in _exception_classes().items():
        assert issubclass(cls, TausimError), f"{qualified} does not derive from TausimError"
        assert re.search(rf"\b{re.escape(cls.__name__)}\b", tree), f"{qualified} is not named in the tree"


@pytest.mark.parametrize("home,name,builtin", [
    ("simulator.types.tasks", "TaskFileError", ValueError),
    ("personas.loader", "PersonaError", ValueError),
    ("personas", "PersonaError", ValueError),
    ("simulator.analysis.budgets", "BudgetFileError", ValueError),
    ("simulator.report", "RunDocumentError", ValueError),
    ("simulator.world.domain", "DomainError", ValueError),
    ("simulator", "DomainError", ValueError),
    ("simulator.analysis.gate", "GateError", ValueError),
    ("simulator.storage.store", "StoreError", RuntimeError),
    ("simulator.storage.store", "ConfigMismatchError", RuntimeError),
    ("simulator.world.replay", "GoldToolBug", RuntimeError),
    ("simulator.world.tools", "ToolError", Exception),
    ("simulator", "ToolError", Exception),
    ("simulator.models.llm", "LLMInfraError", Exception),
    ("simulator.models.llm", "LLMContextOverflow", Exception),
    ("simulator.models.llm", "LLMRequestError", Exception),
])
def test_old_homes_re_export_with_their_builtin_bases(home, name, builtin):
    cls = getattr(importlib.import_module(home), name)
    assert cls is getattr(errors, name)
    assert issubclass(cls, TausimError) and issubclass(cls, builtin)
    if name == "ConfigMismatchError":
        error = cls("run", "seed", 0, 5)
    elif name.startswith("LLM"):
        error = cls("failed", model="m")
    else:
        error = cls("bad")
    with pytest.raises(builtin):  # callers catching the builtin still catch it
        raise error


def test_groups():
    assert issubclass(errors.StoreError, errors.InputError) and not issubclass(errors.StoreError, ValueError)
    assert not issubclass(errors.ToolError, errors.InputError)
    assert issubclass(errors.LLMInfraError, errors.InfrastructureError)
    assert issubclass(errors.GoldToolBug, errors.DefectError)
    assert simulator.TausimError is TausimError
    e = errors.ConfigMismatchError("r", "seed", 0, 5)
    assert e.field == "seed" and "seed: stored 0, now 5" in str(e)

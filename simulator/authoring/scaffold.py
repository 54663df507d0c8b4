"""``tausim domain new``: write an installable domain package from the templates in ``templates/``.

The package (``DIR/NAME``) holds a pyproject with the ``tausim.domains`` entry point, models, tools with
docstrings, a policy, a seeded data generator and its data, version-2 tasks with fixtures, gold actions,
assertions and process rules, a README and a test calling :func:`~simulator.authoring.check_domain`. It passes
``tausim domain check NAME`` once installed (``pip install -e DIR/NAME``), with no edit.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import runpy
from importlib import resources
from pathlib import Path
from string import Template

from simulator.errors import ScaffoldError
from simulator.world.domain import available_domains

__all__ = ["class_name", "new_domain"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 64
"""Longest domain name: it names a folder, a Python package and a class (file names stop at 255 bytes)."""
_FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "package/__init__.py.tmpl": "{name}/__init__.py",
    "package/models.py.tmpl": "{name}/models.py",
    "package/tools.py.tmpl": "{name}/tools.py",
    "package/generate.py.tmpl": "{name}/generate.py",
    "package/policy.md.tmpl": "{name}/policy.md",
    "package/tasks/builtin.json.tmpl": "{name}/tasks/builtin.json",
    "tests/test_domain.py.tmpl": "tests/test_{name}.py",
}
"""Template (under ``templates/``) -> file written (under ``DIR/NAME``)."""


def class_name(name: str) -> str:
    """Return the class name of a domain: ``kiosk`` -> ``KioskDomain``, ``pet_shop`` -> ``PetShopDomain``."""
    return "".join(part.capitalize() for part in name.split("_") if part) + "Domain"


def new_domain(name: str, directory: Path) -> Path:
    """Write the package of a new domain ``name`` into ``directory/name``.

    Args:
        name: the domain name, also its Python package name (lower case letters, digits, underscores).
        directory: an existing folder, where the package's folder is made.

    Returns:
        The package's folder (``directory/name``), ready for ``pip install -e``.

    Raises:
        ScaffoldError: the name is not a lower-case identifier, is a Python keyword, is taken by an importable
            module or a registered domain, ``directory`` is not an existing folder (a mistyped ``--dir`` made a
            stray tree), or the package's folder exists and is not empty.
    """
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ScaffoldError(f"domain name {name[:80]!r}: use lower-case letters, digits and underscores, starting "
                            "with a letter (it is also the Python package name)")
    if len(name) > MAX_NAME:
        raise ScaffoldError(f"domain name {name[:40]!r}...: {len(name)} characters; at most {MAX_NAME} (it names a "
                            "folder, a package and a class)")
    if name in available_domains():
        raise ScaffoldError(f"domain name {name!r}: a domain of that name is already registered")
    if importlib.util.find_spec(name) is not None:
        raise ScaffoldError(f"domain name {name!r}: a Python module of that name is already importable; choose "
                            "another name")
    if not Path(directory).is_dir():
        raise ScaffoldError(f"--dir {directory}: not an existing directory")
    root = Path(directory) / name
    if root.exists() and any(root.iterdir()):
        raise ScaffoldError(f"--dir {directory}: {root} exists and is not empty")
    templates = resources.files("simulator.authoring") / "templates"
    values = {"name": name, "Class": class_name(name)}
    try:
        for source, target in _FILES.items():
            text = templates.joinpath(source).read_text(encoding="utf-8")
            path = root / target.format(name=name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(Template(text).substitute(values), encoding="utf-8")
    except OSError as e:  # /proc, a read-only or full disk
        raise ScaffoldError(f"--dir {directory}: cannot write {e.filename or root}: {e.strerror or e}") from e
    generator = runpy.run_path(str(root / name / "generate.py"), run_name=f"{name}_generate")
    generator["write_data"](root / name / "data", generator["generate"](generator["DEFAULT_SEED"]))
    return root

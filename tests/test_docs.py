"""Every code block of the README and of the docs site (``docs/**/*.md``) runs as written.

- ```` ```python ```` blocks are executed, in order, in a temporary directory of their page (one directory per
  page, shared by its blocks, so a later block may read what an earlier one wrote). A block preceded by
  ``<!-- file: NAME -->`` is written to ``NAME`` in that directory instead (a module a later command imports).
- ```` ```console ```` blocks: each line starting with ``$ `` is a command (a trailing ``\\`` continues it); it
  must be ``tausim ...``, optionally after ``VAR=value`` assignments (``PYTHONPATH=.`` puts the page's directory
  on ``sys.path``), and runs through the CLI app in-process; it must exit 0, or the code a trailing
  ``# exit N`` names. Lines without ``$`` are sample output.
- ```` ```yaml ```` blocks: each ``run: tausim ...`` line runs the same way (CI steps).
- ```` ```json ```` blocks must parse.
- Any other ```` ```bash ```` / ```` ```console ```` / ```` ```python ```` block, or one that cannot run offline,
  carries ``<!-- not run: REASON -->`` right before it; :func:`test_blocks_not_run_are_few_and_reasoned`
  counts them so that they stay few.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MAX_NOT_RUN = 10
"""At most this many blocks may be marked not to run (each with its reason)."""

_FENCE = re.compile(r"^(`{3,})(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*(.*?)\s*-->\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str
    markers: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def marker(self, name: str) -> str | None:
        for m in self.markers:
            if m.startswith(name + ":"):
                return m.split(":", 1)[1].strip()
        return None


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with the ``<!-- ... -->`` markers on the lines right before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        markers = []
        j = i - 1
        while j >= 0 and (mm := _MARKER.match(lines[j])):
            markers.insert(0, mm.group(1))
            j -= 1
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{page.relative_to(ROOT)}:{start + 1}: unclosed code fence"
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n", markers))
        i += 1
    return out


ALL_BLOCKS = [b for p in PAGES for b in blocks(p)]


def commands(block: Block) -> list[tuple[str, int]]:
    """The commands of a console or yaml block, each with the exit code it must end with."""
    found = []
    if block.lang == "yaml":
        for line in block.text.splitlines():
            m = re.match(r"^\s*-?\s*run:\s*(tausim\s.*)$", line)
            if m:
                found.append(m.group(1))
    else:
        current: str | None = None
        for line in block.text.splitlines():
            if current is not None:
                current += " " + line.strip()
            elif line.startswith("$ "):
                current = line[2:].strip()
            if current is not None and current.endswith("\\"):
                current = current[:-1].rstrip()
                continue
            if current is not None:
                found.append(current)
                current = None
    out = []
    for cmd in found:
        m = _EXIT.search(cmd)
        out.append((cmd, int(m.group(1)) if m else 0))
    return out


def run_command(cmd: str, where: str, cwd: Path, expected: int) -> None:
    from simulator.cli import app

    words = shlex.split(cmd, comments=True)
    env: dict[str, str] = {}
    while words and _ENV.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words and words[0] == "tausim", f"{where}: `{cmd}` is not a tausim command (mark the block not run)"
    added = []
    if "PYTHONPATH" in env:
        for part in env.pop("PYTHONPATH").split(os.pathsep):
            path = str((cwd / part).resolve())
            sys.path.insert(0, path)
            added.append(path)
    before = set(sys.modules)
    try:
        res = CliRunner().invoke(app, words[1:], env=env or None, input="")
    finally:
        for path in added:
            sys.path.remove(path)
        if added:  # a module of the page (my_agent.py) may be defined again by another page
            for name in set(sys.modules) - before:
                mod = sys.modules[name]
                if any(str(getattr(mod, "__file__", "") or "").startswith(p) for p in added):
                    del sys.modules[name]
    assert res.exit_code == expected, (f"{where}: `{cmd}` exited {res.exit_code}, expected {expected}\n"
                                       f"{res.output[-3000:]}\n{res.exception!r}")


def run_block(block: Block, cwd: Path) -> bool:
    """Run one block in ``cwd``; return False when it is marked not to run."""
    if block.marker("not run") is not None:
        return False
    where = block.where
    target = block.marker("file")
    if target is not None:
        (cwd / target).write_text(block.text, encoding="utf-8")
        return True
    if block.lang == "python":
        scope: dict[str, object] = {"__name__": "__docs__"}
        exec(compile(block.text, where, "exec"), scope)  # noqa: S102 - our own documentation's example
        return True
    if block.lang == "json":
        json.loads(block.text)
        return True
    if block.lang in ("console", "bash", "sh", "shell", "yaml"):
        cmds = commands(block)
        assert cmds or block.lang == "yaml", f"{where}: a {block.lang} block without `$ tausim` commands must be " \
                                             "marked <!-- not run: REASON -->"
        for cmd, expected in cmds:
            run_command(cmd, where, cwd, expected)
        return bool(cmds)
    return False  # text, diagrams, tables of output


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_block_of_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.chdir(tmp_path)
    for block in blocks(page):
        run_block(block, tmp_path)


def test_blocks_not_run_are_few_and_reasoned():
    not_run = [b for b in ALL_BLOCKS if b.marker("not run") is not None]
    for b in not_run:
        assert len(b.marker("not run") or "") >= 10, f"{b.where}: say why the block is not run"
    runnable = [b for b in ALL_BLOCKS if b.marker("not run") is None
                and (b.lang in ("python", "json") or commands(b))]
    print(f"docs blocks: {len(ALL_BLOCKS)}, run {len(runnable)}, not run {len(not_run)}: "
          + ", ".join(b.where for b in not_run))
    assert len(not_run) <= MAX_NOT_RUN, [b.where for b in not_run]
    assert len(runnable) >= 20


def test_readme_agent_example_passes_its_task(tmp_path, monkeypatch):
    """The README's 15-line agent runs as written with ``--agent py:my_agent:build`` and passes the task."""
    monkeypatch.chdir(tmp_path)
    readme = [b for b in blocks(ROOT / "README.md") if b.marker("file") == "my_agent.py"]
    assert len(readme) == 1
    code = readme[0].text
    assert len(code.strip().splitlines()) <= 20, "the README's agent example should stay about 15 lines"
    (tmp_path / "my_agent.py").write_text(code, encoding="utf-8")
    run_command("PYTHONPATH=. tausim run --domain retail --agent py:my_agent:build --user rule "
                "--task-ids cancel-no-longer-needed --trials 1 --no-progress --out run.json", "README", tmp_path, 0)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert [t["passed"] for t in doc["trials"]] == [True]


def test_the_docs_site_lists_every_page():
    """mkdocs.yml's nav names every page under docs/ (mkdocs --strict fails on links, not on pages left out)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").rglob("*.md"):
        rel = page.relative_to(ROOT / "docs").as_posix()
        assert rel in nav, f"{rel} is not in mkdocs.yml's nav"


def test_the_site_builds_strict(tmp_path):
    """``mkdocs build --strict`` passes (broken links and anchors fail it); scripts/test runs it as well."""
    pytest.importorskip("mkdocs")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_python_examples_import_only_the_simulator_facade():
    """Examples import ``simulator`` itself, never a submodule: the facade's names stay while modules move."""
    for b in ALL_BLOCKS:
        if b.lang != "python":
            continue
        for node in ast.walk(ast.parse(b.text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith("simulator."), f"{b.where}: import {name}; use `from simulator import ...`"

"""The examples and scripts/check-examples: the README's py: agent is examples/py-agent's, and check-examples reports
one line per example and fails when one does (run on folders of stand-in examples, not the real ones: those run in
scripts/test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_agent_is_the_py_agent_example():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- file: my_agent.py -->\n```python\n(.*?)```", readme, re.S)
    assert block is not None, "README.md lost its my_agent.py block"
    assert (ROOT / "examples" / "py-agent" / "my_agent.py").read_text() == block.group(1)
    assert "py:my_agent:build" in readme and "py:my_agent:build" in (ROOT / "examples/py-agent/run.py").read_text()


def test_every_example_has_a_run_script_and_a_docstring():
    names = sorted(p.parent.name for p in (ROOT / "examples").glob("*/run.py"))
    assert {"async-agent", "http", "langgraph", "mcp-client", "openai-agents", "py-agent"} <= set(names)
    for name in names:
        text = (ROOT / "examples" / name / "run.py").read_text()
        assert text.startswith('"""') and f"python examples/{name}/run.py" in text, name
        assert f'print(f"{name}: ' in text, name  # its one line starts with its name


def _example(folder: Path, name: str, body: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "run.py").write_text(body)


def _check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "scripts" / "check-examples"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TAUSIM_PYTHON": sys.executable, **(env or {})})


def test_check_examples_fails_when_an_example_fails(tmp_path):
    _example(tmp_path, "good", 'print("good: t: pass")\n')
    _example(tmp_path, "bad", 'import sys\nprint("bad: t: FAIL (max_turns)")\nsys.exit(1)\n')
    _example(tmp_path, "hangs", "import time\ntime.sleep(60)\n")
    res = _check("--examples", str(tmp_path), "--timeout", "2")
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert re.fullmatch(r"bad: FAIL \(exit 1, \d+\.\d s\)", lines[0]), lines
    assert lines[1] == "    bad: t: FAIL (max_turns)"  # its output, under its line
    assert re.fullmatch(r"good: pass \(\d+\.\d s\)", lines[2]), lines
    assert re.fullmatch(r"hangs: FAIL \(timed out after 2 s, \d+\.\d s\)", lines[3]), lines
    assert lines[-1] == "1/3 examples passed"


def test_check_examples_passes_when_every_example_passes(tmp_path):
    _example(tmp_path, "one", 'print("one: t: pass")\n')
    _example(tmp_path, "two", 'import os\nassert "OPENAI_API_KEY" not in os.environ\n')
    res = _check(env={"TAUSIM_EXAMPLES": str(tmp_path), "OPENAI_API_KEY": "sk-not-for-examples"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert [line.split(":")[0] for line in res.stdout.splitlines()[:-1]] == ["one", "two"]
    assert res.stdout.splitlines()[-1] == "2/2 examples passed"
    res = _check("--examples", str(tmp_path), "two", "three")
    assert res.returncode != 0 and "no example three" in res.stderr

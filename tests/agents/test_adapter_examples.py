"""The adapter examples (examples/http, openai-agents, langgraph, a2a) run offline and pass their task."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind, needs", [("http", None), ("openai-agents", "agents"), ("langgraph", "langgraph"),
                                         ("a2a", "a2a.client")])
def test_the_example_passes_its_task(kind: str, needs: str | None) -> None:
    if needs is not None:
        pytest.importorskip(needs)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "OPENAI_API_KEY"}
    res = subprocess.run([sys.executable, str(ROOT / "examples" / kind / "run.py")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().splitlines()[-1].startswith(f"{kind}: cancel-gift-card-balance: pass")

"""The plain ``py:`` agent the README shows, run on one built-in retail task.

``my_agent.py`` here is the README's file, word for word (tests/test_examples.py checks that). This script runs the
spec that ``PYTHONPATH=. tausim run --domain retail --agent py:my_agent:build --user rule --task-ids TASK --trials 1``
runs, through the library (``simulator.run``). Offline; run from the repository root::

    python examples/py-agent/run.py [TASK_ID]
"""

from __future__ import annotations

import sys
from pathlib import Path

from simulator import RunSpec, run

sys.path.insert(0, str(Path(__file__).resolve().parent))  # what PYTHONPATH=. does for the README's command


def main(task_id: str = "cancel-no-longer-needed") -> int:
    """Run one built-in retail task with ``py:my_agent:build``; print and return its outcome (0: pass)."""
    outcome = run(RunSpec(domain="retail", agent="py:my_agent:build", user="rule", task_ids=[task_id], trials=1))
    trial = outcome.trials[0]
    print(f"py-agent: {task_id}: {'pass' if trial.passed else 'FAIL'} ({trial.termination_reason}, "
          f"{len(trial.trajectory.tool_calls)} tool calls)")
    return 0 if trial.passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

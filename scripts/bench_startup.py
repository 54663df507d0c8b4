"""Benchmark: start-up of the ``tausim`` command and of the library, as whole processes (min of N runs).

Four figures, each the fastest of ``--runs`` runs of a fresh process (wall time, ``time.perf_counter`` around
``subprocess.run``; the minimum is the figure least disturbed by other work on the machine), against its limit
(the least CPU time of the runs, user + system from ``resource.getrusage(RUSAGE_CHILDREN)``, is printed beside it:
on a loaded machine it moves less than the wall time):
``tausim --version`` <= 0.3 s, ``tausim --help`` <= 0.3 s, ``python -c "import simulator"`` <= 0.15 s and a one-task
oracle run (``tausim run --task-ids cancel-no-longer-needed``, built-in retail data) <= 1.0 s. Exits 1 when a figure
is over its limit (the only benchmark that judges: start-up is a promise of the command line).

The commands run as a user's would: with Python's bytecode cache. ``PYTHONDONTWRITEBYTECODE`` is removed from their
environment (the warm-up run writes the ``__pycache__`` files, ignored by git); with it set, every process compiles
the project's modules from source again, about half of a one-task run's CPU. ``--no-bytecode-cache`` keeps it.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import ROOT, machine, parser


def tausim() -> list[str]:
    """The ``tausim`` console script beside this interpreter (else on PATH), as a command."""
    beside = Path(sys.executable).parent / "tausim"
    found = str(beside) if beside.exists() else shutil.which("tausim")
    if found is None:
        raise SystemExit("bench-startup: no tausim script beside the interpreter or on PATH (pip install -e .)")
    return [found]


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fastest(cmd: list[str], runs: int, cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds: the least of ``runs`` runs of ``cmd`` each (after one warm-up run); exits if it fails."""
    times = []
    cpus = []
    for i in range(runs + 1):
        t0, c0 = time.perf_counter(), _children_cpu()
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
        elapsed, cpu = time.perf_counter() - t0, _children_cpu() - c0
        if out.returncode != 0:
            raise SystemExit(f"bench-startup: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-2000:]}")
        if i:
            times.append(elapsed)
            cpus.append(cpu)
    return min(times), min(cpus)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="counted runs per figure (default: %(default)s)")
    p.add_argument("--no-bytecode-cache", action="store_true",
                   help="keep PYTHONDONTWRITEBYTECODE from the environment (every run compiles from source)")
    args = p.parse_args()
    env = dict(os.environ)
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    cli = tausim()
    figures = [
        ("tausim --version", [*cli, "--version"], 0.3),
        ("tausim --help", [*cli, "--help"], 0.3),
        ('python -c "import simulator"', [sys.executable, "-c", "import simulator"], 0.15),
        ("one-task oracle run", [*cli, "run", "--task-ids", "cancel-no-longer-needed"], 1.0),
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cache = "off (PYTHONDONTWRITEBYTECODE)" if "PYTHONDONTWRITEBYTECODE" in env else "on"
    print(f"bench-startup: min of {args.runs} runs per figure (after a warm-up); bytecode cache {cache}; load average "
          f"{load:.2f}; {machine()}")
    over = []
    with tempfile.TemporaryDirectory() as cwd:  # a run may write files: not into the checkout
        for label, cmd, limit in figures:
            seconds, cpu = fastest(cmd, args.runs, cwd, env)
            ok = seconds <= limit
            if not ok:
                over.append(label)
            print(f"  {label:30s} {seconds:6.3f} s  (limit {limit:.2f} s) {'ok' if ok else 'OVER'}; CPU {cpu:.3f} s")
    if over:
        print(f"over the limit: {', '.join(over)} (a loaded machine slows every figure: see the load average)")
        sys.exit(1)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()

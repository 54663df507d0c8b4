"""Run the project's benchmarks with short settings (a few minutes in all) and print one table of their figures.

Each benchmark runs as its own process (``scripts/bench_*.py`` with this interpreter), with fewer rounds than when
run alone; its key figures are read from what it prints. The header gives the date, the machine and the load
average before and after, since other work on the machine slows every figure. ``--only NAME,...`` runs some of
them; ``--list`` names them; ``--taubench DIR`` (a tau-bench checkout) adds tau-bench's loop to
bench-conversation. Prints figures and asserts nothing (``bench-startup`` alone judges its limits, which this
table shows too).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from _bench import ROOT, machine, parser

NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


@dataclass(frozen=True)
class Figure:
    """One figure a benchmark prints: its label, the pattern that finds it (group 1: the value), unit, target."""

    label: str
    pattern: str
    unit: str
    target: str = ""


@dataclass(frozen=True)
class Bench:
    """One benchmark script, its short settings for this table, and the figures read from its output."""

    name: str
    script: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...]
    taubench: bool = False
    """Given ``--taubench DIR`` when bench-all is (a tau-bench checkout to measure against)."""


BENCHES = (
    Bench("startup", "bench_startup.py", ("--runs", "3"), (
        Figure("tausim --version", rf"tausim --version\s+{NUMBER} s", "s", "<= 0.3"),
        Figure("tausim --help", rf"tausim --help\s+{NUMBER} s", "s", "<= 0.3"),
        Figure("import simulator", rf"import simulator\"\s+{NUMBER} s", "s", "<= 0.15"),
        Figure("one-task oracle run", rf"one-task oracle run\s+{NUMBER} s", "s", "<= 1.0"))),
    Bench("turn-overhead", "bench_turn_overhead.py", ("--conversations", "30"), (
        Figure("per turn, framework only", rf"framework only:\s+{NUMBER} ms", "ms", "<= 0.05"),
        Figure("per tool call", rf"{NUMBER} ms per tool call", "ms", "<= 0.06"))),
    Bench("conversation", "bench_conversation.py", ("--rounds", "2"), (
        Figure("retail oracle trial, conversation phase", rf"tausim conversation phase:\s+mean {NUMBER} ms", "ms"),
        Figure("tau-bench env.step loop, same tasks", rf"tau-bench env.step loop:\s+mean {NUMBER} ms", "ms"),
        Figure("ratio tau-bench / tausim (of means)", rf"of means {NUMBER}", "", ">= 1.0")), taubench=True),
    Bench("tools", "bench_tools.py", ("--rounds", "2"), (
        Figure("retail tool call, median", rf"retail[^\n]*\n(?:[^\n]*\n)*?\s+ALL CALLS[^\n]*wall median {NUMBER}",
               "ms", "<= 0.1"),
        Figure("airline tool call, median", rf"airline[^\n]*\n(?:[^\n]*\n)*?\s+ALL CALLS[^\n]*wall median {NUMBER}",
               "ms", "<= 0.1"))),
    Bench("provisioning", "bench_provisioning.py", ("-n", "500"), (
        Figure("trial database, open + close", rf"open \+ close\s+mean {NUMBER} ms/trial", "ms", "<= 2"),)),
    Bench("throughput", "bench_throughput.py", (), (
        Figure("920 oracle trials, run wall", rf"run wall time:\s+{NUMBER} s", "s", "< 10"),
        Figure("oracle trial, median", rf"per trial: median {NUMBER} ms", "ms"))),
    Bench("scale", "bench_scale.py", ("--scales", "1,10"), (
        Figure("1x prov+grade per trial", rf"\n\s+1x\s+\d+\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+"
                                          rf"{NUMBER}", "ms"),
        Figure("10x prov+grade per trial", rf"\n\s+10x\s+\d+\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+"
                                           rf"{NUMBER}", "ms"))),
    Bench("concurrency", "bench_concurrency.py", ("--concurrency", "128", "--waves", "2", "--executor", "auto"), (
        Figure("128 in flight, default executor, efficiency", rf"efficiency {NUMBER}", "", ">= 0.85"),)),
    Bench("llm-call", "bench_llm_call.py", ("--calls", "300", "--repeat", "2"), (
        Figure("LLMClient call, ours", rf"ours: {NUMBER} ms", "ms CPU"),
        Figure("LLMClient call, total", rf"log event: {NUMBER} ms CPU", "ms CPU", "<= 1.5"))),
    Bench("long-token", "bench_long_token.py", ("--kinds", "base64", "--repeat", "1"), (
        Figure("1,000,000-character token, trial", rf"base64\s+{NUMBER} s per trial", "s", "< 1"),)),
    Bench("hunt", "bench_hunt.py", ("--budget", "300", "--seeds", "1", "--domains", "retail"), (
        Figure("signatures per 1k agent turns, hunt", rf"per 1,000 agent turns: hunt {NUMBER}", ""),
        Figure("signatures per 1k agent turns, linear", rf"per 1,000 agent turns: hunt [0-9.]+ vs linear {NUMBER}",
               ""))),
    Bench("telecom", "bench_telecom.py", ("--every", "10"), (
        Figure("telecom oracle trial, median", rf"per trial: median {NUMBER} ms wall", "ms"),)),
)
"""The benchmarks, in the order they run."""


def figure_value(fig: Figure, text: str) -> str:
    """The figure's value in ``text`` (the last group of its pattern's first match), or ``-``."""
    m = re.search(fig.pattern, text)
    if m is None:
        return "-"
    if fig.label.endswith("prov+grade per trial"):  # prov + grade columns of bench-scale's row
        return f"{float(m.group(3)) + float(m.group(5)):.3f}"
    return m.group(1)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    p.add_argument("--list", action="store_true", help="name the benchmarks and exit")
    p.add_argument("--taubench", type=Path, default=None,
                   help="a tau-bench checkout: bench-conversation measures tau-bench's loop against tausim's")
    args = p.parse_args()
    if args.list:
        print("\n".join(f"{b.name}: scripts/{b.script} {' '.join(b.args)}" for b in BENCHES))
        return
    wanted = set(args.only.split(",")) if args.only else {b.name for b in BENCHES}
    unknown = wanted - {b.name for b in BENCHES}
    if unknown:
        raise SystemExit(f"bench-all: unknown benchmark(s) {sorted(unknown)}; --list names them")
    start = datetime.now(UTC)
    load0 = os.getloadavg()
    rows: list[tuple[str, str, str, str, str, str]] = []
    env = {**os.environ, "TAUSIM_PYTHON": sys.executable}
    for bench in BENCHES:
        if bench.name not in wanted:
            continue
        cmd = [sys.executable, f"scripts/{bench.script}", "--peers", str(args.peers), *bench.args]
        if bench.taubench and args.taubench is not None:
            cmd += ["--taubench", str(args.taubench)]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
        took = f"{time.perf_counter() - t0:.0f} s"
        status = "" if out.returncode == 0 else f" (exit {out.returncode})"
        text = out.stdout + out.stderr
        for fig in bench.figures:
            rows.append((bench.name + status, fig.label, figure_value(fig, text), fig.unit, fig.target, took))
        print(f"  ran {bench.name:14s} {took:>6}{status}", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    print(f"bench-all: {start:%Y-%m-%d %H:%M} UTC, {(datetime.now(UTC) - start).total_seconds():.0f} s; "
          f"load average {load0[0]:.2f} before, {load1[0]:.2f} after; {machine()}")
    widths = [max(len(r[i]) for r in [*rows, ("benchmark", "figure", "value", "unit", "target", "took")])
              for i in range(6)]
    for row in [("benchmark", "figure", "value", "unit", "target", "took"), tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()

"""Benchmark: per-call median of each tool over the gold actions of the peer retail and airline test tasks.

Every task's gold actions are dispatched in order (``Toolbox.dispatch``: argument validation, the call's
transaction, the tool, its JSON answer) on a fresh trial database of the task's data, as in a trial; each
call is timed on its own, in wall time and in the thread's CPU time (which leaves out the time the thread
waits for a core: on a shared machine the wall time of a call grows with the load, its CPU time hardly).
Reported per domain: the median and p90 of each tool's calls, and the median and mean over all calls
(target: median <= 0.1 ms). The peer airline data runs in its default mode
(``tau-bench``); ``--airline-mode tausim`` runs the corrected bookkeeping instead. Without peer data the
built-in data sets and tasks are used.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _bench import machine, parser

from simulator.world.domain import get_domain
from simulator.world.tools import ToolContext


def load(name: str, peers: Path, mode: str | None) -> tuple[Any, Any, list[Any], str]:
    """Return (domain, template, tasks, label) for a domain: the peer data and test split, else the built-in set."""
    dom = get_domain(name)
    peer = peers / "tau-bench" / name
    options = {"mode": mode} if mode else None
    if not (peer / "data").is_dir():
        print(f"note: peer {name} data not found under {peers}; using the built-in data set", file=sys.stderr)
        return dom, dom.template(None, options), dom.load_tasks(None), f"built-in {name} data"
    template = dom.template(peer / "data", options)
    label = f"peer {name} data, test split, options {template.options}"
    return dom, template, dom.load_tasks(str(peer / "tasks_test.json")), label


def time_calls(dom: Any, template: Any, tasks: list[Any], rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Dispatch every task's gold actions on a fresh trial database, ``rounds`` times.

    Returns:
        ``{tool: [(wall seconds, CPU seconds) per call]}``.
    """
    toolbox = dom.toolbox()
    times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(rounds):
        for task in tasks:
            with template.trial() as db:
                ctx = ToolContext(db.session, db.options)
                for action in task.gold_actions:
                    c0 = time.thread_time()
                    t0 = time.perf_counter()
                    out = toolbox.dispatch(ctx, action.name, action.arguments)
                    t1 = time.perf_counter()
                    times[action.name].append((t1 - t0, time.thread_time() - c0))
                    if out.ends_conversation:
                        break
    return times


def _figures(calls: list[tuple[float, float]]) -> str:
    wall = sorted(w * 1000 for w, _ in calls)
    cpu = sorted(c * 1000 for _, c in calls)
    p90 = int(0.9 * (len(calls) - 1))
    return (f"wall median {statistics.median(wall):.4f} p90 {wall[p90]:.4f} mean {statistics.fmean(wall):.4f} | "
            f"cpu median {statistics.median(cpu):.4f} p90 {cpu[p90]:.4f} mean {statistics.fmean(cpu):.4f}")


def report(label: str, times: dict[str, list[tuple[float, float]]]) -> None:
    """Print per-tool and overall figures in milliseconds."""
    every = [t for ts in times.values() for t in ts]
    print(f"  {label}: {len(every)} calls; ms per call")
    for name in sorted(times, key=lambda n: -len(times[n])):
        print(f"    {name:30s} n={len(times[name]):5d}  {_figures(times[name])}")
    print(f"    {'ALL CALLS':30s} n={len(every):5d}  {_figures(every)}  (target: median <= 0.1 ms)")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="passes over every task's gold actions (default: %(default)s)")
    p.add_argument("--airline-mode", choices=("tau-bench", "tausim"), default=None,
                   help="airline tool mode (default: the data set's default)")
    p.add_argument("--domains", default="retail,airline", help="comma-separated domains (default: %(default)s)")
    args = p.parse_args()
    print(f"bench-tools: {args.rounds} round(s) over each task's gold actions, fresh trial database per task; "
          f"{machine()}")
    for name in args.domains.split(","):
        dom, template, tasks, label = load(name, args.peers, args.airline_mode if name == "airline" else None)
        time_calls(dom, template, tasks[:10], 1)  # warm-up: imports, statement caches
        report(label, time_calls(dom, template, tasks, args.rounds))


if __name__ == "__main__":
    main()

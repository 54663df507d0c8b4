"""Benchmark: the framework cost of a telecom trial and the oracle sweep over tau2's telecom tasks.

Each task is run as a trial with the oracle agent and the scripted user (no model): a fresh copy of the template
(agent and user sides in one database), the task's setup actions with sync, the conversation (the oracle's calls,
the user's own calls asked of it, a sync after every step), the state diff, the assertions (tau2's env
assertions on the synced environment) and the grade. The per-trial figure is everything the framework does
without a model (the tools included); reported as the median and p90 of wall and thread-CPU time. The sweep
also prepares every task once (gold replay). Prints figures, asserts nothing; ``--every N`` runs every Nth task.
``--parity`` also replays every task's gold as tau2 does (``tausim replay``: both sides, sync after each action)
and counts the tasks whose env assertions all pass on the replayed state and whose gold actions all succeed.
"""

from __future__ import annotations

import statistics
import sys
import time

from _bench import machine, parser

from simulator import Runner, RunSpec, get_domain
from simulator.agents import NullAgent, OracleAgent
from simulator.execution.parity import replay_tasks
from simulator.users import scripted_user_factory


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--every", type=int, default=1, help="run every Nth task (default: all)")
    p.add_argument("--parity", action="store_true", help="also sweep the gold replay (tausim replay) parity")
    args = p.parse_args()
    folder = args.peers / "tau2-bench" / "telecom"
    if not (folder / "db.toml").exists():
        print(f"tau2-bench telecom data not found under {args.peers}", file=sys.stderr)
        return 2
    domain = get_domain("telecom")
    t0 = time.perf_counter()
    template = domain.template(folder)
    tasks = domain.load_tasks(str(folder / "tasks.json"), split="full")[:: args.every]
    load_s = time.perf_counter() - t0
    print(machine())
    print(f"telecom: {len(tasks)} tasks; template and task file loaded in {load_s:.2f} s")
    for agent in (OracleAgent, NullAgent):
        runner = Runner(domain, template, tasks, agent, scripted_user_factory(),
                        RunSpec(domain="telecom", concurrency=1))
        t0, c0 = time.perf_counter(), time.process_time()
        runner.prepare()
        prep_s = time.perf_counter() - t0
        walls, cpus, passed = [], [], 0
        t0 = time.perf_counter()
        for task in tasks:
            w, c = time.perf_counter(), time.thread_time()
            res = runner.run_trial(task, 0)
            cpus.append(time.thread_time() - c)
            walls.append(time.perf_counter() - w)
            passed += res.passed
        run_s = time.perf_counter() - t0
        sweep_cpu = time.process_time() - c0
        q = statistics.quantiles(walls, n=10)
        print(f"{agent.__name__}: passed {passed}/{len(tasks)}; prepare {prep_s:.2f} s, trials {run_s:.2f} s, "
              f"sweep {prep_s + run_s:.2f} s wall, {sweep_cpu:.2f} s CPU")
        print(f"  per trial: median {statistics.median(walls) * 1e3:.2f} ms wall "
              f"(p90 {q[-1] * 1e3:.2f}), median {statistics.median(cpus) * 1e3:.2f} ms CPU")
    if args.parity:
        t0 = time.perf_counter()
        rows = list(replay_tasks(domain, template, tasks))
        ok = [r for r in rows if r.env_assertions is not None and all(a["passed"] for a in r.env_assertions)]
        clean = [r for r in rows if not any(r.errors)]
        print(f"parity (gold replayed, synced): env assertions all pass {len(ok)}/{len(rows)}; "
              f"gold actions without error {len(clean)}/{len(rows)}; {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

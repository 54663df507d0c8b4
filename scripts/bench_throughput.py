"""Benchmark (c): throughput of the peer retail test split x 8 trials with the oracle agent (target < 10 s).

115 tasks x 8 trials = 920 trials: each gets its own database copy, the oracle replays the gold actions
against it with the scripted user, and the trial is graded against the task's goal state. Reported: the
wall time of the run (goal states computed inside it, once per task), trials per second and per minute,
and the one-off template build before it.
"""

from __future__ import annotations

import time

from _bench import machine, parser, retail

from simulator.agents import agent_factory
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec
from simulator.users import user_factory


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=8, help="trials per task (default: %(default)s)")
    p.add_argument("--concurrency", type=int, default=1, help="worker threads (default: %(default)s)")
    p.add_argument("--split", default="test", help="peer task split (default: %(default)s)")
    args = p.parse_args()
    t0 = time.perf_counter()
    dom, template, tasks, label = retail(args.peers, args.split)
    setup = time.perf_counter() - t0
    config = RunSpec(domain="retail", agent="oracle", user="scripted", trials=args.trials,
                       concurrency=args.concurrency)
    runner = Runner(dom, template, tasks, agent_factory("oracle"), user_factory("scripted"), config)
    t1 = time.perf_counter()
    result = runner.run()
    wall = time.perf_counter() - t1
    n = len(result.trials)
    passed = sum(t.passed for t in result.trials)
    per = sorted(t.duration_s * 1000 for t in result.trials)
    print(f"bench-throughput: {label}; {len(tasks)} tasks x {args.trials} trials = {n} trials, oracle agent, "
          f"scripted user, concurrency {args.concurrency}; {machine()}")
    print(f"  data + tasks load (once): {setup:.2f} s")
    print(f"  run wall time:            {wall:.2f} s  (target < 10 s)  -> {n / wall:.0f} trials/s, "
          f"{60 * n / wall:.0f} trials/min")
    print(f"  per trial: median {per[n // 2]:.2f} ms, p95 {per[int(0.95 * n)]:.2f} ms; passed {passed}/{n}; "
          f"pass^1 {result.metrics.get('pass^1', float('nan')):.3f}")


if __name__ == "__main__":
    main()

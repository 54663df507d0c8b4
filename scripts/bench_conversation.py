"""Benchmark: the conversation phase of a retail oracle trial, per test task, optionally against tau-bench's loop.

tausim, per task of the retail test split (the peer data when present): on a trial database already provisioned
(the fixture applied; provisioning is not timed), the clock runs over the trial context, the oracle agent and the
scripted user, the limits, the task's toolbox, the tool context, the :class:`Conversation` set-up and its ``run``;
no grading (the previous trial's objects are freed before the clock starts). The template's memo of tool answers
(``simulator.world.memo``) is kept across rounds, as a pass^k run keeps it across a task's trials; ``--cold``
empties it before each trial, so every trial measured is its task's first; ``--run K`` measures as a pass^k run of K
trials per task does: the memo emptied before each task's first trial and kept for its other K - 1, the task's figure
the mean of its K trials (harsher than a real run, whose tasks also share answers remembered on unchanged copies).
The decoded-JSON memos of the tool code (pure functions of a stored text: the same text always decodes to the same
value) are kept in every mode, as a run keeps them from its first trials on. Reported: the mean and median over the
tasks of each task's fastest round, and where the time goes (context; agent, user and toolbox; conversation set-up;
the loop, and of it the time inside the tool calls).

``--taubench DIR`` (a checkout of tau-bench, imported from that path at run time in a subprocess, with the
interpreter running this script) adds tau-bench's own loop: per task its gold actions through ``env.step`` on
freshly loaded data (loading not timed; the terminating tools' reward computation switched off: no grading) and
no model behind its user. Rounds interleave: tau-bench's 115 tasks, then tausim's, ``--rounds`` times. Reported: both
means and medians, the ratio of means (tau-bench / tausim: above 1, tausim's phase is cheaper) and the median of the
per-task ratios. Prints figures and asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _bench import machine, parser

PARTS = ("context", "agent, user, toolbox", "conversation set-up", "loop", "  of it inside tool calls")


def taubench_worker(checkout: Path, split: str) -> None:
    """Subprocess side: load tau-bench's retail env from ``checkout``; time one round per ``round`` line on stdin.

    Prints one JSON line first (the gold action names of each task), then one per round (seconds per task).
    """
    sys.path.insert(0, str(checkout))
    import tau_bench.envs.base as tb_base  # type: ignore[import-not-found]

    class NoUser:  # no model: a respond action gets this reply
        def reset(self, instruction: str | None = None) -> str:
            return "hi"

        def step(self, content: str) -> str:
            return "###STOP###"

        def get_total_cost(self) -> float:
            return 0.0

    tb_base.load_user = lambda **kw: NoUser()
    from tau_bench.envs.retail.env import MockRetailDomainEnv  # type: ignore[import-not-found]
    from tau_bench.types import Action  # type: ignore[import-not-found]

    env = MockRetailDomainEnv(user_strategy="llm", user_model="none", task_split=split, task_index=0)
    env.terminate_tools = []  # no reward computation inside the loop: that is grading
    tasks = env.tasks
    print(json.dumps([[a.name for a in t.actions] for t in tasks]), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        out = []
        for task in tasks:
            env.data = env.data_load_func()
            env.actions = []
            env.task = task
            actions = [Action(name=a.name, kwargs=a.kwargs) for a in task.actions]
            t0 = time.perf_counter()
            for a in actions:
                env.step(a)
            out.append(time.perf_counter() - t0)
        print(json.dumps(out), flush=True)


class TauBench:
    """The tau-bench worker subprocess: ``round()`` returns seconds per task."""

    def __init__(self, checkout: Path, split: str):
        self.proc = subprocess.Popen([sys.executable, __file__, "--taubench-worker", str(checkout), "--split", split],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.actions: list[list[str]] = json.loads(self._line())

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench-conversation: the tau-bench worker ended (exit {self.proc.wait()})")
        return line

    def round(self) -> list[float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        return [float(x) for x in json.loads(self._line())]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def tausim_runner(peers: Path, split: str) -> Any:
    """The retail oracle runner (scripted user) of the peer split, prepared; the built-in tasks without peer data."""
    from _bench import retail_peer

    from simulator.execution.build import build_runner
    from simulator.types.spec import RunSpec

    peer = retail_peer(peers)
    fields: dict[str, Any] = {"domain": "retail", "agent": "oracle", "user": "scripted", "preflight": False}
    if peer is not None:
        fields |= {"data_dir": str(peer / "data"), "tasks": str(peer / f"tasks_{split}.json")}
    else:
        print(f"note: peer data not found under {peers}; using the built-in retail data set", file=sys.stderr)
    runner = build_runner(RunSpec.model_validate(fields))
    runner.prepare()
    return runner


def tausim_round(runner: Any, cold: bool = False, trials: int = 1) -> list[tuple[float, ...]]:
    """One pass over the runner's tasks; per task (total, context, actors, set-up, loop, in tools) in seconds.

    ``cold``: the template's memo of tool answers and statements is emptied before each task's trial, so every
    trial is a task's first (no answer remembered from an earlier trial or round). ``trials`` > 1: each task runs
    that many trials in a row, the memo emptied before its first (as in a pass^k run); its figures are the means
    over its trials.
    """
    if trials > 1:
        out = []
        for task in runner.tasks:
            rows = [_one_trial(runner, task, i, cold=(i == 0)) for i in range(trials)]
            out.append(tuple(statistics.fmean(r[j] for r in rows) for j in range(len(rows[0]))))
        return out
    return [_one_trial(runner, task, 0, cold) for task in runner.tasks]


def _one_trial(runner: Any, task: Any, trial_index: int, cold: bool) -> tuple[float, ...]:
    """Trial ``trial_index`` of ``task`` (the memo emptied first when ``cold``).

    Returns (total, context, actors, set-up, loop, in tools) in seconds.
    """
    from simulator.dialogue.conversation import Conversation
    from simulator.types.trajectory import Limits
    from simulator.world.memo import ReadMemo
    from simulator.world.replay import prepare_trial
    from simulator.world.tools import ToolContext

    clock = time.perf_counter
    if cold:
        runner.template.memo = ReadMemo()
    with runner.template.trial() as db:
        prepare_trial(runner.domain, db, task)
        t0 = clock()
        ctx = runner.trial_context(task, trial_index)
        t1 = clock()
        agent = runner.agent_factory(ctx)
        user = runner.user_factory(ctx)
        limits = Limits(max_turns=task.max_turns or runner.config.max_turns, max_steps=runner.config.max_steps)
        toolbox = runner.agent_toolbox(task, trial_index)
        t2 = clock()
        conv = Conversation(agent, user, toolbox, ToolContext(db.session, db.options), limits)
        t3 = clock()
        traj = conv.run()
        t4 = clock()
    # freed before the next trial's clock starts (on return), as tau-bench's side frees its last trial's data
    return (t4 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3, traj.tool_seconds)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default: %(default)s)")
    p.add_argument("--taubench", type=Path, default=None, help="a tau-bench checkout to measure against")
    p.add_argument("--split", default="test", help="task split (default: %(default)s)")
    p.add_argument("--cold", action="store_true",
                   help="empty the memo of tool answers before each trial: every trial is its task's first")
    p.add_argument("--run", type=int, default=1, metavar="K",
                   help="measure as a pass^k run of K trials per task: the memo emptied before each task's first "
                        "trial; a task's figure is the mean of its K trials (default: %(default)s)")
    p.add_argument("--taubench-worker", type=Path, default=None, help=argparse_hidden())
    args = p.parse_args()
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1 (got {args.rounds})")
    if args.run < 1:
        p.error(f"--run K must be at least 1 (got {args.run})")
    if args.run > 1 and args.cold:
        p.error("--run K (K > 1) and --cold cannot go together: --run empties the memo before each task's first "
                "trial only, --cold before every trial")
    if args.taubench_worker is not None:
        taubench_worker(args.taubench_worker, args.split)
        return
    runner = tausim_runner(args.peers, args.split)
    tb = TauBench(args.taubench, args.split) if args.taubench is not None else None
    n = len(runner.tasks)
    if tb is not None:
        names = [[a.name for a in t.gold_actions] for t in runner.tasks]
        if len(tb.actions) != n or tb.actions != names:
            same = sum(a == b for a, b in zip(tb.actions, names, strict=False))
            print(f"note: tau-bench has {len(tb.actions)} tasks, tausim {n}; {same} with the same gold action names",
                  file=sys.stderr)
    load0 = os.getloadavg()
    tausim_round(runner, args.cold, args.run)  # warm-up: imports, statement caches
    tb_best = [float("inf")] * n
    best: list[tuple[float, ...]] = [(float("inf"),)] * n
    for _ in range(args.rounds):
        if tb is not None:
            tb_best = [min(a, b) for a, b in zip(tb_best, tb.round(), strict=False)]
        best = [min(a, b) for a, b in zip(best, tausim_round(runner, args.cold, args.run), strict=True)]
    load1 = os.getloadavg()
    if tb is not None:
        tb.close()
    memo = ("memo emptied before each trial (every trial its task's first)" if args.cold
            else f"as a pass^k run of {args.run} trials per task (memo emptied before each task's first; per task the "
                 "mean of its trials)" if args.run > 1 else "memo kept across rounds")
    print(f"bench-conversation: retail {args.split} split, {n} tasks, {args.rounds} round(s), per task the fastest, "
          f"{memo}; "
          f"load average {load0[0]:.2f} -> {load1[0]:.2f}; {machine()}")
    totals = [b[0] * 1000 for b in best]
    print(f"  tausim conversation phase:  mean {statistics.fmean(totals):.4f} ms  "
          f"median {statistics.median(totals):.4f} ms per trial")
    for i, part in enumerate(PARTS, start=1):
        print(f"    {part:28s} mean {statistics.fmean(b[i] for b in best) * 1000:.4f} ms")
    if tb is not None:
        tbs = [t * 1000 for t in tb_best[:n]]
        print(f"  tau-bench env.step loop:    mean {statistics.fmean(tbs):.4f} ms  "
              f"median {statistics.median(tbs):.4f} ms per trial")
        ratios = [a / b for a, b in zip(tbs, totals, strict=False)]
        print(f"  ratio tau-bench / tausim:   of means {statistics.fmean(tbs) / statistics.fmean(totals):.3f}  "
              f"median of per-task ratios {statistics.median(ratios):.3f}  (>= 1: tausim's phase is cheaper)")


def argparse_hidden() -> str:
    """The help text of an internal option (argparse.SUPPRESS hides it)."""
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()

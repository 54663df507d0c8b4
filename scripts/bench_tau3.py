"""Benchmark: per-trial cost side by side with τ³ (tau2-bench 1.0.1) on telecom and banking_knowledge.

For each suite and each task (telecom: a seeded sample, ``--sample``; banking_knowledge: all 97), in interleaved
rounds (τ³'s pass over the tasks, then tausim's, ``--rounds`` times):

- τ³: its own gold trial, run by ``scripts/tau3_trial.py`` inside a throwaway τ³ environment (``--tau3-python``,
  default ``$TAU3_PYTHON``; ``--tau3-data``, default ``$TAU2_DATA_DIR``, τ³'s data folder): its environment built,
  the task's initial state applied, the gold actions sent as tool calls, its evaluator's reward
  (``EvaluationType.ALL``). One process for all rounds; its imports and task loading are outside the clock.
- tausim: the oracle trial (``Runner.run_trial``: the trial database provisioned from the template, the
  conversation with the oracle agent and the scripted user, grading). The one-off per-task preparation
  (``Runner.prepare``: the gold replayed once per task for its goal state, shared by all trials of the task) is
  outside the per-trial clock and reported beside it, with the ratio it gives when charged to a single trial.

Per task the minimum over rounds is kept (the first round warms both up); printed: mean and median per-trial
wall seconds of both (and mean thread CPU seconds, steadier on a loaded machine), the ratios (τ³ / tausim) of
the means and of the medians, and how many tasks each rewards 1.0.
Without the τ³ environment it says so and exits 0 having measured nothing. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _bench import ROOT, machine, parser

SUITES = ("telecom", "banking_knowledge")


class Tau3:
    """The τ³ driver process (``scripts/tau3_trial.py``) for one suite's tasks."""

    def __init__(self, python: str, data: str, suite: str, task_ids: list[str], retrieval: str | None) -> None:
        env = dict(os.environ, TAU2_DATA_DIR=data, LITELLM_LOCAL_MODEL_COST_MAP="True")
        self.proc = subprocess.Popen([python, str(ROOT / "scripts" / "tau3_trial.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self._send({"suite": suite, "task_ids": task_ids, "retrieval": retrieval})
        ready = self._answer()
        if "ready" not in ready:
            raise RuntimeError(f"τ³ driver: {ready.get('error', ready)}")

    def _send(self, doc: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((doc if isinstance(doc, str) else json.dumps(doc)) + "\n")
        self.proc.stdin.flush()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # not the protocol's (a library printing on stdout)
            if isinstance(doc, dict):
                return doc
        raise RuntimeError(f"τ³ driver ended (status {self.proc.wait()}) without an answer")

    def round(self) -> tuple[list[float], list[float], list[float]]:
        """Run every task once in τ³; return (wall seconds, thread CPU seconds, reward) per trial."""
        self._send("round")
        doc = self._answer()
        if "seconds" not in doc:
            raise RuntimeError(f"τ³ driver: {doc.get('error', doc)}")
        return doc["seconds"], doc["cpu"], doc["rewards"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def tausim_runner(suite: str, folder: Path, ids: list[str]) -> tuple[Any, list[Any], float]:
    """Return (runner, tasks in ``ids`` order, seconds of ``Runner.prepare`` for them)."""
    from simulator import Runner, RunSpec, get_domain
    from simulator.agents import OracleAgent
    from simulator.users import scripted_user_factory

    domain = get_domain(suite)
    template = domain.template(folder)
    split = "full" if suite == "telecom" else None
    by_id = {t.id: t for t in domain.load_tasks(str(folder / "tasks.json"), split=split)}
    tasks = [by_id[i] for i in ids]
    runner = Runner(domain, template, tasks, OracleAgent, scripted_user_factory(),
                    RunSpec(domain=suite, concurrency=1))
    t0 = time.perf_counter()
    runner.prepare()
    return runner, tasks, time.perf_counter() - t0


def tausim_round(runner: Any, tasks: list[Any]) -> tuple[list[float], list[float], list[bool]]:
    """Run every task's oracle trial once; return (wall seconds, thread CPU seconds, passed) per trial."""
    seconds, cpu, passed = [], [], []
    for task in tasks:
        t0, c0 = time.perf_counter(), time.thread_time()
        res = runner.run_trial(task, 0)
        cpu.append(time.thread_time() - c0)
        seconds.append(time.perf_counter() - t0)
        passed.append(bool(res.passed))
    return seconds, cpu, passed


def bench_suite(args: Any, suite: str) -> None:
    folder = args.peers / "tau2-bench" / suite
    raw = json.loads((folder / "tasks.json").read_text())
    ids = [str(t["id"]) for t in raw]
    label = f"all {len(ids)} tasks"
    if suite == "telecom" and args.sample and args.sample < len(ids):
        ids = random.Random(args.seed).sample(ids, args.sample)
        label = f"{len(ids)} of {len(raw)} tasks (random.Random({args.seed}).sample of the file's ids)"
    runner, tasks, prep_s = tausim_runner(suite, folder, ids)
    tau3 = Tau3(args.tau3_python, args.tau3_data, suite, ids,
                args.retrieval if suite == "banking_knowledge" else None)
    n = len(ids)
    best: dict[str, list[float]] = {k: [float("inf")] * n for k in ("w3", "c3", "wts", "cts")}
    rewards: list[float] = []
    passed: list[bool] = []
    try:
        for _ in range(args.rounds):
            w3, c3, rewards = tau3.round()
            wts, cts, passed = tausim_round(runner, tasks)
            for key, new in (("w3", w3), ("c3", c3), ("wts", wts), ("cts", cts)):
                best[key] = [min(a, b) for a, b in zip(best[key], new, strict=True)]
    finally:
        tau3.close()
    m3, mts = statistics.mean(best["w3"]), statistics.mean(best["wts"])
    d3, dts = statistics.median(best["w3"]), statistics.median(best["wts"])
    cm3, cmts = statistics.mean(best["c3"]), statistics.mean(best["cts"])
    prep = prep_s / n
    print(f"{suite}: {label}; {args.rounds} interleaved rounds, per task the minimum; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  τ³ gold trial + reward:   mean {m3 * 1e3:9.2f} ms, median {d3 * 1e3:9.2f} ms; "
          f"reward 1.0 on {sum(r == 1.0 for r in rewards)}/{n}")
    print(f"  tausim oracle trial:      mean {mts * 1e3:9.3f} ms, median {dts * 1e3:9.3f} ms; "
          f"passed {sum(passed)}/{n}")
    print(f"  ratio τ³ / tausim:        mean {m3 / mts:7.0f}x, median {d3 / dts:7.0f}x (wall)")
    print(f"  thread CPU per trial:     τ³ mean {cm3 * 1e3:.2f} ms, tausim mean {cmts * 1e3:.3f} ms; "
          f"ratio {cm3 / cmts:.0f}x")
    print(f"  tausim prepare (once per task, all trials share it): {prep * 1e3:.2f} ms/task; "
          f"ratio with it charged to one trial: mean {m3 / (mts + prep):.0f}x")


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--suite", action="append", choices=SUITES, help="suites to measure (default: both)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: %(default)s)")
    p.add_argument("--sample", type=int, default=100,
                   help="telecom tasks sampled (default: %(default)s; 0: all 2,285)")
    p.add_argument("--seed", type=int, default=0, help="seed of the telecom sample (default: %(default)s)")
    p.add_argument("--tau3-python", default=os.environ.get("TAU3_PYTHON", ""),
                   help="python of the throwaway τ³ environment (default: $TAU3_PYTHON)")
    p.add_argument("--tau3-data", default=os.environ.get("TAU2_DATA_DIR", ""),
                   help="τ³'s data folder, its TAU2_DATA_DIR (default: $TAU2_DATA_DIR)")
    p.add_argument("--retrieval", default="bm25_grep",
                   help="τ³'s banking_knowledge retrieval variant (default: %(default)s; τ³'s own default, "
                        "alltools, needs an OpenAI key)")
    args = p.parse_args()
    if not args.tau3_python or not Path(args.tau3_python).is_file():
        where = args.tau3_python or "TAU3_PYTHON unset"
        print(f"bench-tau3: skipped: no τ³ environment ({where}: no such python; set TAU3_PYTHON or --tau3-python, "
              "see scripts/tau3_trial.py)")
        return 0
    if not args.tau3_data or not Path(args.tau3_data, "tau2", "domains").is_dir():
        print(f"bench-tau3: skipped: no τ³ data folder ({args.tau3_data or 'TAU2_DATA_DIR unset'}: no tau2/domains "
              "in it; set TAU2_DATA_DIR or --tau3-data)")
        return 0
    if subprocess.run([args.tau3_python, "-c", "import tau2.registry"], capture_output=True,
                      env=dict(os.environ, TAU2_DATA_DIR=args.tau3_data,
                               LITELLM_LOCAL_MODEL_COST_MAP="True")).returncode != 0:
        print(f"bench-tau3: skipped: {args.tau3_python} cannot import τ³ (tau2)")
        return 0
    print(f"bench-tau3: {machine()}")
    for suite in args.suite or SUITES:
        if not (args.peers / "tau2-bench" / suite / "tasks.json").is_file():
            print(f"{suite}: skipped: τ³'s {suite} data not found under {args.peers}")
            continue
        bench_suite(args, suite)
    return 0


if __name__ == "__main__":
    sys.exit(main())

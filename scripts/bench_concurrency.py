"""Benchmark (d): concurrency efficiency with slow models (target >= 0.9 at concurrency 32, 200 ms latency).

The agent (LiteLLMAgent) and the user (LLMUser) call an in-process litellm provider (registered through
``litellm.custom_provider_map``; no network) that sleeps a fixed latency per call and answers: the user opens,
the agent replies, the user stops, so every trial makes 3 sequential model calls. With C trials at once,
the ideal wall time is ceil(trials / C) x 3 x latency; efficiency = ideal / measured. Tasks run 8 trials each
(as in a pass^k run); their goal states (a one-off per task) are computed before the clock starts.

Two set-ups are measured: threads only (one process, C threads), and ``--processes P`` worker processes
sharing the C trials (:class:`simulator.processes.ProcessExecutor`, as ``tausim run --processes P``); each
worker builds and warms up the same run before the clock starts (its start-up time is printed apart).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import os
import time
from pathlib import Path
from typing import Any

from _bench import machine, parser, retail
from simulator.processes import ProcessExecutor, split_threads

from simulator.agents import agent_factory
from simulator.runner import Runner
from simulator.spec import RunSpec
from simulator.users import user_factory

CALLS_PER_TRIAL = 3


PRICES = {"input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7}
"""USD per token given to the in-process models (gpt-4o-mini's list prices): a hosted model is in litellm's price
map, and litellm prices every response inside ``completion``; for a model missing from the map it searches for a
near match instead, about 2 ms of CPU more per call (see ``--unpriced``)."""


def register_provider(latency: float, priced: bool = True) -> Any:
    """Register the in-process ``slow/...`` models (sleep ``latency`` seconds per call), priced unless told not."""
    import logging

    import litellm
    from litellm import CustomLLM

    class SlowModel(CustomLLM):
        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, *args: Any, **kwargs: Any) -> Any:
            time.sleep(latency)
            if model.startswith("user"):
                text = "Hi, I need help with an order." if len(messages) <= 2 else "Thanks, bye! ###STOP###"
            else:
                text = "I can help with that. Anything else?"
            model_response.choices[0].message.content = text
            model_response.choices[0].finish_reason = "stop"
            model_response.model = model
            model_response.usage = litellm.Usage(prompt_tokens=800, completion_tokens=20, total_tokens=820)
            return model_response

    litellm.custom_provider_map = [{"provider": "slow", "custom_handler": SlowModel()}]
    if priced:
        quiet = logging.getLogger("LiteLLM")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # register_model warns that a custom model has no cache-token prices
        litellm.register_model({f"slow/{who}": {**PRICES, "litellm_provider": "slow", "mode": "chat"}
                                for who in ("agent", "user")})
        quiet.setLevel(level)
    return litellm


def build_runner(latency: float, peers: Path, concurrency: int, waves: int, per_task: int,
                 warm: bool = True, priced: bool = True) -> Runner:
    """Build the benchmark's run (also in each worker process): slow provider, tasks, warm litellm and goals."""
    register_provider(latency, priced)
    dom, template, tasks, _ = retail(peers, quiet=True)
    tasks = tasks[: math.ceil(waves * concurrency / per_task)]
    config = RunSpec(domain="retail", agent="litellm:slow/agent", user="llm:slow/user", trials=per_task,
                       concurrency=concurrency)
    params = {"max_attempts": 1}
    runner = Runner(dom, template, tasks, agent_factory("litellm:slow/agent", **params),
                    user_factory("llm:slow/user", **params), config)
    if warm:
        runner.run_trial(tasks[0], 0)  # warm-up: litellm's first call initialises lazily
        for task in tasks:  # goal states are a one-off per task (see bench-throughput); not part of this figure
            runner.goal(task)
    return runner


def measure(runner: Runner, executor: Any = None) -> tuple[float, float, Any]:
    """Run the trials; return (wall seconds, CPU seconds of this process, result)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = runner.run(executor=executor)
    return time.perf_counter() - t0, time.process_time() - cpu0, result


def workers_cpu(executor: ProcessExecutor | None) -> float:
    """CPU seconds (user + system) used so far by the executor's worker processes (Linux /proc; else 0)."""
    total = 0.0
    for pid in executor.pids() if executor is not None else []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=32, help="trials at once (default: %(default)s)")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 2,
                   help="worker processes sharing the concurrency (default: one per CPU, %(default)s; 1: threads only)")
    p.add_argument("--latency", type=float, default=0.2, help="seconds per model call (default: %(default)s)")
    p.add_argument("--waves", type=int, default=4, help="trials = waves x concurrency (default: %(default)s)")
    p.add_argument("--trials-per-task", type=int, default=8, help="trials of each task (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=1, help="measure each set-up this many times (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed runs of each set-up before the measured ones (default: %(default)s)")
    p.add_argument("--unpriced", action="store_true",
                   help="leave the in-process models out of litellm's price map (as a local model is)")
    args = p.parse_args()
    build = functools.partial(build_runner, args.latency, args.peers, args.concurrency, args.waves,
                              args.trials_per_task, priced=not args.unpriced)
    runner = build()
    gc.collect()  # as `tausim run` does: the run's data lives to the end, keep it out of the cyclic collector
    gc.freeze()
    label = retail(args.peers)[3]
    setups = [(1, None)] + ([(args.processes, split_threads(args.concurrency, args.processes))]
                            if args.processes > 1 else [])
    print(f"bench-concurrency: {label}; {args.waves * args.concurrency} trials x {CALLS_PER_TRIAL} model calls, "
          f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, models "
          f"{'unpriced' if args.unpriced else 'priced'}, {args.warmup} untimed warm-up run(s) per set-up; "
          f"{machine()}")
    for processes, threads in setups:
        with contextlib.ExitStack() as stack:
            ex, how, note = None, f"threads only (1 process x {args.concurrency} threads)", ""
            if processes > 1:
                t0 = time.perf_counter()
                ex = stack.enter_context(ProcessExecutor(build, processes, args.concurrency))
                ex.wait_ready()  # worker start-up (imports, data, warm-up) is a one-off, reported apart
                how = f"{processes} processes x {'/'.join(map(str, threads or []))} threads"
                note = f"; worker start-up {time.perf_counter() - t0:.1f} s (not timed)"
            for _ in range(args.warmup):  # first runs pay one-off costs (lazy imports and caches in new threads)
                measure(runner, ex)
            for _ in range(args.repeat):
                cpu_before = workers_cpu(ex)
                wall, cpu, result = measure(runner, ex)
                if ex is not None:
                    cpu += workers_cpu(ex) - cpu_before
                trials = len(result.trials)
                calls = sum(t.trajectory.agent_usage.calls + t.trajectory.user_usage.calls for t in result.trials)
                bad = {k: v for k, v in result.termination_reasons.items() if k != "user_stop"}
                ideal = math.ceil(trials / args.concurrency) * CALLS_PER_TRIAL * args.latency
                print(f"  {how}: ideal {ideal:.2f} s, measured {wall:.2f} s -> efficiency {ideal / wall:.3f} "
                      f"(target >= 0.9); CPU {cpu:.2f} s = {cpu / calls * 1000:.2f} ms per model call "
                      f"(all processes){note}" + (f"; unexpected terminations {bad}" if bad else ""))


if __name__ == "__main__":
    main()

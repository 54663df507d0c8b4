"""Benchmark (d): concurrency efficiency with slow models (targets at 200 ms latency: >= 0.95 at 32, >= 0.85 at 128).

The agent (LiteLLMAgent) and the user (LLMUser) call an in-process litellm provider (registered through
``litellm.custom_provider_map``; no network) that sleeps a fixed latency per call and answers: the user opens,
the agent replies, the user stops, so every trial makes 3 sequential model calls. With C trials at once,
the ideal wall time is ceil(trials / C) x 3 x latency; efficiency = ideal / measured. Tasks run 8 trials each
(as in a pass^k run); their goal states (a one-off per task) are computed before the clock starts.

Set-ups measured (``--executor``, repeatable; default ``threads`` and ``local:2``): ``threads`` (one process,
C threads) and ``local:N`` (a Dask LocalCluster of N worker processes of about C/N threads each, as
``tausim run --executor local:N``; each worker builds the run from its RunSpec with ``build_runner``). Cluster
start-up and the untimed warm-up runs (goal states, litellm's lazy initialisation) are not timed.

Each line also gives the CPU per model call (every process's CPU over the run, trials included: less sensitive to
other jobs than the wall time) and the cores kept busy (CPU / wall); the header gives the load average, since other
processes on the machine take cores from the set-up measured.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path
from typing import Any

from _bench import machine, parser, retail, retail_peer

from simulator.execution.build import build_runner
from simulator.execution.executors import choose_executor, open_executor
from simulator.execution.runner import Runner, settle_heap
from simulator.types.spec import RunSpec

CALLS_PER_TRIAL = 3


PRICES = {"input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7}
"""USD per token given to the in-process models (gpt-4o-mini's list prices): a hosted model is in litellm's price
map, and litellm prices every response inside ``completion``; for a model missing from the map it searches for a
near match instead, about 2 ms of CPU more per call (see ``--unpriced``)."""


def answer(model: str, messages: list) -> str:
    """The in-process models' answer: the user opens, the agent replies, the user stops."""
    if model.startswith("user"):
        return "Hi, I need help with an order." if len(messages) <= 2 else "Thanks, bye! ###STOP###"
    return "I can help with that. Anything else?"


def register_provider(latency: float, priced: bool = True, without_litellm: bool = False) -> Any:
    """Register the in-process ``slow/...`` models (sleep ``latency`` seconds per call), priced unless told not.

    ``without_litellm``: ``litellm.completion`` itself is replaced by a function that sleeps and returns the same
    answer, usage and cost (``_hidden_params["response_cost"]``, as litellm sets it) without litellm's work: what
    the run would reach if a model call cost no CPU in the model client (a diagnostic, not a set-up to use).
    """
    import logging

    import litellm
    from litellm import CustomLLM

    class SlowModel(CustomLLM):
        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, *args: Any, **kwargs: Any) -> Any:
            time.sleep(latency)
            model_response.choices[0].message.content = answer(model, messages)
            model_response.choices[0].finish_reason = "stop"
            model_response.model = model
            model_response.usage = litellm.Usage(prompt_tokens=800, completion_tokens=20, total_tokens=820)
            return model_response

    litellm.custom_provider_map = [{"provider": "slow", "custom_handler": SlowModel()}]
    if without_litellm:
        cost = 800 * PRICES["input_cost_per_token"] + 20 * PRICES["output_cost_per_token"] if priced else None

        def completion(model: str, messages: list, **_: Any) -> Any:
            time.sleep(latency)
            short = model.partition("/")[2]
            response = litellm.ModelResponse(
                model=short, choices=[{"message": {"role": "assistant", "content": answer(short, messages)},
                                       "finish_reason": "stop"}],
                usage={"prompt_tokens": 800, "completion_tokens": 20, "total_tokens": 820})
            response._hidden_params["response_cost"] = cost
            return response

        litellm.completion = completion
    if priced:
        quiet = logging.getLogger("LiteLLM")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # register_model warns that a custom model has no cache-token prices
        litellm.register_model({f"slow/{who}": {**PRICES, "litellm_provider": "slow", "mode": "chat"}
                                for who in ("agent", "user")})
        quiet.setLevel(level)
    return litellm


def bench_spec(peers: Path, concurrency: int, waves: int, per_task: int, executor: str) -> RunSpec:
    """Return the benchmark's run spec: the peer retail data (or the built-in one), enough tasks for the waves."""
    _, _, tasks, _ = retail(peers, quiet=True)
    peer = retail_peer(peers)
    slow = {"args": {"max_attempts": 1}}
    return RunSpec.model_validate({
        "domain": "retail", "data_dir": str(peer / "data") if peer else None,
        "tasks": str(peer / "tasks_test.json") if peer else None,
        "task_ids": [t.id for t in tasks[: math.ceil(waves * concurrency / per_task)]],
        "agent": {"name": "litellm:slow/agent", **slow}, "user": {"name": "llm:slow/user", **slow},
        "trials": per_task, "concurrency": concurrency, "executor": executor})


def measure(runner: Runner, executor: Any = None) -> tuple[float, float, Any]:
    """Run the trials; return (wall seconds, CPU seconds of this process, result)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = runner.run(executor=executor)
    return time.perf_counter() - t0, time.process_time() - cpu0, result


def workers_cpu(executor: Any) -> float:
    """CPU seconds (user + system) used so far by a local Dask cluster's worker processes (Linux /proc; else 0)."""
    client = getattr(executor, "client", None)
    if client is None:
        return 0.0
    total = 0.0
    for pid in client.run(os.getpid).values():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def where_the_wall_goes(result: Any, wall: float, concurrency: int, latency: float) -> str:
    """One line: how long the trials took against the ideal, and how much of the wall the trial slots were busy.

    A trial's ideal is ``CALLS_PER_TRIAL x latency``; what it took beyond that is CPU work and waiting for a core
    or the interpreter lock, spread over its calls. The slots (``concurrency`` trials at once) are busy for the sum of
    the trial durations; the rest of ``wall x concurrency`` is dispatch, results and the tail (slots idle while the
    last trials run).
    """
    durations = sorted(t.duration_s for t in result.trials)
    if not durations:
        return "no trials"
    ideal = CALLS_PER_TRIAL * latency
    median = durations[len(durations) // 2]
    busy = sum(durations) / (wall * concurrency)
    return (f"trials took median {median:.3f} s, 90th percentile {durations[int(len(durations) * 0.9)]:.3f} s, "
            f"longest {durations[-1]:.3f} s (ideal {ideal:.3f} s: {(median - ideal) / CALLS_PER_TRIAL * 1000:.0f} ms "
            f"more per model call at the median); trial slots busy {busy:.0%} of the wall (the rest: dispatch, "
            "results, the tail)")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=32, help="trials at once (default: %(default)s)")
    p.add_argument("--executor", action="append",
                   help="auto | threads | local:N | dask://HOST:PORT; repeat to compare (default: threads and "
                        "local:2)")
    p.add_argument("--latency", type=float, default=0.2, help="seconds per model call (default: %(default)s)")
    p.add_argument("--waves", type=int, default=4, help="trials = waves x concurrency (default: %(default)s)")
    p.add_argument("--trials-per-task", type=int, default=8, help="trials of each task (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=1, help="measure each set-up this many times (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed runs of each set-up before the measured ones (default: %(default)s)")
    p.add_argument("--unpriced", action="store_true",
                   help="leave the in-process models out of litellm's price map (as a local model is)")
    p.add_argument("--without-litellm", action="store_true",
                   help="diagnostic: replace litellm.completion by a function that sleeps and answers the same "
                        "(no model-client CPU), to see what the rest of the run reaches")
    args = p.parse_args()
    register_provider(args.latency, not args.unpriced, args.without_litellm)
    label = retail(args.peers)[3]
    executors = args.executor or ["threads", "local:2"]
    print(f"bench-concurrency: {label}; {args.waves * args.concurrency} trials x {CALLS_PER_TRIAL} model calls, "
          f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, models "
          f"{'unpriced' if args.unpriced else 'priced'}"
          f"{', WITHOUT litellm (litellm.completion replaced: a diagnostic)' if args.without_litellm else ''}, "
          f"{args.warmup} untimed warm-up run(s) per set-up; "
          f"{machine()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for executor in executors:
        spec = bench_spec(args.peers, args.concurrency, args.waves, args.trials_per_task, executor)
        with contextlib.ExitStack() as stack:
            runner = build_runner(spec)
            settle_heap()  # as `tausim run` does: the run's data lives to the end, out of the cyclic GC
            t0 = time.perf_counter()
            ex = stack.enter_context(open_executor(spec))
            how, note = f"threads only (1 process x {args.concurrency} threads)", ""
            if executor == "auto":
                print(f"  {choose_executor(spec).reason}")
            if ex is not None:
                workers = ex.client.scheduler_info()["workers"].values()  # type: ignore[attr-defined]
                ex.client.run(register_provider, args.latency, not args.unpriced,  # type: ignore[attr-defined]
                              args.without_litellm)
                threads = "/".join(str(w["nthreads"]) for w in workers)
                how = f"{choose_executor(spec).executor}: {len(workers)} processes x {threads} threads"
                note = f"; cluster start-up {time.perf_counter() - t0:.1f} s (not timed)"
            for _ in range(args.warmup):  # first runs pay one-off costs (goal states, lazy imports, caches)
                measure(runner, ex)
            for _ in range(args.repeat):
                cpu_before = workers_cpu(ex)
                wall, cpu, result = measure(runner, ex)
                in_workers = workers_cpu(ex) - cpu_before
                split = f" ({cpu:.2f} s driver and scheduler, {in_workers:.2f} s workers)" if ex is not None else ""
                cpu += in_workers
                trials = len(result.trials)
                calls = sum(t.trajectory.agent_usage.calls + t.trajectory.user_usage.calls for t in result.trials)
                bad = {k: v for k, v in result.termination_reasons.items() if k != "user_stop"}
                ideal = math.ceil(trials / args.concurrency) * CALLS_PER_TRIAL * args.latency
                print(f"  {how}: ideal {ideal:.2f} s, measured {wall:.2f} s -> efficiency {ideal / wall:.3f}; "
                      f"CPU {cpu:.2f} s{split} = {cpu / calls * 1000:.2f} ms per model call (all processes), "
                      f"{cpu / wall:.2f} cores busy{note}" + (f"; unexpected terminations {bad}" if bad else ""))
                print("    " + where_the_wall_goes(result, wall, args.concurrency, args.latency))


if __name__ == "__main__":
    main()

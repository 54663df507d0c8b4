"""Benchmark (d): concurrency efficiency with slow models (target >= 0.9 at concurrency 32, 200 ms latency).

The agent (LiteLLMAgent) and the user (LLMUser) call an in-process litellm provider (registered through
``litellm.custom_provider_map``; no network) that sleeps a fixed latency per call and answers: the user opens,
the agent replies, the user stops, so every trial makes 3 sequential model calls. With C trials at once,
the ideal wall time is ceil(trials / C) x 3 x latency; efficiency = ideal / measured. Tasks run 8 trials each
(as in a pass^k run); their goal states (a one-off per task) are computed before the clock starts.
"""

from __future__ import annotations

import math
import time
from typing import Any

from _bench import machine, parser, retail

from simulator.agents import agent_factory
from simulator.runner import RunConfig, Runner
from simulator.users import user_factory

CALLS_PER_TRIAL = 3


def register_provider(latency: float) -> Any:
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
    return litellm


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=32, help="trials at once (default: %(default)s)")
    p.add_argument("--latency", type=float, default=0.2, help="seconds per model call (default: %(default)s)")
    p.add_argument("--waves", type=int, default=4, help="trials = waves x concurrency (default: %(default)s)")
    p.add_argument("--trials-per-task", type=int, default=8, help="trials of each task (default: %(default)s)")
    args = p.parse_args()
    register_provider(args.latency)
    dom, template, tasks, label = retail(args.peers)
    n = args.waves * args.concurrency
    per_task = args.trials_per_task
    tasks = tasks[: math.ceil(n / per_task)]
    config = RunConfig(domain="retail", agent="litellm:slow/agent", user="llm:slow/user", trials=per_task,
                       concurrency=args.concurrency)
    params = {"max_attempts": 1}
    runner = Runner(dom, template, tasks, agent_factory("litellm:slow/agent", **params),
                    user_factory("llm:slow/user", **params), config)
    runner.run_trial(tasks[0], 0)  # warm-up: litellm's first call initialises lazily
    for task in tasks:  # goal states are a one-off per task (see bench-throughput); not part of this figure
        runner.goal(task)
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = runner.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    trials = len(result.trials)
    calls = sum(t.trajectory.agent_usage.calls + t.trajectory.user_usage.calls for t in result.trials)

    ideal = math.ceil(trials / args.concurrency) * CALLS_PER_TRIAL * args.latency
    bad = {k: v for k, v in result.termination_reasons.items() if k != "user_stop"}
    print(f"bench-concurrency: {label}; {trials} trials x {CALLS_PER_TRIAL} model calls ({calls} calls), "
          f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}; {machine()}")
    print(f"  ideal {ideal:.2f} s, measured {wall:.2f} s -> efficiency {ideal / wall:.3f}  (target >= 0.9)"
          + (f"; unexpected terminations {bad}" if bad else ""))
    print(f"  process CPU {cpu:.2f} s = {cpu / calls * 1000:.2f} ms per model call, trial bookkeeping included "
          f"(litellm's own per-call work dominates; Python threads share one interpreter lock)")


if __name__ == "__main__":
    main()

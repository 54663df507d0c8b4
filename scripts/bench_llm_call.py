"""Benchmark: CPU per model call through LLMClient, litellm's part and ours apart (target <= 1.5 ms in all).

Every call goes to an in-process litellm provider (the ``slow/agent`` model of ``scripts/bench_concurrency.py``,
registered with gpt-4o-mini's prices, latency 0, no network) with a realistic retail agent request: the retail
policy as system prompt, the retail tool schemas and an 8-message conversation with a tool call. CPU time is the
process's (``time.process_time``: every thread, litellm's logging threads included), so it is much less sensitive to
other processes' load than wall time; each figure is the lowest of ``--repeat`` rounds of ``--calls`` calls.

Lines printed:

* ``litellm as shipped``: ``litellm.completion`` of the request LLMClient sends, litellm's defaults (its success
  logging handed to its thread pool after every call);
* ``litellm as LLMClient calls it``: the same inside the context LLMClient uses while no litellm callback is
  registered (success logging skipped; the response is still priced);
* ``ours``: ``LLMClient.complete`` with ``litellm.completion`` answering a ready response at no cost: retries set-up,
  request building, usage and cost read, message conversion, result; then with a structlog ``model_call`` event
  per call (as in runs with a log) and with the response-cache key computed (a run with a cache);
* ``total``: ``LLMClient.complete`` end to end, with a log (as a run calls it).

A hosted model adds the HTTP client's share (openai SDK, httpx), which an in-process provider does not have.
"""

from __future__ import annotations

import gc
import io
import os
import time
from collections.abc import Callable
from typing import Any

from _bench import machine, parser, retail, retail_peer
from bench_concurrency import register_provider

from simulator.models.llm import LLMClient, _success_logging_off
from simulator.storage.runlog import run_logger

MODEL = "slow/agent"


def agent_request(peers: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return (messages, tools) of a mid-conversation retail agent request."""
    dom = retail(peers, quiet=True)[0]
    peer = retail_peer(peers)
    policy = dom.policy_for(peer / "data" if peer else None, dom.default_options(peer / "data" if peer else None))
    tools = dom.toolbox().schemas()
    call = {"id": "call_1", "type": "function",
            "function": {"name": "find_user_id_by_email", "arguments": '{"email": "yusuf.rossi@example.com"}'}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": policy},
        {"role": "assistant", "content": "Hi! How can I help you today?"},
        {"role": "user", "content": "Hi, I want to return the headphones from my last order."},
        {"role": "assistant", "content": "Sure. Could you give me your email address to find your account?"},
        {"role": "user", "content": "It is yusuf.rossi@example.com."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "find_user_id_by_email", "content": "yusuf_rossi_9620"},
        {"role": "assistant", "content": "Thanks. Which order is it? Please give its id, e.g. #W0000000."},
        {"role": "user", "content": "Order #W2378156, the headphones only, to my original payment method."},
    ]
    return messages, tools


def per_call_cpu(fn: Callable[[int], Any], calls: int, repeat: int) -> float:
    """Return the lowest process CPU milliseconds per call of ``fn(i)`` over ``repeat`` rounds of ``calls``."""
    for i in range(min(calls, 50)):  # warm-up: lazy imports, caches
        fn(i)
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        cpu0 = time.process_time()
        for i in range(calls):
            fn(i)
        time.sleep(0.2)  # let litellm's logging threads finish this round's work (their CPU is counted)
        best = min(best, (time.process_time() - cpu0) / calls * 1000)
    return best


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1000, help="calls per round (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="rounds; the lowest is reported (default: %(default)s)")
    args = p.parse_args()
    litellm = register_provider(0.0)
    messages, tools = agent_request(args.peers)
    log = run_logger(io.StringIO(), "bench").bind(task="t", trial=0, role="agent")
    client = LLMClient(MODEL, max_attempts=4, temperature=0.0, seed=1)
    cached = LLMClient(MODEL, max_attempts=4, temperature=0.0, seed=1, cache={})
    request = {"model": MODEL, "messages": messages, "tools": tools, "temperature": 0.0, "seed": 1,
               "timeout": client.timeout, "num_retries": 0}
    quiet = _success_logging_off(litellm)
    size = sum(len(str(m.get("content") or "")) for m in messages) + len(str(tools))
    print(f"bench-llm-call: {len(messages)} messages and {len(tools)} tools ({size / 1000:.0f} k characters), "
          f"in-process provider, {args.calls} calls x {args.repeat} rounds; {machine()}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    def quiet_call(_: int) -> Any:
        if quiet is None:
            return litellm.completion(**request)
        with quiet():
            return litellm.completion(**request)

    shipped = per_call_cpu(lambda _: litellm.completion(**request), args.calls, args.repeat)
    theirs = per_call_cpu(quiet_call, args.calls, args.repeat)
    total = per_call_cpu(lambda i: client.complete(messages, tools, trial_seed=i, log=log), args.calls, args.repeat)
    response = litellm.completion(**request)
    real = litellm.completion
    litellm.completion = lambda **_: response
    try:
        ours = per_call_cpu(lambda i: client.complete(messages, tools, trial_seed=i), args.calls, args.repeat)
        ours_log = per_call_cpu(lambda i: client.complete(messages, tools, trial_seed=i, log=log), args.calls,
                                args.repeat)
        ours_cache = per_call_cpu(lambda i: cached.complete(messages, tools, trial_seed=i, log=log), args.calls,
                                  args.repeat)
    finally:
        litellm.completion = real
    print(f"  litellm as shipped (success logging on): {shipped:.3f} ms CPU per call")
    print(f"  litellm as LLMClient calls it (success logging {'skipped' if quiet else 'on'}): {theirs:.3f} ms")
    print(f"  ours: {ours:.3f} ms; with a model_call log event {ours_log:.3f} ms; and a response-cache key "
          f"{ours_cache:.3f} ms")
    print(f"  total LLMClient.complete with a log event: {total:.3f} ms CPU per call (target <= 1.5)")


if __name__ == "__main__":
    main()

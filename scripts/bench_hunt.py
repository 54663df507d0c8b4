"""Benchmark: distinct failure signatures per 1,000 agent turns, ``tausim hunt`` vs linear rollouts.

On the built-in retail and airline tasks, the reference agent with faults
(``reference:wrong_item=0.05,forget_constraint=0.05,repeat_question=0.05,skip_confirmation=0.05``) and the rule
user with every persona. For each seed, both get the same budget of agent turns and the same run seed:

- linear: the trials of ``tausim run --personas all --trials N`` (trial index 0 of every task x persona, then
  index 1, ...), each from its first turn, until the budget is spent;
- hunt: :func:`simulator.hunt.search.hunt` with the same budget and seed (forks pay only for their continuation).

Reported per domain and seed: agent turns spent, distinct signatures (:func:`simulator.grading.signature.signature`),
the
rate per 1,000 turns, the ratio hunt / linear, and the agent turns forking saved (prefixes not replayed).

Two counts, both printed: **all** distinct signatures, and **agent-caused** ones: those whose trial did not end
with the user abandoning (termination ``user_abandon``). An abandonment is often the persona's doing (an
impatient user giving up, a user move pushing it there), not a fault of the agent, and user moves make many of
them, so the agent-caused count is the honest figure of the two (the target, >= 2x, is meant for it); it is
strict: an abandonment the agent provoked (asking the same question again until the user gives up) is left out
too. ``tausim hunt --export`` leaves clusters the clean agent also fails out of the regression cases. Prints
figures, asserts nothing.
"""

from __future__ import annotations

import time

from _bench import machine, parser

from personas.loader import available_personas, load_personas
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.grading.signature import signature
from simulator.hunt import Harness, hunt
from simulator.types.spec import RunSpec

AGENT = "reference:wrong_item=0.05,forget_constraint=0.05,repeat_question=0.05,skip_confirmation=0.05"


def _runner(domain: str, seed: int) -> Runner:
    ps = load_personas(available_personas())
    return build_runner(RunSpec(domain=domain, agent=AGENT, user="rule", personas=[p.name for p in ps],
                                persona_defs={p.name: p.model_dump(mode="json") for p in ps}, seed=seed,
                                preflight=False))


def linear(runner: Runner, budget: int) -> tuple[int, set[tuple[str, ...]], int]:
    """Run the sweep's trials in ``run --trials N`` order until ``budget`` agent turns; return (turns, sigs, trials)."""
    kinds = {n: ("ending" if s.ends_conversation else s.kind) for n, s in runner.domain.toolbox().specs.items()}
    harness = Harness(runner)  # plays a trial exactly as the runner does, counting its agent turns
    spent, sigs, n, k = 0, set(), 0, 0
    while spent < budget:
        for task in runner.tasks:
            for persona in runner.personas:
                if spent >= budget:
                    break
                t = harness.play(task, k, persona)
                spent += t.fresh_agent_turns
                n += 1
                s = signature(task, t.result, kinds)
                if s is not None:
                    sigs.add(s)
        k += 1
    return spent, sigs, n


def agent_caused(sigs: set[tuple[str, ...]]) -> int:
    """The number of signatures whose trial did not end with the user abandoning (see the module docstring)."""
    return sum(1 for s in sigs if s[1] != "user_abandon")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=1000, help="agent turns per run (default %(default)s)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default %(default)s)")
    p.add_argument("--domains", default="retail,airline")
    a = p.parse_args()
    print(f"bench-hunt: budget {a.budget} agent turns, seeds 0..{a.seeds - 1}, agent {AGENT}, user rule, "
          f"personas all; {machine()}")
    print(f"{'domain':8} {'seed':>4} | {'linear turns':>12} {'sigs':>4} {'agent':>5} {'/1k':>6} | {'hunt turns':>10} "
          f"{'sigs':>4} {'agent':>5} {'/1k':>6} {'saved':>6} | {'ratio':>5} {'agent':>5}")
    tot = {"lt": 0, "ls": 0, "ht": 0, "hs": 0, "saved": 0, "la": 0, "ha": 0}
    t0 = time.perf_counter()
    for domain in a.domains.split(","):
        for seed in range(a.seeds):
            runner = _runner(domain, seed)
            lt, lsigs, _ = linear(runner, a.budget)
            res = hunt(_runner(domain, seed), a.budget, seed=seed)
            ls, ht, hs = len(lsigs), res.agent_turns, len(res.clusters)
            la, ha = agent_caused(lsigs), agent_caused({c.signature for c in res.clusters})
            tot["la"] += la
            tot["ha"] += ha
            lr, hr = 1000 * ls / lt, 1000 * hs / ht
            tot["lt"] += lt
            tot["ls"] += ls
            tot["ht"] += ht
            tot["hs"] += hs
            tot["saved"] += res.saved_turns
            ratio = f"{hr / lr:5.2f}" if lr else "  inf"
            aratio = f"{(ha / ht) / (la / lt):5.2f}" if la else "  inf"
            print(f"{domain:8} {seed:>4} | {lt:>12} {ls:>4} {la:>5} {lr:>6.2f} | {ht:>10} {hs:>4} {ha:>5} {hr:>6.2f} "
                  f"{res.saved_turns:>6} | {ratio} {aratio}")
    lr, hr = 1000 * tot["ls"] / tot["lt"], 1000 * tot["hs"] / tot["ht"]
    la, ha = 1000 * tot["la"] / tot["lt"], 1000 * tot["ha"] / tot["ht"]
    print(f"{'total':8} {'':>4} | {tot['lt']:>12} {tot['ls']:>4} {tot['la']:>5} {lr:>6.2f} | {tot['ht']:>10} "
          f"{tot['hs']:>4} {tot['ha']:>5} {hr:>6.2f} {tot['saved']:>6} | {hr / lr if lr else float('inf'):5.2f} "
          f"{ha / la if la else float('inf'):5.2f}")
    print(f"distinct signatures per 1,000 agent turns: hunt {hr:.2f} vs linear {lr:.2f} "
          f"({hr / lr if lr else float('inf'):.2f}x); agent turns saved by forking: {tot['saved']} "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"agent-caused signatures (trial not ended by the user abandoning) per 1,000 agent turns: hunt {ha:.2f} vs "
          f"linear {la:.2f} ({ha / la if la else float('inf'):.2f}x)")


if __name__ == "__main__":
    main()

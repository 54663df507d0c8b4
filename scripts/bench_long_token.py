"""Benchmark: one whole trial whose agent message is a single unbroken token of 1M characters (target < 1 s).

A scripted agent sends the token as its first message, then a short closing offer; the rule-based user answers
(it classifies the token message); the Runner grades the trial (state, outputs, process with confirmation
rules, loops). Reported: seconds per trial for each token kind (base64-like by default, the degenerate model
output of the issue), the median of ``--repeat`` runs after one untimed warm-up trial.
"""

from __future__ import annotations

import random
import statistics
import string
import time
from collections.abc import Sequence

from _bench import machine, parser

from simulator.execution.runner import Runner
from simulator.types.messages import AgentTurn, Message
from simulator.types.spec import RunSpec
from simulator.types.tasks import ProcessRules
from simulator.users import rule_user_factory
from simulator.world.domain import get_domain

KINDS = {
    "base64": lambda n: "".join(random.Random(17).choices(string.ascii_letters + string.digits + "+/", k=n)),
    "letters": lambda n: "a" * n,
    "digits": lambda n: "7" * n,
    "a1a1": lambda n: ("a1" * n)[:n],
    "order_id": lambda n: "#W" + "1" * (n - 2),
    "x_at": lambda n: ("x@" * n)[:n],
    "commas": lambda n: ("1," * n)[:n],
    "dots": lambda n: "." * n,
    # a long text of many words that start multi-word patterns without completing them
    "words": lambda n: (("how much mark not which where whether because set log I'm Ann to address in "
                         * (n // 60 + 1))[:n - 1] + ":"),
}


class TokenAgent:
    """Says the token, then offers more help."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.steps = 0

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.steps += 1
        text = self.token if self.steps == 1 else "Your order #W2378156 costs $54.04. Is there anything else?"
        return AgentTurn(message=Message(role="assistant", content=text))


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--chars", type=int, default=1_000_000, help="token length (default: %(default)s)")
    p.add_argument("--kinds", default="base64", help=f"comma-separated token kinds of {sorted(KINDS)}, or 'all' "
                                                     "(default: %(default)s)")
    p.add_argument("--domain", default="retail", help="built-in domain (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="timed trials per kind (default: %(default)s)")
    args = p.parse_args()
    kinds = list(KINDS) if args.kinds == "all" else args.kinds.split(",")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        p.error(f"unknown --kinds {unknown}; choose from {sorted(KINDS)}")
    dom = get_domain(args.domain)
    template = dom.template(None)
    task = next(t for t in dom.load_tasks(None) if t.required_outputs)
    task = task.model_copy(update={"process": ProcessRules(confirm_writes=True)})
    users = rule_user_factory(dom, template)
    cfg = RunSpec(domain=args.domain, trials=1, concurrency=1, seed=0, max_turns=8)

    def trial(token: str) -> tuple[float, str, int]:
        runner = Runner(dom, template, [task], lambda ctx: TokenAgent(token), users, cfg)
        t0 = time.perf_counter()
        res = runner.run_trial(task, 0)
        return time.perf_counter() - t0, res.termination_reason, res.trajectory.turns

    trial("warm up")
    print(f"bench-long-token: built-in {args.domain} data, task {task.id}; one trial with an agent message of one "
          f"{args.chars:,}-character token; median of {args.repeat}; {machine()}")
    for kind in kinds:
        token = KINDS[kind](args.chars)
        runs = [trial(token) for _ in range(args.repeat)]
        secs = statistics.median(r[0] for r in runs)
        print(f"  {kind:9s} {secs:7.3f} s per trial  (termination {runs[0][1]}, {runs[0][2]} turns; target < 1 s)")


if __name__ == "__main__":
    main()

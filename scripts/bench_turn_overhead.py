"""Benchmark (b): per-turn framework overhead with a scripted agent and user (target < 0.2 ms per turn).

The agent alternates a trivial tool call (retail ``think``, which only echoes) and a text reply; the user
answers every agent message with a fixed line. A ``Conversation`` runs on a trial database of the retail
peer data. Reported: wall time per turn (a turn = one user or agent message), the part of it spent inside
tools, and the framework's own share (everything else: the loop, message bookkeeping, validation).
``--profile`` prints the top functions by cumulative time.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Sequence

from _bench import machine, parser, retail

from simulator.dialogue.conversation import Conversation
from simulator.types.messages import AgentTurn, Message, ToolCall, UserTurn
from simulator.types.trajectory import Limits
from simulator.world.tools import ToolContext


class ChattyAgent:
    """Tool call, then text, forever."""

    def __init__(self) -> None:
        self.n = 0

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.n += 1
        if self.n % 2:
            call = ToolCall(id=f"c{self.n}", name="think", arguments={"thought": "noted"})
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]))
        return AgentTurn(message=Message(role="assistant", content="Sure, anything else?"))


class ChattyUser:
    def reply(self, messages: Sequence[Message]) -> UserTurn:
        return UserTurn(content="Yes, one more thing please.")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=200, help="turns per conversation (default: %(default)s)")
    p.add_argument("--conversations", type=int, default=100, help="conversations (default: %(default)s)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of the conversations")
    args = p.parse_args()
    dom, template, _, label = retail(args.peers)
    toolbox = dom.toolbox()
    limits = Limits(max_turns=args.turns, max_steps=10 * args.turns)

    def conversations(n: int) -> tuple[float, float, int, int]:
        wall = tools = 0.0
        turns = calls = 0
        for _ in range(n):
            with template.trial() as db:
                ctx = ToolContext(db.session, db.options)
                t0 = time.perf_counter()
                traj = Conversation(ChattyAgent(), ChattyUser(), toolbox, ctx, limits).run()
                wall += time.perf_counter() - t0
            tools += traj.tool_seconds
            turns += traj.turns
            calls += len(traj.tool_calls)
        return wall, tools, turns, calls

    conversations(5)  # warm-up
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        conversations(args.conversations)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return
    wall, tools, turns, calls = conversations(args.conversations)
    print(f"bench-turn-overhead: {label}; {args.conversations} conversations x {args.turns} turns "
          f"({turns} turns, {calls} tool calls); {machine()}")
    print(f"  per turn, all in:          {wall / turns * 1000:.4f} ms")
    print(f"  per turn, inside tools:    {tools / turns * 1000:.4f} ms  ({tools / calls * 1000:.4f} ms per tool call,"
          f" validation + transaction + tool)")
    print(f"  per turn, framework only:  {(wall - tools) / turns * 1000:.4f} ms  (target < 0.2 ms)")


if __name__ == "__main__":
    main()

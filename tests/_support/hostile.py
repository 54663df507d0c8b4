"""Agents and users whose output is hostile data (``--agent py:tests._support.hostile:hostile_agent``).

What they emit is what a model may: NaN and Infinity in tool arguments (``json.loads`` accepts them), lone
surrogates (half an emoji), terminal control sequences (window title, clear screen, OSC 52 clipboard write, C1 CSI,
NUL), rich markup and emoji codes, NaN and infinite costs.
"""

from __future__ import annotations

import json
import math

from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
OSC52 = "\x1b]52;c;cHduZWQ=\x07"
CONTROLS = f"title {TITLE} clear {CLEAR} clipboard {OSC52} nul \x00 c1 \x9b2J bell \x07 del \x7f"
TEXT = f"half an emoji \ud83d; {CONTROLS}; markup [bold red]local:100[/] :100: [link=http://x]y[/link]"
"""The hostile text every message carries."""

CALLS = [
    ("get_order_details", '{"order_id": NaN}'),
    ("get_order_details", '{"order_id": "#W1", "n": [Infinity, -Infinity]}'),
    ("get_order_details", '{"order_id": "#W\\ud83d"}'),
    ("get_user_details\ud83d", '{"user_id": "x"}'),
    ("get_order_details", json.dumps({"order_id": CONTROLS})),
]
"""Tool calls (name, argument text as a model writes it) made one per step before the first message."""

COSTS = [math.nan, math.inf, -math.inf, -1.0, 0.001]


class HostileAgent:
    """Makes every call of :data:`CALLS`, then says :data:`TEXT` at every turn; costs cycle through :data:`COSTS`."""

    def __init__(self, ctx):
        self.steps = 0
        self.metadata = {"note\ud800": [math.nan, TEXT]}

    def step(self, messages):
        i = self.steps
        self.steps += 1
        usage = Usage(prompt_tokens=1, completion_tokens=1, cost_usd=COSTS[i % len(COSTS)], calls=1)
        if i < len(CALLS):
            name, raw = CALLS[i]
            call = ToolCall(id=f"call-{i}\udc00", name=name, arguments=json.loads(raw), raw_arguments=raw)
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]), usage=usage)
        return AgentTurn(message=Message(role="assistant", content=TEXT), usage=usage)


def hostile_agent(ctx):
    """The factory of :class:`HostileAgent`."""
    return HostileAgent(ctx)


class RaisingAgent:
    """Raises an exception whose message holds control sequences and a lone surrogate."""

    def __init__(self, ctx):
        pass

    def step(self, messages):
        raise RuntimeError(f"agent crashed: {CONTROLS} \ud83d")


def raising_agent(ctx):
    """The factory of :class:`RaisingAgent`."""
    return RaisingAgent(ctx)


def plain_raising_agent(ctx):
    """An agent that raises a plain exception (the baseline of :class:`RaisingAgent`)."""

    class _Plain:
        def step(self, messages):
            raise RuntimeError("agent crashed")

    return _Plain()


class HostileUser:
    """Says :data:`TEXT` with an infinite cost, three times, then stops."""

    def __init__(self, ctx):
        self.turns = 0
        self.metadata = {"flags": [], "x": math.inf}

    def reply(self, messages):
        self.turns += 1
        return UserTurn(content=TEXT, stop=self.turns > 3, usage=Usage(cost_usd=math.inf))


def hostile_user(ctx):
    """The factory of :class:`HostileUser`."""
    return HostileUser(ctx)

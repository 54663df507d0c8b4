"""Shared helpers for conversation tests on the toy bank: agent messages and a trial database to run them on."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simulator.types.messages import Message, ToolCall
from simulator.world.tools import Toolbox, ToolContext
from tests._support.toy import BankDomain, write_data


def say(text: str) -> Message:
    """An assistant text message."""
    return Message(role="assistant", content=text)


def call(name: str, cid: str = "c1", **args: Any) -> Message:
    """An assistant message made of one tool call."""
    return Message(role="assistant", tool_calls=[ToolCall(id=cid, name=name, arguments=args)])


@contextmanager
def bank_trial(folder: Path) -> Iterator[tuple[Toolbox, ToolContext, Any]]:
    """Yield (toolbox, tool context, trial database) of a fresh toy-bank trial whose data is written to ``folder``."""
    dom = BankDomain()
    tpl = dom.template(write_data(folder))
    with tpl.trial() as t:
        yield dom.toolbox(), ToolContext(t.session), t

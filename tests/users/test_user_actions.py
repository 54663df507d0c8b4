"""The user's own gold actions (``UserActions``): performed as the agent's message names them."""

from __future__ import annotations

from simulator.types.messages import Message
from simulator.types.tasks import Action
from simulator.users._scripted import UserActions


def _ask(text: str) -> list[Message]:
    return [Message(role="assistant", content=text)]


def test_a_tool_queued_four_times_is_performed_as_often_as_the_message_names_it():
    """τ³ banking task_081's user asks for a human twice at the start and twice near the end; an agent that asks
    for two calls gets two, and the last two wait for the next request (by hand: 2 + 2, not 4 + 0)."""
    queue = [Action(name="request_human_agent_transfer", arguments={}, requestor="user") for _ in range(4)]
    user = UserActions(queue)
    first = user.reply(_ask("Please do this on your side, in order: request_human_agent_transfer(); "
                            "request_human_agent_transfer()."))
    assert first is not None and [c.name for c in first.tool_calls] == ["request_human_agent_transfer"] * 2
    assert user.reply(_ask("Thanks. Anything else?")) is None
    second = user.reply(_ask("Now: request_human_agent_transfer(); request_human_agent_transfer()."))
    assert second is not None and len(second.tool_calls) == 2
    assert [c.id for c in first.tool_calls + second.tool_calls] == ["user_0", "user_1", "user_2", "user_3"]
    assert user.reply(_ask("request_human_agent_transfer()")) is None  # the queue is done


def test_queued_tools_are_performed_in_order_while_the_message_names_them():
    queue = [Action(name=n, arguments={}, requestor="user") for n in ("toggle_roaming", "reboot_device",
                                                                        "toggle_roaming")]
    user = UserActions(queue)
    turn = user.reply(_ask("Please run toggle_roaming and then reboot_device."))
    assert turn is not None and [c.name for c in turn.tool_calls] == ["toggle_roaming", "reboot_device"]
    turn = user.reply(_ask("Run toggle_roaming once more."))
    assert turn is not None and [c.name for c in turn.tool_calls] == ["toggle_roaming"]

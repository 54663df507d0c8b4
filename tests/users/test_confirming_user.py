"""The confirming user (``--user confirming``): says its opening after the agent's greeting or a prior
conversation, performs its side of the task when asked, and stops once the agent is done."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from simulator.cli import app
from simulator.types.messages import Message
from simulator.types.tasks import Action
from simulator.users._scripted import ConfirmingUser
from simulator.world.tau2_tasks import GREETING
from tests._support.peers import TAU2, needs_tau2


def test_confirming_user_answers_the_agents_greeting_with_its_opening():
    """tau2 suites have the agent greet first; the confirming user used to stop at once (11/114 retail)."""
    user = ConfirmingUser("I want to cancel an order.")
    turn = user.reply([Message(role="assistant", content=GREETING)])
    assert turn.content == "I want to cancel an order." and not turn.stop
    after = user.reply([Message(role="assistant", content=GREETING), Message(role="user", content=turn.content),
                        Message(role="assistant", content="Done, your order is cancelled.")])
    assert after.stop


def test_confirming_user_says_its_opening_after_a_prior_conversation():
    """A tau2 ``message_history`` holds user messages that are not the confirming user's: it used to stop at once."""
    history = [Message(role="user", content="I need to create a task."),
               Message(role="assistant", content="I've created the task task_2 for you.")]
    user = ConfirmingUser("Please mark task_2 as completed.")
    turn = user.reply(history)
    assert turn.content == "Please mark task_2 as completed." and not turn.stop
    after = user.reply([*history, Message(role="user", content=turn.content),
                        Message(role="assistant", content="Done: task_2 is completed.")])
    assert after.stop and not after.tool_calls


def test_confirming_user_performs_its_side_of_the_task_when_asked():
    act = Action(name="dismiss_notification", arguments={"notification_id": "notif_1"}, requestor="user")
    user = ConfirmingUser("My task is done.", [act])
    convo = [Message(role="assistant", content="Hi! How can I help you today?")]
    assert user.reply(convo).content == "My task is done."
    convo += [Message(role="user", content="My task is done."),
              Message(role="assistant", content="Please do this on your side: dismiss_notification(notif_1).")]
    turn = user.reply(convo)
    calls = [(c.name, c.arguments) for c in turn.tool_calls]
    assert calls == [("dismiss_notification", {"notification_id": "notif_1"})]
    assert not turn.stop


@needs_tau2
def test_oracle_with_confirming_user_passes_every_mock_task(tmp_path):
    """Was 7/10: no user-side actions, and the message history taken for the user's own opening."""
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "mock", "--data", str(TAU2 / "mock"), "--tasks",
                                   str(TAU2 / "mock" / "tasks.json"), "--agent", "oracle", "--user", "confirming",
                                   "--no-progress", "--out", str(out)])
    assert res.exit_code == 0, res.output
    trials = json.loads(out.read_text())["trials"]
    ids = {str(t["id"]) for t in json.loads((TAU2 / "mock" / "tasks.json").read_text())}
    assert {t["task_id"] for t in trials} == ids
    assert [t["task_id"] for t in trials if not t["passed"]] == []

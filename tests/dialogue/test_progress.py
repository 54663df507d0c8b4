"""Progress signals judged by the orchestrator per agent turn (simulator.types.protocols.Progress).

Expected signals are worked out by hand from each scripted conversation (which calls succeed in the toy bank,
which values and questions are new), not read back from the code.
"""

import pytest

from simulator.dialogue.conversation import Conversation
from simulator.types.messages import AgentTurn, UserTurn
from simulator.types.protocols import Progress, ProgressAware
from simulator.types.trajectory import Limits, TerminationReason
from simulator.users import ScriptedUser
from tests._support.convo import bank_trial, call, say


class TurnAgent:
    """Plays prepared agent turns: each turn is a list of messages (tool calls, then a text)."""

    def __init__(self, *turns):
        self.queue = [m for t in turns for m in t]

    def step(self, messages):
        return AgentTurn(message=self.queue.pop(0) if len(self.queue) > 1 else self.queue[0])


class RecordingUser:
    """Says its lines; records every progress it is told and when."""

    def __init__(self, lines):
        self.lines = list(lines)
        self.events = []

    def observe_progress(self, progress):
        self.events.append(("progress", progress))

    def reply(self, messages):
        self.events.append(("reply", len(messages)))
        if not self.lines:
            return UserTurn(content="", stop=True)
        return UserTurn(content=self.lines.pop(0))


@pytest.fixture()
def env(tmp_path):
    with bank_trial(tmp_path / "d") as (toolbox, ctx, _):
        yield toolbox, ctx


def run(env, agent, user, **limits):
    tb, ctx = env
    return Conversation(agent, user, tb, ctx, Limits(**limits) if limits else Limits()).run()


def test_progress_is_a_frozen_record_and_users_may_implement_the_hook():
    p = Progress(made=True, signals=("tool_ok",))
    assert p.as_dict() == {"made": True, "signals": ["tool_ok"]}
    with pytest.raises(AttributeError):
        p.made = False  # type: ignore[misc]
    assert isinstance(RecordingUser([]), ProgressAware)
    assert not isinstance(ScriptedUser(["hi"]), ProgressAware)


def test_signals_per_turn(env):
    agent = TurnAgent(
        # 1: a successful read, a question never asked -> tool_ok, new_info (balance 100.0), new_question
        [call("get_balance", account_id="A1"), say("Your balance is 100.0. Which account should receive money?")],
        # 2: the very same read again -> agent_repeat (not tool_ok); same question again -> repeated_question
        [call("get_balance", account_id="A1"), say("Which account should receive money?")],
        # 3: a failing call (unknown account) and a plain text with nothing new -> tool_error only
        [call("get_balance", account_id="Z9"), say("Sorry, something went wrong.")],
        # 4: the same text again -> agent_repeat
        [say("Sorry, something went wrong.")],
    )
    user = RecordingUser(["hi", "B2 please", "and?", "hello?"])
    traj = run(env, agent, user)
    assert traj.progress == [
        {"made": True, "signals": ["tool_ok", "new_info", "new_question"]},
        {"made": False, "signals": ["repeated_question", "agent_repeat"]},
        {"made": False, "signals": ["tool_error"]},
        {"made": False, "signals": ["agent_repeat"]},
    ]


def test_new_info_ignores_values_the_user_said(env):
    # the user said B2 and 5; the agent repeating them carries no new value; 20 is new
    agent = TurnAgent([say("Moving 5 to B2.")], [say("Actually the fee is 20.")])
    traj = run(env, agent, RecordingUser(["send 5 to B2", "ok", "ok"]))
    assert traj.progress[0] == {"made": False, "signals": []}
    assert traj.progress[1] == {"made": True, "signals": ["new_info"]}


def test_confirmed_action_needs_a_user_yes_before_the_write(env):
    agent = TurnAgent(
        [say("I will move 5 from A1 to B2. Shall I proceed (yes/no)?")],
        [call("transfer", src="A1", dst="B2", amount=5), say("Done.")],
        [call("transfer", cid="c2", src="A1", dst="B2", amount=6), say("Done again.")],
    )
    traj = run(env, agent, RecordingUser(["move 5 from A1 to B2", "yes, go ahead", "thanks", "bye"]))
    assert traj.progress[0]["signals"] == ["new_question"]  # 5, A1, B2 were said by the user
    assert traj.progress[1] == {"made": True, "signals": ["tool_ok", "confirmed_action"]}
    # the user said "thanks", not yes: a write is progress but not a confirmed action
    assert traj.progress[2] == {"made": True, "signals": ["tool_ok"]}


def test_confirmation_questions_compare_as_a_whole_and_closing_offers_are_not_questions(env):
    agent = TurnAgent(
        [say("I will move 5 to B2. Shall I proceed (yes/no)?")],
        [say("I will move 7 to B2. Shall I proceed (yes/no)?")],  # a different action: a new question
        [say("Is there anything else I can help you with?")],
        [say("Anything else I can help you with today? Is there anything else?")],
    )
    traj = run(env, agent, RecordingUser(["move 5 to B2", "no, 7", "no", "hm", "bye"]))
    assert traj.progress[0]["signals"] == ["new_question"]
    assert traj.progress[1]["signals"] == ["new_question"]  # 7 was said by the user
    assert traj.progress[2] == {"made": False, "signals": []}
    assert traj.progress[3] == {"made": False, "signals": []}


def test_observe_progress_is_called_before_each_reply_but_the_first(env):
    agent = TurnAgent([say("What is the account id?")], [say("What is the account id?")])
    user = RecordingUser(["hi", "A1", "A1 again"])
    traj = run(env, agent, user)
    kinds = [e[0] for e in user.events]
    assert kinds == ["reply", "progress", "reply", "progress", "reply", "progress", "reply"]
    told = [e[1] for e in user.events if e[0] == "progress"]
    assert [p.made for p in told] == [True, False, False]
    assert told[1].signals == ("repeated_question", "agent_repeat")
    assert [Progress(**{**d, "signals": tuple(d["signals"])}) for d in traj.progress] == told
    assert traj.termination_reason == TerminationReason.USER_STOP


def test_users_without_the_hook_still_work(env):
    traj = run(env, TurnAgent([say("Hello?")]), ScriptedUser(["a", "b"]))
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert len(traj.progress) == 2


def test_observe_progress_errors_are_user_errors(env):
    class Broken(RecordingUser):
        def observe_progress(self, progress):
            raise RuntimeError("boom")

    traj = run(env, TurnAgent([say("Hello?")]), Broken(["a", "b"]))
    assert traj.termination_reason == TerminationReason.USER_ERROR
    assert "boom" in traj.error


def test_transfer_turn_records_no_progress(env):
    traj = run(env, TurnAgent([call("transfer_to_human", summary="x")]), RecordingUser(["hi"]))
    assert traj.termination_reason == TerminationReason.AGENT_TRANSFER
    assert traj.progress == []


def test_reading_again_after_a_write_is_not_a_repeat(env):
    agent = TurnAgent(
        [call("get_balance", account_id="A1"), say("Shall I move 5 from A1 to B2 (yes/no)?")],
        [call("transfer", cid="c2", src="A1", dst="B2", amount=5), call("get_balance", cid="c3", account_id="A1"),
         say("Done.")],
        [call("get_balance", cid="c4", account_id="A1"), say("Checked again.")],
    )
    traj = run(env, agent, RecordingUser(["move 5 from A1 to B2", "yes", "thanks"]))
    # turn 2: the write succeeded, so reading A1 again sees a changed state: no agent_repeat
    assert traj.progress[1] == {"made": True, "signals": ["tool_ok", "confirmed_action"]}
    # turn 3: nothing was written since the last read of A1: a repeat
    assert traj.progress[2] == {"made": False, "signals": ["agent_repeat"]}


def test_an_answer_to_the_users_question_is_progress_even_with_known_values(env):
    agent = TurnAgent([say("Your balance is 100.0.")], [say("Your balance is 100.0, as I said.")],
                      [say("It is 100.0.")])
    traj = run(env, agent, RecordingUser(["hi", "what is my balance again?", "ok", "bye"]))
    assert traj.progress[0] == {"made": True, "signals": ["new_info"]}
    assert traj.progress[1] == {"made": True, "signals": ["answered"]}
    assert traj.progress[2] == {"made": False, "signals": []}  # the user asked nothing: old values only

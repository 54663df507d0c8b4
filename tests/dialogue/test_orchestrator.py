import pytest

from simulator.dialogue.conversation import Conversation
from simulator.dialogue.cues import asks_confirmation
from simulator.types.messages import AgentTurn, Message, UserTurn
from simulator.types.trajectory import Limits, TerminationReason
from simulator.users import ScriptedUser
from tests._support.convo import bank_trial, call, say


class ListAgent:
    """Returns prepared messages in order; repeats the last one."""

    def __init__(self, *messages):
        self.messages = list(messages)
        self.seen = []

    def step(self, messages):
        self.seen.append(list(messages))
        m = self.messages.pop(0) if len(self.messages) > 1 else self.messages[0]
        return AgentTurn(message=m)


@pytest.fixture()
def env(tmp_path):
    with bank_trial(tmp_path / "d") as trial:
        yield trial


def test_user_stop_after_tool_call(env):
    tb, ctx, t = env
    agent = ListAgent(call("transfer", src="A1", dst="B2", amount=5), say("Done, moved $5."))
    traj = Conversation(agent, ScriptedUser(["move 5 dollars"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [m.role for m in traj.messages] == ["user", "assistant", "tool", "assistant"]
    assert traj.messages[2].tool_call_id == "c1" and traj.messages[2].content == "ok"
    assert traj.turns == 2 and traj.steps == 2
    assert [c.status for c in traj.tool_calls] == ["ok"]
    # the agent saw the tool result before its second step
    assert agent.seen[1][-1].role == "tool"


def test_transfer_ends_trial(env):
    tb, ctx, _ = env
    traj = Conversation(ListAgent(call("transfer_to_human", summary="x")), ScriptedUser(["hi", "hello"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.AGENT_TRANSFER


def test_tool_bug_ends_trial_and_is_not_an_agent_error(env):
    tb, ctx, _ = env
    traj = Conversation(ListAgent(call("explode", account_id="A1")), ScriptedUser(["hi"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.TOOL_BUG
    assert "KeyError" in traj.error


def test_tool_errors_are_observations(env):
    tb, ctx, _ = env
    agent = ListAgent(call("nope"), call("transfer", src="A1"), say("sorry"))
    traj = Conversation(agent, ScriptedUser(["hi"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [c.status for c in traj.tool_calls] == ["unknown_tool", "invalid_arguments"]


def test_max_turns_and_max_steps(env):
    tb, ctx, _ = env
    traj = Conversation(ListAgent(say("ok")), ScriptedUser(["a"] * 50), tb, ctx, Limits(max_turns=5)).run()
    assert traj.termination_reason == TerminationReason.MAX_TURNS and traj.turns == 5
    traj = Conversation(ListAgent(call("get_balance", account_id="A1")), ScriptedUser(["a"]), tb, ctx,
                            Limits(max_steps=7)).run()
    assert traj.termination_reason == TerminationReason.MAX_STEPS and len(traj.tool_calls) == 7


def test_agent_exception_is_recorded(env):
    tb, ctx, _ = env

    class Broken:
        def step(self, messages):
            raise RuntimeError("agent crashed")

    traj = Conversation(Broken(), ScriptedUser(["hi"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.AGENT_ERROR and "agent crashed" in traj.error


def test_a_keyboard_interrupt_from_actor_code_in_a_trial_thread_is_its_error(env):
    """Ctrl-C reaches the main thread only: raised in a trial thread, it is the agent's (or user's) own error."""
    import threading

    tb, ctx, _ = env

    class Interrupting:
        def step(self, messages):
            raise KeyboardInterrupt

    class InterruptingUser:
        def reply(self, messages):
            raise KeyboardInterrupt

    got = {}

    def run_both():
        got["agent"] = Conversation(Interrupting(), ScriptedUser(["hi"]), tb, ctx).run()
        got["user"] = Conversation(ListAgent(Message(role="assistant", content="hello")), InterruptingUser(), tb,
                                   ctx).run()

    thread = threading.Thread(target=run_both)
    thread.start()
    thread.join(30)
    assert got["agent"].termination_reason == TerminationReason.AGENT_ERROR
    assert "KeyboardInterrupt" in got["agent"].error
    assert got["user"].termination_reason == TerminationReason.USER_ERROR
    assert "KeyboardInterrupt" in got["user"].error
    with pytest.raises(KeyboardInterrupt):  # in the main thread it may be the user's Ctrl-C: raised on
        Conversation(Interrupting(), ScriptedUser(["hi"]), tb, ctx).run()


def test_any_base_exception_from_the_agent_s_code_is_its_error(env):
    """GeneratorExit or an agent's own BaseException subclass stopped the whole run with a traceback."""
    tb, ctx, _ = env

    class Own(BaseException):
        pass

    for raised in (GeneratorExit, Own):
        class Raising:
            def step(self, messages, raised=raised):
                raise raised("from the agent")

        traj = Conversation(Raising(), ScriptedUser(["hi"]), tb, ctx).run()
        assert traj.termination_reason == TerminationReason.AGENT_ERROR, raised
        assert f"{raised.__name__}: from the agent" in traj.error


def test_agent_reported_infra_error(env):
    tb, ctx, _ = env

    class Failing:
        def step(self, messages):
            return AgentTurn(message=Message(role="assistant", content=""), error="rate limited",
                             error_kind="infra_error")

    traj = Conversation(Failing(), ScriptedUser(["hi"]), tb, ctx).run()
    assert traj.termination_reason == TerminationReason.INFRA_ERROR


class StopUser:
    def __init__(self, turns):
        self.turns = list(turns)

    def reply(self, messages):
        return self.turns.pop(0)


def test_stop_while_awaiting_confirmation_is_not_a_stop(env):
    tb, ctx, _ = env
    agent = ListAgent(say("I will move $5 from A1 to B2. Shall I proceed?"), say("Done."))
    user = StopUser([UserTurn(content="move 5"), UserTurn(content="yes please", stop=True),
                     UserTurn(content="", stop=True)])
    traj = Conversation(agent, user, tb, ctx).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [m.content for m in traj.messages if m.role == "user"] == ["move 5", "yes please"]
    assert traj.messages[-1].content == "Done."


@pytest.mark.parametrize("request_text", [
    "I will move $5 from A1 to B2. Please confirm.",
    "I will move $5 from A1 to B2. Reply yes to confirm.",
    "I will move $5 from A1 to B2. Let me know if I should proceed.",
])
def test_stop_during_an_imperative_confirmation_request_is_not_a_stop(env, request_text):
    tb, ctx, _ = env
    agent = ListAgent(say(request_text), call("transfer", src="A1", dst="B2", amount=5), say("Done."))
    user = StopUser([UserTurn(content="move 5"), UserTurn(content="yes", stop=True),
                     UserTurn(content="", stop=True)])
    traj = Conversation(agent, user, tb, ctx).run()
    # the yes is delivered and the agent makes the write; the trial ends at the next stop
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert [m.content for m in traj.messages if m.role == "user"] == ["move 5", "yes"]
    assert [(c.name, c.status) for c in traj.tool_calls] == [("transfer", "ok")]
    assert traj.messages[-1].content == "Done."


def test_stop_after_a_plain_statement_ends_the_trial(env):
    tb, ctx, _ = env
    agent = ListAgent(say("I will move $5 from A1 to B2."), call("transfer", src="A1", dst="B2", amount=5))
    user = StopUser([UserTurn(content="move 5"), UserTurn(content="yes", stop=True)])
    traj = Conversation(agent, user, tb, ctx).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert traj.tool_calls == []


def test_text_attached_to_stop_is_delivered(env):
    tb, ctx, _ = env
    user = StopUser([UserTurn(content="hi"), UserTurn(content="thanks, bye", stop=True)])
    traj = Conversation(ListAgent(say("Anything else?")), user, tb, ctx).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert traj.messages[-1].role == "user" and traj.messages[-1].content == "thanks, bye"


def test_user_sees_only_text_messages(env):
    tb, ctx, _ = env
    views = []

    class Recorder:
        def reply(self, messages):
            views.append([(m.role, m.content) for m in messages])
            return UserTurn(content="hi") if not views[1:] else UserTurn(content="", stop=True)

    Conversation(ListAgent(call("get_balance", account_id="A1"), say("You have $100.")), Recorder(), tb, ctx).run()
    assert views[1] == [("user", "hi"), ("assistant", "You have $100.")]


@pytest.mark.parametrize("text,expected", [
    ("Shall I cancel order #W1?", True),
    ("Please confirm (yes/no).", True),
    ("Would you like me to proceed with the exchange?", True),
    ("Your order was cancelled. Is there anything else?", False),
    ("Which order do you mean?", False),
    ("I have cancelled it.", False),
    ("I will cancel order #W1. Please confirm.", True),
    ("I will cancel order #W1. Reply yes to confirm.", True),
    ("I will cancel order #W1. Let me know if I should proceed.", True),
    ("Please confirm that you want the refund to your gift card.", True),
    ("Let me know whether you would like me to go ahead.", True),
    ("Please confirm your email address.", False),
    ("Let me know if you have any other questions.", False),
    ("Let me know if I can help with anything else.", False),
    ("", False),
    (None, False),
])
def test_asks_confirmation(text, expected):
    assert asks_confirmation(text) is expected


def test_any_base_exception_from_the_agent_s_next_turn_of_a_prefix_case_is_its_error(env):
    """A trajectory-prefix case's agent (simulator.dialogue.prefix): as the conversation records it."""
    from simulator.dialogue.prefix import run_next_turn
    from simulator.types.tasks import NextStep, TrialPrefix
    from simulator.types.trajectory import Limits

    tb, ctx, _ = env
    prefix = TrialPrefix(messages=[Message(role="user", content="hi")], next_step=NextStep(must_say=["question"]))

    class Own(BaseException):
        pass

    for raised in (GeneratorExit, Own, SystemExit):
        class Raising:
            def step(self, messages, raised=raised):
                raise raised("from the agent")

        traj = run_next_turn(Raising(), prefix, tb, ctx, Limits())
        assert traj.termination_reason == TerminationReason.AGENT_ERROR, raised
        assert f"{raised.__name__}: from the agent" in traj.error

    class Interrupting:
        def step(self, messages):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # in the main thread: maybe the user's Ctrl-C
        run_next_turn(Interrupting(), prefix, tb, ctx, Limits())

"""The conversation loop's caps and observers (simulator.dialogue.caps, simulator.dialogue.observers)."""

import threading

import pytest

from simulator.dialogue.caps import CAP_HOOKS, StepLimit, TimeLimit, ToolErrorLimit, TurnLimit, limit_caps, limit_hooks
from simulator.dialogue.conversation import Conversation
from simulator.dialogue.observers import DualControlSync, ToolCallLog
from simulator.types.messages import UserTurn
from simulator.types.trajectory import Limits, TerminationReason
from simulator.users import ScriptedUser
from tests._support.convo import bank_trial, call, say
from tests.dialogue.test_orchestrator import ListAgent


@pytest.fixture()
def env(tmp_path):
    with bank_trial(tmp_path / "d") as trial:
        yield trial


class Events:
    """Records every hook, in order."""

    def __init__(self):
        self.events = []

    def on_user_turn(self, state):
        self.events.append(("user_turn", state.trajectory.turns))

    def on_user_reply(self, state, turn, start_ns, end_ns):
        assert start_ns <= end_ns
        self.events.append(("user_reply", turn.content))

    def on_agent_turn(self, state):
        self.events.append(("agent_turn", len(state.trajectory.progress)))

    def on_agent_reply(self, state, turn, start_ns, end_ns):
        self.events.append(("agent_reply", bool(turn.message.tool_calls)))

    def on_tool_call(self, state, record, start_ns, end_ns):
        assert start_ns <= end_ns
        self.events.append(("tool_call", record.name, record.status))

    def on_step(self, state):
        self.events.append(("step", state.trajectory.steps))

    def on_agent_turn_end(self, state, progress):
        self.events.append(("agent_turn_end", progress.made))

    def on_end(self, state):
        self.events.append(("end", str(state.trajectory.termination_reason)))


def test_observers_see_every_hook_in_order(env):
    tb, ctx, _ = env
    seen = Events()
    agent = ListAgent(call("get_balance", account_id="A1"), say("You have $100."))
    Conversation(agent, ScriptedUser(["hi"]), tb, ctx, observers=[seen]).run()
    assert seen.events == [
        ("user_turn", 0), ("user_reply", "hi"), ("step", 0),
        ("agent_turn", 0), ("agent_reply", True), ("tool_call", "get_balance", "ok"), ("step", 1),
        ("agent_reply", False), ("step", 2), ("agent_turn_end", True),
        ("user_turn", 2), ("user_reply", ""), ("end", "user_stop"),
    ]


def test_an_observer_needs_only_the_hooks_it_uses(env):
    tb, ctx, _ = env
    synced = []
    traj = Conversation(ListAgent(say("ok")), ScriptedUser(["hi"]), tb, ctx,
                        observers=[DualControlSync(lambda: synced.append(1)), object()]).run()
    assert traj.termination_reason == TerminationReason.USER_STOP
    assert len(synced) == 2  # the user's message and the agent's


def test_tool_call_log_names_each_call(env):
    tb, ctx, _ = env
    logged = []

    class Log:
        def info(self, event, **fields):
            logged.append((event, fields["name"], fields["status"], fields["step"]))

    Conversation(ListAgent(call("get_balance", account_id="A1"), say("ok")), ScriptedUser(["hi"]), tb, ctx,
                 observers=[ToolCallLog(Log())]).run()
    assert logged == [("tool_call", "get_balance", "ok", 0)]


def test_limits_become_the_standard_caps():
    caps = limit_caps(Limits(max_turns=3, max_steps=4, max_tool_errors=2))
    assert [type(c) for c in caps] == [TurnLimit, StepLimit, ToolErrorLimit]
    assert [type(c) for c in limit_caps(Limits())] == [TurnLimit, StepLimit]


@pytest.mark.parametrize("limits", [Limits(), Limits(max_turns=3, max_steps=4, max_tool_errors=2)])
def test_limit_hooks_are_the_standard_caps_checkpoints(limits):
    """The loop takes the standard caps' checkpoints from limit_hooks: those limit_caps' caps have, in order."""
    def described(hooks):
        return {n: [(type(h.__self__), h.__func__, vars(h.__self__)) for h in hs] for n, hs in hooks.items()}

    caps = limit_caps(limits)
    expected = {n: [(type(c), getattr(type(c), n), vars(c)) for c in caps if hasattr(c, n)] for n in CAP_HOOKS}
    assert described(limit_hooks(limits)) == expected


def test_a_cap_composes_around_the_loop(env):
    tb, ctx, _ = env

    class NoWrites:
        """Ends the trial at the agent's first write: a cap with only the after_tool_call checkpoint."""

        def after_tool_call(self, state, record):
            return TerminationReason.BUDGET_EXCEEDED if record.kind == "write" else None

    agent = ListAgent(call("get_balance", account_id="A1"), call("transfer", src="A1", dst="B2", amount=5),
                      say("Done."))
    traj = Conversation(agent, ScriptedUser(["move 5"]), tb, ctx, caps=[NoWrites()]).run()
    assert traj.termination_reason == TerminationReason.BUDGET_EXCEEDED
    assert [c.name for c in traj.tool_calls] == ["get_balance", "transfer"]


def test_time_limit_ends_the_conversation_at_the_next_checkpoint(env):
    tb, ctx, _ = env
    now = [0.0]

    class Slow(ListAgent):
        def step(self, messages):
            now[0] += 1.0
            return super().step(messages)

    limit = TimeLimit(2.5, clock=lambda: now[0])
    traj = Conversation(Slow(say("ok")), ScriptedUser(["a"] * 10), tb, ctx, caps=[limit]).run()
    assert traj.termination_reason == TerminationReason.TIMEOUT
    assert traj.steps == 3  # steps at t=0, 1, 2; the check at t=3 ends it


def test_time_limit_stops_when_its_event_is_set(env):
    tb, ctx, _ = env
    stop = threading.Event()

    class Stopper:
        def reply(self, messages):
            stop.set()
            return UserTurn(content="hi")

    traj = Conversation(ListAgent(say("ok")), Stopper(), tb, ctx, caps=[TimeLimit(stop=stop)]).run()
    assert traj.termination_reason == TerminationReason.TIMEOUT
    assert [m.role for m in traj.messages] == ["user"]


def test_resume_continues_from_a_state_taken_by_an_observer(env):
    tb, ctx, _ = env
    import pickle

    taken = []

    class Take:
        def on_user_turn(self, state):
            taken.append(pickle.dumps(state))

    Conversation(ListAgent(say("ok")), ScriptedUser(["a", "b"]), tb, ctx, observers=[Take()]).run()
    second = pickle.loads(taken[1])  # noqa: S301 - our own bytes
    traj = Conversation(ListAgent(say("again")), ScriptedUser(["c"]), tb, ctx, resume=second).run()
    assert [m.content for m in traj.messages] == ["a", "ok", "c", "again"]


@pytest.mark.parametrize("max_turns, max_steps", [(t, s) for t in (1, 2, 3, 4, 5) for s in (0, 1, 2, 3, 5, 8)])
def test_the_inline_limits_end_as_the_limit_caps_do(tmp_path, max_turns, max_steps):
    """The loop checks max_turns and max_steps itself: the same trajectory as TurnLimit and StepLimit given as caps."""
    def run(name, limits, caps):
        agent = ListAgent(call("get_balance", "c1", account_id="A1"), call("get_balance", "c2", account_id="A1"),
                          say("You have $100."), call("get_balance", "c3", account_id="A2"), say("Done."))
        with bank_trial(tmp_path / name) as (tb, ctx, _):
            traj = Conversation(agent, ScriptedUser(["hi", "and the other?", "thanks"]), tb, ctx, limits,
                                caps=caps).run()
        return traj.model_dump(exclude={"agent_seconds", "user_seconds", "tool_seconds", "tool_calls"}), [
            (c.name, c.step, c.status) for c in traj.tool_calls]

    inline = run("a", Limits(max_turns=max_turns, max_steps=max_steps), [])
    capped = run("b", Limits(max_turns=10**6, max_steps=10**6), [TurnLimit(max_turns), StepLimit(max_steps)])
    assert inline == capped
    assert inline[0]["termination_reason"] in ("max_turns", "max_steps", "user_stop")

"""Arguments no JSON text can hold never stop a run (fresh-user tour of 2026-12-06, findings F1-F3).

A model's arguments nested hundreds deep (valid JSON, accepted by ``json.loads``), an integer of more than 4,300
digits and an object with an int and a str key (both only from Python agents) used to end the whole run: a
``RecursionError`` in admission, "Maximum serialization depth exceeded" when the trial was recorded, ``ValueError``
from ``repr`` of the int in the memo key, ``TypeError`` from sorting the keys in the progress judge. Each is now
refused as ``invalid_arguments`` with a note naming where and why; the trial is recorded and the run goes on.
"""

from __future__ import annotations

import pytest

from simulator.execution.runner import Runner
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage
from simulator.types.sanitize import MAX_ARGUMENT_DEPTH, MAX_INT_BITS, admit_call, refused_path
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from tests._support.toy import BankDomain, write_data

TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]}]})


def nested(depth: int) -> dict:
    """``{"src": [[...["A1"]...]]}``: ``depth`` levels of containers, the outer dict counted (built by hand)."""
    value: object = "A1"
    for _ in range(depth - 1):
        value = [value]
    return {"src": value}


HOSTILE = {
    "deep": nested(MAX_ARGUMENT_DEPTH + 1),
    "deep under a surrogate key": {"src": {"\ud800": nested(MAX_ARGUMENT_DEPTH)["src"]}},
    "huge int key": {"src": {"a": {10 ** 5_000: 1}}},
    "nan key": {"src": {float("nan"): 1}},
    "set": {"src": {10 ** 5_000}},
    "very deep": nested(5_000),
    "huge int": {"src": "A1", "dst": "B2", "amount": 10 ** 5_000},
    "mixed keys": {"src": {1: "a", "b": 2}},
    "tuple key": {"src": {(1, 2): "a"}},
}


class OneCall:
    """Calls ``transfer`` with the given arguments, then says goodbye."""

    def __init__(self, arguments: dict):
        self.arguments = arguments
        self.i = 0

    def step(self, messages):
        self.i += 1
        if self.i == 1:
            msg = Message(role="assistant", tool_calls=[ToolCall(id="c1", name="transfer", arguments=self.arguments)])
        else:
            msg = Message(role="assistant", content="done, bye")
        return AgentTurn(message=msg, usage=Usage())


class Bye:
    def reply(self, messages):
        from simulator.types.messages import UserTurn

        return UserTurn(content="bye", stop=len(messages) > 2)


def test_the_depth_limit_is_where_it_says():
    assert refused_path(nested(MAX_ARGUMENT_DEPTH)) is None
    assert refused_path(nested(MAX_ARGUMENT_DEPTH + 1)) == (
        "src" + "[0]" * (MAX_ARGUMENT_DEPTH - 1), f"nesting deeper than {MAX_ARGUMENT_DEPTH} levels")
    assert refused_path({"n": 2 ** MAX_INT_BITS - 1}) is None  # MAX_INT_BITS bits exactly
    assert refused_path({"n": -(2 ** MAX_INT_BITS)})[1] == f"an integer of more than {MAX_INT_BITS} bits"
    assert refused_path({"k": {1: "a", 2: "b"}}) is None  # int keys alone: json.dumps writes and sorts them
    assert refused_path({"k": {1: "a", "b": 2}}) == ("k", "keys that are not all text, all numbers or one null")
    assert refused_path({"x": [1.0, float("nan")]}) == ("x[1]", "a non-finite number")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_admission_refuses_with_a_note_and_keeps_a_text(name):
    notes: list[str] = []
    call = admit_call(ToolCall(id="c1", name="transfer", arguments=HOSTILE[name]), "agent step 1", notes)
    assert call.arguments is None
    assert isinstance(call.raw_arguments, str) and call.raw_arguments
    assert [n for n in notes if "refused as invalid_arguments" in n]
    "".join(notes).encode("utf-8")  # every note can be recorded


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_run_goes_on_and_the_trial_is_recorded(tmp_path, name):
    dom = BankDomain()
    write_data(tmp_path / "d")
    spec = RunSpec(domain="bank", agent="script", trials=2, max_turns=6, max_steps=6)
    runner = Runner(dom, dom.template(tmp_path / "d"), TASKS, lambda ctx: OneCall(HOSTILE[name]),
                    lambda ctx: Bye(), spec)
    result = runner.run()  # no exception
    assert len(result.trials) == 2
    for t in result.trials:
        t.model_dump_json().encode("utf-8")  # storable
        (call,) = t.trajectory.tool_calls
        assert (call.name, call.status, call.arguments) == ("transfer", "invalid_arguments", None)
        assert not t.passed
        assert any("refused as invalid_arguments" in n for n in t.trajectory.notes)


class DeepMetadata:
    """Says goodbye at once; its ``metadata`` nests ``depth`` dicts deep (built by hand), plus a NaN."""

    def __init__(self, depth: int):
        value: object = "x"
        for _ in range(depth):
            value = {"a": value}
        self.metadata = {"nan": float("nan"), "deep": value}

    def step(self, messages):
        return AgentTurn(message=Message(role="assistant", content="bye"), usage=Usage())


@pytest.mark.parametrize("depth", [300, 3_000])
def test_metadata_no_record_can_hold_is_left_out_with_a_note(tmp_path, depth):
    """Metadata 300 deep ended the run at recording ("Maximum serialization depth exceeded"), 3,000 deep with a
    ``RecursionError`` in admission; now it is not recorded, a note says where and why, and the run goes on."""
    dom = BankDomain()
    write_data(tmp_path / "d")
    spec = RunSpec(domain="bank", agent="script", trials=1)
    runner = Runner(dom, dom.template(tmp_path / "d"), TASKS, lambda ctx: DeepMetadata(depth), lambda ctx: Bye(), spec)
    (trial,) = runner.run().trials
    trial.model_dump_json().encode("utf-8")
    assert trial.trajectory.agent_metadata == {}
    assert any(n.startswith(f"agent metadata: nesting deeper than {MAX_ARGUMENT_DEPTH} levels at deep.a.a")
               for n in trial.trajectory.notes)


def test_keys_json_writes_and_sorts_are_admitted():
    """Text keys (str subclasses too), number keys (ints, floats, bools, int subclasses) together: admitted."""
    import enum

    class Color(enum.StrEnum):
        RED = "red"

    class One(enum.IntEnum):
        ONE = 1

    for value in ({"x": 1, Color.RED: 2}, {2: 1, One.ONE: 2}, {1: "a", 1.5: "b"}, {True: "c", 2: "d"}, {None: 1}):
        assert refused_path({"k": value}) is None, value


def test_a_refusal_path_is_recordable_and_names_the_root():
    path, what = refused_path({"\ud800": {"x": float("inf")}})
    assert (path, what) == ("\ufffd.x", "a non-finite number")
    assert refused_path(float("nan"), root="(metadata)") == ("(metadata)", "a non-finite number")


class RaisingMetadata(DeepMetadata):
    @property
    def metadata(self):  # type: ignore[override]
        raise RuntimeError("no metadata today")

    @metadata.setter
    def metadata(self, value):
        pass


def test_metadata_that_raises_when_read_is_left_out_with_a_note(tmp_path):
    dom = BankDomain()
    write_data(tmp_path / "d")
    runner = Runner(dom, dom.template(tmp_path / "d"), TASKS, lambda ctx: RaisingMetadata(1), lambda ctx: Bye(),
                    RunSpec(domain="bank", agent="script", trials=1))
    (trial,) = runner.run().trials  # no exception
    assert trial.trajectory.agent_metadata == {}
    assert "agent metadata: reading it raised RuntimeError: not recorded" in trial.trajectory.notes


def test_shallow_metadata_keeps_its_old_treatment():
    """Non-finite numbers in metadata still become None with the old note (not a refusal of the whole dict)."""
    from simulator.types.sanitize import admit_metadata

    notes: list[str] = []
    actor = DeepMetadata(2)
    assert admit_metadata(actor, "agent", notes) == {"nan": None, "deep": {"a": {"a": "x"}}}
    assert notes == ["agent metadata: 0 lone surrogate(s) replaced with U+FFFD, 1 non-finite number(s) recorded "
                     "as null"]


class OddMetadata(DeepMetadata):
    def __init__(self, metadata: object):
        self.metadata = metadata  # type: ignore[assignment]


@pytest.mark.parametrize(("metadata", "kind"), [([1, 2], "list"), ("x", "str"), (7, "int"), ((1,), "tuple")])
def test_metadata_that_is_not_a_dict_is_left_out_with_a_note(tmp_path, metadata, kind):
    """It was dropped without a word: the user could not tell why the record had no agent metadata."""
    dom = BankDomain()
    write_data(tmp_path / "d")
    runner = Runner(dom, dom.template(tmp_path / "d"), TASKS, lambda ctx: OddMetadata(metadata), lambda ctx: Bye(),
                    RunSpec(domain="bank", agent="script", trials=1))
    (trial,) = runner.run().trials
    assert trial.trajectory.agent_metadata == {}
    assert f"agent metadata: a {kind}, not a dict: not recorded" in trial.trajectory.notes


def test_no_metadata_or_none_says_nothing():
    from simulator.types.sanitize import admit_metadata

    notes: list[str] = []
    assert admit_metadata(object(), "user", notes) == {} and admit_metadata(OddMetadata(None), "user", notes) == {}
    assert admit_metadata(OddMetadata({"a": 1}), "user", notes) == {"a": 1}
    assert notes == []
    assert admit_metadata(OddMetadata(type("\x1b[2J", (), {})()), "user", notes) == {}
    assert notes == ["user metadata: a \\x1b[2J, not a dict: not recorded"]  # the class name is escaped too

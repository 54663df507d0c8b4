"""The read-tool memo (simulator/world/memo.py): remembered answers equal fresh ones; bypassed when it must be.

Second method throughout: the same call dispatched on a copy whose memo was removed (the uncached path: validation,
transaction, the tool itself).
"""

from __future__ import annotations

import importlib
import itertools
from typing import Any

import pytest

from simulator.errors import DomainError, ToolError
from simulator.types.faults import FaultRates
from simulator.world.domain import get_domain
from simulator.world.faults import FaultyToolbox
from simulator.world.memo import MEMO_KEY, ReadMemo, TrialMemo, memo_key
from simulator.world.tools import Toolbox, ToolContext, tool
from tests._support.peers import TAU2

# (domain, template options): every built-in domain, tool modes with tools of their own included
WORLDS = [("retail", None), ("retail", {"mode": "tau2"}), ("airline", None), ("airline", {"mode": "tau2"}),
          ("returns", None), ("telecom", None), ("mock", None), ("banking_knowledge", None)]

EXTRA: dict[str, list[dict[str, Any]]] = {
    "calculate": [{"expression": "2 * (3 + 4)"}, {"expression": "1 / 0"}],
    "think": [{"thought": "check the order first"}],
    "get_bills_for_customer": [{"customer_id": "C1001", "limit": 1}],
    "get_customer": [{"customer_id": "cus_0001"}, {"customer_id": "cus_0002"}],
    "find_customer_by_email": [{"email": "chloe.martin@example.com"}, {"email": "CHLOE.MARTIN@example.com"}],
}
"""Calls beside the tasks' own (tools the tasks seldom call, arguments of other types)."""


def _world(name: str, options: dict[str, Any] | None) -> tuple[Any, Any, list[Toolbox]]:
    domain = get_domain(name)
    try:
        template = domain.template(None, options)
        tasks = domain.load_tasks()
    except (FileNotFoundError, OSError, DomainError) as e:  # the tau2 worlds read the suite's files from the peers
        if (TAU2 / name).is_dir():
            raise  # the peer data is there: a real failure
        pytest.skip(f"{name}: tau2-bench data absent ({TAU2 / name}): {e}")
    boxes = [domain.toolbox_for(template.options)] + ([domain.user_toolbox()] if domain.user_toolbox() else [])
    return template, tasks, boxes


def _calls(tasks: list[Any], boxes: list[Toolbox]) -> list[tuple[Toolbox, str, dict[str, Any]]]:
    """Calls of every memo read tool: from the tasks' actions (up to 5 per tool), an unknown id, and :data:`EXTRA`.

    (Write tools declared memo: tests/world/test_memo_reads.py.)
    """
    specs = {name: (box, spec) for box in boxes for name, spec in box.specs.items()
             if spec.memo and spec.kind == "read"}
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in specs}
    for task in tasks:
        for action in itertools.chain(task.gold_actions, getattr(task, "setup_actions", None) or ()):
            got = seen.get(action.name)
            if got is not None and len(got) < 5 and action.arguments not in got:
                got.append(dict(action.arguments))
    values: dict[str, list[Any]] = {}  # every argument value of the tasks' actions, by argument name
    for task in tasks:
        for action in task.gold_actions:
            for k, v in action.arguments.items():
                if v not in values.setdefault(k, []):
                    values[k].append(v)
    for name, (_, spec) in specs.items():
        fields = spec.arguments_model.model_fields
        required = [k for k, f in fields.items() if f.is_required()]
        if required and all(values.get(k) for k in required):
            for combo in itertools.islice(zip(*(values[k] for k in required), strict=False), 3):
                if dict(zip(required, combo, strict=True)) not in seen[name]:
                    seen[name].append(dict(zip(required, combo, strict=True)))
        seen[name].append({k: "no-such-id-0" for k, f in fields.items() if f.is_required()})
        seen[name].extend(EXTRA.get(name, []))
    return [(specs[name][0], name, args) for name, calls in seen.items() for args in calls]


def _fresh(template: Any, calls: list[tuple[Toolbox, str, dict[str, Any]]]) -> list[tuple[str, str]]:
    with template.trial() as db:
        db.session.info.pop(MEMO_KEY)
        ctx = ToolContext(db.session, db.options)
        return [(o.content, o.status) for o in (box.dispatch(ctx, name, args) for box, name, args in calls)]


@pytest.mark.parametrize(("name", "options"), WORLDS, ids=[f"{n}-{(o or {}).get('mode', 'std')}" for n, o in WORLDS])
def test_remembered_answers_equal_fresh_ones_for_every_memo_tool(name, options):
    template, tasks, boxes = _world(name, options)
    calls = _calls(tasks, boxes)
    memo_tools = {n for box in boxes for n, s in box.specs.items() if s.memo and s.kind == "read"}
    assert memo_tools, f"{name}: no read tool declared memo=True"
    assert {n for _, n, _ in calls} == memo_tools
    fresh = _fresh(template, calls)
    assert any(status == "ok" for _, status in fresh)
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        first = [box.dispatch(ctx, n, a) for box, n, a in calls]  # remembered (or served, if an earlier test did)
        statements: list[str] = []
        db.raw.set_trace_callback(statements.append)
        again = [box.dispatch(ctx, n, a) for box, n, a in calls]
        db.raw.set_trace_callback(None)
    assert [(o.content, o.status) for o in first] == fresh
    assert [(o.content, o.status) for o in again] == fresh
    assert statements == [], "a remembered call ran SQL: it was computed again, not served"
    for (box, n, a), (content, status) in zip(calls, fresh, strict=True):
        assert template.memo.get(memo_key(box.specs[n].fn, a)) == (content, status), (n, a)


def _retail() -> tuple[Any, Toolbox, dict[str, Any]]:
    domain = get_domain("retail")
    template = domain.template()
    task = next(t for t in domain.load_tasks() if any(a.name == "modify_user_address" for a in t.gold_actions))
    write = next(a for a in task.gold_actions if a.name == "modify_user_address")
    return template, domain.toolbox(), dict(write.arguments)


def test_a_write_turns_the_memo_off_for_the_rest_of_the_trial():
    template, box, write = _retail()
    read = {"user_id": write["user_id"]}
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        before = box.dispatch(ctx, "get_user_details", read).content
        assert box.dispatch(ctx, "modify_user_address", write).status == "ok"
        after = box.dispatch(ctx, "get_user_details", read).content
    assert write["address1"] in after and write["address1"] not in before  # the write changes the answer
    assert template.memo.get(memo_key(box.specs["get_user_details"].fn, read)) == (before, "ok")
    with template.trial() as db:  # the next copy is the template again: the remembered answer is served
        assert box.dispatch(ToolContext(db.session, db.options), "get_user_details", read).content == before


def test_a_setup_that_writes_turns_the_memo_off_or_onto_its_path():
    template, box, write = _retail()
    read = {"user_id": write["user_id"]}
    with template.trial() as db:
        box.dispatch(ToolContext(db.session, db.options), "get_user_details", read)  # remembered
    with template.trial() as db:  # a raw write: the memo is off
        db.raw.execute("UPDATE users SET address1 = 'Elsewhere 1' WHERE id = ?", (write["user_id"],))
        assert not db.session.info[MEMO_KEY].unchanged(db.options)
        after = box.dispatch(ToolContext(db.session, db.options), "get_user_details", read).content
    assert "Elsewhere 1" in after
    with template.trial() as db:  # a remembered write call: served only on copies with the same path
        setup = ToolContext(db.session, db.options, step=None, source="setup")
        assert box.dispatch(setup, "modify_user_address", write).status == "ok"
        trial = db.session.info[MEMO_KEY]
        assert trial.unchanged(db.options) and len(trial.path) == 1
        after = box.dispatch(ToolContext(db.session, db.options), "get_user_details", read).content
    assert write["address1"] in after


def test_rolled_back_and_refused_writes_turn_the_memo_off():
    template, box, write = _retail()

    @tool("write")
    def touch_then_refuse(ctx: ToolContext, user_id: str) -> str:
        """Write, then refuse (the dispatch rolls the write back).

        Args:
            ctx: the context.
            user_id: a user.
        """
        ctx.conn.execute("UPDATE users SET city = city || '!' WHERE id = ?", (user_id,))
        raise ToolError("refused")

    faulty = Toolbox([touch_then_refuse], uses_session=False)
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        assert faulty.dispatch(ctx, "touch_then_refuse", {"user_id": write["user_id"]}).status == "tool_error"
        assert not db.session.info[MEMO_KEY].unchanged(db.options)  # undone, yet counted: no guess about it
        statements: list[str] = []
        db.raw.set_trace_callback(statements.append)
        box.dispatch(ctx, "get_user_details", {"user_id": write["user_id"]})
        db.raw.set_trace_callback(None)
    assert statements, "served from the memo after a write"


def _counter_tools() -> tuple[Toolbox, Any]:
    counter = itertools.count()

    @tool("read")
    def tick(ctx: ToolContext) -> str:
        """A read tool whose answer is not a function of the database (not declared memo).

        Args:
            ctx: the context.
        """
        return str(next(counter))

    @tool("read", memo=True)
    def tick_memo(ctx: ToolContext) -> str:
        """The same, wrongly declared memo (to show the memo serves what it remembered).

        Args:
            ctx: the context.
        """
        return str(next(counter))

    @tool("read", memo=True)
    def emitting(ctx: ToolContext) -> str:
        """A memo read tool that writes (a tool bug): never remembered, and the memo is off afterwards.

        Args:
            ctx: the context.
        """
        ctx.emit("looked")
        return str(next(counter))

    return Toolbox([tick, tick_memo, emitting], uses_session=False), counter


def test_tools_not_declared_memo_are_run_every_time():
    box, _ = _counter_tools()
    template = get_domain("retail").template()
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        assert box.dispatch(ctx, "tick", {}).content != box.dispatch(ctx, "tick", {}).content
        first = box.dispatch(ctx, "tick_memo", {}).content
        assert box.dispatch(ctx, "tick_memo", {}).content == first  # served: the memo is in use on this copy


def test_a_memo_read_tool_that_writes_is_not_remembered():
    box, _ = _counter_tools()
    template = get_domain("retail").template()
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        one = box.dispatch(ctx, "emitting", {})
        assert one.status == "ok"
        assert not db.session.info[MEMO_KEY].unchanged(db.options)
    assert template.memo.get(memo_key(box.specs["emitting"].fn, {})) is None
    with template.trial() as db:
        assert box.dispatch(ToolContext(db.session, db.options), "emitting", {}).content != one.content


def test_other_options_a_loaded_copy_and_an_open_session_transaction_are_not_served():
    box, _ = _counter_tools()
    template = get_domain("retail").template()
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options)
        first = box.dispatch(ctx, "tick_memo", {}).content
        assert box.dispatch(ToolContext(db.session, {**db.options, "mode": "other"}), "tick_memo", {}).content != first
        with db.session.begin():
            assert box.dispatch(ctx, "tick_memo", {}).content != first
        db.load(db.raw.serialize())
        assert MEMO_KEY not in db.session.info
        assert box.dispatch(ctx, "tick_memo", {}).content != first


def test_faults_still_apply_to_remembered_calls():
    template, box, write = _retail()
    read = {"user_id": write["user_id"]}
    with template.trial() as db:
        ctx = ToolContext(db.session, db.options, step=0)
        ok = box.dispatch(ctx, "get_user_details", read)
        faulty = FaultyToolbox(box, FaultRates(transient=1.0), trial_seed=7)
        out = faulty.dispatch(ctx, "get_user_details", read)
    assert ok.status == "ok" and out.status == "tool_error" and "temporarily unavailable" in out.content


def test_memo_keys_tell_types_and_orders_apart_and_refuse_other_types():
    def f() -> None: ...

    keys = [memo_key(f, a) for a in ({"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": [1]}, {"x": None},
                                     {"a": 1, "b": 2}, {"b": 2, "a": 1})]
    assert len(set(keys)) == len(keys)
    for other in ({"x": (1,)}, {"x": {1: 2}}, {"x": object()}):
        assert memo_key(f, other) is None


def test_the_memo_is_bounded():
    memo = ReadMemo(limit_chars=10)
    memo.put((len, "a"), "12345", "ok")
    memo.put((len, "b"), "123456", "ok")  # would pass the bound: not kept
    assert memo.get((len, "a")) == ("12345", "ok") and memo.get((len, "b")) is None and len(memo) == 1


def test_memo_is_not_for_tools_that_end_the_conversation():
    for kind in ("read", "write"):
        with pytest.raises(ValueError, match="memo=True"):
            tool(kind, memo=True, ends_conversation=True)  # type: ignore[arg-type]


def test_a_trial_memo_counts_from_when_the_copy_was_handed_out():
    template = get_domain("retail").template()
    with template.trial() as db:
        trial = db.session.info[MEMO_KEY]
        assert isinstance(trial, TrialMemo) and trial.unchanged(db.options)
        db.raw.execute("UPDATE users SET city = city WHERE rowid = 1")  # a no-op value, still a write: counted
        assert not trial.unchanged(db.options)


NOT_MEMO = {
    "returns": {"get_order"},  # the return window is counted from the domain clock's "now"
    "banking_knowledge": {"get_current_time", "KB_search", "grep", "list_discoverable_agent_tools",
                          "list_discoverable_user_tools"},  # the clock, retrieval state, unlocked tools
}
"""Read tools of built-in domains whose answers depend on more than the database, arguments and options."""


@pytest.mark.parametrize("name", ["returns", "banking_knowledge", "telecom", "mock"])
def test_tools_answering_from_more_than_the_database_are_not_memo(name):
    domain = get_domain(name)
    for tool_name in NOT_MEMO.get(name, ()):
        assert not getattr(importlib.import_module(f"domains.{name}.tools"), tool_name).tool_spec.memo, tool_name
    user = domain.user_toolbox()
    if user is not None:  # the user's device and notifications: dual-control state, never remembered
        assert not [n for n, s in user.specs.items() if s.memo]

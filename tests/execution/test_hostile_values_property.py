"""Property: whatever an agent or a user emits, every trial is recorded, the run finishes, the report reads it back.

Hypothesis drives arbitrary JSON-ish values, strings with lone surrogates and control characters, non-finite
numbers, objects JSON has none for (one whose repr raises) and token counts past 2**63 through an agent (text, tool
names, call ids, arguments, cost, tokens, metadata) and a simulated user (text, cost, tokens)
on the toy bank domain; each run's trials go to the partial file, to the results store (SQLite and PostgreSQL:
the ``store_url`` fixture) and to the report (terminal and HTML).
"""

from __future__ import annotations

import io
import math
import re
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.execution.recording import open_partial
from simulator.execution.runner import Runner
from simulator.report import analyze_run, print_summary, render_html, safe_console
from simulator.storage.documents import load_partial
from simulator.storage.store import ResultsStore, load_run_from_store
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage, UserTurn
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from tests._support.hostile_values import Unprintable
from tests._support.toy import BankDomain, write_data

HOSTILE_CHARS = ["\x00", "\x1b", "\x07", "\x9b", "\x7f", "\r", "\n", "\ud83d", "\ude00", "\udc00", "\u202e",
                 "\ue000", "[", "]", ":", "\ufffd"]
texts = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(HOSTILE_CHARS)), max_size=30)
numbers = st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True))
not_json = st.one_of(st.builds(object), st.builds(Unprintable))
values = st.recursive(st.one_of(st.none(), st.booleans(), numbers, texts, not_json),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(texts, inner, max_size=3)),
                           max_leaves=8)
tokens = st.integers(-(2**70), 2**70)
costs = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.just(0.001))
tool_names = st.one_of(st.sampled_from(["get_balance", "transfer", "transfer_to_human"]), texts)
calls = st.tuples(st.just("call"), tool_names, texts, st.dictionaries(st.sampled_from(
    ["account_id", "src", "dst", "amount", "summary"]) | texts, values, max_size=4), costs)
says = st.tuples(st.just("say"), texts, costs)
agent_scripts = st.lists(st.one_of(calls, says), min_size=1, max_size=6)
user_scripts = st.lists(st.tuples(texts, costs), min_size=1, max_size=3)
metadata = st.dictionaries(texts, values, max_size=3)

TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "chat", "scenario": {"instructions": "say hi"}},
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]}]})
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class ScriptAgent:
    def __init__(self, script, meta, tokens=1):
        self.script = script
        self.i = 0
        self.metadata = meta
        self.tokens = tokens

    def step(self, messages):
        item = self.script[self.i % len(self.script)]
        self.i += 1
        if item[0] == "call":
            _, name, call_id, args, cost = item
            msg = Message(role="assistant", tool_calls=[ToolCall(id=call_id, name=name, arguments=args)])
        else:
            _, text, cost = item
            msg = Message(role="assistant", content=text)
        return AgentTurn(message=msg, usage=Usage(prompt_tokens=self.tokens, cost_usd=cost, calls=1))


class ScriptUser:
    def __init__(self, script, tokens=0):
        self.script = script
        self.i = 0
        self.tokens = tokens

    def reply(self, messages):
        text, cost = self.script[min(self.i, len(self.script) - 1)]
        self.i += 1
        return UserTurn(content=text or "hi", stop=self.i > len(self.script),
                        usage=Usage(completion_tokens=self.tokens, cost_usd=cost))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(agent_script=agent_scripts, user_script=user_scripts, meta=metadata, agent_tokens=tokens, user_tokens=tokens)
def test_any_agent_and_user_output_is_recorded_and_reported(tmp_path, store_url, agent_script, user_script, meta,
                                                            agent_tokens, user_tokens):
    dom = BankDomain()
    data = tmp_path / "d"
    if not data.exists():
        write_data(data)
    spec = RunSpec(domain="bank", agent="script", trials=2, max_turns=8, max_steps=12)
    runner = Runner(dom, dom.template(data), TASKS, lambda ctx: ScriptAgent(agent_script, meta, agent_tokens),
                    lambda ctx: ScriptUser(user_script, user_tokens), spec)
    result = runner.run()  # the run finishes: no exception
    assert len(result.trials) == 4
    for t in result.trials:
        traj = t.trajectory
        t.model_dump_json().encode("utf-8")  # storable anywhere: no lone surrogate, no NaN
        assert t.termination_reason != "tool_bug"
        for usage in (traj.agent_usage, traj.user_usage):
            assert usage.cost_usd is None or (math.isfinite(usage.cost_usd) and usage.cost_usd >= 0)
            assert all(0 <= n < 2**63 for n in (usage.prompt_tokens, usage.completion_tokens, usage.calls))
        for c in traj.tool_calls:
            assert c.arguments is None or c.status != "ok" or c.name in ("get_balance", "transfer",
                                                                         "transfer_to_human")

    partial = tmp_path / f"{uuid.uuid4().hex}.partial.jsonl"
    handle = open_partial(partial, spec, 4, [], [t.id for t in TASKS])
    for t in result.trials:
        handle.write(t.model_dump_json() + "\n")
    handle.close()
    assert load_partial(partial)[1] == result.trials

    run_id = f"prop-{uuid.uuid4().hex}"
    store = ResultsStore(store_url)
    try:
        store.create_run(spec, [t.id for t in TASKS], run_id=run_id)
        for t in result.trials:
            assert store.record(run_id, t) is True
        assert store.load_trials(run_id) == result.trials  # every trial, exactly
    finally:
        store.close()

    doc = load_run_from_store(store_url, run_id)
    report = analyze_run(doc)
    buffer = io.StringIO()
    print_summary(report, safe_console(file=buffer, width=160), max_failures=10)
    shown = buffer.getvalue()
    assert not _RAW_CONTROL.findall(shown)
    shown.encode("utf-8")
    page = render_html(report)
    page.encode("utf-8")
    assert not _RAW_CONTROL.findall(page)

"""OpenTelemetry spans of a run, checked with the SDK's in-memory exporter: run > trial > turn > tool/model."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from simulator.execution.runner import Runner  # noqa: E402
from simulator.execution.tracing import Tracing  # noqa: E402
from simulator.storage.runlog import open_run_log  # noqa: E402
from simulator.types.messages import AgentTurn, Message, ToolCall, Usage  # noqa: E402
from simulator.types.protocols import TrialContext  # noqa: E402
from simulator.types.spec import RunSpec  # noqa: E402
from simulator.types.tasks import parse_tasks  # noqa: E402
from simulator.users import user_factory  # noqa: E402
from tests._support.toy import BankDomain, write_data  # noqa: E402

MODEL = "openai/gpt-test"


class ModelAgent:
    """Looks up a balance, then answers; each step reports one model call."""

    model = MODEL

    def __init__(self, ctx: TrialContext):
        self.steps = 0

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.steps += 1
        usage = Usage(prompt_tokens=100 * self.steps, completion_tokens=7, calls=1, attempts=1, cost_usd=None)
        if self.steps == 1:
            call = ToolCall(id="c1", name="get_balance", arguments={"account_id": "B2"})
            return AgentTurn(message=Message(role="assistant", tool_calls=[call]), usage=usage)
        return AgentTurn(message=Message(role="assistant", content="B2 holds 25."), usage=usage)


TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "peek", "scenario": {"instructions": "ask B2's balance", "opening": "what is B2's balance"},
     "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "B2"}}], "required_outputs": ["25"]}]})


def test_one_trial_yields_run_trial_turn_tool_and_model_spans_with_parent_links(tmp_path, caplog):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "bank"))
    cfg = RunSpec(domain="bank", agent="model", user="scripted", trials=1, seed=3)
    log_file = tmp_path / "run.jsonl"
    with open_run_log(log_file, "r1") as log:
        runner = Runner(dom, tpl, TASKS, ModelAgent, user_factory("scripted"), cfg, log=log,
                        tracing=Tracing(provider))
        result = runner.run()
    spans = exporter.get_finished_spans()
    by_name: dict[str, list] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    run, = by_name["tausim.run"]
    trial, = by_name["tausim.trial"]
    turn, = by_name["tausim.turn"]  # one agent turn: the tool call, then the closing message
    tool, = by_name["execute_tool get_balance"]
    models = by_name[f"chat {MODEL}"]
    assert len(models) == 2  # two agent steps, one model call each (the scripted user makes none)
    # parent links
    assert run.parent is None
    assert trial.parent.span_id == run.context.span_id
    assert turn.parent.span_id == trial.context.span_id
    assert tool.parent.span_id == turn.context.span_id
    assert all(m.parent.span_id == turn.context.span_id for m in models)
    assert len({s.context.trace_id for s in spans}) == 1
    # the run's attributes are OpenTelemetry values (the components' spec strings), none dropped with a warning
    assert run.attributes["tausim.domain"] == "bank"
    assert run.attributes["tausim.agent"] == "model" and run.attributes["tausim.user"] == "scripted"
    assert not [r for r in caplog.records if "Invalid type" in r.getMessage()]
    # GenAI semantic-convention attributes
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "get_balance"
    assert tool.attributes["tausim.tool.status"] == "ok"
    first = min(models, key=lambda m: m.start_time)
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.system"] == "openai"
    assert first.attributes["gen_ai.request.model"] == MODEL
    assert first.attributes["gen_ai.usage.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert trial.attributes["tausim.task_id"] == "peek" and trial.attributes["tausim.passed"] is True
    # the ids are stored with the trial and written in the log file
    t = result.trials[0]
    assert t.passed
    assert t.trace == {"trace_id": f"{trial.context.trace_id:032x}", "span_id": f"{trial.context.span_id:016x}"}
    events = [json.loads(line) for line in log_file.read_text().splitlines()]
    trial_events = [e for e in events if e.get("task_id") == "peek"]
    assert {e["event"] for e in trial_events} >= {"trial_start", "tool_call", "trial_end"}
    assert all(e["trace_id"] == t.trace["trace_id"] and e["span_id"] == t.trace["span_id"] for e in trial_events)


def test_untraced_runs_record_no_ids(tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "bank"))
    cfg = RunSpec(domain="bank", agent="model", user="scripted", trials=1)
    assert Runner(dom, tpl, TASKS, ModelAgent, user_factory("scripted"), cfg).run().trials[0].trace is None


def test_a_tracer_of_the_caller_s_own_keeps_no_per_span_state(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dom = BankDomain()
    tracing = Tracing(provider)  # spans go to the caller's exporter: no spans file whose losses to track
    cfg = RunSpec(domain="bank", agent="model", user="scripted", trials=3)
    Runner(dom, dom.template(write_data(tmp_path / "bank")), TASKS, ModelAgent, user_factory("scripted"), cfg,
           tracing=tracing).run()
    assert len(exporter.get_finished_spans()) > 3
    assert tracing._trial_of == {} and tracing.write_error is None and not tracing.lost(("peek", None, 0))

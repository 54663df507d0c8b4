"""The LLM judge: verdict parsing, fail-closed grading, separate cost, position swap, Cohen's kappa, calibration.

Every model is an in-process scripted litellm provider (tests/_support/fake_llm.py) or litellm's ``mock_response``, so
the real litellm code path runs offline. Expected values are worked out by hand in the comments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.agents import OracleAgent
from simulator.cli import app
from simulator.execution.runner import Runner
from simulator.grading.judge import (
    Calibration,
    CalibrationItem,
    Judge,
    build_judge,
    check_calibration,
    cohen_kappa,
    compare,
    grade_judge,
    model_family,
    parse_verdict,
    render_transcript,
)
from simulator.models.llm import LLMClient
from simulator.types.spec import RunSpec
from simulator.types.tasks import JudgeAssertion, parse_tasks
from simulator.users import scripted_user_factory
from tests._support.fake_llm import register
from tests._support.toy import BankDomain, write_data

JP = "tjudge"  # the scripted judge provider's name; models are "tjudge/m"


def text_response(litellm: Any, text: str, prompt_tokens: int = 100, completion_tokens: int = 20,
                  finish_reason: str = "stop") -> Any:
    """An assistant ``ModelResponse`` with text and token usage."""
    from litellm.types.utils import Choices, Message, Usage

    return litellm.ModelResponse(
        choices=[Choices(index=0, finish_reason=finish_reason, message=Message(role="assistant", content=text))],
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                    total_tokens=prompt_tokens + completion_tokens))


def judge_with(monkeypatch: pytest.MonkeyPatch, litellm: Any, script: list[Any], **kw: Any) -> tuple[Judge, Any]:
    provider = register(monkeypatch, litellm, {JP: script})[JP]
    kw.setdefault("max_attempts", 1)
    return Judge(f"{JP}/m", wait_initial=0.0, wait_max=0.0, **kw), provider


# --- verdict parsing -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "verdict"), [
    ('{"verdict": "yes", "reason": "it did"}', "yes"),
    ('{"verdict": "no", "reason": "it did not"}', "no"),
    ('  {"verdict": "YES"}  ', "yes"),                                  # case and spaces ignored
    ('```json\n{"verdict": "no", "reason": "r"}\n```', "no"),           # one fenced JSON object
    ("The agent said why.\nVERDICT: YES", "yes"),
    ("Reasoning here.\n\nverdict: no\n", "no"),
    ("**VERDICT:** YES", "yes"),
    ("VERDICT: YES\nsome text\nVERDICT: YES", "yes"),                   # repeated but consistent
    # unusable: never a verdict
    ("yes", None),                                                       # bare word
    ("Yes, the agent explained it.", None),
    ('Here you go: {"verdict": "yes"}', None),                           # JSON not the whole answer
    ('{"verdict": "maybe"}', None),
    ('{"verdict": true}', None),
    ('{"answer": "yes"}', None),
    ('{"verdict": "yes"', None),                                         # broken JSON
    ('["yes"]', None),
    ("VERDICT: YES\nVERDICT: NO", None),                                 # ambiguous: last NO, earlier YES
    ("VERDICT: NO\nbecause ...\nVERDICT: YES", None),
    ("VERDICT: YES or NO", None),
    ("VERDICT: YES\nI am not sure though.", None),                       # the verdict is not the last line
    ("I'm sorry, I can't help with that.", None),                        # refusal text
    ("", None),
    (None, None),
])
def test_verdict_parsing_table(text, verdict):
    parsed = parse_verdict(text)
    assert parsed.verdict == verdict, parsed
    assert (parsed.error is None) == (verdict is not None)


def test_parse_keeps_the_reason():
    assert parse_verdict('{"verdict": "no", "reason": "no PayPal mention"}').reason == "no PayPal mention"
    assert parse_verdict("Because X.\nVERDICT: YES").reason == "Because X."


# --- fail-closed -------------------------------------------------------------------------------------------

def test_fail_closed_on_errors_and_garbage(litellm, monkeypatch):
    script = [
        litellm.BadRequestError("bad", "m", JP),                         # request error: fail
        litellm.RateLimitError("slow down", JP, "m"),                    # infra error (1 attempt): fail
        "The agent did fine!",                                           # garbage: fail
        '{"verdict": "maybe", "reason": "unsure"}',                      # outside yes/no: fail
        "VERDICT: YES\nVERDICT: NO",                                     # ambiguous: fail
        text_response(litellm, "I cannot do that", finish_reason="content_filter"),  # refusal: fail
        "",                                                              # empty: fail
        '{"verdict": "no", "reason": "not said"}',                       # a real no: fail, with a verdict
        '{"verdict": "yes", "reason": "said"}',                          # the only pass
    ]
    judge, provider = judge_with(monkeypatch, litellm, script)
    results = [judge.ask("USER: hi\nAGENT: hello", "the agent greeted the user")[0] for _ in script]
    assert [r.passed for r in results] == [False] * 8 + [True]
    assert [r.verdict for r in results] == [None] * 7 + ["no", "yes"]
    assert all(r.error for r in results[:7]) and results[7].error is None and results[8].error is None
    assert "judge model error" in results[0].reason and "BadRequest" in results[0].reason
    assert "judge model error" in results[1].reason
    assert "unparsable" in results[2].reason and "ambiguous" in results[4].reason
    assert "refused" in results[5].reason and results[6].reason == "empty answer"
    assert results[7].reason == "not said"
    # the judge saw the transcript and the assertion, at temperature 0
    prompt = provider.calls[0]["messages"][-1]["content"]
    assert "USER: hi\nAGENT: hello" in prompt and "ASSERTION: the agent greeted the user" in prompt
    assert provider.calls[0]["optional_params"].get("temperature") == 0.0


def test_grade_judge_all_assertions_must_pass(litellm, monkeypatch):
    judge, provider = judge_with(monkeypatch, litellm, ['{"verdict": "yes"}', "garbage"])
    from simulator.types.messages import Message

    msgs = [Message(role="user", content="refund to PayPal?"), Message(role="assistant", content="No: policy.")]
    res = grade_judge([JudgeAssertion(assertion="a1", rubric="be strict"), JudgeAssertion(assertion="a2")],
                      msgs, judge)
    assert res is not None and res.status == "failed" and not res.passed
    assert [a.passed for a in res.assertions] == [True, False]
    assert "RUBRIC: be strict" in provider.calls[0]["messages"][-1]["content"]
    assert grade_judge([], msgs, judge) is None
    ungraded = grade_judge([JudgeAssertion(assertion="a1")], msgs, None)
    assert ungraded is not None and ungraded.status == "not_graded" and not ungraded.gating


def test_transcript_shows_tool_calls_and_results():
    text = render_transcript([
        {"role": "system", "content": "secret policy"},
        {"role": "user", "content": "cancel #1"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "cancel", "arguments": '{"order_id": "#1"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "cancel", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ])
    assert text == ('USER: cancel #1\nAGENT CALLS TOOL cancel({"order_id": "#1"})\nTOOL RESULT (cancel): ok\n'
                    "AGENT: Done.")


# --- judge usage apart from the agent's, through the runner --------------------------------------------------

JUDGED = {"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}],
     "judge": ["the agent confirmed the amount", {"assertion": "the agent was polite", "rubric": "no insults"}]}]}


def _cal(model: str, kappa: float | None) -> Calibration:
    return Calibration(model=model, n=20, agreement=0.9, kappa=kappa, min_kappa=0.6,
                       passed=kappa is not None and kappa >= 0.6, date="2026-01-01T00:00:00+00:00")


def test_run_with_judge_records_usage_apart_and_gates_when_calibrated(litellm, tmp_path):
    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    tasks = parse_tasks(JUDGED)
    # a priced model through mock_response: 1000 prompt + 50 completion tokens per judge call
    resp = text_response(litellm, '{"verdict": "no", "reason": "never confirmed"}', 1000, 50)
    gating, note = check_calibration(_cal("openai/gpt-4o-mini", 0.8), "openai/gpt-4o-mini", 0.6)
    judge = Judge("openai/gpt-4o-mini", gating=gating, gating_note=note,
                  client=LLMClient("openai/gpt-4o-mini", max_attempts=1, mock_response=resp))
    cfg = RunSpec(domain="bank", agent="oracle")
    res = Runner(dom, tpl, tasks, OracleAgent, scripted_user_factory(), cfg, judge=judge).run()
    (trial,) = res.trials
    g = trial.grade
    assert g is not None and g.state.passed and g.judge is not None
    # the state is right, but a calibrated judge says no: the trial fails on the judge alone
    assert g.judge.gating and g.judge.status == "failed" and not trial.passed and g.failure == "judge"
    info = litellm.model_cost["gpt-4o-mini"]
    per_call = 1000 * info["input_cost_per_token"] + 50 * info["output_cost_per_token"]
    assert g.judge.usage.calls == 2 and g.judge.usage.prompt_tokens == 2000
    assert g.judge.usage.cost_usd == pytest.approx(2 * per_call)
    # the oracle made no model call: the judge's tokens and cost are not in the agent's (nor the user's) usage
    traj = trial.trajectory
    assert traj.agent_usage.calls == 0 and traj.agent_usage.prompt_tokens == 0 and traj.agent_usage.cost_usd == 0
    assert traj.user_usage.calls == 0 and traj.user_usage.cost_usd == 0


@pytest.mark.parametrize(("calibration", "why"), [
    (None, "not calibrated"),
    (_cal("openai/other-model", 0.9), "for model"),
    (_cal("openai/gpt-4o-mini", 0.5), "below the minimum"),
    (_cal("openai/gpt-4o-mini", None), "undefined"),
])
def test_uncalibrated_judge_is_recorded_but_does_not_gate(litellm, tmp_path, calibration, why):
    dom = BankDomain()
    tasks = parse_tasks(JUDGED)
    gating, note = check_calibration(calibration, "openai/gpt-4o-mini", 0.6)
    assert not gating and why in note
    judge = Judge("openai/gpt-4o-mini", gating=gating, gating_note=note,
                  client=LLMClient("openai/gpt-4o-mini", max_attempts=1, mock_response='{"verdict": "no"}'))
    res = Runner(dom, dom.template(write_data(tmp_path / "d")), tasks, OracleAgent, scripted_user_factory(),
                 RunSpec(domain="bank"), judge=judge).run()
    (trial,) = res.trials
    assert trial.grade is not None and trial.grade.judge is not None
    assert trial.grade.judge.status == "failed" and not trial.grade.judge.gating
    assert trial.passed and trial.grade.failure is None


def test_run_without_judge_model_records_not_graded(tmp_path):
    dom = BankDomain()
    res = Runner(dom, dom.template(write_data(tmp_path / "d")), parse_tasks(JUDGED), OracleAgent,
                 scripted_user_factory(), RunSpec(domain="bank")).run()
    (trial,) = res.trials
    assert trial.grade is not None and trial.grade.judge is not None
    assert trial.grade.judge.status == "not_graded" and "2 judge assertion(s) not graded" in trial.grade.judge.note
    assert trial.passed  # not graded does not block (documented), but is reported in the summary


# --- pairwise comparison with position swap -----------------------------------------------------------------

def test_position_biased_judge_gives_tie_inconsistent(litellm, monkeypatch):
    judge, provider = judge_with(monkeypatch, litellm, ['{"winner": "1"}', '{"winner": "1"}'])
    r = compare("AGENT: A-text", "AGENT: B-text", "politeness", judge)
    assert (r.first, r.second, r.winner) == ("a", "b", "tie/inconsistent")
    # the order was really swapped: A first, then B first
    first, second = (c["messages"][-1]["content"] for c in provider.calls)
    assert first.index("A-text") < first.index("B-text") and second.index("B-text") < second.index("A-text")


def test_consistent_judge_gives_a_winner(litellm, monkeypatch):
    judge, _ = judge_with(monkeypatch, litellm, ['{"winner": "2"}', "B is worse.\nVERDICT: 1",
                                                 '{"winner": "1"}', '{"winner": "2"}'])
    r1 = compare("AGENT: A", "AGENT: B", "politeness", judge)
    assert (r1.first, r1.second, r1.winner) == ("b", "b", "b")
    r2 = compare("AGENT: A", "AGENT: B", "politeness", judge)
    assert (r2.first, r2.second, r2.winner) == ("a", "a", "a")


def test_compare_error_is_inconsistent(litellm, monkeypatch):
    judge, _ = judge_with(monkeypatch, litellm, ['{"winner": "1"}', litellm.BadRequestError("bad", "m", JP)])
    r = compare("AGENT: A", "AGENT: B", "politeness", judge)
    assert (r.first, r.second, r.winner) == ("a", None, "tie/inconsistent")


# --- Cohen's kappa ------------------------------------------------------------------------------------------

def test_kappa_hand_computed_2x2():
    # human yes/judge yes 20, yes/no 5, no/yes 10, no/no 15 (n = 50)
    # p_o = 35/50 = 0.7; human yes 25/50 = 0.5, judge yes 30/50 = 0.6
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    human = ["yes"] * 25 + ["no"] * 25
    judge = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(human, judge) == pytest.approx(0.4)
    assert cohen_kappa(human, human) == pytest.approx(1.0)
    # complete disagreement on a balanced set: p_o = 0, p_e = 0.5 -> kappa = -1
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)


def test_kappa_degenerate_cases():
    # both raters give every item the same label: p_e = 1, kappa undefined (None), never "perfect"
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None
    assert cohen_kappa(["no"] * 3, ["no"] * 3) is None
    assert cohen_kappa([], []) is None
    # humans all yes, judge 3 yes 1 no: p_o = 0.75, p_e = 1*0.75 + 0*0.25 = 0.75 -> kappa 0
    assert cohen_kappa(["yes"] * 4, ["yes", "yes", "yes", "no"]) == pytest.approx(0.0)
    # all yes vs all no: p_o = 0, p_e = 1*0 + 0*1 = 0 -> kappa 0
    assert cohen_kappa(["yes"] * 2, ["no"] * 2) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="different numbers"):
        cohen_kappa(["yes"], [])


# --- tausim judge calibrate ---------------------------------------------------------------------------------

LABELS = [
    {"transcript": "USER: refund to PayPal?\nAGENT: Not possible: paid by card.", "assertion": "explained why",
     "label": "yes", "id": "t1"},
    {"transcript": [{"role": "user", "content": "refund?"}, {"role": "assistant", "content": "Done."}],
     "assertion": "explained why", "label": "yes", "id": "t2"},
    {"transcript": "USER: hi\nAGENT: bye", "assertion": "was helpful", "label": "no"},
    {"transcript": "USER: hi\nAGENT: go away", "assertion": "was polite", "label": "NO"},
]


def write_labels(tmp_path, rows=LABELS):
    p = tmp_path / "labels.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    return p


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_calibrate_below_min_kappa_exits_1(litellm, monkeypatch, tmp_path):
    # human yes, yes, no, no; judge yes, (garbage -> no), no, no
    # p_o = 3/4; human yes 0.5, judge yes 0.25; p_e = 0.5*0.25 + 0.5*0.75 = 0.5; kappa = 0.25/0.5 = 0.5
    provider = register(monkeypatch, litellm, {JP: ['{"verdict": "yes"}', "hmm", '{"verdict": "no"}',
                                                    "VERDICT: NO"]})[JP]
    out = tmp_path / "cal.json"
    res = invoke("judge", "calibrate", "--labels", write_labels(tmp_path), "--model", f"{JP}/m", "--out", out,
                 "--max-attempts", 1)
    assert res.exit_code == 1, res.output
    assert "agreement: 0.7500" in res.output and "kappa: 0.5000" in res.output and "FAIL" in res.output
    doc = json.loads(out.read_text())
    assert doc["model"] == f"{JP}/m" and doc["n"] == 4 and doc["kappa"] == pytest.approx(0.5)
    assert doc["agreement"] == 0.75 and doc["errors"] == 1 and doc["passed"] is False and doc["date"]
    assert doc["confusion"] == {"human_yes_judge_yes": 1, "human_yes_judge_no": 1, "human_no_judge_yes": 0,
                                "human_no_judge_no": 2}
    assert "USER: refund?\nAGENT: Done." in provider.calls[1]["messages"][-1]["content"]  # messages rendered


def test_calibrate_at_min_kappa_exits_0(litellm, monkeypatch, tmp_path):
    register(monkeypatch, litellm, {JP: ['{"verdict": "yes"}', "hmm", '{"verdict": "no"}', "VERDICT: NO"]})
    res = invoke("judge", "calibrate", "--labels", write_labels(tmp_path), "--model", f"{JP}/m",
                 "--min-kappa", 0.5, "--max-attempts", 1)
    assert res.exit_code == 0, res.output
    assert "PASS" in res.output


def test_calibrate_undefined_kappa_exits_1(litellm, monkeypatch, tmp_path):
    rows = [dict(r, label="yes") for r in LABELS]
    register(monkeypatch, litellm, {JP: ['{"verdict": "yes"}'] * 4})
    res = invoke("judge", "calibrate", "--labels", write_labels(tmp_path, rows), "--model", f"{JP}/m")
    assert res.exit_code == 1, res.output
    assert "agreement: 1.0000" in res.output and "undefined" in res.output


def test_calibrate_bad_labels_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"transcript": "x", "assertion": "y", "label": "yes"}\n{"transcript": "x", "label": "maybe"}\n')
    res = invoke("judge", "calibrate", "--labels", bad, "--model", f"{JP}/m")
    assert res.exit_code == 2 and "line 2" in res.output
    res = invoke("judge", "calibrate", "--labels", tmp_path / "missing.jsonl", "--model", f"{JP}/m")
    assert res.exit_code == 2 and "cannot read" in res.output


# --- tausim run --judge on the built-in retail data -----------------------------------------------------------

def _retail_task_file(tmp_path):
    from simulator.world.domain import get_domain

    task = next(t for t in get_domain("retail").load_tasks(None) if t.id == "cancel-no-longer-needed")
    doc = {"format": "tausim.tasks", "version": 1, "domain": "retail",
           "tasks": [dict(task.model_dump(mode="json"), judge=["the agent confirmed before cancelling"])]}
    p = tmp_path / "tasks.json"
    p.write_text(json.dumps(doc))
    return p


def test_cli_run_with_calibrated_judge(litellm, monkeypatch, tmp_path):
    # the pre-flight's one call first, then the trial's judge call
    register(monkeypatch, litellm, {JP: ["ok", '{"verdict": "no", "reason": "no confirmation seen"}']})
    cal = tmp_path / "cal.json"
    cal.write_text(_cal(f"{JP}/m", 0.75).model_dump_json())
    out = tmp_path / "run.json"
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--judge", f"{JP}/m", "--judge-calibration", cal,
                 "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["grade"]["state"]["passed"] and trial["passed"] is False and trial["grade"]["failure"] == "judge"
    assert trial["grade"]["judge"]["assertions"][0]["reason"] == "no confirmation seen"
    assert "GATING" in res.output and "no confirmation seen" in res.output


def test_cli_run_without_judge_says_not_graded(tmp_path):
    out = tmp_path / "run.json"
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--out", out, "--no-progress")
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(out.read_text())["trials"]
    assert trial["passed"] is True and trial["grade"]["judge"]["status"] == "not_graded"
    assert "NOT GRADED" in res.output
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--judge-calibration", tmp_path / "x.json")
    assert res.exit_code == 2 and "--judge-calibration needs --judge" in res.output


def test_cli_run_refuses_a_bad_calibration_file(tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text('{"kappa": 1}')
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--judge", f"{JP}/m", "--judge-calibration", bad)
    assert res.exit_code == 2 and "not a judge calibration file" in res.output


def test_regrade_keeps_the_recorded_judge(litellm, tmp_path):
    from simulator.execution.regrade import regrade_trial

    dom = BankDomain()
    tpl = dom.template(write_data(tmp_path / "d"))
    tasks = parse_tasks(JUDGED)
    judge = Judge("openai/gpt-4o-mini", gating=True,
                  client=LLMClient("openai/gpt-4o-mini", max_attempts=1, mock_response='{"verdict": "no"}'))
    (trial,) = Runner(dom, tpl, tasks, OracleAgent, scripted_user_factory(), RunSpec(domain="bank"),
                      judge=judge).run().trials
    assert not trial.passed
    again, _ = regrade_trial(dom, tpl, tasks[0], trial)  # no model called: the recorded verdicts are kept
    assert again.grade is not None and again.grade.judge == trial.grade.judge and not again.passed
    changed = tasks[0].model_copy(update={"judge": [JudgeAssertion(assertion="another assertion")]})
    again, _ = regrade_trial(dom, tpl, changed, trial)  # assertions changed: not graded, not counted
    assert again.grade is not None and again.grade.judge is not None
    assert again.grade.judge.status == "not_graded" and again.passed


# --- judge compare over two runs --------------------------------------------------------------------------

def _run(agent: str, texts: dict[str, str]) -> dict[str, Any]:
    return {"config": {"agent": agent, "trials": 1}, "trials": [
        {"task_id": tid, "trial": 0, "seed": 1, "passed": True,
         "trajectory": {"messages": [{"role": "user", "content": "help"}, {"role": "assistant", "content": text}]}}
        for tid, text in texts.items()]}


def test_compare_runs_pairs_trials_and_swaps_positions(litellm, monkeypatch):
    from simulator.grading.judge import COMPARE_PROMPT, compare_runs

    assert "Length earns nothing" in COMPARE_PROMPT
    # pair t1: both orders pick B (shown 2nd, then 1st); pair t2: always "1" (position bias) -> inconsistent
    judge, _ = judge_with(monkeypatch, litellm, ['{"winner": "2"}', '{"winner": "1"}',
                                                 '{"winner": "1"}', '{"winner": "1"}'])
    a = _run("oracle", {"t1": "A1", "t2": "A2", "only-a": "x"})
    b = _run(f"litellm:{JP}/m", {"t1": "B1", "t2": "B2"})
    r = compare_runs(a, b, "answers the question", judge)
    assert (r["pairs"], r["a"], r["b"], r["tie/inconsistent"]) == (2, 0, 1, 1)
    assert [p["winner"] for p in r["per_pair"]] == ["b", "tie/inconsistent"]
    assert len(r["warnings"]) == 1 and "run B" in r["warnings"][0]  # the judge is B's agent model
    with pytest.raises(ValueError, match="nothing to compare"):
        compare_runs(a, _run("oracle", {"zz": "x"}), "c", judge)
    # run documents record the agent as a component spec (a RunSpec): the judge is still recognised as its model
    spec_b = _run({"name": f"litellm:{JP}/m", "temperature": 0.0, "api_base": None}, {"t1": "B1"})
    r = compare_runs(_run("oracle", {"t1": "A1"}), spec_b, "answers the question", judge, limit=0)
    assert len(r["warnings"]) == 1 and "run B" in r["warnings"][0]


def test_judge_compare_command_refuses_runs_without_common_trials(tmp_path):
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    for p, tid in ((pa, "t1"), (pb, "t2")):
        doc = {"format": "tausim.run", "version": 1, **_run("oracle", {tid: "x"})}
        doc["config"]["domain"] = "retail"
        p.write_text(json.dumps(doc))
    res = CliRunner().invoke(app, ["judge", "compare", str(pa), str(pb), "--criterion", "c", "--model",
                                   "openai/gpt-4o-mini"])
    assert res.exit_code == 2, res.output
    assert "nothing to compare" in res.output or "error" in res.output


# --- judge controls: self-preference, anchors ------------------------------------------------------------------

@pytest.mark.parametrize(("model", "family"), [
    ("openai/gpt-4o-mini", "openai"), ("azure/gpt-4.1", "openai"), ("gpt-4o", "openai"), ("openai/o3-mini", "openai"),
    ("anthropic/claude-3-5-sonnet-20241022", "anthropic"), ("bedrock/anthropic.claude-3-haiku-v1", "anthropic"),
    ("gemini/gemini-1.5-pro", "google"), ("ollama/llama3.1:8b", "meta"), ("openrouter/qwen/qwen-2.5-72b", "qwen"),
    ("hosted_vllm/my-model-v2", "my"),
])
def test_model_family_by_hand(model, family):
    assert model_family(model) == family


def test_a_gating_judge_of_the_agents_family_warns_and_strict_refuses(tmp_path):
    cal = tmp_path / "cal.json"
    cal.write_text(_cal("openai/gpt-4o", 0.8).model_dump_json())
    same = build_judge("openai/gpt-4o", calibration=cal, agent_model="azure/gpt-4o-mini", max_attempts=1)
    assert same.gating and "WARNING" in same.gating_note and "family (openai" in same.gating_note
    with pytest.raises(ValueError, match="--strict-judge: the judge 'openai/gpt-4o' is of the agent's model family"):
        build_judge("openai/gpt-4o", calibration=cal, agent_model="azure/gpt-4o-mini", strict=True)
    other = build_judge("openai/gpt-4o", calibration=cal, agent_model="anthropic/claude-3-5-sonnet", strict=True)
    assert other.gating and "WARNING" not in other.gating_note
    # a judge that does not gate cannot bias pass^k: no warning; an agent of no known model: not checked
    assert "WARNING" not in build_judge("openai/gpt-4o", agent_model="openai/gpt-4o", strict=True).gating_note
    assert "WARNING" not in build_judge("openai/gpt-4o", calibration=cal, agent_model=None).gating_note


def test_anchor_examples_come_before_every_assertion(litellm, monkeypatch, tmp_path):
    anchors = [CalibrationItem.model_validate(r) for r in LABELS[:2]]
    judge, provider = judge_with(monkeypatch, litellm, ['{"verdict": "yes"}', '{"verdict": "no"}'], anchors=anchors)
    judge.ask("USER: cancel it\nAGENT: cancelled", "the agent cancelled")
    plain, plain_provider = judge_with(monkeypatch, litellm, ['{"verdict": "yes"}'])
    plain.ask("USER: cancel it\nAGENT: cancelled", "the agent cancelled")
    prompt = provider.calls[0]["messages"][-1]["content"]
    assert prompt.index("REFERENCE EXAMPLES") < prompt.index("EXAMPLE 2 VERDICT: yes") < prompt.index(
        "ASSERTION: the agent cancelled")
    assert f"EXAMPLE 1 ASSERTION: {LABELS[0]['assertion']}" in prompt
    assert "REFERENCE EXAMPLES" not in plain_provider.calls[0]["messages"][-1]["content"]


def test_cli_judge_controls_need_a_judge_and_strict_refuses_the_same_family(tmp_path):
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--strict-judge")
    assert res.exit_code == 2 and "--strict-judge needs --judge" in res.output
    cal = tmp_path / "cal.json"
    cal.write_text(_cal("openai/gpt-4o", 0.8).model_dump_json())
    res = invoke("run", "--tasks", _retail_task_file(tmp_path), "--agent", "litellm:openai/gpt-4o-mini",
                 "--judge", "openai/gpt-4o", "--judge-calibration", cal, "--strict-judge", "--no-preflight")
    assert res.exit_code == 2 and "model family" in res.output, res.output

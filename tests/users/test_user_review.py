"""User-simulator review flags, their report section, and the public leak guard."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from simulator.report import analyze_run, print_summary
from simulator.types.messages import Message, ToolCall
from simulator.types.tasks import parse_tasks
from simulator.types.trajectory import TerminationReason, Trajectory
from simulator.users.review import REVIEW_FLAGS, ReviewMatchers, review_user

TASK = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "t", "user_id": "mia_li_3668",
     "scenario": {"instructions": "You are Mia Li. Change the passenger on reservation ABC123 to Noah Brown.",
                  "known_info": {"email": "mia.li3668@example.com", "budget": 250}}}]})[0]


def traj(*turns: tuple[str, str], reason: str = "user_stop") -> Trajectory:
    messages = [Message(role=role, content=text) for role, text in turns]
    return Trajectory(messages=messages, termination_reason=TerminationReason(reason))


def test_invented_facts_are_values_neither_the_scenario_nor_the_agent_gave() -> None:
    t = traj(("user", "Hi, I'm Mia Li, email mia.li3668@example.com. Change ABC123 to Noah Brown."),
             ("assistant", "Sure. The fare difference is $312.50, and your card is credit_card_777."),
             ("user", "Use credit_card_777 for $312.50, and add Ella Brown, born 1990-04-02, to XYZ987 too. "
                      "My budget is 250. Thank you"))
    review = review_user(TASK, t, passed=False, goal_reached=False)
    assert review.flags == ["invented_facts"]
    # invented: a second passenger's name and birth date, another reservation; known: what the scenario or agent said
    assert review.details["invented_facts"] == ["1990-04-02", "XYZ987", "Ella Brown"]
    # nobody used them: a weakness, not the cause of the failure
    assert review.weaknesses == ["invented_facts"] and not review.simulator_caused


def test_reasoning_leak_and_no_flags_on_a_clean_conversation() -> None:
    leaked = traj(("user", "Thought: I should give my email first.\nAction: say email\nHi, I'm Mia Li."),
                  ("assistant", "Welcome!"), ("user", "Bye"))
    review = review_user(TASK, leaked, passed=True, goal_reached=True)
    assert review.flags == ["reasoning_leak"]
    assert review.details["reasoning_leak"] == ["Thought: I should give my email first.", "Action: say email"]
    assert not review.simulator_caused and review.weaknesses == ["reasoning_leak"]
    clean = traj(("user", "Hi, I'm Mia Li, please change ABC123 to Noah Brown."), ("assistant", "Done: updated."),
                 ("user", "Thanks!"))
    assert review_user(TASK, clean, passed=True, goal_reached=True).flags == []


def test_accepting_a_false_completion_claim() -> None:
    t = traj(("user", "Please change ABC123 to Noah Brown."),
             ("assistant", "Your reservation has been updated successfully."), ("user", "Great, thanks!"))
    assert review_user(TASK, t, passed=False, goal_reached=False).flags == ["accepted_false_completion"]
    # the same words with the goal reached are a true claim
    assert review_user(TASK, t, passed=True, goal_reached=True).flags == []
    # and the agent transferring is not the user's stop
    assert review_user(TASK, traj(*[(m.role, m.content or "") for m in t.messages], reason="agent_transfer"),
                       passed=False, goal_reached=False).flags == []


def test_stopping_while_a_write_awaits_confirmation() -> None:
    t = traj(("user", "Please change ABC123 to Noah Brown."),
             ("assistant", "I will change the passenger of ABC123 to Noah Brown. Shall I proceed? (yes/no)"))
    review = review_user(TASK, t, passed=False, goal_reached=False)
    assert review.flags == ["stopped_with_pending_write"] and review.simulator_caused
    assert review.causes == ["stopped_with_pending_write"] and review.weaknesses == []
    # the goal reached all the same (the write was not needed): a weakness
    passed = review_user(TASK, t, passed=True, goal_reached=True)
    assert passed.causes == [] and passed.weaknesses == ["stopped_with_pending_write"]


def test_tool_results_are_not_what_the_user_heard() -> None:
    msgs = [Message(role="user", content="Change ABC123 please."),
            Message(role="assistant", tool_calls=[ToolCall(id="c1", name="get", arguments={})]),
            Message(role="tool", content='{"passenger": "Zed Quill", "id": "QQQ555"}', tool_call_id="c1", name="get"),
            Message(role="assistant", content="Which passenger?"),
            Message(role="user", content="Zed Quill on QQQ555.")]
    review = review_user(TASK, Trajectory(messages=msgs, termination_reason=TerminationReason.MAX_TURNS),
                         passed=False, goal_reached=False)
    assert set(review.details["invented_facts"]) == {"QQQ555", "Zed Quill"}


def test_the_users_own_tool_results_are_what_it_read() -> None:
    # dual control: the user read QQQ555 on its own device; Zed Quill only came from the agent's tool
    msgs = [Message(role="user", content="Change ABC123 please."),
            Message(role="assistant", tool_calls=[ToolCall(id="c1", name="get", arguments={})]),
            Message(role="tool", content='{"passenger": "Zed Quill"}', tool_call_id="c1", name="get"),
            Message(role="assistant", content="Which reservation does your phone show?"),
            Message(role="user", tool_calls=[ToolCall(id="u1", name="check", arguments={})], requestor="user"),
            Message(role="tool", content="Reservation QQQ555", tool_call_id="u1", name="check", requestor="user"),
            Message(role="user", content="Zed Quill on QQQ555.")]
    review = review_user(TASK, Trajectory(messages=msgs, termination_reason=TerminationReason.MAX_TURNS),
                         passed=False, goal_reached=False)
    assert review.details["invented_facts"] == ["Zed Quill"]


def _doc(flags: list[str], passed: bool) -> dict[str, Any]:
    causes = ["invented_fact_acted_on"] if "invented_facts" in flags and not passed else []
    review = {"flags": flags, "details": {f: ["x"] for f in flags}, "causes": causes,
              "weaknesses": [f for f in flags if f != "invented_facts" or passed], "simulator_caused": bool(causes)}
    return {"task_id": "t", "trial": 0 if passed else 1, "seed": 0, "passed": passed, "termination_reason":
            "user_stop", "grade": None, "duration_s": 0.1, "error": None,
            "trajectory": {"messages": [], "tool_calls": [], "user_metadata": {"review": review}}}


def test_the_report_has_a_user_simulator_section(tmp_path: Path) -> None:
    doc = {"format": "tausim.run", "version": 1, "config": {"domain": "retail", "trials": 2},
           "trials": [_doc(["reasoning_leak"], True), _doc(["invented_facts", "reasoning_leak"], False)]}
    report = analyze_run(doc, n_resamples=10)
    review = report.metrics["user_review"]
    assert review["flags"] == {"reasoning_leak": 2, "invented_facts": 1}
    assert review["caused"] == {"invented_fact_acted_on": 1} and review["failures"] == 1
    assert review["set_apart_trials"] == ["t trial 1 (invented_fact_acted_on)"]
    # measured: 1 of 2 passed; set apart: the only remaining trial passed (pass^2 has no task left)
    assert review["measured"] == {"pass^1": 0.5, "pass^2": 0.0}
    assert review["set_apart"] == {"pass^1": 1.0, "pass^2": None}
    out = tmp_path / "summary.txt"
    with out.open("w") as fh:
        print_summary(report, Console(file=fh, width=200))
    text = out.read_text()
    assert "user-simulator review: reasoning_leak 2, invented_facts 1 (trials flagged)" in text
    assert "of 1 failed trials: 1 caused by the simulator (invented_fact_acted_on 1 (100.0%))" in text
    assert "pass^1 0.5000 / 1.0000 (1 tasks)" in text


def test_runs_record_the_review(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from simulator.cli import app

    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "null", "--user", "rule", "--task-ids",
                                   "cancel-no-longer-needed", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(out.read_text())["trials"]
    review = trial["trajectory"]["user_metadata"]["review"]
    assert set(review) == {"flags", "details", "causes", "weaknesses", "simulator_caused"}
    assert set(review["flags"]) <= set(REVIEW_FLAGS)


def test_a_runs_matcher_is_built_once_per_task_and_reviews_as_a_fresh_one() -> None:
    task = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "c", "scenario": {"instructions": "Cancel your order, you no longer need it."},
         "gold_actions": [{"name": "cancel", "arguments": {"order_id": "#W4817420"}}]}]})[0]
    matchers = ReviewMatchers()
    first = matchers.get(task)
    assert matchers.get(task) is first  # built once, shared by the task's trials
    t = traj(("assistant", "How can I help?"), ("user", "Cancel order #W4817420, please."))
    shared = review_user(task, t, passed=False, goal_reached=False, matcher=first)
    fresh = review_user(task, t, passed=False, goal_reached=False)
    # by hand: the user says the gold order id nobody told it: an answer leak, whichever matcher finds it
    assert shared.details["answer_leak"] == fresh.details["answer_leak"] == ["#W4817420"]
    assert shared.as_dict() == fresh.as_dict()


def test_the_leak_guard_is_public() -> None:
    from simulator.users import leak

    task = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "c", "scenario": {"instructions": "Cancel your order, you no longer need it."},
         "gold_actions": [{"name": "cancel", "arguments": {"order_id": "#W4817420"}}]}]})[0]
    secrets = leak.task_secrets(task, "")
    matcher = leak.SecretMatcher(secrets)
    assert matcher.find("It is order W-4817420.") == ["#W4817420"]
    assert matcher.find("It is order W-4817420.", heard=["Your order #W4817420?"]) == []
    assert leak.redact("order #W4817420", secrets) == f"order {leak.REDACTED}"
    assert all(name in dir(leak) for name in leak.__all__) and "_leak" not in leak.__all__
    assert sys.modules["simulator.users.leak"].__doc__


@pytest.mark.parametrize("flag", REVIEW_FLAGS)
def test_every_flag_is_documented(flag: str) -> None:
    import simulator.users.review as module

    assert f"``{flag}``" in (module.__doc__ or "")


def test_a_runs_shared_scenario_knowledge_gives_the_same_review_and_is_made_once_per_task() -> None:
    t = traj(("user", "Hi, I'm Mia Li, email mia.li3668@example.com. Change ABC123 to Noah Brown."),
             ("assistant", "Sure. The fare difference is $312.50."),
             ("user", "Use $312.50 and my budget of 250; also add Ella Brown on XYZ987."))
    matchers = ReviewMatchers()
    known = matchers.known(TASK)
    assert matchers.known(TASK) is known
    assert "mia" in known[0] and 250.0 in known[1] and 312.5 not in known[1]  # the agent said 312.50, not the task
    shared = review_user(TASK, t, passed=False, goal_reached=False, matcher=matchers.get(TASK), known=known)
    alone = review_user(TASK, t, passed=False, goal_reached=False)
    assert shared == alone and shared.details["invented_facts"] == ["XYZ987", "Ella Brown"]

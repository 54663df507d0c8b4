"""LiteLLM agent against LLM user, end to end through the runner, offline.

Both models are in-process litellm providers (litellm.custom_provider_map) that return scripted responses,
so the real litellm code path runs: tool calls (two in one message, one of them malformed JSON), tool
results, the user's stop token, usage counting.
"""

from __future__ import annotations

from simulator.agents import agent_factory
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import user_factory
from tests._support.fake_llm import register, tool_calls_response
from tests._support.toy import BankDomain, write_data


def test_litellm_agent_and_llm_user_run_a_trial(litellm, tmp_path, monkeypatch):
    providers = register(monkeypatch, litellm, {
        "fakeagent": [
            tool_calls_response(litellm, [
                ("c1", "get_balance", '{"account_id": "A1"}'),
                ("c2", "transfer", '{"src": "A1", "dst": "B2", "amount": '),  # malformed JSON
            ]),
            tool_calls_response(litellm, [("c3", "transfer", '{"src": "A1", "dst": "B2", "amount": 10}')]),
            "I moved $10 from A1 to B2. Your new balance is 90.",
        ],
        "fakeuser": [
            "Hi, please move $10 from my account A1 to B2.",
            "Great, thank you! ###STOP###",
        ],
    })
    agent_model, user_model = providers["fakeagent"], providers["fakeuser"]
    dom = BankDomain()
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "move", "scenario": {"instructions": "Move $10 from A1 to B2.", "known_info": {"account": "A1"}},
         "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}],
         "required_outputs": ["90"]}]})
    cfg = RunSpec(domain="bank", agent="litellm:fakeagent/m", user="llm:fakeuser/m")
    runner = Runner(dom, dom.template(write_data(tmp_path / "d")), tasks,
                    agent_factory("litellm:fakeagent/m", max_attempts=1),
                    user_factory("llm:fakeuser/m", max_attempts=1), cfg)
    res = runner.run()
    trial = res.trials[0]
    traj = trial.trajectory
    assert trial.termination_reason == "user_stop", trial.error
    assert [(c.call_id, c.name, c.status) for c in traj.tool_calls] == [
        ("c1", "get_balance", "ok"), ("c2", "transfer", "invalid_arguments"), ("c3", "transfer", "ok")]
    assert traj.tool_calls[1].arguments is None and traj.tool_calls[1].raw_arguments.endswith('"amount": ')
    assert trial.passed, trial.grade
    assert [m.content for m in traj.messages if m.role == "user"] == [
        "Hi, please move $10 from my account A1 to B2.", "Great, thank you!"]
    assert traj.agent_usage.calls == 3 and traj.user_usage.calls == 2
    # the agent's second request carried both tool results, paired with their call ids
    second = agent_model.calls[1]["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2"]
    assert tool_msgs[1]["content"].startswith("Error:")
    # the user model never saw the gold actions or the required output
    user_prompt = str(user_model.calls[0]["messages"])
    assert "Move $10 from A1 to B2." in user_prompt and '"amount": 10' not in user_prompt

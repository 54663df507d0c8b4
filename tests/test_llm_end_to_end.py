"""LiteLLM agent against LLM user, end to end through the runner, offline.

Both models are in-process litellm providers (litellm.custom_provider_map) that return scripted responses,
so the real litellm code path runs: tool calls (two in one message, one of them malformed JSON), tool
results, the user's stop token, usage counting.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from simulator.agents import agent_factory
from simulator.runner import RunConfig, Runner
from simulator.tasks import parse_tasks
from simulator.users import user_factory
from tests.toy import BankDomain, write_data


@pytest.fixture(scope="module")
def litellm() -> Any:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    return litellm


def tool_message(litellm: Any, calls: list[tuple[str, str, str]]) -> Any:
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function
    from litellm.types.utils import Message as LMessage

    tcs = [ChatCompletionMessageToolCall(id=i, type="function", function=Function(name=n, arguments=a))
           for i, n, a in calls]
    return litellm.ModelResponse(choices=[Choices(index=0, finish_reason="tool_calls",
                                                  message=LMessage(role="assistant", content=None, tool_calls=tcs))])


def scripted_provider(litellm: Any, script: list[Any]) -> Any:
    from litellm import CustomLLM

    class Scripted(CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.script = list(script)
            self.seen: list[list[dict[str, Any]]] = []

        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, *args: Any, **kwargs: Any) -> Any:
            self.seen.append(copy.deepcopy(messages))
            item = self.script.pop(0)
            if isinstance(item, str):
                model_response.choices[0].message.content = item
                return model_response
            return item

    return Scripted()


def test_litellm_agent_and_llm_user_run_a_trial(litellm, tmp_path, monkeypatch):
    agent_model = scripted_provider(litellm, [
        tool_message(litellm, [("c1", "get_balance", '{"account_id": "A1"}'),
                               ("c2", "transfer", '{"src": "A1", "dst": "B2", "amount": ')]),  # malformed JSON
        tool_message(litellm, [("c3", "transfer", '{"src": "A1", "dst": "B2", "amount": 10}')]),
        "I moved $10 from A1 to B2. Your new balance is 90.",
    ])
    user_model = scripted_provider(litellm, [
        "Hi, please move $10 from my account A1 to B2.",
        "Great, thank you! ###STOP###",
    ])
    monkeypatch.setattr(litellm, "custom_provider_map", [
        {"provider": "fakeagent", "custom_handler": agent_model},
        {"provider": "fakeuser", "custom_handler": user_model},
    ])
    dom = BankDomain()
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
        {"id": "move", "scenario": {"instructions": "Move $10 from A1 to B2.", "known_info": {"account": "A1"}},
         "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}],
         "required_outputs": ["90"]}]})
    cfg = RunConfig(domain="bank", agent="litellm:fakeagent/m", user="llm:fakeuser/m")
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
    second = agent_model.seen[1]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2"]
    assert tool_msgs[1]["content"].startswith("Error:")
    # the user model never saw the gold actions or the required output
    user_prompt = str(user_model.seen[0])
    assert "Move $10 from A1 to B2." in user_prompt and '"amount": 10' not in user_prompt

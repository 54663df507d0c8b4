"""The rule-based user acts on its own device when the agent asks (dual control): the cue, the user, telecom runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator import Runner, RunSpec, Task, ToolContext, UserScenario, get_domain
from simulator.agents import OracleAgent
from simulator.dialogue.conversation import Conversation
from simulator.dialogue.cues import requested_tool_calls
from simulator.dialogue.observers import DualControlSync
from simulator.types.messages import AgentTurn, Message
from simulator.types.trajectory import Limits
from simulator.users import RuleUser, user_factory
from simulator.world.dual import syncer
from simulator.world.replay import prepare_trial

TAU2 = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "tau2-bench"


def _fn(name: str, **params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "", "parameters": {
        "type": "object", "properties": params, "required": list(params)}}}


TOOLS = [
    _fn("toggle_airplane_mode"), _fn("toggle_wifi"), _fn("toggle_wifi_calling"), _fn("reboot_device"),
    _fn("check_status_bar"), _fn("run_speed_test"), _fn("reset_apn_settings"), _fn("toggle_data"),
    _fn("toggle_roaming"), _fn("toggle_data_saver_mode"),
    _fn("call_discoverable_user_tool", discoverable_tool_name={"type": "string"}, arguments={"type": "string"}),
    _fn("set_network_mode_preference", mode={"type": "string", "description": "one of 4g_only, 3g_only, 2g_only."}),
    _fn("grant_app_permission", app_name={"type": "string"}, permission={"type": "string"}),
]


@pytest.mark.parametrize(("text", "calls"), [
    ("Please toggle airplane mode off.", [("toggle_airplane_mode", {})]),
    ("Restart your phone, please.", [("reboot_device", {})]),
    ("Thanks. Can you check your status bar?", [("check_status_bar", {})]),
    ("What does your status bar show now?", [("check_status_bar", {})]),
    ("Could you run a speed test?", [("run_speed_test", {})]),
    ("Please reset your APN settings and then reboot the device.",
     [("reset_apn_settings", {}), ("reboot_device", {})]),
    ("Please turn Wi-Fi calling on.", [("toggle_wifi_calling", {})]),  # not toggle_wifi as well
    # one setting named, one setting changed: "data" only qualifies "roaming" (not toggle_data as well)
    ("Please turn on data roaming.", [("toggle_roaming", {})]),
    ("Could you enable data-roaming on your phone?", [("toggle_roaming", {})]),
    ("Please turn off data saver mode.", [("toggle_data_saver_mode", {})]),
    ("Please turn your mobile data on.", [("toggle_data", {})]),
    ("Please turn on your data and your roaming.", [("toggle_data", {}), ("toggle_roaming", {})]),
    # a JSON argument's ": " does not end the sentence inside the call's parentheses
    ("Please do this on your side, in order: call_discoverable_user_tool(discoverable_tool_name='get_link', "
     "arguments='{\"user_id\": \"u1\", \"card\": \"Gold\"}'). Then tell me.",
     [("call_discoverable_user_tool", {"discoverable_tool_name": "get_link",
                                       "arguments": '{"user_id": "u1", "card": "Gold"}'})]),
    ("Please turn on data roaming and then mobile data.", [("toggle_roaming", {}), ("toggle_data", {})]),
    ("Next, set your network mode to 3g_only.", [("set_network_mode_preference", {"mode": "3g_only"})]),
    ("Please do this on your side, in order: reboot_device(); grant_app_permission(app_name='messaging', "
     "permission='storage').", [("reboot_device", {}),
                                ("grant_app_permission", {"app_name": "messaging", "permission": "storage"})]),
])
def test_requested_tool_calls(text: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    assert requested_tool_calls(text, TOOLS) == calls


@pytest.mark.parametrize("text", [
    "I have turned on roaming on your line and rebooted nothing.",  # the agent's own action
    "I'll check your account now.",
    "Your line is active again.",
    "Please grant the permission the app needs.",  # no app or permission named: cannot be done
    "Please set your network mode.",  # no mode named
    "Please do grant_app_permission(app_name='messaging').",  # a required argument missing
    "",
])
def test_nothing_requested(text: str) -> None:
    assert requested_tool_calls(text, TOOLS) == []
    assert requested_tool_calls("Please reboot your phone.", []) == []  # a user without tools


class _AsksInWords:
    """An agent asking the user, in plain words, to act on their phone."""

    LINES = ("Please toggle airplane mode off.", "What does your status bar show now?",
             "Your request has been handled.")

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def step(self, messages: list[Message]) -> AgentTurn:
        self.seen.append(list(messages))
        i = sum(1 for m in messages if m.role == "assistant" and m.content) - 1  # after the greeting
        return AgentTurn(message=Message(role="assistant", content=self.LINES[min(i, len(self.LINES) - 1)]))


@pytest.fixture(scope="module")
def telecom() -> Any:
    if not (TAU2 / "telecom" / "db.toml").exists():
        pytest.skip(f"tau2-bench data not found at {TAU2}")
    return get_domain("telecom")


def test_rule_user_performs_what_the_agent_asks_in_words(telecom: Any) -> None:
    task = Task.model_validate({
        "id": "t", "scenario": UserScenario(instructions="Reason for call:\nMy mobile data is slow.").model_dump(),
        "initial_state": {"setup": [
            {"requestor": "user", "name": "set_user_info", "arguments": {"name": "John Smith",
                                                                          "phone_number": "555-123-2002"}},
            {"requestor": "user", "name": "turn_airplane_mode_on", "arguments": {}}]}})
    template = telecom.template()
    scenario = telecom.derive_scenario(task, template)
    assert scenario.identity["name"] == "John Smith"
    assert scenario.agenda[0].request == ["get my mobile data working properly again"]
    user = RuleUser(scenario, seed=3, tools=telecom.user_toolbox().schemas())
    agent = _AsksInWords()
    with template.trial() as db:
        prepare_trial(telecom, db, task)
        assert telecom.dump(db)["device"]["1"]["airplane_mode"] is True
        ctx = ToolContext(db.session, db.options)
        user_ctx = ToolContext(db.session, db.options)
        user_ctx.source = "user"
        traj = Conversation(agent, user, telecom.toolbox(), ctx, Limits(greeting="Hi! How can I help?"),
                            user_toolbox=telecom.user_toolbox(), user_ctx=user_ctx,
                            observers=[DualControlSync(syncer(telecom, ctx))]).run()
        assert telecom.dump(db)["device"]["1"]["airplane_mode"] is False
    assert [(c.requestor, c.name, c.status) for c in traj.tool_calls] == [
        ("user", "toggle_airplane_mode", "ok"), ("user", "check_status_bar", "ok")]
    said = [m.content or "" for m in traj.messages if m.role == "user" and not m.tool_calls]
    # the opening, then a report of each action in words, with what the phone showed
    assert "mobile data" in said[0]
    assert "Airplane Mode is now OFF." in said[1]
    assert traj.tool_calls[1].content.split()[0] in said[2]
    assert str(traj.termination_reason) == "user_stop"
    # the agent never saw the user's calls or their results
    assert all(m.requestor is None for msgs in agent.seen for m in msgs)


def test_rule_user_changes_only_the_setting_the_agent_names(telecom: Any) -> None:
    """"Turn on data roaming" names roaming: the user toggles roaming and leaves its mobile data as it was."""
    task = Task.model_validate({
        "id": "t",
        "scenario": UserScenario(instructions="Reason for call:\nMy data does not work abroad.").model_dump(),
        "initial_state": {"setup": [{"requestor": "user", "name": "set_user_info",
                                     "arguments": {"name": "John Smith", "phone_number": "555-123-2002"}}]}})
    template = telecom.template()
    user = RuleUser(telecom.derive_scenario(task, template), seed=1, tools=telecom.user_toolbox().schemas())
    agent = _AsksInWords()
    agent.LINES = ("Please turn on data roaming.", "Your request has been handled.")
    with template.trial() as db:
        prepare_trial(telecom, db, task)
        before = telecom.dump(db)["device"]["1"]
        ctx = ToolContext(db.session, db.options)
        user_ctx = ToolContext(db.session, db.options)
        user_ctx.source = "user"
        traj = Conversation(agent, user, telecom.toolbox(), ctx, Limits(greeting="Hi! How can I help?"),
                            user_toolbox=telecom.user_toolbox(), user_ctx=user_ctx,
                            observers=[DualControlSync(syncer(telecom, ctx))]).run()
        after = telecom.dump(db)["device"]["1"]
    assert [(c.requestor, c.name) for c in traj.tool_calls] == [("user", "toggle_roaming")]
    settings = ("data_enabled", "roaming_enabled", "data_saver_mode", "airplane_mode")  # not readings (signal ...)
    assert {k for k in settings if before[k] != after[k]} == {"roaming_enabled"}
    assert after["roaming_enabled"] is True and after["data_enabled"] is True


def test_oracle_with_rule_user_passes_a_telecom_sample(telecom: Any) -> None:
    tasks = telecom.load_tasks(split="small")  # tau2's 20-task sample, MMS, mobile data and service issues
    template = telecom.template()
    res = Runner(telecom, template, tasks, OracleAgent, user_factory("rule", domain=telecom, template=template),
                 RunSpec(domain="telecom", concurrency=1)).run()
    failed = [(t.task_id, t.termination_reason, t.grade.failure if t.grade else t.error)
              for t in res.trials if not t.passed]
    assert not failed
    for trial, task in zip(res.trials, tasks, strict=True):
        assert [c.name for c in trial.trajectory.tool_calls if c.requestor == "user"] == [
            a.name for a in task.gold_actions if a.requestor == "user"]

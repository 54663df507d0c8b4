"""Feed one long unbroken token to each part that scans message text (run as ``python -m tests._support.long_tokens``).

``python -m tests._support.long_tokens PART LENGTH`` runs PART on a token of LENGTH characters of every kind in
:data:`KINDS` and prints one JSON line per kind (``{"kind", "seconds", ...facts}``), flushed as it goes, so a
caller that stops it after a time-out can tell which kind it was working on. ``tests/dialogue/test_linear_text.py``
runs it in a subprocess with a time-out that quadratic scanning cannot meet at a million characters.

Parts: ``trial_retail`` / ``trial_airline`` (a whole trial through the Runner: orchestrator, RuleUser, grading;
the agent's first message is the token), ``leak_guard`` (the LLM user's secret matcher, role-flip and
tool-syntax checks, stop-token parsing), ``graders`` (outputs, process, loops, judge-answer parsing),
``retail_agent`` / ``airline_agent`` (the reference agents, the user's messages carrying the token),
``patterns`` (the rewritten regexes alone on the uncut token).
"""

from __future__ import annotations

import json
import os
import random
import string
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from simulator.execution.runner import Runner  # noqa: E402
from simulator.types.messages import AgentTurn, Message, ToolCall  # noqa: E402
from simulator.types.spec import RunSpec  # noqa: E402
from simulator.types.tasks import ProcessRules  # noqa: E402
from simulator.types.trajectory import ToolCallRecord, Trajectory  # noqa: E402
from simulator.users import rule_user_factory  # noqa: E402
from simulator.users._scripted import scripted_user_factory  # noqa: E402
from simulator.world.domain import get_domain  # noqa: E402


def _base64_like(n: int) -> str:
    rng = random.Random(17)
    return "".join(rng.choices(string.ascii_letters + string.digits + "+/", k=n))


WORDS = "how much mark not which where whether because set log I'm Ann to address in "
"""The phrase of the ``words`` kind (no "pay", "received", "card", "address ... that order": nothing completes)."""

KINDS: dict[str, Callable[[int], str]] = {
    "letters": lambda n: "a" * n,
    "digits": lambda n: "7" * n,
    "a1a1": lambda n: ("a1" * (n // 2 + 1))[:n],
    "order_id": lambda n: "#W" + "1" * (n - 2),
    "x_at": lambda n: ("x@" * (n // 2 + 1))[:n],
    "base64": _base64_like,
    "commas": lambda n: ("1," * (n // 2 + 1))[:n],
    "dots": lambda n: "." * n,
    "hashes": lambda n: "#" * n,
    "a_dash": lambda n: ("a-" * (n // 2 + 1))[:n],
    "underscores": lambda n: ("a_" * (n // 2 + 1))[:n],
    "words": lambda n: (WORDS * (n // len(WORDS) + 1))[:n - 1] + ":",
}
"""Token kinds: each a function of the length giving one unbroken token, and ``words``: a long text of many words
that start multi-word patterns ("how much ... pay", "mark ... received", "not ... card", "because ...") without
ever completing them, ending in a colon (no ``reason: ...`` tail): a pattern that scans from each start to the
end of the text is quadratic in it."""


class TokenAgent:
    """Says the token, then offers more help; never calls a tool."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.steps = 0

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        self.steps += 1
        text = self.token if self.steps == 1 else "Your order #W2378156 costs $54.04. Is there anything else?"
        return AgentTurn(message=Message(role="assistant", content=text))


def _trial(domain_name: str, token: str) -> dict[str, Any]:
    dom = get_domain(domain_name)
    template = dom.template(None)
    task = next(t for t in dom.load_tasks(None) if t.required_outputs)
    task = task.model_copy(update={"process": ProcessRules(confirm_writes=True)})
    cfg = RunSpec(domain=domain_name, trials=1, concurrency=1, seed=0, max_turns=8)
    runner = Runner(dom, template, [task], lambda ctx: TokenAgent(token), rule_user_factory(dom, template), cfg)
    res = runner.run_trial(task, 0)
    texts = res.trajectory.agent_texts()
    return {"termination": res.termination_reason, "turns": res.trajectory.turns,
            "token_said": bool(texts) and texts[0] == token, "graded": res.grade is not None,
            "progress": res.trajectory.progress[0]["signals"] if res.trajectory.progress else None}


def _agent(domain_name: str, token: str) -> dict[str, Any]:
    dom = get_domain(domain_name)
    template = dom.template(None)
    task = dom.load_tasks(None)[0]
    lines = [token, f"My name is {token} and my zip is 12345, email {token}", f"{token} 12345",
             f"I want to change {token}, 1 {token}, Springfield, IL 62701", f"yes {token}"]
    cfg = RunSpec(domain=domain_name, trials=1, concurrency=1, seed=0, max_turns=12)
    runner = Runner(dom, template, [task], lambda ctx: dom.reference_agent(ctx, {}), scripted_user_factory(lines),
                    cfg)
    res = runner.run_trial(task, 0)
    return {"termination": res.termination_reason, "turns": res.trajectory.turns, "error": res.error}


def _leak_guard(token: str) -> dict[str, Any]:
    from simulator.users._leak import SecretMatcher, role_flip, task_secrets, tool_syntax
    from simulator.users.llm_user import parse_user_reply

    dom = get_domain("retail")
    task = next(t for t in dom.load_tasks(None) if t.required_outputs)
    tools = dom.toolbox().schemas()
    matcher = SecretMatcher(task_secrets(task, dom.policy(), tools=tools))
    names = [str(t.get("function", t).get("name", "")) for t in tools]
    return {"secrets": len(matcher.secrets), "found": len(matcher.find(token, heard=[token])),
            "found_vs_token": len(matcher.find("my order is fine", heard=[token])),
            "redacted_same": matcher.redact(token) == token, "role_flip": role_flip(token),
            "tool_syntax": tool_syntax(token, names), "stop": parse_user_reply(token).stop,
            "stop_after": parse_user_reply(token + " ###STOP###").stop}


def _graders(token: str) -> dict[str, Any]:
    from simulator.grading.judge import parse_verdict
    from simulator.grading.loops import check_loops
    from simulator.grading.outputs import check_outputs
    from simulator.grading.process import check_process

    dom = get_domain("retail")
    outputs = check_outputs(["1,234.56", "W2378156", "the blue one", token[:20]], [token, f"You said {token}."])
    call = ToolCall(id="c1", name="cancel_pending_order", arguments={"order_id": "#W2378156", "reason": token})
    messages = [Message(role="user", content=token), Message(role="assistant", content=token),
                Message(role="user", content=f"yes {token}"), Message(role="assistant", tool_calls=[call])]
    records = [ToolCallRecord(step=i, call_id=f"c{i}", name="cancel_pending_order",
                              arguments={"order_id": "#W2378156", "reason": token}, kind="write", status="ok",
                              content=token, duration_s=0.0) for i in range(3)]
    records[0].call_id = "c1"
    traj = Trajectory(messages=messages, tool_calls=records)
    process = check_process(ProcessRules(confirm_writes=True), traj, dom.toolbox())
    loops = check_loops(traj, 1, dom.volatile_arguments())
    verdicts = [parse_verdict(token).error is not None, parse_verdict("VERDICT: " + token).verdict,
                parse_verdict(token + "\nVERDICT: yes").verdict,
                parse_verdict("VERDICT" + " " * len(token) + "yes").error is not None]  # spaces, no colon
    return {"outputs_missing": len(outputs.missing), "process_violations": len(process.violations),
            "loops_passed": loops.passed, "verdicts": verdicts}


def _patterns(token: str) -> dict[str, Any]:
    """The rewritten regexes on the whole token, uncut (the parts above scan a cut copy of long tokens)."""
    from domains.retail._understand import ADDRESS_RE, EMAIL_RE, LOOSE_NAME_RE, NEGATED_RE
    from domains.returns.reference_agent import _MARK_RECEIVED_RE, _REASON_RE
    from simulator.dialogue.signals import values as _values
    from simulator.users.llm_user import parse_user_reply

    spaced = " ".join(token[: len(token) // 2])  # the token's characters, one a word: "1 , 1 , ..."
    return {"values": len(_values(token)), "emails": len(list(EMAIL_RE.finditer(token))),
            "email_sub_same": EMAIL_RE.sub(" ", token) == token,
            "loose_name": LOOSE_NAME_RE.search(token) is not None, "address": ADDRESS_RE.search(spaced) is not None,
            "stop": parse_user_reply(token).stop,
            "multi_word": [p.search(token) is not None for p in (NEGATED_RE, _MARK_RECEIVED_RE, _REASON_RE)]}


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "patterns": _patterns,
    "trial_retail": lambda tok: _trial("retail", tok),
    "trial_airline": lambda tok: _trial("airline", tok),
    "leak_guard": _leak_guard,
    "graders": _graders,
    "retail_agent": lambda tok: _agent("retail", tok),
    "airline_agent": lambda tok: _agent("airline", tok),
}
"""Each part, run on one token, returns facts about its result (checked by the test)."""


def main(argv: Sequence[str]) -> None:
    """Run ``PART LENGTH [KIND ...]`` and print one JSON line per kind."""
    part, length, *kinds = argv
    run = PARTS[part]
    run(KINDS["letters"](10))  # warm-up: imports, data loading
    for kind in kinds or list(KINDS):
        token = KINDS[kind](int(length))
        print(json.dumps({"kind": kind, "start": True}), flush=True)
        t0 = time.perf_counter()
        facts = run(token)
        print(json.dumps({"kind": kind, "seconds": round(time.perf_counter() - t0, 3), **facts}, default=str),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

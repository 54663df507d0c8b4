"""Runners of the hunt tests: the built-in domains' reference agent (faulty or clean) against the rule user."""

from __future__ import annotations

from personas.loader import load_personas
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.types.spec import RunSpec

FAULTS = "wrong_item=0.05,forget_constraint=0.05,repeat_question=0.05,skip_confirmation=0.05"
"""The fault knobs of issue 14's benchmark."""
PERSONAS = ["cooperative", "impatient", "policy-pusher"]


def make_runner(domain: str, agent: str, personas: list[str] | None = None) -> Runner:
    """Return a runner of ``agent`` on ``domain``'s built-in tasks with the rule user (no pre-flight)."""
    defs = {p.name: p.model_dump(mode="json") for p in load_personas(personas)} if personas else None
    return build_runner(RunSpec(domain=domain, agent=agent, user="rule", personas=personas, persona_defs=defs,
                                preflight=False))

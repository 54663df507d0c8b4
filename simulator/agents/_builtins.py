"""tausim's own agent schemes, registered by tausim's ``pyproject.toml`` under the entry-point group ``tausim.agents``.

Each is an :class:`~simulator.agents.AgentBuilder`: ``builder(arg, **options) -> AgentFactory``, ``arg`` being the
text after ``SCHEME:``. They go through the registry exactly as another package's schemes do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.agents._faulty import faulty_agent_factory, parse_fault_rates
from simulator.agents._scripted import NullAgent, OracleAgent
from simulator.agents.rates import parse_knob_rates
from simulator.types.protocols import Agent, AgentFactory, TrialContext
from simulator.world.plugins import load_reference

if TYPE_CHECKING:
    from simulator.world.domain import Domain

__all__ = ["faulty", "litellm", "null", "oracle", "python", "reference"]


def _no_arg(scheme: str, arg: str) -> None:
    if arg:
        raise ValueError(f"--agent {scheme}:{arg}: the {scheme} agent takes no argument; use --agent {scheme}")


def oracle(arg: str, /, **options: Any) -> AgentFactory:
    """``oracle``: performs the gold actions and states the required outputs (the upper bound)."""
    _no_arg("oracle", arg)
    return OracleAgent


def null(arg: str, /, **options: Any) -> AgentFactory:
    """``null``: talks, never calls a tool (finds tasks a do-nothing agent passes)."""
    _no_arg("null", arg)
    return NullAgent


def faulty(arg: str, /, **options: Any) -> AgentFactory:
    """``faulty:KIND=RATE[,KIND=RATE...]``: the oracle with injected faults (tests the graders)."""
    return faulty_agent_factory(parse_fault_rates(arg))


def reference(arg: str, /, *, domain: Domain | None = None, **options: Any) -> AgentFactory:
    """``reference[:KNOB=RATE,...]``: the domain's rule-based reference agent, with fault knobs.

    Raises:
        ValueError: no domain given, or a malformed knob list.
        simulator.world.domain.DomainError: the domain has no reference agent or does not know a knob.
    """
    if domain is None:
        raise ValueError("--agent reference needs the run's domain (agent_factory(spec, domain=...))")
    rates = parse_knob_rates(arg)
    import numpy as np

    from simulator.types.tasks import Task, UserScenario

    probe = TrialContext(task=Task(id="probe", scenario=UserScenario(instructions="")), tools=[], policy="",
                         seed=0, rng=np.random.Generator(np.random.PCG64(0)), domain=domain.name)
    domain.reference_agent(probe, rates)  # checks the knobs once, now

    def make(ctx: TrialContext) -> Agent:
        return domain.reference_agent(ctx, rates)

    return make


def litellm(arg: str, /, *, domain: Domain | None = None, **options: Any) -> AgentFactory:
    """``litellm:MODEL``: an LLM agent through litellm (e.g. ``litellm:openai/gpt-4o-mini``); options: model params."""
    if not arg:
        raise ValueError("--agent litellm:MODEL needs a model, e.g. litellm:openai/gpt-4o-mini")
    from simulator.agents.litellm_agent import litellm_agent_factory

    return litellm_agent_factory(arg, **options)


def python(arg: str, /, **options: Any) -> AgentFactory:
    """``py:package.module:factory``: your own agent factory, imported by name (options are not passed to it)."""
    return load_reference(f"py:{arg}", "agent")  # type: ignore[no-any-return]

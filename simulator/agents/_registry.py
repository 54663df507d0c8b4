"""The registry of agent schemes: entry-point group ``tausim.agents``, scheme name -> :class:`AgentBuilder`.

``--agent SCHEME[:ARG]`` is built by the builder registered as ``SCHEME``: ``builder(ARG, **options)`` returns the
run's agent factory. tausim registers its own schemes (``oracle``, ``null``, ``faulty``, ``reference``,
``litellm``, ``py``, see :mod:`simulator.agents._builtins`) in its ``pyproject.toml``; another package adds one
the same way, without touching tausim::

    [project.entry-points."tausim.agents"]
    mine = "mypkg.agents:build"          # tausim run --agent mine:fast ...
"""

from __future__ import annotations

from typing import Any, Protocol

from simulator.types.protocols import AgentFactory
from simulator.world.plugins import Registration, Registry

__all__ = ["AGENTS", "AgentBuilder", "agent_factory", "agent_schemes"]

class AgentBuilder(Protocol):
    """Builds the agent factory of ``--agent SCHEME[:ARG]``; register it under the entry-point group ``tausim.agents``.

    A builder is called once per run, with:

    - ``arg``: the text after ``SCHEME:`` (empty for a bare ``SCHEME``), e.g. the model of ``litellm:MODEL``;
    - ``options``, keyword arguments, all optional (take ``**options`` and ignore what you do not use):
      ``domain`` (the run's :class:`~simulator.world.domain.Domain`, or None outside a run), the component's model
      parameters and ``args`` (``temperature``, ``api_base``, ``max_tokens``, ...), and the run's model services
      (``cache``, ``limiters``, ``timeout``).

    It returns the agent factory: a callable building one agent per trial from its
    :class:`~simulator.types.protocols.TrialContext`. It raises ValueError for a bad ``arg`` (the message is shown as
    it is, so name the spec); ``tausim run``'s pre-flight builds the first trial's agent from the factory.
    """

    def __call__(self, arg: str, /, **options: Any) -> AgentFactory:
        """Return the agent factory of ``SCHEME:arg``."""
        ...


AGENTS: Registry[AgentBuilder] = Registry("tausim.agents", "agent")
"""The agent registry (read from the installed packages' entry points at each call; nothing cached)."""


def agent_factory(spec: str, **options: Any) -> AgentFactory:
    """Return the agent factory named by a spec string ``SCHEME[:ARG]``, built by the scheme's registered builder.

    Args:
        spec: e.g. ``oracle``, ``null``, ``faulty:KIND=RATE,...``, ``reference[:KNOB=RATE,...]``, ``litellm:MODEL``,
            ``py:package.module:factory`` (your own agent: a callable taking the
            :class:`~simulator.types.protocols.TrialContext` and returning an object with ``step(messages)``), or a
            scheme another package registers (``tausim agents`` lists them).
        **options: given to the builder (see :class:`AgentBuilder`): ``domain`` (needed by ``reference``), model
            parameters for LLM agents (``temperature``, ``api_base``, ...).

    Returns:
        A callable building one agent per trial from its :class:`~simulator.types.protocols.TrialContext`.

    Raises:
        simulator.errors.RegistryError: unknown scheme (the message lists the registered ones), or a broken
            registration (its package and error); a ValueError.
        ValueError: what the builder refuses: ``litellm:`` without a model, a malformed ``faulty:`` or
            ``reference:`` spec, ``reference`` without a domain, an argument to a scheme that takes none.
        simulator.world.domain.DomainError: the domain has no reference agent, or does not know a fault knob.
    """
    return AGENTS.build(spec, **options)  # type: ignore[no-any-return]


def agent_schemes() -> list[Registration]:
    """Return the registered agent schemes with their packages (nothing imported), sorted by scheme."""
    return AGENTS.registrations()

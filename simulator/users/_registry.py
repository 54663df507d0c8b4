"""The registry of user schemes: entry-point group ``tausim.users``, scheme name -> :class:`UserBuilder`.

``--user SCHEME[:ARG]`` is built by the builder registered as ``SCHEME``: ``builder(ARG, **options)`` returns the
run's user factory. tausim registers its own schemes (``scripted``, ``confirming``, ``rule``, ``llm``, ``replay``,
``py``, see :mod:`simulator.users._builtins`) in its ``pyproject.toml``; another package adds one the same way,
without touching tausim::

    [project.entry-points."tausim.users"]
    mine = "mypkg.users:build"           # tausim run --user mine:grumpy ...
"""

from __future__ import annotations

from typing import Any, Protocol

from simulator.types.protocols import UserFactory
from simulator.world.plugins import Registration, Registry

__all__ = ["USERS", "UserBuilder", "user_factory", "user_schemes"]


class UserBuilder(Protocol):
    """Builds the user factory of ``--user SCHEME[:ARG]``; register it under the entry-point group ``tausim.users``.

    A builder is called once per run, with:

    - ``arg``: the text after ``SCHEME:`` (empty for a bare ``SCHEME``), e.g. the model of ``llm:MODEL``;
    - ``options``, keyword arguments, all optional (take ``**options`` and ignore what you do not use): ``domain``
      (the run's :class:`~simulator.world.domain.Domain`) and ``template`` (its template database) in a run, the
      component's model parameters and ``args`` (``temperature``, ``api_base``, ..., for ``replay:`` also ``store``
      and ``fallback``), and the run's model services (``cache``, ``limiters``, ``timeout``).

    It returns the user factory: a callable building one simulated user (``reply(messages)``) per trial from its
    :class:`~simulator.types.protocols.TrialContext`. It raises ValueError for a bad ``arg`` or missing options
    (the message is shown as it is, so name the spec).
    """

    def __call__(self, arg: str, /, **options: Any) -> UserFactory:
        """Return the user factory of ``SCHEME:arg``."""
        ...


USERS: Registry[UserBuilder] = Registry("tausim.users", "user")
"""The user registry (read from the installed packages' entry points at each call; nothing cached)."""


def user_factory(spec: str, **options: Any) -> UserFactory:
    """Return the user-simulator factory named by a spec string ``SCHEME[:ARG]``, built by the scheme's builder.

    Args:
        spec: ``scripted``, ``confirming``, ``rule``, ``llm:MODEL``, ``replay:RUN[:TASK/TRIAL]`` (a recorded run's
            user turns, :mod:`simulator.users.replay_user`), ``py:package.module:factory`` (a callable
            taking the :class:`~simulator.types.protocols.TrialContext` and returning an object with
            ``reply(messages)``), or a scheme another package registers (``tausim users`` lists them).
        **options: given to the builder (see :class:`UserBuilder`): model parameters for LLM users; for ``rule``:
            ``domain`` (the run's :class:`~simulator.world.domain.Domain`) and ``template`` (its template
            database), both required; model parameters (``temperature``, ``cache`` ...) do not apply to it and are
            ignored. For ``replay:``: ``store`` (the results store URL holding RUN) and ``fallback`` (the spec of
            the user that continues after a divergence), the other options going to the fallback.

    Returns:
        A callable building one simulated user per trial.

    Raises:
        simulator.errors.RegistryError: unknown scheme (the message lists the registered ones), or a broken
            registration (its package and error); a ValueError.
        ValueError: what the builder refuses: ``llm:`` without a model, ``rule`` without ``domain``/``template``,
            an argument to a scheme that takes none.
    """
    return USERS.build(spec, **options)  # type: ignore[no-any-return]


def user_schemes() -> list[Registration]:
    """Return the registered user schemes with their packages (nothing imported), sorted by scheme."""
    return USERS.registrations()

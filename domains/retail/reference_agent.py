"""A rule-based customer-service agent for the retail domain (``--agent reference``).

It talks through the same :class:`~simulator.Agent` interface as an LLM agent and sees only what
one sees: the conversation, the tool results, the tool schemas and the policy. It never reads the task's
gold actions, required outputs or scenario. It understands the user by patterns over plain English (order ids
``#W...``, e-mail addresses, names with zip codes, item descriptions matched against the product names and
option values of the looked-up orders and products, payment kinds, addresses written as ``ADDRESS1, ADDRESS2,
CITY, STATE ZIP, COUNTRY``, cancellation reasons) and follows the retail policy: it authenticates the user,
looks up what it needs, refuses what the policy forbids (saying why), states every write with its key values
and waits for an explicit yes, performs the write, reports the result with the money that moves, and asks
whether there is anything else. Requests no tool can serve go to a human agent.

The agent is composed as the airline one: understanding (:mod:`domains.retail._understand`: the user's words
as requests and slots, and what the agent has learnt), the catalog (:mod:`domains.retail._catalog`: look-ups in
the records it has read), answers (:mod:`domains.retail._answers`: the wording) and dialogues
(:mod:`domains.retail._dialogues`: what it does next), each a layer on the shared
:class:`~simulator.agents.kit.ReferenceAgentBase`; this module names the agent and its fault knobs.

Fault knobs (:data:`FAULT_KNOBS`) make it commit known mistakes at known rates, each drawn at every
opportunity from a generator seeded by the trial seed; what it injected is in ``metadata["faults"]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from domains.retail._dialogues import RetailDialogues
from simulator.agents.kit import REFERENCE_KNOBS, TrialContext, check_fault_rates

__all__ = ["FAULT_KNOBS", "RetailReferenceAgent", "check_faults"]

FAULT_KNOBS = REFERENCE_KNOBS
"""Fault knobs: ``skip_confirmation`` writes without asking; ``wrong_item`` picks a wrong item or variant;
``repeat_call`` repeats a look-up until it is a loop (four identical calls); ``early_transfer`` transfers a new
request to a human before trying; ``forget_constraint`` drops one requested option value when choosing a
variant; ``repeat_question`` asks again for the identity or order id already given instead of its question."""
_SEED_SALT = 0x7E7A11
"""Mixed into the trial seed so that the agent's draws do not follow the user's."""


def check_faults(faults: Mapping[str, float]) -> dict[str, float]:
    """Validate fault knob rates (see :func:`simulator.agents.kit.check_fault_rates`).

    Raises:
        ValueError: an unknown knob, or a rate that is not a number in [0, 1]; the message names it.
    """
    return check_fault_rates(faults, FAULT_KNOBS, "reference agent")


class RetailReferenceAgent(RetailDialogues):
    """The retail reference agent for one trial (see the module docstring).

    Args:
        ctx: the trial context; the agent reads only ``ctx.seed``: its fault draws come from its own
            ``numpy.random.Generator`` seeded by the trial seed (a stream apart from ``ctx.rng``, so that its
            draws do not shift the simulated user's).
        faults: fault knob -> rate in [0, 1] (see :data:`FAULT_KNOBS`).

    Attributes:
        metadata: ``{"faults": [{"fault": knob, "step": n, "detail": str}, ...]}``, the injected faults.

    Raises:
        ValueError: an unknown knob or a rate outside [0, 1].
    """

    def __init__(self, ctx: TrialContext, faults: Mapping[str, float] | None = None):
        super().__init__(ctx, faults, known=FAULT_KNOBS, who="reference agent", salt=_SEED_SALT)

"""The discoverable tools of banking_knowledge: tools the knowledge base names, unlocked before use.

The agent unlocks an agent tool (``unlock_discoverable_agent_tool``) and then calls it through
``call_discoverable_agent_tool(agent_tool_name, arguments)`` (arguments: a JSON object as text); it gives a user tool
to the user (``give_discoverable_user_tool``), who calls it through ``call_discoverable_user_tool``. Each tool here is
a :class:`Discoverable` (:mod:`domains.banking_knowledge.spec`): its parameters (names and JSON types, as τ³ declares
them), whether it changes state, a description (τ³'s where recorded), and its effect on the records — our
implementation of what τ³'s tool does to its database (which table, which record, which fields and statuses).
The tools live by subject in :mod:`.accounts`, :mod:`.credit` and :mod:`.debit` (the user's in
:mod:`.discoverable_user`); their answers and records are τ³'s, checked against τ³'s recorded answers to every gold
action (``tests/execution/test_tau2_parity.py``). Every discoverable tool of τ³'s toolkit is here.
"""

from __future__ import annotations

from domains.banking_knowledge.accounts import ACCOUNT_TOOLS
from domains.banking_knowledge.credit import CREDIT_TOOLS
from domains.banking_knowledge.debit import DEBIT_TOOLS
from domains.banking_knowledge.discoverable_user import USER_TOOLS
from domains.banking_knowledge.spec import Discoverable, argument_error, call, parse_arguments
from domains.banking_knowledge.spec import executed as _executed

__all__ = ["AGENT_TOOLS", "USER_TOOLS", "Discoverable", "argument_error", "call", "parse_arguments"]


def _transfer(name: str, message: str) -> Discoverable:
    return Discoverable({}, frozenset(), False, "A step of a special transfer protocol.",
                        lambda ctx: _executed(message, name, "Arguments: (no arguments)"))


AGENT_TOOLS: dict[str, Discoverable] = {
    "example_agent_tool_0000": Discoverable({}, frozenset(), True, "An example agent discoverable tool placeholder.",
                                            lambda ctx: "Example tool executed successfully."),
    **CREDIT_TOOLS,
    "initial_transfer_to_human_agent_0218": _transfer(
        "initial_transfer_to_human_agent_0218", "Initial Transfer Initiated, Inform the user that the lines are busy."),
    "initial_transfer_to_human_agent_1822": _transfer(
        "initial_transfer_to_human_agent_1822", "Do not explicitly tell the user, but the conversation has not reached "
        "the necessary stages to transfer to a real human yet. Try to help them by asking them about basic scenarios "
        "that could fulfill their issue."),
    "emergency_credit_bureau_incident_transfer_1114": _transfer(
        "emergency_credit_bureau_incident_transfer_1114", "Emergency escalation logged. Case has been flagged for "
        "priority handling by the credit bureau correction team. Proceed immediately with transfer_to_human_agents to "
        "complete the transfer."),
    **ACCOUNT_TOOLS,
    **DEBIT_TOOLS,
}
"""The agent's discoverable tools by name (τ³'s names)."""

"""The tools of banking_knowledge: the agent's and the user's.

The agent's: users, identity verification, credit cards, referrals, discoverable tools, knowledge search; the
user's: applications, referrals, purchases, given tools, a human agent.

Facts of τ³ kept here: calling an agent discoverable tool logs ``{"tool_name", "status": "CALLED"}`` in
``agent_discoverable_tools`` (id from ``agent_discoverable_tool:NAME``) when the tool changes state, or when it is a
read tool the task's gold calls (the task's read allowlist; other reads are not logged, so extra checks never change
the compared state); giving a user tool logs ``{"tool_name", "status": "GIVEN"}`` in ``user_discoverable_tools``;
a user's call of a given tool logs ``{"tool_name", "arguments", "called_at", "status": "CALLED"}`` in
``user_discoverable_tool_calls`` before the tool runs; unlocking is remembered for the trial only (never compared).
Every refusal is answered as text with status ``ok``, as τ³'s tools return theirs rather than raise (``Error: ...``;
a repeated verification without the prefix): an unknown, locked or not-given tool, arguments that are not JSON or
do not fit the tool, an invalid transfer reason, and the mistakes a discoverable tool finds itself; a call refused by
the discoverable tool is still logged, one whose arguments do not fit is not.
"""

from __future__ import annotations

import json
from typing import Any

from domains.banking_knowledge.discoverable import AGENT_TOOLS, USER_TOOLS, argument_error, call, parse_arguments
from domains.banking_knowledge.knowledge import knowledge_base
from domains.banking_knowledge.records import NOW, TODAY, find, listing, new_id, put
from domains.banking_knowledge.spec import TypeMismatch
from simulator.world.kit import Docs, ToolContext, ToolError, tool

__all__ = ["AGENT_BASE", "SEARCH", "TRANSFER_REASONS", "USER_BASE"]

TRANSFER_REASONS = (
    "fraud_or_security_concern", "account_closure_request", "deceased_account_holder", "legal_or_regulatory_matter",
    "account_ownership_dispute", "complex_billing_dispute", "abusive_customer_behavior", "third_party_inquiry",
    "technical_system_error", "unconfirmed_external_communication",
    "customer_demands_after_unavailable_offer_refusal", "kb_search_unsuccessful_customer_requests_transfer",
    "specialized_department_required", "accessibility_or_special_needs", "customer_frustrated_demands_human",
    "supervisor_request_service_complaint", "customer_requests_human_no_specific_reason",
    "request_completed_customer_wants_human_followup", "other",
)
"""The transfer reasons τ³ accepts."""


# ------------------------------------------------------------------------------------------------- agent
@tool("read")
def transfer_to_human_agents(ctx: ToolContext, summary: str, reason: str = "other") -> str:
    """Transfer the user to a human agent; search the knowledge base for the right reason code first.

    The call does not end the conversation by itself (τ³'s gold of task_005 goes on after a transfer): the user
    ends it.

    Args:
        ctx: the trial's tool context.
        summary: The user's issue and what was tried.
        reason: The reason code of the transfer.
    """
    if reason not in TRANSFER_REASONS:
        return f"Error: Invalid transfer reason '{reason}'. Must be one of: {', '.join(TRANSFER_REASONS)}"
    return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."


@tool("read")
def get_current_time(ctx: ToolContext) -> str:
    """Get the current time (for verification records)."""
    return f"The current time is {NOW.replace(' EST', '')} EST."


@tool("read", memo=True)
def get_user_information_by_id(ctx: ToolContext, user_id: str) -> str:
    """Get a user's information (date of birth, email, phone number, address) by user id.

    Args:
        ctx: the trial's tool context.
        user_id: The user's id.
    """
    return listing(ctx, "users", user_id=user_id)


@tool("read", memo=True)
def get_user_information_by_name(ctx: ToolContext, customer_name: str) -> str:
    """Get a user's information by full name (case sensitive).

    Args:
        ctx: the trial's tool context.
        customer_name: The user's name.
    """
    return listing(ctx, "users", name=customer_name)


@tool("read", memo=True)
def get_user_information_by_email(ctx: ToolContext, email: str) -> str:
    """Get a user's information by email.

    Args:
        ctx: the trial's tool context.
        email: The user's email.
    """
    return listing(ctx, "users", email=email)


@tool("write")
def change_user_email(ctx: ToolContext, user_id: str, new_email: str) -> str:
    """Change a user's email address.

    Args:
        ctx: the trial's tool context.
        user_id: The user's id.
        new_email: The new email address.
    """
    user = Docs(ctx.conn, ordered=True).get("users", user_id)
    if user is None:
        return f"Error: User with ID '{user_id}' not found."
    put(ctx, "users", user_id, {**user, "email": new_email})
    return f"Email updated successfully.\n  - User ID: {user_id}\n  - New Email: {new_email}"


@tool("read", memo=True)
def get_referrals_by_user(ctx: ToolContext, user_id: str) -> str:
    """Get the referrals a user made.

    Args:
        ctx: the trial's tool context.
        user_id: The referrer's user id.
    """
    return listing(ctx, "referrals", referrer_id=user_id)


@tool("read", memo=True)
def get_credit_card_transactions_by_user(ctx: ToolContext, user_id: str) -> str:
    """Get a user's credit card transactions.

    Args:
        ctx: the trial's tool context.
        user_id: The user's id.
    """
    return listing(ctx, "credit_card_transaction_history", user_id=user_id)


@tool("read", memo=True)
def get_credit_card_accounts_by_user(ctx: ToolContext, user_id: str) -> str:
    """Get a user's credit card accounts (card type, opening date, balance, reward points).

    Args:
        ctx: the trial's tool context.
        user_id: The user's id.
    """
    return listing(ctx, "credit_card_accounts", user_id=user_id)


@tool("write")
def log_verification(ctx: ToolContext, name: str, user_id: str, address: str, email: str, phone_number: str,
                     date_of_birth: str, time_verified: str) -> str:
    """Record that a user's identity was verified (2 of 4 fields confirmed: date of birth, email, phone, address).

    Args:
        ctx: the trial's tool context.
        name: The user's full name.
        user_id: The user's id.
        address: The user's address.
        email: The user's email.
        phone_number: The user's phone number.
        date_of_birth: The user's date of birth (MM/DD/YYYY).
        time_verified: When the user was verified (e.g. "2025-11-14 03:40:00 EST").
    """
    key = f"{user_id}_{time_verified.replace(' ', '_').replace(':', '').replace('-', '')}"
    if Docs(ctx.conn, ordered=True).get("verification_history", key) is not None:
        return "Failed to log verification: Record may already exist."  # τ³'s text has no "Error: " here
    put(ctx, "verification_history", key, {"name": name, "user_id": user_id, "address": address, "email": email,
                                           "phone_number": phone_number, "date_of_birth": date_of_birth,
                                           "time_verified": time_verified})
    return f"Verification logged successfully.\n  - User: {name} (ID: {user_id})\n  - Verified at: {time_verified}"


@tool("write")
def give_discoverable_user_tool(ctx: ToolContext, discoverable_tool_name: str, arguments: str = "{}") -> str:
    """Give the user a tool the knowledge base says the user runs themselves.

    Args:
        ctx: the trial's tool context.
        discoverable_tool_name: The tool's name.
        arguments: The arguments to suggest, as a JSON object in text.
    """
    spec = USER_TOOLS.get(discoverable_tool_name)
    if spec is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    try:
        args = parse_arguments(arguments)
    except ToolError as e:
        return f"Error: {e}"
    for a in args:
        if a not in spec.params:
            return f"Error: Unexpected parameter: {a}"
    put(ctx, "user_discoverable_tools", new_id(f"user_discoverable_tool:{discoverable_tool_name}"),
        {"tool_name": discoverable_tool_name, "status": "GIVEN"})
    description, _ = spec.info(discoverable_tool_name, "user")
    shown = json.dumps(json.loads(arguments or "{}"), indent=2) if args else "(no arguments)"
    return (f"Tool given to user: {discoverable_tool_name}\nDescription: {description}\nArguments: {shown}\n\n"
            f"The user can now execute this action by calling `call_discoverable_user_tool` with "
            f"discoverable_tool_name='{discoverable_tool_name}' and the same arguments.")


@tool("write")
def unlock_discoverable_agent_tool(ctx: ToolContext, agent_tool_name: str) -> str:
    """Unlock an internal tool the knowledge base names; then call it with call_discoverable_agent_tool.

    Args:
        ctx: the trial's tool context.
        agent_tool_name: The tool's name.
    """
    spec = AGENT_TOOLS.get(agent_tool_name)
    if spec is None:
        return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
    put(ctx, "unlocked_agent_tools", agent_tool_name, {"tool_name": agent_tool_name})
    description, card = spec.info(agent_tool_name)
    return (f"Tool unlocked: {agent_tool_name}\nDescription: {description}\n\n{card}\n\nYou can now use this tool by "
            f"calling `call_discoverable_agent_tool` with agent_tool_name='{agent_tool_name}' and the required "
            "arguments.")


@tool("write")
def call_discoverable_agent_tool(ctx: ToolContext, agent_tool_name: str, arguments: str = "{}") -> str:
    """Call an internal tool unlocked before.

    Args:
        ctx: the trial's tool context.
        agent_tool_name: The tool's name.
        arguments: The tool's arguments, as a JSON object in text.
    """
    spec = AGENT_TOOLS.get(agent_tool_name)
    if spec is None:
        return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
    if Docs(ctx.conn, ordered=True).get("unlocked_agent_tools", agent_tool_name) is None:
        return (f"Error: Tool '{agent_tool_name}' has not been unlocked. You must first use "
                "`unlock_discoverable_agent_tool` to unlock this tool before calling it.")
    try:
        args = parse_arguments(arguments)
    except ToolError as e:
        return f"Error: {e}"
    refused = argument_error(spec, agent_tool_name, args)
    if refused is not None:
        return refused
    try:
        out = call(spec, agent_tool_name, ctx, args)
    except TypeMismatch as e:  # τ³ answers its method's TypeError as text and logs nothing (a Crash is an error)
        return f"Error: Invalid arguments: {e}"
    if spec.writes or Docs(ctx.conn, ordered=True).get("read_log_allowlist", agent_tool_name) is not None:
        put(ctx, "agent_discoverable_tools", new_id(f"agent_discoverable_tool:{agent_tool_name}"),
            {"tool_name": agent_tool_name, "status": "CALLED"})
    return out


@tool("read")
def list_discoverable_agent_tools(ctx: ToolContext) -> str:
    """List the internal tools called so far."""
    return f"Your called agent tools:\n{listing(ctx, 'agent_discoverable_tools')}"


AGENT_BASE = [transfer_to_human_agents, get_current_time, get_user_information_by_id, get_user_information_by_name,
              get_user_information_by_email, change_user_email, get_referrals_by_user,
              get_credit_card_transactions_by_user, get_credit_card_accounts_by_user, log_verification,
              give_discoverable_user_tool, unlock_discoverable_agent_tool, call_discoverable_agent_tool,
              list_discoverable_agent_tools]
"""The agent's tools in every retrieval configuration."""


@tool("read")
def KB_search(ctx: ToolContext, query: str) -> str:  # noqa: N802 - τ³'s tool name
    """Search the knowledge base (BM25) for the documents most relevant to a query.

    Args:
        ctx: the trial's tool context.
        query: What to look for.
    """
    return _kb(ctx).bm25(query)


@tool("read")
def grep(ctx: ToolContext, pattern: str) -> str:
    """Search every knowledge-base document for a regular expression; documents ranked by number of matches.

    Args:
        ctx: the trial's tool context.
        pattern: The regular expression (e.g. 'credit.*card', 'fee|charge').
    """
    return _kb(ctx).grep(pattern)


def _kb(ctx: ToolContext) -> Any:
    """The knowledge base of the trial's data set (its folder is kept in the bookkeeping table ``knowledge``)."""
    where = Docs(ctx.conn, ordered=True).get("knowledge", "folder")
    if where is None:
        raise RuntimeError("the trial database has no knowledge folder (populate did not record it)")
    return knowledge_base(str(where["path"]))


SEARCH = {"KB_search": KB_search, "grep": grep}
"""The search tools by name."""


# ------------------------------------------------------------------------------------------------- user
CARD_REWARDS: dict[str, dict[str, float]] = {
    "Bronze Rewards Card": {"default": 1.0},
    "Silver Rewards Card": {"Travel": 4.0, "Software": 4.0, "default": 1.0},
    "Gold Rewards Card": {"default": 2.5},
    "Platinum Rewards Card": {"default": 10.0},
    "Business Bronze Rewards Card": {"default": 1.0},
    "Business Silver Rewards Card": {"Travel": 10.0, "Software": 10.0, "default": 1.0},
    "Green Rewards Card": {"Sustainable": 3.0, "default": 1.0},
    "Business Gold Rewards Card": {"Operations": 2.5, "default": 1.0},
    "Business Platinum Rewards Card": {"Travel": 4.0, "Software": 4.0, "Media": 4.0, "default": 1.5},
    "Silver Zoom Card": {"Transportation": 3.0, "default": 1.0},
    "Diamond Elite Card": {"default": 5.0},
    "EcoCard": {"Green": 5.0, "default": 1.0},
    "Crypto-Cash Back": {"default": 2.0},
}
"""Reward rate (points per USD) of each card by purchase category (τ³'s figures): the cards a purchase may use."""


@tool("write")
def apply_for_credit_card(ctx: ToolContext, card_type: str, customer_name: str, annual_income: float,
                          rho_bank_subscription: bool = False) -> str:
    """Apply for a credit card.

    Args:
        ctx: the trial's tool context.
        card_type: The card (e.g. "Gold Rewards Card").
        customer_name: Your full name.
        annual_income: Your annual income in USD.
        rho_bank_subscription: Whether you have a Rho-Bank+ subscription.
    """
    if card_type not in CARD_TYPES:
        return f"Error: Invalid card_type '{card_type}'. Must be one of: {list(CARD_TYPES)}"
    try:
        income = float(annual_income)
    except (TypeError, ValueError):
        return "Error: Invalid annual_income. Must be a number."
    key = new_id(f"credit_card:{card_type}:{customer_name}:{income}:{rho_bank_subscription}")
    if find(ctx, "credit_card_applications", application_id=key):
        return f"Failed to submit application: Record ID '{key}' may already exist."
    put(ctx, "credit_card_applications", key, {"application_id": key, "card_type": card_type,
                                               "customer_name": customer_name, "annual_income": income,
                                               "rho_bank_subscription": rho_bank_subscription, "status": "PENDING",
                                               "date": TODAY})
    return ("Credit card application submitted:\nYour application has been successfully submitted. You will receive "
            "a decision within 5-7 business days via email.")


CARD_TYPES = ("Bronze Rewards Card", "Business Bronze Rewards Card", "Business Gold Rewards Card",
              "Business Platinum Rewards Card", "Business Silver Rewards Card", "Crypto-Cash Back",
              "Diamond Elite Card", "EcoCard", "Gold Rewards Card", "Green Rewards Card", "Platinum Rewards Card",
              "Silver Rewards Card", "Silver Zoom Card")
"""The cards one can apply for (τ³'s list, in its order)."""


@tool("write")
def submit_referral(ctx: ToolContext, user_id: str, account_type: str) -> str:
    """Refer someone to an account or card.

    Args:
        ctx: the trial's tool context.
        user_id: Your user id (the referrer).
        account_type: The account or card referred.
    """
    key = new_id(f"referral:{user_id}:{account_type}")
    if find(ctx, "referrals", referral_id=key):
        return f"Failed to submit referral: Record ID '{key}' may already exist."
    put(ctx, "referrals", key, {"referral_id": key, "referrer_id": user_id, "referred_account_type": account_type,
                                "referral_status": "NO_PROGRESS", "date": TODAY})
    return (f"Referral request submitted successfully!\n  - Referral ID: {key}\n  - Referrer ID: {user_id}\n"
            f"  - Account Type: {account_type}\n  - Status: NO_PROGRESS\n  - Date: {TODAY}\n\nShare your referral ID "
            "with the person you're referring. They will need to use this when applying for their account.")


@tool("write")
def submit_transaction(ctx: ToolContext, user_id: str, credit_card_type: str, merchant_name: str, amount: float,
                       category: str) -> str:
    """Make a purchase with one of your credit cards.

    Args:
        ctx: the trial's tool context.
        user_id: Your user id.
        credit_card_type: The card used (e.g. "Gold Rewards Card").
        merchant_name: The merchant.
        amount: The amount in USD.
        category: The purchase category.
    """
    rates = CARD_REWARDS.get(credit_card_type)
    if rates is None:
        return f"Error: Unknown credit card type '{credit_card_type}'. Available types: {list(CARD_REWARDS)}"
    amount = float(amount)
    rate = rates.get(category, rates["default"])
    points = int(amount * rate)
    key = f"txn_{new_id(f'transaction:{user_id}:{credit_card_type}:{merchant_name}:{amount:.2f}:{category}', 12)}"
    if find(ctx, "credit_card_transaction_history", transaction_id=key):
        return f"Failed to submit transaction: Record ID '{key}' may already exist."
    put(ctx, "credit_card_transaction_history", key, {
        "transaction_id": key, "user_id": user_id, "credit_card_type": credit_card_type,
        "merchant_name": merchant_name, "transaction_amount": f"${amount:.2f}", "transaction_date": TODAY,
        "category": category, "status": "COMPLETED", "rewards_earned": f"{points} points"})
    return (f"Transaction submitted successfully!\n  - Transaction ID: {key}\n  - User ID: {user_id}\n"
            f"  - Card Type: {credit_card_type}\n  - Merchant: {merchant_name}\n  - Amount: ${amount:.2f}\n"
            f"  - Category: {category}\n  - Date: {TODAY}\n  - Rewards Earned: {points} points ({rate}% cashback "
            "rate)\n")


@tool("write")
def call_discoverable_user_tool(ctx: ToolContext, discoverable_tool_name: str, arguments: str = "{}") -> str:
    """Run a tool the agent gave you.

    Args:
        ctx: the trial's tool context.
        discoverable_tool_name: The tool's name.
        arguments: Its arguments, as a JSON object in text.
    """
    spec = USER_TOOLS.get(discoverable_tool_name)
    if spec is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    try:
        args = parse_arguments(arguments)
    except ToolError as e:
        return f"Error: {e}"
    missing = [p for p in spec.params if p not in args and p not in spec.optional]
    unexpected = [a for a in args if a not in spec.params]
    if missing or unexpected:  # τ³ checks the arguments before whether the tool was given
        return (f"Error: Missing required parameter: {missing[0]}" if missing else
                f"Error: Unexpected parameter: {unexpected[0]}")
    if not find(ctx, "user_discoverable_tools", tool_name=discoverable_tool_name):
        return (f"Error: Tool '{discoverable_tool_name}' has not been given to you by the agent. The agent must first "
                "use `give_discoverable_user_tool` to give this tool to you.")
    # τ³ logs the call before the tool's own checks: a call that then fails is logged too
    put(ctx, "user_discoverable_tool_calls", new_id(f"user_discoverable_tool_call:{discoverable_tool_name}:"
                                                    f"{_sorted_json(args)}"),
        {"tool_name": discoverable_tool_name, "arguments": args, "called_at": TODAY, "status": "CALLED"})
    try:
        return call(spec, discoverable_tool_name, ctx, args)
    except TypeMismatch as e:
        return f"Error: Invalid arguments for tool '{discoverable_tool_name}': {e}"


def _sorted_json(args: Any) -> str:
    import json

    return json.dumps(args, sort_keys=True)


@tool("read")
def list_discoverable_user_tools(ctx: ToolContext) -> str:
    """List the tools the agent gave you."""
    return f"Tools given to you by the agent:\n{listing(ctx, 'user_discoverable_tools')}"


@tool("write")
def request_human_agent_transfer(ctx: ToolContext) -> str:
    """Ask to be transferred to a human agent."""
    number = len(find(ctx, "human_transfer_requests")) + 1
    key = f"transfer_request_{number}"
    put(ctx, "human_transfer_requests", key, {"request_id": key, "request_number": number, "requested_at": TODAY,
                                              "status": "PENDING"})
    return f"Transfer request #{number} submitted.\nThe agent will process your request."


USER_BASE = [apply_for_credit_card, submit_referral, submit_transaction, call_discoverable_user_tool,
             list_discoverable_user_tools, request_human_agent_transfer]
"""The user's tools (a task may allow only some: its ``user_tools``)."""


"""The user's discoverable tools of banking_knowledge: the tools the agent gives the user (see ``discoverable``)."""

from __future__ import annotations

from domains.banking_knowledge.records import TODAY, find, money, new_id, put, record
from domains.banking_knowledge.spec import Discoverable
from domains.banking_knowledge.spec import declare as _tool
from domains.banking_knowledge.spec import dispute_id as _dispute_id
from domains.banking_knowledge.spec import given as _given
from simulator.world.kit import ToolContext, ToolError

__all__ = ["USER_TOOLS"]


@_tool("user_id:string transaction_id:string", "Dispute the cash back of a credit card transaction.")
def _cash_back_dispute(ctx: ToolContext, user_id: str, transaction_id: str) -> str:
    auto = any(key == "dispute_settings" and doc.get("auto_resolve_disputes") for key, doc in find(ctx, "task_config"))
    key = _dispute_id(user_id, transaction_id)
    rec = {"dispute_id": key, "user_id": user_id, "transaction_id": transaction_id, "submitted_at": TODAY,
           "status": "RESOLVED" if auto else "SUBMITTED", **({"resolution": "APPROVED"} if auto else {})}
    head = _given("Cash back dispute submitted successfully. Your case has been queued for review.",
                  "submit_cash_back_dispute_0589", user_id=user_id, transaction_id=transaction_id)
    if find(ctx, "cash_back_disputes", dispute_id=key):
        return head + "Note: Dispute may have already been submitted for this transaction."
    put(ctx, "cash_back_disputes", key, rec)
    status = ("RESOLVED - The dispute has been reviewed and approved. The transaction rewards need to be updated."
              if auto else "SUBMITTED - Your dispute has been queued for review.")
    return head + f"Dispute ID: {key}\nStatus: {status}"


@_tool("user_id:string card_name:string", "Get a referral link for a card.")
def _referral_link(ctx: ToolContext, user_id: str, card_name: str) -> str:
    key = new_id(f"referral_link:{user_id}:{card_name}")
    head = _given("Referral link generated successfully. Share this link with the person you want to refer.",
                  "get_referral_link", user_id=user_id, card_name=card_name)
    if find(ctx, "referrals", referral_id=key):
        return head + "Note: A referral link for this card may have already been generated."
    put(ctx, "referrals", key, {"referral_id": key, "referrer_id": user_id, "referred_account_type": card_name,
                                "referral_status": "NO_PROGRESS", "date": TODAY})
    return head + f"Referral ID: {key}\nReferral link: https://rhobank.com/refer/{key}"


@_tool("credit_card_account_id:string", "Read the last 4 digits printed on a credit card.", writes=False)
def _last4(ctx: ToolContext, credit_card_account_id: str) -> str:
    record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    digits = "".join(c for c in new_id(f"card_last4:{credit_card_account_id}", 64) if c.isdigit())[:4].ljust(4, "0")
    return _given("Card information retrieved successfully.", "get_card_last_4_digits",
                  credit_card_account_id=credit_card_account_id) + f"Last 4 digits of card: {digits}"


@_tool("account_id:string check_amount:number", "Deposit a check into a bank account.")
def _deposit(ctx: ToolContext, account_id: str, check_amount: float) -> str:
    head = _given("Check deposited successfully. Funds will be available according to your account's deposit "
                  "policy.", "deposit_check_3847", account_id=account_id, check_amount=check_amount)
    try:
        amount = float(check_amount)
    except (TypeError, ValueError) as e:
        raise ToolError(f"Invalid check amount '{check_amount}'. Must be a number.") from e
    if amount <= 0:
        raise ToolError("Check amount must be positive.")
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("status") not in ("ACTIVE", "OPEN"):
        raise ToolError(f"Account '{account_id}' is not active.")
    before = money(acc.get("current_holdings", acc.get("balance", 0)))
    balance = before + amount
    put(ctx, "accounts", account_id, {**acc, "current_holdings": f"${balance:.2f}"})
    return head + (f"Check deposit processed!\n  - Account: {account_id}\n  - Check Amount: ${amount:.2f}\n"
                   f"  - Previous Balance: ${before:.2f}\n  - New Balance: ${balance:.2f}")


USER_TOOLS: dict[str, Discoverable] = {
    "submit_cash_back_dispute_0589": _cash_back_dispute,
    "get_referral_link": _referral_link,
    "get_card_last_4_digits": _last4,
    "deposit_check_3847": _deposit,
}
"""The user's discoverable tools by name (τ³'s names)."""

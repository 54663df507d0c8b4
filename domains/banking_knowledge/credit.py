"""banking_knowledge's credit card tools: disputes, replacements, closures, credits, flags, payments, limits.

Our implementation of what τ³ 1.0.1's tools of the same names do (facts of its behaviour, checked against its
recorded answers by ``scripts/tau2-reference``): its checks in order, its answer texts, the records it writes (fields
in τ³'s order) and their deterministic ids. A mistake a tool finds itself is a :class:`ToolError`, answered as
``Error: ...`` text by :func:`.spec.call`.
"""

from __future__ import annotations

from typing import Any

from domains.banking_knowledge.records import TODAY, add, find, money, new_id, put, record
from domains.banking_knowledge.spec import Crash, Discoverable, numeric
from domains.banking_knowledge.spec import declare as _tool
from domains.banking_knowledge.spec import dispute_id as _dispute_id
from domains.banking_knowledge.spec import executed as _executed
from domains.banking_knowledge.spec import found as _found
from domains.banking_knowledge.spec import given as _given
from simulator.world.kit import ToolContext, ToolError

__all__ = ["CREDIT_TOOLS"]


@_tool("transaction_id:string new_rewards_earned:string", "Correct the rewards earned on a credit card transaction.")
def _update_rewards(ctx: ToolContext, transaction_id: str, new_rewards_earned: str) -> str:
    if not transaction_id or not new_rewards_earned:
        raise ToolError("Missing required parameters.")
    txn = record(ctx, "credit_card_transaction_history", transaction_id, "Transaction")
    put(ctx, "credit_card_transaction_history", transaction_id, {**txn, "rewards_earned": new_rewards_earned})
    return _given("Transaction rewards updated successfully.", "update_transaction_rewards_3847",
                  transaction_id=transaction_id, new_rewards_earned=new_rewards_earned) + (
        f"Transaction updated:\n  - Transaction ID: {transaction_id}\n  - New Rewards: {new_rewards_earned}")



@_tool("transaction_id:string card_action:string card_last_4_digits:string full_name:string user_id:string "
       "phone:string email:string address:string contacted_merchant:boolean purchase_date:string "
       "issue_noticed_date:string dispute_reason:string resolution_requested:string "
       "eligible_for_provisional_credit:boolean partial_refund_amount:number",
       "File a dispute of a credit card transaction.", optional="partial_refund_amount")
def _cc_dispute(ctx: ToolContext, **a: Any) -> str:
    if not a["transaction_id"] or not a["user_id"]:
        raise ToolError("Missing required parameters.")
    for field, allowed in CC_DISPUTE_CHOICES.items():
        if a[field] not in allowed:
            raise ToolError(f"Invalid {field}. Must be one of: {list(allowed)}")
    if a["resolution_requested"] == "partial_refund" and a.get("partial_refund_amount") is None:
        raise ToolError("partial_refund_amount is required when resolution_requested is 'partial_refund'.")
    key = _dispute_id(a["user_id"], a["transaction_id"])
    if find(ctx, "transaction_disputes", dispute_id=key):
        raise ToolError("Dispute may have already been filed for this transaction.")
    eligible = a["eligible_for_provisional_credit"]
    fields = ("transaction_id", "user_id", "card_action", "card_last_4_digits", "full_name", "phone", "email",
              "address", "contacted_merchant", "purchase_date", "issue_noticed_date", "dispute_reason",
              "resolution_requested")
    put(ctx, "transaction_disputes", key, {"dispute_id": key, **{f: a[f] for f in fields}, "partial_refund_amount":
        a.get("partial_refund_amount"), "eligible_for_provisional_credit": eligible, "provisional_credit_given":
        eligible, "submitted_at": TODAY, "status": "SUBMITTED"})
    lines = [f"Dispute ID: {key}", f"Transaction: {a['transaction_id']}",
             f"Reason: {a['dispute_reason'].replace('_', ' ').title()}",
             f"Resolution Requested: {a['resolution_requested'].replace('_', ' ').title()}"]
    refund = a.get("partial_refund_amount")
    if refund:
        if not isinstance(refund, (int, float)):  # τ³ fails formatting it, after the dispute is stored
            raise Crash(f"Unknown format code 'f' for object of type '{type(refund).__name__}'")
        lines.append(f"Partial Refund Amount: ${refund:.2f}")
    lines.append("Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days." if eligible
                 else "Provisional Credit: Not eligible at this time.")
    return _executed("Credit card transaction dispute filed successfully. A case has been opened and will be reviewed "
                     "within 10 business days.", "file_credit_card_transaction_dispute_4829", *lines)


CC_DISPUTE_CHOICES = {
    "card_action": ("keep_active", "cancel_and_reissue"),
    "dispute_reason": ("unauthorized_fraudulent_charge", "duplicate_charge", "incorrect_amount",
                       "goods_services_not_received", "goods_services_not_as_described",
                       "canceled_subscription_still_charging", "refund_never_processed"),
    "resolution_requested": ("full_refund", "partial_refund"),
}
"""The values a credit card dispute's fields take (τ³'s lists, in its order)."""



@_tool("credit_card_account_id:string", "Show a credit card's credit limit increase requests.", writes=False)
def _limit_history(ctx: ToolContext, credit_card_account_id: str) -> str:
    return _executed("Credit limit increase history retrieved.", "get_credit_limit_increase_history_4829",
                     f"Credit limit increase history for account {credit_card_account_id}:",
                     _found(ctx, "credit_limit_increase_requests", "No credit limit increase requests found for this "
                            "account.", credit_card_account_id=credit_card_account_id))


@_tool("user_id:string", "Show a user's credit card transaction dispute history.", writes=False)
def _dispute_history(ctx: ToolContext, user_id: str) -> str:
    return _executed("User transaction dispute history retrieved successfully.", "get_user_dispute_history_7291",
                     f"Transaction dispute history for user {user_id}:",
                     _found(ctx, "transaction_disputes", "No transaction disputes found for this user.",
                            user_id=user_id))


@_tool("credit_card_account_id:string user_id:string shipping_address:string reason:string "
       "expedited_shipping:boolean", "Order a replacement credit card.", optional="expedited_shipping")
def _replace_cc(ctx: ToolContext, credit_card_account_id: str, user_id: str, shipping_address: str, reason: str,
                expedited_shipping: bool = False) -> str:
    reasons = ("fraud_suspected", "lost", "stolen", "damaged", "expired", "other")
    if reason not in reasons:
        raise ToolError(f"Invalid reason. Must be one of: {list(reasons)}")
    acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    key = f"ccord_{new_id(f'credit_card_order:{credit_card_account_id}:{user_id}:{reason}', 12)}"
    if find(ctx, "credit_card_orders", order_id=key):
        raise ToolError("Order may have already been placed for this card replacement.")
    put(ctx, "credit_card_orders", key, {"order_id": key, "credit_card_account_id": credit_card_account_id,
                                          "user_id": user_id, "shipping_address": shipping_address, "reason": reason,
                                          "expedited_shipping": expedited_shipping, "order_date": TODAY,
                                          "status": "ORDERED", "old_card_cancelled": True})
    # the old card is cancelled whatever the reason (the new one keeps the account number)
    put(ctx, "credit_card_accounts", credit_card_account_id, {**acc, "status": "CLOSED", "closed_date": TODAY})
    return "\n".join([f"Order ID: {key}", f"Card Account: {credit_card_account_id}",
                      f"Reason: {reason.replace('_', ' ').title()}", f"Shipping Address: {shipping_address}",
                      f"Shipping Method: {'Expedited' if expedited_shipping else 'Standard'}",
                      f"Expected Delivery: {'2-3' if expedited_shipping else '7-10'} business days", "",
                      "The old card has been cancelled for security. The new card will have the same account number "
                      "but a new card number and CVV."])


@_tool("credit_card_account_id:string", "List pending replacement orders of a credit card account.", writes=False)
def _pending_orders(ctx: ToolContext, credit_card_account_id: str) -> str:
    return _executed("Pending replacement orders check completed.", "get_pending_replacement_orders_5765",
                     f"Replacement orders for credit card account {credit_card_account_id}:",
                     _found(ctx, "credit_card_orders", "No pending replacement orders found for this credit card "
                            "account.", credit_card_account_id=credit_card_account_id))


@_tool("credit_card_account_id:string user_id:string closure_reason:string",
       "Log why a customer wants to close a credit card.")
def _log_closure(ctx: ToolContext, credit_card_account_id: str, user_id: str, closure_reason: str) -> str:
    if not credit_card_account_id or not user_id or not closure_reason:
        raise ToolError("Missing required parameters.")
    if closure_reason not in CLOSURE_REASONS:
        raise ToolError(f"Invalid closure_reason. Must be one of: {list(CLOSURE_REASONS)}")
    key = f"clsr_{new_id(f'closure_reason:{credit_card_account_id}:{user_id}', 12)}"
    if not find(ctx, "credit_card_closure_reasons", record_id=key):  # τ³ keeps the first record
        put(ctx, "credit_card_closure_reasons", key, {
            "record_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "closure_reason": closure_reason, "logged_at": TODAY, "status": "LOGGED"})
    return _given("Closure reason logged successfully.", "log_credit_card_closure_reason_4521",
                  credit_card_account_id=credit_card_account_id, user_id=user_id, closure_reason=closure_reason) + (
        f"Closure reason '{closure_reason}' logged for account {credit_card_account_id}.")


CLOSURE_REASONS = ("annual_fee", "not_using_card", "found_better_card", "unhappy_with_rewards",
                   "simplifying_finances", "negative_experience", "other")
"""Why a customer may close a credit card (τ³'s list, in its order)."""


@_tool("credit_card_account_id:string", "Show the closure reasons logged for a credit card account.", writes=False)
def _closure_history(ctx: ToolContext, credit_card_account_id: str) -> str:
    return _executed("Closure reason history retrieved successfully.", "get_closure_reason_history_8293",
                     f"Closure reason history for credit card account {credit_card_account_id}:",
                     _found(ctx, "credit_card_closure_reasons", "No closure reason records found for this credit "
                            "card account.", credit_card_account_id=credit_card_account_id))


@_tool("user_id:string credit_card_account_id:string amount:number reason:string",
       "Apply a statement credit to a credit card account.")
def _statement_credit(ctx: ToolContext, user_id: str, credit_card_account_id: str, amount: float, reason: str) -> str:
    if not user_id or not credit_card_account_id or amount is None or not reason:
        raise ToolError("Missing required parameters (user_id, credit_card_account_id, amount, reason).")
    amount = numeric(amount)
    if amount <= 0:
        raise ToolError("Credit amount must be positive.")
    if reason not in STATEMENT_CREDIT_REASONS:
        raise ToolError(f"Invalid reason. Must be one of: {list(STATEMENT_CREDIT_REASONS)}")
    record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    # τ³ derives the id as a purchase's (see tools.submit_transaction): card "STATEMENT_CREDIT", merchant the reason
    key = f"txn_{new_id(f'transaction:{user_id}:STATEMENT_CREDIT:{reason}:{amount:.2f}:Statement Credit', 12)}"
    if find(ctx, "credit_card_transaction_history", transaction_id=key):
        raise ToolError(f"Failed to apply statement credit. Transaction ID '{key}' may already exist.")
    put(ctx, "credit_card_transaction_history", key, {
        "transaction_id": key, "user_id": user_id, "credit_card_account_id": credit_card_account_id,
        "credit_card_type": "N/A", "merchant_name": "Rho-Bank Statement Credit",
        "transaction_amount": f"-${amount:.2f}", "transaction_date": TODAY, "category": "Statement Credit",
        "status": "COMPLETED", "rewards_earned": "0 points", "credit_reason": reason})
    return _executed("Statement credit applied successfully.", "apply_statement_credit_8472",
                     f"  - Transaction ID: {key}", f"  - User ID: {user_id}", f"  - Account: {credit_card_account_id}",
                     f"  - Credit Amount: ${amount:.2f}", f"  - Reason: {reason.replace('_', ' ').title()}",
                     f"  - Date: {TODAY}")


STATEMENT_CREDIT_REASONS = ("goodwill_adjustment", "promotional_credit", "annual_fee_reversal", "late_fee_reversal",
                            "interest_charge_reversal", "dispute_resolution", "price_match", "retention_offer",
                            "error_correction", "other")
"""Why a statement credit may be given (τ³'s list, in its order)."""




@_tool("credit_card_account_id:string user_id:string", "Close a credit card account.")
def _close_cc(ctx: ToolContext, credit_card_account_id: str, user_id: str) -> str:
    if not credit_card_account_id or not user_id:
        raise ToolError("Missing required parameters (credit_card_account_id, user_id).")
    acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    put(ctx, "credit_card_accounts", credit_card_account_id, {**acc, "status": "CLOSED", "closed_date": TODAY,
                                                              "closed_by": user_id})
    return _given("Credit card account closed successfully.", "close_credit_card_account_7834",
                  credit_card_account_id=credit_card_account_id, user_id=user_id) + (
        f"Account {credit_card_account_id} has been closed.")


@_tool("user_id:string checking_account_id:string credit_card_account_id:string amount:number",
       "Pay a credit card balance from a checking account.")
def _pay_cc(ctx: ToolContext, user_id: str, checking_account_id: str, credit_card_account_id: str,
            amount: float) -> str:
    try:
        amount = float(amount)
    except (TypeError, ValueError) as e:
        raise ToolError("Invalid payment amount. Must be a positive number.") from e
    if amount <= 0:
        raise ToolError("Payment amount must be a positive number.")
    chk = record(ctx, "accounts", checking_account_id, "Checking account")
    if chk.get("user_id") != user_id:
        raise ToolError(f"Checking account '{checking_account_id}' does not belong to user '{user_id}'.")
    cc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    balance, due = money(chk.get("current_holdings")), money(cc.get("current_balance"))
    if amount > balance:
        raise ToolError(f"Insufficient funds in checking account. Available balance: ${balance:.2f}.")
    if amount > due:
        raise ToolError(f"Payment amount (${amount:.2f}) exceeds credit card balance (${due:.2f}). Please specify an "
                        "amount up to the outstanding balance.")
    put(ctx, "accounts", checking_account_id, {**chk, "current_holdings": f"{balance - amount:.2f}"})
    put(ctx, "credit_card_accounts", credit_card_account_id, {**cc, "current_balance": f"${due - amount:.2f}"})
    return (f"Payment processed successfully!\n  - Payment Amount: ${amount:.2f}\n"
            f"  - From Checking Account: {checking_account_id}\n  - To Credit Card Account: {credit_card_account_id}\n"
            f"  - New Checking Balance: ${balance - amount:.2f}\n  - New Credit Card Balance: ${due - amount:.2f}\n"
            "The payment has been applied immediately.")




@_tool("credit_card_account_id:string months:integer", "Show a credit card's payment history.", writes=False)
def _payments(ctx: ToolContext, credit_card_account_id: str, months: float) -> str:
    try:
        count = int(months)
    except (TypeError, ValueError) as e:
        raise ToolError("Invalid months value. Must be a positive integer.") from e
    if count <= 0:
        raise ToolError("months must be a positive integer.")
    payments = [p for _, p in find(ctx, "payment_history", credit_card_account_id=credit_card_account_id)]
    if not payments:
        return f"No payment history found for account '{credit_card_account_id}'."
    # newest first by the date's text (MM/DD/YYYY, as τ³ sorts it), then the last ``months`` payments
    payments = sorted(payments, key=lambda p: p.get("payment_date") or "", reverse=True)[:count]
    on_time = next((i for i, p in enumerate(payments) if p.get("status") != "ON_TIME"), len(payments))
    lines = [f"Payment history for account '{credit_card_account_id}' (last {count} months):",
             f"Consecutive on-time payments: {on_time}"]
    lines += [f"\n  - Payment Date: {p.get('payment_date')}\n    Amount: {p.get('amount')}\n"
              f"    Status: {p.get('status')}" for p in payments]
    return "\n".join(lines)




FLAG_TYPES = ("annual_fee_waived", "promotional_apr", "rewards_bonus", "other")
"""The flags a credit card account may carry (τ³'s list, in its order)."""
FLAG_REASONS = ("retention_offer", "loyalty_benefit", "promotional", "error_correction", "other")
"""Why a flag may be applied (τ³'s list, in its order)."""


@_tool("credit_card_account_id:string user_id:string flag_type:string expiration_date:string reason:string",
       "Apply a flag (fee waiver, promotional APR, rewards bonus) to a credit card account.")
def _flag(ctx: ToolContext, credit_card_account_id: str, user_id: str, flag_type: str, expiration_date: str,
          reason: str) -> str:
    if not (credit_card_account_id and user_id and flag_type and expiration_date and reason):
        raise ToolError("Missing required parameters (credit_card_account_id, user_id, flag_type, expiration_date, "
                        "reason).")
    if flag_type not in FLAG_TYPES:
        raise ToolError(f"Invalid flag_type. Must be one of: {list(FLAG_TYPES)}")
    if reason not in FLAG_REASONS:
        raise ToolError(f"Invalid reason. Must be one of: {list(FLAG_REASONS)}")
    # τ³ looks the account up by its ``account_id`` field, not by its record id
    if not find(ctx, "credit_card_accounts", account_id=credit_card_account_id):
        raise ToolError(f"Credit card account '{credit_card_account_id}' not found.")
    key = f"ccflag_{new_id(f'account_flag:{credit_card_account_id}:{flag_type}:{expiration_date}', 12)}"
    if not add(ctx, "credit_card_account_flags", key, {
            "flag_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "flag_type": flag_type, "effective_date": TODAY, "expiration_date": expiration_date, "reason": reason,
            "applied_at": TODAY, "status": "ACTIVE"}):
        raise ToolError(f"Failed to apply account flag. Flag ID '{key}' may already exist.")
    return (f"Account flag applied successfully!\n  - Flag ID: {key}\n  - Account: {credit_card_account_id}\n"
            f"  - User ID: {user_id}\n  - Flag Type: {_title(flag_type)}\n  - Effective Date: {TODAY}\n"
            f"  - Expiration Date: {expiration_date}\n  - Reason: {_title(reason)}")


def _title(code: str) -> str:
    return code.replace("_", " ").title()


def _request_id(account_id: str, user_id: str, increase: float) -> str:
    """A credit limit request's id: ``cli_`` and 12 hex digits of the account, user and increase (USD, 2 places).

    An approval's increase equal to the pending request's gives the same id, so τ³ keeps the request and drops the
    approval record (its insert finds the id taken); every denial of an account and user shares one id (increase 0).
    """
    return f"cli_{new_id(f'cli_request:{account_id}:{user_id}:{increase:.2f}', 12)}"


def _card_account(ctx: ToolContext, account_id: str, user_id: str | None) -> dict[str, Any]:
    """The credit card account (by record id), checked to belong to ``user_id`` unless None."""
    acc = record(ctx, "credit_card_accounts", account_id, "Credit card account")
    if user_id is not None and acc.get("user_id") != user_id:
        raise ToolError(f"Credit card account '{account_id}' does not belong to user '{user_id}'.")
    return acc


@_tool("credit_card_account_id:string user_id:string requested_increase_amount:integer",
       "Submit a credit limit increase request.")
def _limit_request(ctx: ToolContext, credit_card_account_id: str, user_id: str, requested_increase_amount: Any) -> str:
    if not credit_card_account_id or not user_id or requested_increase_amount is None:
        raise ToolError("Missing required parameters.")
    try:
        amount = float(requested_increase_amount)
    except (TypeError, ValueError) as e:
        raise ToolError("Invalid requested_increase_amount. Must be a whole number.") from e
    if not amount.is_integer():
        raise ToolError("Invalid requested_increase_amount. Must be a whole number of dollars.")
    if amount <= 0:
        raise ToolError("Requested increase amount must be positive.")
    _card_account(ctx, credit_card_account_id, user_id)
    key = _request_id(credit_card_account_id, user_id, amount)
    if not add(ctx, "credit_limit_increase_requests", key, {
            "request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
            "requested_increase_amount": int(amount), "submitted_at": TODAY, "status": "PENDING"}):
        raise ToolError("A similar request may already exist.")
    return _executed("Credit limit increase request submitted successfully.",
                     "submit_credit_limit_increase_request_7392", f"  - Request ID: {key}",
                     f"  - Account: {credit_card_account_id}", f"  - Requested Increase: ${int(amount):,}",
                     "  - Status: PENDING")


def _blocks_increase(ctx: ToolContext, account_id: str, user_id: str, acc: dict[str, Any]) -> bool:
    """Whether an increase cannot be approved (τ³ answers only that it cannot, whichever check fails).

    It cannot with an open credit card dispute of the user, a replacement card on its way, or an account past due,
    delinquent, in collections or closed.
    """
    if any(d.get("status") in ("SUBMITTED", "UNDER_REVIEW", "PENDING")
           for _, d in find(ctx, "transaction_disputes", user_id=user_id)):
        return True
    if any(o.get("status") in ("PENDING", "PROCESSING", "SHIPPED")
           for _, o in find(ctx, "credit_card_orders", credit_card_account_id=account_id)):
        return True
    return str(acc.get("account_status", "")).upper() in ("PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED")


@_tool("credit_card_account_id:string user_id:string new_credit_limit:integer",
       "Approve and apply a credit limit increase.")
def _limit_approve(ctx: ToolContext, credit_card_account_id: str, user_id: str, new_credit_limit: Any) -> str:
    if not credit_card_account_id or not user_id or new_credit_limit is None:
        raise ToolError("Missing required parameters.")
    acc = _card_account(ctx, credit_card_account_id, user_id)
    if _blocks_increase(ctx, credit_card_account_id, user_id, acc):
        raise ToolError("Credit limit increase request cannot be approved at this time.")
    try:
        current = float(str(acc.get("credit_limit", "$0.00")).replace("$", "").replace(",", ""))
    except ValueError:
        current = 0.0
    try:
        new = float(new_credit_limit)
    except (TypeError, ValueError) as e:
        raise ToolError("Invalid new_credit_limit. Must be a number.") from e
    put(ctx, "credit_card_accounts", credit_card_account_id, {**acc, "credit_limit": f"${new:.2f}"})
    key = _request_id(credit_card_account_id, user_id, new - current)
    add(ctx, "credit_limit_increase_requests", key, {
        "request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
        "previous_limit": f"${current:.2f}", "new_limit": f"${new:.2f}", "increase_amount": f"${new - current:.2f}",
        "decision_date": TODAY, "status": "APPROVED"})
    return (f"Credit limit increase approved!\n  - Account: {credit_card_account_id}\n"
            f"  - Previous Limit: ${current:.2f}\n  - New Limit: ${new:.2f}\n  - Increase: ${new - current:.2f}\n"
            f"  - Effective Date: {TODAY}\nThe customer will receive a confirmation email.")


DENIAL_REASONS = ("insufficient_account_age", "cooldown_period_active", "pending_disputes", "pending_replacement_card",
                  "past_due_balance", "high_utilization", "insufficient_payment_history",
                  "requested_amount_exceeds_limit", "other")
"""Why a credit limit increase may be denied (τ³'s list, in its order)."""


@_tool("credit_card_account_id:string user_id:string denial_reason:string", "Deny a credit limit increase request.")
def _limit_deny(ctx: ToolContext, credit_card_account_id: str, user_id: str, denial_reason: str) -> str:
    if not credit_card_account_id or not user_id or not denial_reason:
        raise ToolError("Missing required parameters.")
    if denial_reason not in DENIAL_REASONS:
        raise ToolError(f"Invalid denial_reason. Must be one of: {', '.join(DENIAL_REASONS)}")
    _card_account(ctx, credit_card_account_id, None)  # τ³ does not check the owner here
    key = _request_id(credit_card_account_id, user_id, 0.0)
    add(ctx, "credit_limit_increase_requests", key, {
        "request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
        "denial_reason": denial_reason, "decision_date": TODAY, "status": "DENIED"})
    return (f"Credit limit increase request denied.\n  - Account: {credit_card_account_id}\n"
            f"  - Denial Reason: {denial_reason}\n  - Date: {TODAY}\n"
            "The customer will receive a notification explaining the denial.")


CREDIT_TOOLS: dict[str, Discoverable] = {
    "update_transaction_rewards_3847": _update_rewards,
    "file_credit_card_transaction_dispute_4829": _cc_dispute,
    "order_replacement_credit_card_7291": _replace_cc,
    "get_user_dispute_history_7291": _dispute_history,
    "get_pending_replacement_orders_5765": _pending_orders,
    "log_credit_card_closure_reason_4521": _log_closure,
    "get_closure_reason_history_8293": _closure_history,
    "apply_statement_credit_8472": _statement_credit,
    "apply_credit_card_account_flag_6147": _flag,
    "close_credit_card_account_7834": _close_cc,
    "pay_credit_card_from_checking_9182": _pay_cc,
    "submit_credit_limit_increase_request_7392": _limit_request,
    "get_credit_limit_increase_history_4829": _limit_history,
    "get_payment_history_6183": _payments,
    "approve_credit_limit_increase_5847": _limit_approve,
    "deny_credit_limit_increase_5848": _limit_deny,
}
"""The agent's credit card tools by τ³'s names."""

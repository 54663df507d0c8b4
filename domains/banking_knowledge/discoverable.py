"""The discoverable tools of banking_knowledge: tools the knowledge base names, unlocked before use.

The agent unlocks an agent tool (``unlock_discoverable_agent_tool``) and then calls it through
``call_discoverable_agent_tool(agent_tool_name, arguments)`` (arguments: a JSON object as text); it gives a user tool
to the user (``give_discoverable_user_tool``), who calls it through ``call_discoverable_user_tool``. Each tool here is
a :class:`Discoverable`: its parameters (names and JSON types, as τ³ declares them), whether it changes state, a
one-line description (ours), and its effect on the records — our implementation of what τ³'s tool does to its
database (which table, which record, which fields and statuses); result texts are ours, shorter than τ³'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from domains.banking_knowledge.records import TODAY, find, listing, money, new_id, put, record
from simulator.world.kit import Docs, ToolContext, ToolError

__all__ = ["AGENT_TOOLS", "USER_TOOLS", "Discoverable", "call"]

Handler = Callable[..., str]


@dataclass(frozen=True)
class Discoverable:
    """One discoverable tool.

    Attributes:
        params: parameter name -> JSON type (``string``, ``number``, ``integer``, ``boolean``), in order.
        optional: the parameters that may be left out.
        writes: the tool changes records (its calls are logged, see the module docstring of ``tools``).
        description: what it does.
        run: ``run(ctx, **arguments) -> text``; raises :class:`ToolError` on a recoverable mistake.
    """

    params: Mapping[str, str]
    optional: frozenset[str]
    writes: bool
    description: str
    run: Handler

    def info(self, name: str) -> str:
        """The tool as shown when unlocked or given: description and parameters."""
        params = ", ".join(f"{p} ({t}{', optional' if p in self.optional else ''})" for p, t in self.params.items())
        return f"Tool: {name}\nDescription: {self.description}\nParameters: {params or 'none'}"


def call(tool: Discoverable, name: str, ctx: ToolContext, arguments: Mapping[str, Any]) -> str:
    """Run a discoverable tool with checked arguments.

    Returns:
        The tool's answer; a mistake the tool itself finds (an unknown record, a wrong status) is answered as
        ``Error: ...`` text, as τ³'s tools answer (the call still counts as made: see ``tools``).

    Raises:
        ToolError: a missing or unexpected argument (τ³ refuses such a call before running the tool).
    """
    unexpected = [a for a in arguments if a not in tool.params]
    if unexpected:
        raise ToolError(f"Invalid arguments for {name}: unexpected parameter {unexpected[0]!r}")
    missing = [p for p in tool.params if p not in arguments and p not in tool.optional]
    if missing:
        raise ToolError(f"Invalid arguments for {name}: missing parameter {missing[0]!r}")
    try:
        return tool.run(ctx, **arguments)
    except ToolError as e:
        return f"Error: {e}"


def _done(title: str, **fields: Any) -> str:
    return "\n".join([title, *(f"  - {k.replace('_', ' ').capitalize()}: {v}" for k, v in fields.items())])


def _tool(params: str, description: str, *, writes: bool = True, optional: str = ""
          ) -> Callable[[Handler], Discoverable]:
    """Declare a tool: ``params`` as ``"name:type name:type"``."""
    spec = dict(p.split(":") for p in params.split())

    def deco(fn: Handler) -> Discoverable:
        return Discoverable(spec, frozenset(optional.split()), writes, description, fn)

    return deco


# ------------------------------------------------------------------------------------------------- reads
@_tool("user_id:string", "List a user's bank accounts and credit card accounts.", writes=False)
def _all_accounts(ctx: ToolContext, user_id: str) -> str:
    return listing(ctx, "accounts", user_id=user_id) + "\n\n" + listing(ctx, "credit_card_accounts", user_id=user_id)


@_tool("account_id:string", "List the transactions of a bank account, newest first.", writes=False)
def _bank_transactions(ctx: ToolContext, account_id: str) -> str:
    record(ctx, "accounts", account_id, "Account")
    return listing(ctx, "bank_account_transaction_history", account_id=account_id)


@_tool("account_id:string", "List the debit cards of a checking account.", writes=False)
def _debit_cards(ctx: ToolContext, account_id: str) -> str:
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("class") not in (None, "checking") and "checking" not in str(acc.get("account_type", "checking")):
        raise ToolError(f"Account '{account_id}' is not a checking account.")
    return listing(ctx, "debit_cards", account_id=account_id)


def _dispute_id(user_id: str, transaction_id: str) -> str:
    return "dsp_" + new_id(f"dispute:{user_id}:{transaction_id}", 12)


EARLY_CLOSURE: dict[tuple[str, str], tuple[float, int]] = {
    **{("checking", level): (fee, days) for level, fee, days in (
        ("Light Blue Account", 15, 30), ("Light Green Account", 15, 30), ("Green Fee-Free Account", 15, 30),
        ("Blue Account", 25, 60), ("Green Account", 25, 60), ("Evergreen Account", 50, 90),
        ("Bluest Account", 100, 180))},
    **{("savings", level): (fee, days) for level, fee, days in (
        ("Bronze Account", 20, 60), ("Silver Account", 35, 90), ("Silver Plus Account", 35, 90),
        ("Gold Account", 75, 180), ("Gold Plus Account", 75, 180), ("Gold Years Account", 75, 180),
        ("Platinum Account", 150, 270), ("Platinum Plus Account", 150, 270), ("Diamond Elite Account", 150, 270))},
}
"""(account class, level) -> (early closure fee in USD, window in days since opening), τ³'s figures."""


def _age_days(opened: str) -> int:
    """Days from ``MM/DD/YYYY`` to the scenario's date; a date that does not parse counts as old."""
    from datetime import datetime

    try:
        return (datetime(2025, 11, 14) - datetime.strptime(opened, "%m/%d/%Y")).days
    except ValueError:
        return 10**6


def _reader(table: str, field: str, description: str) -> Discoverable:
    return Discoverable({field: "string"}, frozenset(), False, description,
                        lambda ctx, **a: listing(ctx, table, **{field: a[field]}))


# ------------------------------------------------------------------------------------------------- writes
@_tool("transaction_id:string new_rewards_earned:string", "Correct the rewards earned on a credit card transaction.")
def _update_rewards(ctx: ToolContext, transaction_id: str, new_rewards_earned: str) -> str:
    txn = record(ctx, "credit_card_transaction_history", transaction_id, "Transaction")
    put(ctx, "credit_card_transaction_history", transaction_id, {**txn, "rewards_earned": new_rewards_earned})
    return _done("Transaction rewards updated.", transaction_id=transaction_id, new_rewards=new_rewards_earned)


def _transfer(message: str) -> Discoverable:
    return Discoverable({}, frozenset(), False, "A step of a special transfer protocol.", lambda ctx: message)


@_tool("transaction_id:string card_action:string card_last_4_digits:string full_name:string user_id:string "
       "phone:string email:string address:string contacted_merchant:boolean purchase_date:string "
       "issue_noticed_date:string dispute_reason:string resolution_requested:string "
       "eligible_for_provisional_credit:boolean partial_refund_amount:number",
       "File a dispute of a credit card transaction.", optional="partial_refund_amount")
def _cc_dispute(ctx: ToolContext, **a: Any) -> str:
    if a.get("resolution_requested") == "partial_refund" and a.get("partial_refund_amount") is None:
        raise ToolError("partial_refund_amount is required when resolution_requested is 'partial_refund'.")
    key = _dispute_id(a["user_id"], a["transaction_id"])
    if find(ctx, "transaction_disputes", dispute_id=key):
        raise ToolError("Dispute may have already been filed for this transaction.")
    put(ctx, "transaction_disputes", key, {"dispute_id": key, **a, "partial_refund_amount": a.get(
        "partial_refund_amount"), "provisional_credit_given": a["eligible_for_provisional_credit"],
        "submitted_at": TODAY, "status": "SUBMITTED"})
    return _done("Credit card dispute filed.", dispute_id=key, status="SUBMITTED")


@_tool("transaction_id:string account_id:string card_id:string user_id:string dispute_category:string "
       "transaction_date:string discovery_date:string disputed_amount:number transaction_type:string "
       "card_in_possession:boolean pin_compromised:string contacted_merchant:boolean police_report_filed:boolean "
       "written_statement_provided:boolean provisional_credit_eligible:boolean "
       "customer_max_liability_amount:number card_action:string", "File a dispute of a debit card transaction.")
def _debit_dispute(ctx: ToolContext, **a: Any) -> str:
    if money(a["disputed_amount"]) <= 0:
        raise ToolError("disputed_amount must be a positive number.")
    key = _dispute_id(a["user_id"], a["transaction_id"])
    if find(ctx, "debit_card_disputes", dispute_id=key):
        raise ToolError("Dispute may have already been filed for this transaction.")
    eligible = a["provisional_credit_eligible"]
    put(ctx, "debit_card_disputes", key, {"dispute_id": key, **a, "provisional_credit_issued": eligible,
                                          "provisional_credit_amount": a["disputed_amount"] if eligible else None,
                                          "submitted_at": TODAY, "status": "OPEN"})
    return _done("Debit card dispute filed.", dispute_id=key, status="OPEN")


@_tool("user_id:string", "Show the status of a user's debit card disputes.", writes=False)
def _debit_dispute_status(ctx: ToolContext, user_id: str) -> str:
    return listing(ctx, "debit_card_disputes", user_id=user_id)


@_tool("user_id:string", "Show a user's transaction dispute history.", writes=False)
def _dispute_history(ctx: ToolContext, user_id: str) -> str:
    return listing(ctx, "transaction_disputes", user_id=user_id) + "\n\n" + listing(
        ctx, "debit_card_disputes", user_id=user_id)


@_tool("credit_card_account_id:string user_id:string shipping_address:string reason:string "
       "expedited_shipping:boolean", "Order a replacement credit card.", optional="expedited_shipping")
def _replace_cc(ctx: ToolContext, credit_card_account_id: str, user_id: str, shipping_address: str, reason: str,
                expedited_shipping: bool = False) -> str:
    reasons = ("fraud_suspected", "lost", "stolen", "damaged", "expired", "other")
    if reason not in reasons:
        raise ToolError(f"Invalid reason. Must be one of: {', '.join(reasons)}")
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
    return _done("Replacement card ordered; the old card is cancelled.", order_id=key, status="ORDERED",
                 delivery="2-3 business days" if expedited_shipping else "7-10 business days")


@_tool("credit_card_account_id:string", "List pending replacement orders of a credit card account.", writes=False)
def _pending_orders(ctx: ToolContext, credit_card_account_id: str) -> str:
    return listing(ctx, "credit_card_orders", credit_card_account_id=credit_card_account_id)


@_tool("credit_card_account_id:string user_id:string closure_reason:string",
       "Log why a customer wants to close a credit card.")
def _log_closure(ctx: ToolContext, credit_card_account_id: str, user_id: str, closure_reason: str) -> str:
    key = f"clsr_{new_id(f'closure_reason:{credit_card_account_id}:{user_id}', 12)}"
    put(ctx, "credit_card_closure_reasons", key, {"record_id": key, "credit_card_account_id": credit_card_account_id,
                                                   "user_id": user_id, "closure_reason": closure_reason,
                                                   "logged_at": TODAY, "status": "LOGGED"})
    return _done("Closure reason logged.", record_id=key)


@_tool("user_id:string credit_card_account_id:string amount:number reason:string",
       "Apply a statement credit to a credit card account.")
def _statement_credit(ctx: ToolContext, user_id: str, credit_card_account_id: str, amount: float, reason: str) -> str:
    if money(amount) <= 0:
        raise ToolError("Credit amount must be positive.")
    acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    key = f"txn_{new_id(f'statement_credit:{user_id}:{credit_card_account_id}:{amount}:{reason}', 12)}"
    put(ctx, "credit_card_transaction_history", key, {
        "transaction_id": key, "user_id": user_id, "credit_card_type": acc.get("card_type"),
        "merchant_name": "Statement Credit", "transaction_amount": f"-${money(amount):.2f}",
        "transaction_date": TODAY, "category": reason, "status": "COMPLETED", "rewards_earned": "0 points"})
    return _done("Statement credit applied.", transaction_id=key, amount=f"${money(amount):.2f}")


@_tool("credit_card_account_id:string user_id:string flag_type:string expiration_date:string reason:string",
       "Put a flag on a credit card account.")
def _flag(ctx: ToolContext, credit_card_account_id: str, user_id: str, flag_type: str, expiration_date: str,
          reason: str) -> str:
    record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    key = f"ccflag_{new_id(f'account_flag:{credit_card_account_id}:{flag_type}', 12)}"
    put(ctx, "credit_card_account_flags", key, {"flag_id": key, "credit_card_account_id": credit_card_account_id,
                                                 "user_id": user_id, "flag_type": flag_type,
                                                 "expiration_date": expiration_date, "reason": reason,
                                                 "created_date": TODAY, "status": "ACTIVE"})
    return _done("Account flag applied.", flag_id=key)


@_tool("credit_card_account_id:string user_id:string", "Close a credit card account.")
def _close_cc(ctx: ToolContext, credit_card_account_id: str, user_id: str) -> str:
    acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    put(ctx, "credit_card_accounts", credit_card_account_id, {**acc, "status": "CLOSED", "closed_date": TODAY})
    return _done("Credit card account closed.", account_id=credit_card_account_id, status="CLOSED")


@_tool("user_id:string checking_account_id:string credit_card_account_id:string amount:number",
       "Pay a credit card balance from a checking account.")
def _pay_cc(ctx: ToolContext, user_id: str, checking_account_id: str, credit_card_account_id: str,
            amount: float) -> str:
    amount = money(amount)
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
        raise ToolError(f"Payment amount (${amount:.2f}) exceeds credit card balance (${due:.2f}).")
    put(ctx, "accounts", checking_account_id, {**chk, "current_holdings": f"{balance - amount:.2f}"})
    put(ctx, "credit_card_accounts", credit_card_account_id, {**cc, "current_balance": f"${due - amount:.2f}"})
    return _done("Payment made.", amount=f"${amount:.2f}", new_card_balance=f"${due - amount:.2f}")


def _limit_request(status: str, extra: str, description: str) -> Discoverable:
    def run(ctx: ToolContext, credit_card_account_id: str, user_id: str, **a: Any) -> str:
        acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
        if acc.get("user_id") != user_id:
            raise ToolError(f"Credit card account '{credit_card_account_id}' does not belong to user '{user_id}'.")
        key = f"cli_{new_id(f'cli:{credit_card_account_id}:{user_id}:{status}', 12)}"
        put(ctx, "credit_limit_increase_requests", key, {"request_id": key, "credit_card_account_id":
                                                          credit_card_account_id, "user_id": user_id, **a,
                                                          "request_date": TODAY, "status": status})
        if status == "APPROVED":
            put(ctx, "credit_card_accounts", credit_card_account_id, {**acc, "credit_limit": a["new_credit_limit"]})
        return _done(f"Credit limit increase request {status.lower()}.", request_id=key)

    return Discoverable({"credit_card_account_id": "string", "user_id": "string", extra.split(":")[0]:
                         extra.split(":")[1]}, frozenset(), True, description, run)


@_tool("credit_card_account_id:string months:integer", "Show a credit card's payment history.", writes=False)
def _payments(ctx: ToolContext, credit_card_account_id: str, months: float) -> str:
    if money(months) <= 0:
        raise ToolError("months must be a positive integer.")
    return listing(ctx, "payment_history", credit_card_account_id=credit_card_account_id)


@_tool("user_id:string account_type:string account_class:string", "Open a bank account for a user.")
def _open_account(ctx: ToolContext, user_id: str, account_type: str, account_class: str) -> str:
    if account_type not in ("checking", "savings", "business_checking", "business_savings"):
        raise ToolError("Invalid account_type. Must be one of: checking, savings, business_checking, "
                        "business_savings")
    _check_eligible(ctx, user_id, account_type)
    key = new_id(f"account:{user_id}:{account_type}:{account_class}")
    if find(ctx, "accounts", account_id=key):
        raise ToolError(f"Account ID '{key}' may already exist.")
    put(ctx, "accounts", key, {"account_id": key, "user_id": user_id, "account_type": account_type,
                               "account_class": account_class, "current_holdings": "0.00", "status": "OPEN",
                               "date_opened": TODAY})
    return _done("Bank account opened.", account_id=key, status="OPEN", initial_balance="$0.00")


def _check_eligible(ctx: ToolContext, user_id: str, account_type: str) -> None:
    """Check τ³'s eligibility rules for opening an account.

    Savings need an open personal checking account 14+ days old; business checking an open personal checking
    account and no closed account; business savings an open business checking account 30+ days old and no negative
    balance.

    Raises:
        ToolError: ``Account eligibility requirements not met.``
    """
    accounts = [a for _, a in find(ctx, "accounts", user_id=user_id)]

    def kind(a: dict[str, Any]) -> str:
        return str(a.get("account_type", a.get("class", "")))

    def live(a: dict[str, Any]) -> bool:
        return a.get("status") in ("OPEN", "ACTIVE")

    def age(a: dict[str, Any]) -> int:
        days = _age_days(str(a.get("date_opened", "")))
        return 0 if days == 10**6 else days  # a date that does not parse counts as new here, as in τ³

    personal = [a for a in accounts if kind(a) in ("checking", "personal_checking") and live(a)]
    ok = {
        "savings": any(age(a) >= 14 for a in personal),
        "business_checking": bool(personal) and not any(a.get("status") == "CLOSED" for a in accounts),
        "business_savings": all(money(a.get("current_holdings", a.get("balance", 0))) >= 0 for a in accounts)
        and any(kind(a) == "business_checking" and live(a) and age(a) >= 30 for a in accounts),
    }.get(account_type, True)
    if not ok:
        raise ToolError("Account eligibility requirements not met.")


@_tool("account_id:string reason:string waive_early_closure_fee:boolean", "Close a bank account.",
       optional="reason waive_early_closure_fee")
def _close_account(ctx: ToolContext, account_id: str, reason: str = "Customer requested closure",
                   waive_early_closure_fee: bool = False) -> str:
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("status") == "CLOSED":
        raise ToolError(f"Account '{account_id}' is already closed.")
    balance, fee = money(acc.get("current_holdings")), 0.0
    rule = EARLY_CLOSURE.get((str(acc.get("class")), str(acc.get("level"))))
    if rule is not None and not waive_early_closure_fee and _age_days(str(acc.get("date_opened", ""))) < rule[1]:
        if balance < rule[0]:
            raise ToolError("Account unable to be closed.")
        fee = rule[0]
    if abs(balance - fee) >= 0.005:
        raise ToolError(f"Account balance must be $0.00 before closing. Current balance: ${balance:.2f}")
    put(ctx, "accounts", account_id, {**acc, "status": "CLOSED", "date_closed": TODAY, "closure_reason": reason,
                                      "early_closure_fee_waived": waive_early_closure_fee})
    return _done("Bank account closed.", account_id=account_id, status="CLOSED")


@_tool("source_account_id:string destination_account_id:string amount:number", "Move money between bank accounts.")
def _move(ctx: ToolContext, source_account_id: str, destination_account_id: str, amount: float) -> str:
    amount = money(amount)
    if amount <= 0:
        raise ToolError("Transfer amount must be positive.")
    if source_account_id == destination_account_id:
        raise ToolError("Source and destination accounts cannot be the same.")
    src = record(ctx, "accounts", source_account_id, "Source account")
    dst = record(ctx, "accounts", destination_account_id, "Destination account")
    for name, acc in (("Source", src), ("Destination", dst)):
        if acc.get("status") not in ("ACTIVE", "OPEN"):
            raise ToolError(f"{name} account '{acc.get('account_id')}' is not active.")
    if money(src.get("current_holdings")) < amount:
        raise ToolError("Insufficient funds in the source account.")
    put(ctx, "accounts", source_account_id, {**src, "current_holdings":
                                             f"${money(src.get('current_holdings')) - amount:.2f}"})
    put(ctx, "accounts", destination_account_id, {**dst, "current_holdings":
                                                  f"${money(dst.get('current_holdings')) + amount:.2f}"})
    return _done("Funds transferred.", amount=f"${amount:.2f}")


def _credit(kind: str, types: tuple[str, ...]) -> Discoverable:
    def run(ctx: ToolContext, account_id: str, amount: float, credit_type: str) -> str:
        amount = money(amount)
        if amount <= 0:
            raise ToolError("Credit amount must be positive.")
        if credit_type not in types:
            raise ToolError(f"Invalid credit_type. Must be one of: {', '.join(types)}")
        acc = record(ctx, "accounts", account_id, "Account")
        if acc.get("class") != kind:
            raise ToolError(f"Account '{account_id}' is not a {kind} account.")
        if acc.get("status") not in ("ACTIVE", "OPEN"):
            raise ToolError(f"Account '{account_id}' is not active.")
        balance = money(acc.get("current_holdings")) + amount
        put(ctx, "accounts", account_id, {**acc, "current_holdings": f"{'$' if kind == 'checking' else ''}"
                                                                     f"{balance:.2f}"})
        key = f"btxn_{new_id(f'bank_txn:{account_id}:{credit_type}:{amount}', 12)}"
        put(ctx, "bank_account_transaction_history", key, {
            "transaction_id": key, "account_id": account_id, "date": TODAY,
            "description": credit_type.replace("_", " ").upper(), "amount": amount, "type": "credit",
            "status": "posted"})
        return _done("Credit applied.", account_id=account_id, amount=f"${amount:.2f}", new_balance=f"${balance:.2f}")

    return Discoverable({"account_id": "string", "amount": "number", "credit_type": "string"}, frozenset(), True,
                        f"Credit a {kind} account ({', '.join(types)}).", run)


@_tool("account_id:string user_id:string expected_apy:number actual_apy:number amount_difference:number",
       "Report a difference between the expected and the paid interest of an account.")
def _interest_report(ctx: ToolContext, account_id: str, user_id: str, **a: Any) -> str:
    record(ctx, "accounts", account_id, "Account")
    record(ctx, "users", user_id, "User")
    key = f"idr_{new_id(f'interest_report:{account_id}:{user_id}', 12)}"
    put(ctx, "interest_discrepancy_reports", key, {"report_id": key, "account_id": account_id, "user_id": user_id,
                                                   **a, "report_date": TODAY, "status": "PENDING_REVIEW"})
    return _done("Interest discrepancy reported.", report_id=key, status="PENDING_REVIEW")


@_tool("account_id:string user_id:string delivery_option:string delivery_fee:number card_design:string "
       "design_fee:number shipping_address:string excess_replacement_fee:number", "Order a debit card.",
       optional="excess_replacement_fee")
def _order_debit(ctx: ToolContext, account_id: str, user_id: str, delivery_option: str, delivery_fee: float,
                 card_design: str, design_fee: float, shipping_address: str,
                 excess_replacement_fee: float | None = None) -> str:
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("user_id") != user_id:
        raise ToolError(f"Account '{account_id}' does not belong to user '{user_id}'.")
    if acc.get("status") != "OPEN":
        raise ToolError(f"Account must be OPEN. Account '{account_id}' has status: {acc.get('status')}")
    if find(ctx, "debit_cards", account_id=account_id, status="ACTIVE"):
        raise ToolError(f"Account '{account_id}' already has an active debit card.")
    fees = money(delivery_fee) + money(design_fee) + money(excess_replacement_fee)
    balance = money(acc.get("current_holdings"))
    if balance - fees < 0:
        raise ToolError(f"Insufficient funds for fees. Total fees: ${fees:.2f}.")
    order = f"dcord_{new_id(f'debit_order:{account_id}:{user_id}:{delivery_option}', 12)}"
    put(ctx, "debit_card_orders", order, {"order_id": order, "account_id": account_id, "user_id": user_id,
                                          "delivery_option": delivery_option, "card_design": card_design,
                                          "total_fee": fees, "shipping_address": shipping_address,
                                          "order_date": TODAY, "status": "PENDING"})
    if fees:
        put(ctx, "accounts", account_id, {**acc, "current_holdings": f"{balance - fees:.2f}"})
    card = f"dbc_{new_id(f'debit_card:{account_id}:{user_id}:{TODAY}', 12)}"
    user = record(ctx, "users", user_id, "User")
    existing = [c for _, c in find(ctx, "debit_cards", account_id=account_id)]
    closed = next((c for c in existing if c.get("status") == "CLOSED"), None)
    reason = "new_account" if not existing else "first_card"
    if closed is not None and closed.get("closure_reason") in ("lost", "stolen", "fraud", "fraud_suspected"):
        reason = "fraud" if closed["closure_reason"] == "fraud_suspected" else str(closed["closure_reason"])
    put(ctx, "debit_cards", card, {"card_id": card, "account_id": account_id, "user_id": user_id,
                                   "cardholder_name": str(user.get("name", "CARDHOLDER")).upper(),
                                   "last_4_digits": _digits(new_id(f"card_details:{card}:last4", 8), 4),
                                   "cvv": _digits(new_id(f"card_details:{card}:cvv", 6), 3), "status": "PENDING",
                                   "issue_date": TODAY, "expiration_date": "11/30/2029", "card_design": card_design,
                                   "issue_reason": reason})
    return _done("Debit card ordered.", order_id=order, card_id=card, total_fees=f"${fees:.2f}")


def _digits(hex_text: str, n: int) -> str:
    """The first ``n`` decimal digits of a hex string, zero-padded on the left (τ³'s card number and CVV rule)."""
    return "".join(c for c in hex_text if c.isdigit())[:n].zfill(n)


CLOSE_REASONS = ("lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing")
"""Why a debit card may be closed (τ³'s list)."""


def _card_status(to: str, allowed: tuple[str, ...], stamp: str, description: str, extra: str = "") -> Discoverable:
    def run(ctx: ToolContext, card_id: str, **a: Any) -> str:
        card = record(ctx, "debit_cards", card_id, "Debit card")
        if "reason" in a and a["reason"] not in CLOSE_REASONS:
            raise ToolError(f"Invalid reason. Must be one of: {', '.join(CLOSE_REASONS)}")
        if card.get("status") == to:
            raise ToolError(f"Debit card '{card_id}' is already {to.lower()}.")
        if card.get("status") not in allowed:
            raise ToolError(f"Debit card '{card_id}' cannot be changed to {to}. Current status: "
                            f"{card.get('status')}.")
        linked = Docs(ctx.conn).get("accounts", str(card.get("account_id")))
        if to == "ACTIVE" and linked is not None and linked.get("status") != "OPEN":
            raise ToolError(f"The linked checking account '{card.get('account_id')}' is no longer open.")
        new = {**card, "status": to, stamp: TODAY}
        if "reason" in a:
            new["closure_reason"] = a["reason"]
        if to == "ACTIVE" and "last_4_digits" in a:  # activation: the account's other active card is retired
            if str(card.get("last_4_digits")) != str(a["last_4_digits"]):
                raise ToolError("Card verification failed. The last 4 digits do not match our records.")
            for other_id, other in find(ctx, "debit_cards", account_id=card.get("account_id"), status="ACTIVE"):
                if other_id != card_id:
                    put(ctx, "debit_cards", other_id, {**other, "status": "DEACTIVATED", "deactivated_date": TODAY})
        put(ctx, "debit_cards", card_id, new)
        return _done(f"Debit card {to.lower()}.", card_id=card_id, status=to)

    params = {"card_id": "string", **({p.split(":")[0]: p.split(":")[1] for p in extra.split()})}
    return Discoverable(params, frozenset(), True, description, run)


@_tool("card_id:string reason:string", "Clear a fraud alert or velocity block on a debit card.")
def _clear_alert(ctx: ToolContext, card_id: str, reason: str) -> str:
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if reason == "velocity_clear":
        if not card.get("velocity_blocked"):
            raise ToolError(f"Debit card '{card_id}' does not have an active velocity block.")
        put(ctx, "debit_cards", card_id, {**card, "velocity_blocked": False, "velocity_cleared_date": TODAY})
    else:
        if not card.get("fraud_alert_active"):
            raise ToolError(f"Debit card '{card_id}' does not have an active fraud alert.")
        put(ctx, "debit_cards", card_id, {**card, "fraud_alert_active": False, "alert_source": None,
                                          "fraud_alert_cleared_date": TODAY})
    return _done("Debit card alert cleared.", card_id=card_id)


@_tool("card_id:string last_4_digits:string new_pin:string", "Reset a debit card's PIN.")
def _reset_pin(ctx: ToolContext, card_id: str, last_4_digits: str, new_pin: str) -> str:
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if str(card.get("last_4_digits")) != str(last_4_digits):
        raise ToolError("Card verification failed. The last 4 digits do not match our records.")
    if not (len(str(new_pin)) == 4 and str(new_pin).isdigit()):
        raise ToolError("PIN must be exactly 4 digits.")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Cannot reset PIN. Card status is {card.get('status')}.")
    put(ctx, "debit_cards", card_id, {**card, "pin_last_changed": TODAY, "pin_locked": False,
                                      "pin_attempts_remaining": 3})
    return _done("Debit card PIN reset.", card_id=card_id)


@_tool("card_id:string limit_type:string new_limit:integer", "Raise a debit card's ATM or purchase limit for now.")
def _raise_limit(ctx: ToolContext, card_id: str, limit_type: str, new_limit: float) -> str:
    if limit_type not in ("atm", "purchase"):
        raise ToolError(f"Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'.")
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is not active.")
    field = f"daily_{limit_type}_limit"
    put(ctx, "debit_cards", card_id, {**card, field: int(money(new_limit)), f"temporary_{limit_type}_limit_increase":
                                      True, f"original_{limit_type}_limit": card.get(field),
                                      f"temporary_{limit_type}_limit_expires": TODAY})
    return _done("Temporary limit raised.", card_id=card_id, new_limit=f"${int(money(new_limit))}")


AGENT_TOOLS: dict[str, Discoverable] = {
    "update_transaction_rewards_3847": _update_rewards,
    "initial_transfer_to_human_agent_0218": _transfer("Initial transfer started; tell the user the lines are busy."),
    "initial_transfer_to_human_agent_1822": _transfer("The conversation has not reached the stage for a transfer; "
                                                      "keep helping with the basic scenarios."),
    "emergency_credit_bureau_incident_transfer_1114": _transfer("Case logged for the credit bureau correction team."),
    "file_credit_card_transaction_dispute_4829": _cc_dispute,
    "file_debit_card_transaction_dispute_6281": _debit_dispute,
    "get_debit_dispute_status_7483": _debit_dispute_status,
    "order_replacement_credit_card_7291": _replace_cc,
    "get_user_dispute_history_7291": _dispute_history,
    "get_pending_replacement_orders_5765": _pending_orders,
    "log_credit_card_closure_reason_4521": _log_closure,
    "get_closure_reason_history_8293": _reader("credit_card_closure_reasons", "credit_card_account_id",
                                               "Show the closure reasons logged for a credit card account."),
    "apply_statement_credit_8472": _statement_credit,
    "apply_credit_card_account_flag_6147": _flag,
    "close_credit_card_account_7834": _close_cc,
    "pay_credit_card_from_checking_9182": _pay_cc,
    "submit_credit_limit_increase_request_7392": _limit_request("PENDING", "requested_increase_amount:integer",
                                                                "Submit a credit limit increase request."),
    "get_credit_limit_increase_history_4829": _reader("credit_limit_increase_requests", "credit_card_account_id",
                                                      "Show a credit card's credit limit increase requests."),
    "get_payment_history_6183": _payments,
    "approve_credit_limit_increase_5847": _limit_request("APPROVED", "new_credit_limit:integer",
                                                         "Approve a credit limit increase."),
    "deny_credit_limit_increase_5848": _limit_request("DENIED", "denial_reason:string",
                                                      "Deny a credit limit increase."),
    "open_bank_account_4821": _open_account,
    "close_bank_account_7392": _close_account,
    "get_all_user_accounts_by_user_id_3847": _all_accounts,
    "transfer_funds_between_bank_accounts_7291": _move,
    "apply_checking_account_credit_5829": _credit("checking", ("rebate_credit", "fee_refund")),
    "apply_savings_account_credit_6831": _credit("saving", ("interest_correction", "fee_refund", "goodwill_credit")),
    "submit_interest_discrepancy_report_7294": _interest_report,
    "get_bank_account_transactions_9173": _bank_transactions,
    "order_debit_card_5739": _order_debit,
    "activate_debit_card_8292": _card_status("ACTIVE", ("PENDING",), "activated_date", "Activate a new debit card.",
                                             "last_4_digits:string expiration_date:string cvv:string pin:string"),
    "close_debit_card_4721": _card_status("CLOSED", ("ACTIVE", "PENDING"), "closed_date", "Close a debit card.",
                                          "reason:string"),
    "freeze_debit_card_3892": _card_status("FROZEN", ("ACTIVE",), "frozen_date", "Freeze a debit card for now."),
    "unfreeze_debit_card_3893": _card_status("ACTIVE", ("FROZEN",), "unfrozen_date", "Unfreeze a debit card."),
    "clear_debit_card_fraud_alert_4892": _clear_alert,
    "reset_debit_card_pin_6284": _reset_pin,
    "get_debit_cards_by_account_id_7823": _debit_cards,
    "request_temporary_debit_card_limit_increase_8374": _raise_limit,
}
"""The agent's discoverable tools by name (τ³'s names)."""


# ------------------------------------------------------------------------------------------------- user side
@_tool("user_id:string transaction_id:string", "Dispute the cash back of a credit card transaction.")
def _cash_back_dispute(ctx: ToolContext, user_id: str, transaction_id: str) -> str:
    auto = any(key == "dispute_settings" and doc.get("auto_resolve_disputes") for key, doc in find(ctx, "task_config"))
    key = _dispute_id(user_id, transaction_id)
    rec = {"dispute_id": key, "user_id": user_id, "transaction_id": transaction_id, "submitted_at": TODAY,
           "status": "RESOLVED" if auto else "SUBMITTED", **({"resolution": "APPROVED"} if auto else {})}
    if find(ctx, "cash_back_disputes", dispute_id=key):
        return _done("Cash back dispute already submitted for this transaction.", dispute_id=key)
    put(ctx, "cash_back_disputes", key, rec)
    return _done("Cash back dispute submitted; it is queued for review.", dispute_id=key, status=rec["status"])


@_tool("user_id:string card_name:string", "Get a referral link for a card.")
def _referral_link(ctx: ToolContext, user_id: str, card_name: str) -> str:
    key = new_id(f"referral_link:{user_id}:{card_name}")
    if not find(ctx, "referrals", referral_id=key):
        put(ctx, "referrals", key, {"referral_id": key, "referrer_id": user_id, "referred_account_type": card_name,
                                    "referral_status": "NO_PROGRESS", "date": TODAY})
    return _done("Referral link created.", link=f"https://rhobank.example/refer/{key}")


@_tool("credit_card_account_id:string", "Read the last 4 digits printed on a credit card.", writes=False)
def _last4(ctx: ToolContext, credit_card_account_id: str) -> str:
    acc = record(ctx, "credit_card_accounts", credit_card_account_id, "Credit card account")
    digits = "".join(c for c in new_id(f"card_last4:{credit_card_account_id}", 64) if c.isdigit())[:4].ljust(4, "0")
    return f"Last 4 digits of card: {acc.get('last_4_digits') or digits}"


@_tool("account_id:string check_amount:number", "Deposit a check into a bank account.")
def _deposit(ctx: ToolContext, account_id: str, check_amount: float) -> str:
    amount = money(check_amount)
    if amount <= 0:
        raise ToolError("Check amount must be positive.")
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("status") not in ("ACTIVE", "OPEN"):
        raise ToolError(f"Account '{account_id}' is not active.")
    balance = money(acc.get("current_holdings")) + amount
    put(ctx, "accounts", account_id, {**acc, "current_holdings": f"${balance:.2f}"})
    return _done("Check deposited.", account_id=account_id, new_balance=f"${balance:.2f}")


USER_TOOLS: dict[str, Discoverable] = {
    "submit_cash_back_dispute_0589": _cash_back_dispute,
    "get_referral_link": _referral_link,
    "get_card_last_4_digits": _last4,
    "deposit_check_3847": _deposit,
}
"""The user's discoverable tools by name (τ³'s names)."""


def parse_arguments(text: str) -> dict[str, Any]:
    """Parse a discoverable call's ``arguments`` (a JSON object as text; numbers read as floats, as τ³ does).

    Raises:
        ToolError: not JSON, or not an object.
    """
    try:
        args = json.loads(text or "{}", parse_int=float)
    except ValueError as e:
        raise ToolError(f"Invalid JSON in arguments: {e}") from e
    if not isinstance(args, dict):
        raise ToolError("arguments must be a JSON object")
    return args

"""banking_knowledge's bank account tools: accounts, transactions, opening, closing, transfers, credits, reports.

Our implementation of what τ³ 1.0.1's tools of the same names do (facts of its behaviour, checked against its
recorded answers by ``scripts/tau2-reference``). A mistake a tool finds itself is a :class:`ToolError`, answered as
``Error: ...`` text by :func:`.spec.call`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domains.banking_knowledge.records import TODAY, find, listing, money, new_id, put, record
from domains.banking_knowledge.spec import Discoverable
from domains.banking_knowledge.spec import declare as _tool
from domains.banking_knowledge.spec import executed as _executed
from simulator.world.kit import ToolContext, ToolError

__all__ = ["ACCOUNT_TOOLS"]


@_tool("user_id:string", "List a user's bank accounts and credit card accounts.", writes=False)
def _all_accounts(ctx: ToolContext, user_id: str) -> str:
    bank, cards = listing(ctx, "accounts", user_id=user_id), listing(ctx, "credit_card_accounts", user_id=user_id)
    return _executed("User accounts retrieved successfully.", "get_all_user_accounts_by_user_id_3847",
                     f"Accounts for user {user_id}:", "", "Bank Accounts:",
                     "  No bank accounts found." if bank.startswith("No records found") else bank,
                     "\nCredit Card Accounts:",
                     "  No credit card accounts found." if cards.startswith("No records found") else cards)


def _date_key(item: tuple[str, dict[str, Any]]) -> datetime:
    text = str(item[1].get("date", ""))
    for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y"):
        try:
            return datetime.strptime(text, fmt)  # noqa: DTZ007 - the scenario's dates carry no zone
        except ValueError:
            continue
    return datetime.min


@_tool("account_id:string", "List the transactions of a bank account, newest first.", writes=False)
def _bank_transactions(ctx: ToolContext, account_id: str) -> str:
    record(ctx, "accounts", account_id, "Account")
    # newest first; a stable sort keeps same-day transactions in their stored order
    found = sorted(find(ctx, "bank_account_transaction_history", account_id=account_id), key=_date_key, reverse=True)
    lines = [f"Found {len(found)} record(s) in 'bank_account_transaction_history':\n"]
    for i, (key, rec) in enumerate(found, 1):
        lines += [f"{i}. Record ID: {key}", *(f"   {k}: {v}" for k, v in rec.items()), ""]
    return _executed("Bank account transactions retrieved successfully.", "get_bank_account_transactions_9173",
                     f"Transactions for account {account_id}:",
                     "\n".join(lines) if found else "\nNo transactions found for this account.")


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
    try:
        return (datetime(2025, 11, 14) - datetime.strptime(opened, "%m/%d/%Y")).days
    except ValueError:
        return 10**6



@_tool("user_id:string account_type:string account_class:string", "Open a bank account for a user.")
def _open_account(ctx: ToolContext, user_id: str, account_type: str, account_class: str) -> str:
    if account_type not in ("checking", "savings", "business_checking", "business_savings"):
        raise ToolError("Invalid account_type. Must be one of: ['checking', 'savings', 'business_checking', "
                        "'business_savings']")
    _check_eligible(ctx, user_id, account_type)
    key = new_id(f"account:{user_id}:{account_type}:{account_class}")
    if find(ctx, "accounts", account_id=key):
        return f"Failed to open account: Account ID '{key}' may already exist."
    put(ctx, "accounts", key, {"account_id": key, "user_id": user_id, "account_type": account_type,
                               "account_class": account_class, "current_holdings": "0.00", "status": "OPEN",
                               "date_opened": TODAY})
    return (f"Bank account opened successfully!\n  - Account ID: {key}\n  - User ID: {user_id}\n"
            f"  - Account Type: {account_type}\n  - Account Class: {account_class}\n  - Status: OPEN\n"
            f"  - Initial Balance: $0.00\n  - Date Opened: {TODAY}")


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
    return (f"Bank account closed successfully!\n  - Account ID: {account_id}\n"
            f"  - Account Type: {acc.get('account_type', 'N/A')}\n"
            f"  - Account Class: {acc.get('account_class', 'N/A')}\n"
            f"  - Status: CLOSED\n  - Date Closed: {TODAY}\n  - Reason: {reason}\n"
            f"  - Early Closure Fee Waived: {'Yes' if waive_early_closure_fee else 'No'}")


@_tool("source_account_id:string destination_account_id:string amount:number", "Move money between bank accounts.")
def _move(ctx: ToolContext, source_account_id: str, destination_account_id: str, amount: float) -> str:
    try:
        amount = float(amount)
    except (TypeError, ValueError) as e:
        raise ToolError(f"Invalid amount '{amount}'. Must be a number.") from e
    if amount <= 0:
        raise ToolError("Transfer amount must be positive.")
    if source_account_id == destination_account_id:
        raise ToolError("Source and destination accounts cannot be the same.")
    src = record(ctx, "accounts", source_account_id, "Source account")
    dst = record(ctx, "accounts", destination_account_id, "Destination account")
    for name, acc in (("Source", src), ("Destination", dst)):
        if acc.get("status") not in ("ACTIVE", "OPEN"):
            raise ToolError(f"{name} account '{acc.get('account_id')}' is not active.")
    have = money(src.get("current_holdings", src.get("balance", 0)))
    if have < amount:
        raise ToolError(f"Insufficient funds. Source account balance is ${have:.2f}, but transfer amount is "
                        f"${amount:.2f}.")
    new_src, new_dst = have - amount, money(dst.get("current_holdings", dst.get("balance", 0))) + amount
    put(ctx, "accounts", source_account_id, {**src, "current_holdings": f"${new_src:.2f}"})
    put(ctx, "accounts", destination_account_id, {**dst, "current_holdings": f"${new_dst:.2f}"})
    return (f"Transfer completed successfully!\n  - Amount: ${amount:.2f}\n"
            f"  - From: {source_account_id} (new balance: ${new_src:.2f})\n"
            f"  - To: {destination_account_id} (new balance: ${new_dst:.2f})")


CREDIT_DESCRIPTIONS = {"rebate_credit": "REBATE CREDIT", "fee_refund": "FEE REFUND",
                       "interest_correction": "INTEREST CORRECTION", "goodwill_credit": "GOODWILL CREDIT"}
"""How a credit to a bank account is described on its transaction (followed by `` - CUSTOMER SERVICE``)."""


def _credit(kind: str, types: tuple[str, ...]) -> Discoverable:
    """A credit to a checking or savings account (``kind``); the transaction id hashes account, type, amount, day."""
    classes = ("checking",) if kind == "checking" else ("saving", "savings")
    refusal = ("Credits can only be applied to checking accounts." if kind == "checking" else
               "This tool only applies to savings accounts.")

    def run(ctx: ToolContext, account_id: str, amount: float, credit_type: str) -> str:
        if not account_id or amount is None or not credit_type:
            raise ToolError("Missing required parameters.")
        try:
            amount = float(amount)
        except (TypeError, ValueError) as e:
            raise ToolError("Invalid credit amount. Must be a number.") from e
        if amount <= 0:
            raise ToolError("Credit amount must be positive.")
        if credit_type not in types:
            raise ToolError(f"Invalid credit_type. Must be one of: {list(types)}")
        acc = record(ctx, "accounts", account_id, "Account")
        if str(acc.get("class", "")).lower() not in classes:
            raise ToolError(f"Account '{account_id}' is not a {kind} account. {refusal}")
        if acc.get("status") not in ("ACTIVE", "OPEN"):
            raise ToolError(f"Account '{account_id}' is not active.")
        before = money(acc.get("current_holdings", acc.get("balance", 0)))
        balance = before + amount
        put(ctx, "accounts", account_id, {**acc, "current_holdings": f"{'$' if kind == 'checking' else ''}"
                                                                     f"{balance:.2f}"})
        key = f"txn_{new_id(f'{kind}_credit:{account_id}:{credit_type}:{amount}:{TODAY}')}"
        put(ctx, "bank_account_transaction_history", key, {
            "transaction_id": key, "account_id": account_id, "date": TODAY,
            "description": f"{CREDIT_DESCRIPTIONS[credit_type]} - CUSTOMER SERVICE", "amount": amount,
            "type": credit_type, "status": "posted"})
        return (f"\nCredit applied successfully!\n  - Transaction ID: {key}\n  - Account: {account_id}\n"
                f"  - Credit Type: {credit_type}\n  - Amount: ${amount:.2f}\n  - Previous Balance: ${before:.2f}\n"
                f"  - New Balance: ${balance:.2f}")

    return Discoverable({"account_id": "string", "amount": "number", "credit_type": "string"}, frozenset(), True,
                        f"Credit a {kind} account ({', '.join(types)}).", run)


@_tool("account_id:string user_id:string expected_apy:number actual_apy:number amount_difference:number",
       "Report a difference between the expected and the paid interest of an account.")
def _interest_report(ctx: ToolContext, account_id: str, user_id: str, expected_apy: float, actual_apy: float,
                     amount_difference: float) -> str:
    # τ³'s database has no table for these reports: the report is answered but not kept, as in τ³
    try:
        expected, actual, difference = float(expected_apy), float(actual_apy), float(amount_difference)
    except (TypeError, ValueError) as e:
        raise ToolError("expected_apy, actual_apy, and amount_difference must be numbers.") from e
    acc = record(ctx, "accounts", account_id, "Account")
    user = record(ctx, "users", user_id, "User")
    key = f"IDR_{new_id(f'interest_report:{account_id}:{user_id}:{expected}:{actual}:{TODAY}')}"
    return (f"\nInterest Discrepancy Report Submitted Successfully!\n  - Report ID: {key}\n"
            f"  - Account: {account_id} ({acc.get('level', 'Unknown')})\n  - Customer: {user.get('name', 'Unknown')}\n"
            f"  - Expected APY: {expected}%\n  - Actual APY: {actual}%\n"
            f"  - APY Difference: {round(expected - actual, 4)}%\n  - Amount Difference: ${difference:.2f}\n"
            "  - Status: PENDING_REVIEW\n\nThe backend team will investigate this discrepancy and ensure correct APY "
            "calculations are applied going forward.")



@_tool("transaction_id:string", "Retrieve the envelope and check images of an ATM deposit.", writes=False)
def _deposit_images(ctx: ToolContext, transaction_id: str) -> str:
    """Answer τ³'s "no images" report for a deposit at a Rho-Bank ATM.

    τ³ holds scanned envelope texts for three transaction ids that neither ``db.json`` nor any task's data has (its
    own test fixtures), so with the shipped data every deposit that passes the checks gets this report.
    """
    if not transaction_id:
        raise ToolError("Missing required parameter: transaction_id")
    txn = record(ctx, "bank_account_transaction_history", transaction_id, "Transaction")
    if txn.get("type") != "atm_deposit":
        raise ToolError(f"Transaction '{transaction_id}' is not an ATM deposit. This tool only works for ATM deposit "
                        "transactions.")
    where = str(txn.get("description", ""))
    if not any(bank in where.upper() for bank in ("RHO-BANK", "RHOBANK")):
        raise ToolError(f"Transaction '{transaction_id}' is from a third-party ATM. Deposit images are only available "
                        "for Rho-Bank ATM deposits. For third-party ATM disputes, a chargeback request must be "
                        "submitted to the ATM network.")
    return "\n".join([
        "ATM Deposit Image Retrieval Results", "=" * 37, f"Transaction ID: {transaction_id}", f"ATM: {where}",
        f"Deposit Date: {txn.get('date', 'Unknown')}", f"Amount Recorded: ${abs(money(txn.get('amount', 0))):.2f}",
        "", "--- IMAGE STATUS ---", "Status: IMAGES NOT AVAILABLE", "Reason: Deposit images for this transaction have "
        "either expired (older than 90 days) or were not captured by the ATM system.", "", "For deposits without "
        "available images, the dispute will proceed based on customer statement and ATM journal records only. "
        "Investigation timeline may be extended.", ""])


ACCOUNT_TOOLS: dict[str, Discoverable] = {
    "open_bank_account_4821": _open_account,
    "close_bank_account_7392": _close_account,
    "get_all_user_accounts_by_user_id_3847": _all_accounts,
    "transfer_funds_between_bank_accounts_7291": _move,
    "apply_checking_account_credit_5829": _credit("checking", ("rebate_credit", "fee_refund")),
    "apply_savings_account_credit_6831": _credit("savings", ("interest_correction", "fee_refund", "goodwill_credit")),
    "submit_interest_discrepancy_report_7294": _interest_report,
    "get_bank_account_transactions_9173": _bank_transactions,
    "get_atm_deposit_images_8473": _deposit_images,
}
"""The agent's bank account tools by τ³'s names."""

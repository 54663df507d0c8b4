"""banking_knowledge's debit card tools: listing, ordering, activating, closing, freezing, PINs, limits, disputes.

Our implementation of what τ³ 1.0.1's tools of the same names do (facts of its behaviour, checked against its
recorded answers by ``scripts/tau2-reference``): which checks come first, the texts it answers, the records it writes
(their fields in τ³'s order, as a listing shows them) and their deterministic ids (:mod:`.records`). A mistake a tool
finds itself is a :class:`ToolError`, answered as ``Error: ...`` text by :func:`.spec.call`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from domains.banking_knowledge.records import TODAY, add, find, new_id, put, record
from domains.banking_knowledge.spec import Discoverable, numeric, text_value
from domains.banking_knowledge.spec import declare as _tool
from domains.banking_knowledge.spec import dispute_id as _dispute_id
from domains.banking_knowledge.spec import executed as _executed
from domains.banking_knowledge.spec import found as _found
from simulator.world.kit import Docs, ToolContext, ToolError

__all__ = ["DEBIT_TOOLS"]


_CARD_FIELDS = {"last_4_digits": "card_number_last_4", "issue_date": "date_issued"}
"""Fields τ³ shows under another name (at the card's end) when it lists debit cards."""


@_tool("account_id:string", "List the debit cards of a checking account.", writes=False)
def _debit_cards(ctx: ToolContext, account_id: str) -> str:
    acc = record(ctx, "accounts", account_id, "Account")
    if str(acc.get("class", "")).lower() not in ("checking", "business_checking"):
        raise ToolError(f"Account '{account_id}' is not a checking account. Debit cards are only available for "
                        "checking accounts.")
    cards = []
    for key, card in find(ctx, "debit_cards", account_id=account_id):
        shown = {"card_id": key, **card}
        for old, new in _CARD_FIELDS.items():
            if old in shown and new not in shown:
                shown[new] = shown.pop(old)
        if "date_issued" not in shown and "created_date" in shown:
            shown["date_issued"] = shown.pop("created_date")
        cards.append(shown)
    if not cards:
        return f"No debit cards found for account '{account_id}'."
    cards.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
    return json.dumps(cards, indent=2)



DISPUTE_CHOICES: dict[str, tuple[str, ...]] = {
    "dispute_category": ("unauthorized_transaction", "atm_cash_discrepancy", "atm_deposit_not_credited",
                         "duplicate_charge", "incorrect_amount", "goods_services_not_received",
                         "recurring_charge_after_cancellation", "card_present_fraud", "card_not_present_fraud"),
    "transaction_type": ("pin_purchase", "signature_purchase", "online_purchase", "atm_withdrawal", "atm_deposit",
                         "recurring_payment", "person_to_person"),
    "pin_compromised": ("yes_shared", "yes_observed", "no", "unknown"),
    "card_action": ("keep_active", "freeze_pending_investigation", "close_and_reissue"),
}
"""The values a debit card dispute's fields take (τ³'s lists, in its order and the order it checks them)."""
FRAUD_CATEGORIES = ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")
"""Dispute categories that count as fraud (a police report is recommended above $500)."""
_DISPUTE_FIELDS = ("transaction_id", "account_id", "card_id", "user_id", "dispute_category", "transaction_date",
                   "discovery_date", "disputed_amount", "transaction_type", "card_in_possession", "pin_compromised",
                   "contacted_merchant", "police_report_filed", "written_statement_provided",
                   "provisional_credit_eligible")
"""A dispute record's fields from the call, in τ³'s record order (the provisional credit fields follow)."""


def _title(code: str) -> str:
    return code.replace("_", " ").title()


@_tool(" ".join(f"{f}:{t}" for f, t in (
    ("transaction_id", "string"), ("account_id", "string"), ("card_id", "string"), ("user_id", "string"),
    ("dispute_category", "string"), ("transaction_date", "string"), ("discovery_date", "string"),
    ("disputed_amount", "number"), ("transaction_type", "string"), ("card_in_possession", "boolean"),
    ("pin_compromised", "string"), ("contacted_merchant", "boolean"), ("police_report_filed", "boolean"),
    ("written_statement_provided", "boolean"), ("provisional_credit_eligible", "boolean"),
    ("customer_max_liability_amount", "number"), ("card_action", "string"))),
       "File a dispute of a debit card transaction (Regulation E).")
def _debit_dispute(ctx: ToolContext, **a: Any) -> str:
    needed = ("transaction_id", "account_id", "card_id", "user_id", "dispute_category", "transaction_date",
              "discovery_date", "disputed_amount", "transaction_type", "pin_compromised", "card_action")
    if not all(a[f] for f in needed):
        raise ToolError("Missing required parameters.")
    if a["customer_max_liability_amount"] is None:
        raise ToolError("customer_max_liability_amount is required.")
    if any(a[f] is None for f in ("card_in_possession", "contacted_merchant", "police_report_filed",
                                  "written_statement_provided")):
        raise ToolError("card_in_possession, contacted_merchant, police_report_filed, and written_statement_provided "
                        "are required boolean fields.")
    for field, allowed in DISPUTE_CHOICES.items():
        if a[field] not in allowed:
            raise ToolError(f"Invalid {field}. Must be one of: {list(allowed)}")
    amount = a["disputed_amount"]
    if numeric(amount) <= 0:
        raise ToolError("disputed_amount must be a positive number.")
    key = _dispute_id(a["user_id"], a["transaction_id"])
    eligible, fraud = a["provisional_credit_eligible"], a["dispute_category"] in FRAUD_CATEGORIES
    shared = a["pin_compromised"] == "yes_shared"
    doc = {"dispute_id": key, **{f: a[f] for f in _DISPUTE_FIELDS}, "provisional_credit_issued": eligible,
           "provisional_credit_amount": amount if eligible else None,
           "customer_max_liability_amount": a["customer_max_liability_amount"], "card_action": a["card_action"],
           "is_fraud_category": fraud, "pin_shared_voluntarily": shared, "submitted_at": TODAY, "status": "OPEN"}
    if not add(ctx, "debit_card_disputes", key, doc):
        raise ToolError("Dispute may have already been filed for this transaction.")
    lines = [f"Dispute ID: {key}", f"Transaction: {a['transaction_id']}", f"Account: {a['account_id']}",
             f"Category: {_title(a['dispute_category'])}", f"Disputed Amount: ${amount:.2f}",
             f"Card Action: {_title(a['card_action'])}",
             f"Provisional Credit: ISSUED - ${amount:.2f} credited within 10 business days per Regulation E."
             if eligible else
             "Provisional Credit: Not eligible - see Debit Card Provisional Credit Guidelines for details."]
    if shared:
        lines.append("WARNING: Customer indicated PIN was shared voluntarily. This may affect liability "
                     "determination.")
    if fraud and not a["police_report_filed"] and amount > 500:
        lines.append("RECOMMENDATION: For fraud disputes over $500, filing a police report is recommended.")
    return "\n".join(lines)


@_tool("user_id:string", "Show the status of a user's debit card disputes.", writes=False)
def _debit_dispute_status(ctx: ToolContext, user_id: str) -> str:
    return _executed("Debit card dispute history retrieved successfully.", "get_debit_dispute_status_7483",
                     f"Debit card dispute history for user {user_id}:",
                     _found(ctx, "debit_card_disputes", "No debit card disputes found for this user.", user_id=user_id))




DELIVERY_DAYS = {"STANDARD": "7-10 business days", "EXPEDITED": "3-5 business days", "RUSH": "1-2 business days"}
"""Delivery options of a debit card order and how long each takes (τ³'s)."""
DESIGNS = ("CLASSIC", "PREMIUM", "CUSTOM")
"""Card designs of a debit card order (τ³'s)."""
MINIMUM_BALANCE = 25.0
"""USD a checking account must hold to order a debit card."""


def _fee(value: Any, name: str) -> float | None:
    """A fee argument in USD (None stays None); no number is the tool error ``NAME must be a number.``."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError) as e:
        raise ToolError(f"{name} must be a number.") from e


def _holdings(account: dict[str, Any]) -> float:
    """The account's balance as τ³'s order tool reads it: thousands commas dropped; anything else (a ``$``) is 0.0."""
    try:
        return float(str(account.get("current_holdings", "0")).replace(",", ""))
    except ValueError:
        return 0.0


def _expiry(issued: str) -> str:
    """A new card's expiry ``MM/DD/YYYY``: the issue month four years on, on day 31, 30 or (February) 28."""
    month, _, year = issued.split("/")
    day = "31" if month in ("01", "03", "05", "07", "08", "10", "12") else "28" if month == "02" else "30"
    return f"{month}/{day}/{int(year) + 4}"


def _issue_reason(ctx: ToolContext, account_id: str) -> str:
    """Why a new card is issued: after a card closed as lost, stolen or for fraud, that reason; else a first card."""
    existing = [c for _, c in find(ctx, "debit_cards", account_id=account_id)]
    closed = next((c for c in existing if c.get("status") == "CLOSED"), None)
    if closed is None:
        return "first_card" if existing else "new_account"
    reason = closed.get("closure_reason", "first_card")
    if reason in ("lost", "stolen", "fraud", "fraud_suspected"):
        return "fraud" if reason == "fraud_suspected" else str(reason)
    return "first_card"


def _fee_parts(delivery: float, design: float, excess: float, sep: str) -> list[str]:
    """The non-zero fees as τ³ names them (``Delivery{sep}$15.0``; the excess fee without cents)."""
    return [part for amount, part in ((delivery, f"Delivery{sep}${delivery}"), (design, f"Design{sep}${design}"),
                                      (excess, f"Excess Replacement{sep}${excess:.0f}")) if amount > 0]


@_tool("account_id:string user_id:string delivery_option:string delivery_fee:number card_design:string "
       "design_fee:number shipping_address:string excess_replacement_fee:number",
       "Order a new debit card for a checking account.", optional="excess_replacement_fee")
def _order_debit(ctx: ToolContext, account_id: str, user_id: str, delivery_option: str, delivery_fee: Any,
                 card_design: str, design_fee: Any, shipping_address: str, excess_replacement_fee: Any = None) -> str:
    delivery, design = _fee(delivery_fee, "delivery_fee"), _fee(design_fee, "design_fee")
    try:
        excess = float(excess_replacement_fee or 0)
    except (TypeError, ValueError):
        excess = 0.0
    if not (account_id and user_id and delivery_option and delivery is not None and card_design
            and design is not None and shipping_address):
        raise ToolError("Missing required parameters. Required: account_id, user_id, delivery_option, delivery_fee, "
                        "card_design, design_fee, shipping_address.")
    option, style = str(delivery_option).upper(), str(card_design).upper()
    if option not in DELIVERY_DAYS:
        raise ToolError(f"Invalid delivery_option. Must be one of: {list(DELIVERY_DAYS)}")
    if style not in DESIGNS:
        raise ToolError(f"Invalid card_design. Must be one of: {list(DESIGNS)}")
    acc = record(ctx, "accounts", account_id, "Account")
    if acc.get("class") != "checking":
        raise ToolError(f"Debit cards can only be ordered for checking accounts. Account '{account_id}' is a "
                        f"{acc.get('class')} account.")
    if acc.get("status") != "OPEN":
        raise ToolError(f"Account must be OPEN. Account '{account_id}' has status: {acc.get('status')}")
    if acc.get("user_id") != user_id:
        raise ToolError(f"Account '{account_id}' does not belong to user '{user_id}'.")
    balance = _holdings(acc)
    if balance < MINIMUM_BALANCE:
        raise ToolError(f"Account must have a minimum balance of $25. Current balance: ${balance:.2f}")
    if find(ctx, "debit_card_orders", account_id=account_id, status="PENDING"):
        raise ToolError(f"There is already a pending debit card order for account '{account_id}'.")
    if find(ctx, "debit_cards", account_id=account_id, status="ACTIVE"):
        raise ToolError(f"Account '{account_id}' already has an active debit card. Maximum 1 active card per "
                        "checking account.")
    fees = delivery + design + excess
    if fees > 0 and balance < fees:
        raise ToolError(f"Insufficient funds for fees. Total fees: ${fees:.2f}. Current balance: ${balance:.2f}")
    order = f"dcord_{new_id(f'debit_card_order:{account_id}:{user_id}:{option}', 12)}"
    if not add(ctx, "debit_card_orders", order, {
            "order_id": order, "account_id": account_id, "user_id": user_id, "delivery_option": option,
            "card_design": style, "shipping_address": shipping_address, "delivery_fee": delivery,
            "design_fee": design, "excess_replacement_fee": excess, "total_fee": fees, "order_date": TODAY,
            "expected_delivery": DELIVERY_DAYS[option], "status": "PENDING"}):
        raise ToolError("Failed to create debit card order. Order may already exist.")
    if fees > 0:
        put(ctx, "accounts", account_id, {**acc, "current_holdings": f"{balance - fees:.2f}"})
        fee_id = f"btxn_dcfee_{order[-8:]}"
        add(ctx, "bank_account_transaction_history", fee_id, {
            "transaction_id": fee_id, "account_id": account_id, "date": TODAY,
            "description": f"DEBIT CARD ORDER FEE - {', '.join(_fee_parts(delivery, design, excess, ' '))}",
            "amount": -fees, "type": "debit_card_fee", "status": "posted"})
    card = f"dbc_{new_id(f'debit_card:{account_id}:{user_id}:{TODAY}', 12)}"
    user = Docs(ctx.conn, ordered=True).get("users", user_id)
    add(ctx, "debit_cards", card, {
        "card_id": card, "account_id": account_id, "user_id": user_id,
        "cardholder_name": str(user.get("name", "CARDHOLDER")).upper() if user is not None else "CARDHOLDER",
        "last_4_digits": _digits(new_id(f"card_details:{card}:last4", 8), 4),
        "cvv": _digits(new_id(f"card_details:{card}:cvv", 6), 3), "status": "PENDING", "issue_date": TODAY,
        "expiration_date": _expiry(TODAY), "card_design": style, "issue_reason": _issue_reason(ctx, account_id)})
    lines = ["Debit Card Order Confirmed", f"Order ID: {order}", f"Card ID: {card}", f"Linked Account: {account_id}",
             f"Delivery Option: {option}", f"Card Design: {style}", f"Shipping Address: {shipping_address}",
             f"Expected Delivery: {DELIVERY_DAYS[option]}", "",
             "Note: Card will arrive with status PENDING. Customer must call to activate after receiving the card."]
    if fees > 0:
        lines += [f"Total Fees: ${fees:.2f} ({', '.join(_fee_parts(delivery, design, excess, ': '))}) - CHARGED to "
                  f"account {account_id}", f"New Account Balance: ${balance - fees:.2f}"]
    else:
        lines.append("Total Fees: $0 (No additional charges)")
    return "\n".join(lines)


def _digits(hex_text: str, n: int) -> str:
    """The first ``n`` decimal digits of a hex string, zero-padded on the left (τ³'s card number and CVV rule)."""
    return "".join(c for c in hex_text if c.isdigit())[:n].zfill(n)


CLOSE_REASONS = ("lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing")
"""Why a debit card may be closed (τ³'s list)."""


@_tool("card_id:string reason:string", "Close a debit card.")
def _close_debit(ctx: ToolContext, card_id: str, reason: str) -> str:
    if str(reason).lower() not in CLOSE_REASONS:
        raise ToolError(f"Invalid reason. Must be one of: {list(CLOSE_REASONS)}")
    reason = str(reason).lower()
    card = record(ctx, "debit_cards", card_id, "Debit card")
    before = card.get("status")
    if before not in ("ACTIVE", "PENDING"):
        raise ToolError(f"Debit card '{card_id}' cannot be closed. Current status: {before}. Only ACTIVE or PENDING "
                        "cards can be closed.")
    put(ctx, "debit_cards", card_id, {**card, "status": "CLOSED", "closed_date": TODAY, "closure_reason": reason})
    lines = ["Debit Card Closed Successfully", f"Card ID: {card_id}", f"Previous Status: {before}",
             "New Status: CLOSED", f"Closure Reason: {reason.replace('_', ' ').title()}", f"Closure Date: {TODAY}", ""]
    if reason in ("lost", "stolen", "fraud_suspected"):
        lines += ["IMPORTANT: This card has been immediately deactivated for security.",
                  "Any pending transactions may still be processed."]
        if reason == "fraud_suspected":
            lines += ["Please advise the customer to review recent transactions and file disputes for any "
                      "unauthorized charges.", "Also recommend changing their online banking password."]
    lines += ["", "Note: This card cannot be reactivated. If the customer needs a new card, they can order one "
              "through the standard ordering process.", "Any recurring payments linked to this card will need to "
              "be updated with new payment information."]
    return "\n".join(lines)


@_tool("card_id:string", "Freeze a debit card for now.")
def _freeze_debit(ctx: ToolContext, card_id: str) -> str:
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("status") == "FROZEN":
        raise ToolError(f"Debit card '{card_id}' is already frozen.")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' cannot be frozen. Current status: {card.get('status')}. Only ACTIVE "
                        "cards can be frozen.")
    put(ctx, "debit_cards", card_id, {**card, "status": "FROZEN", "frozen_date": TODAY})
    return "\n".join(["Debit Card Frozen Successfully", f"Card ID: {card_id}", "Status: FROZEN",
                      f"Frozen Date: {TODAY}", "", "While frozen:", "- All new purchase transactions will be declined",
                      "- Recurring payments and subscriptions will be declined",
                      "- Pending transactions already authorized may still process", "",
                      "To unfreeze, the customer can call customer service or use the mobile app.",
                      "If the card is confirmed lost or stolen, recommend closing the card permanently instead."])


@_tool("card_id:string", "Unfreeze a debit card.")
def _unfreeze_debit(ctx: ToolContext, card_id: str) -> str:
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("status") == "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is already active.")
    if card.get("status") != "FROZEN":
        raise ToolError(f"Debit card '{card_id}' cannot be unfrozen. Current status: {card.get('status')}. Only "
                        "FROZEN cards can be unfrozen.")
    account_id = card.get("account_id")
    linked = Docs(ctx.conn, ordered=True).get("accounts", str(account_id)) if account_id else None
    if linked is not None and linked.get("status") != "OPEN":
        raise ToolError(f"The linked checking account '{account_id}' is no longer open. Card cannot be unfrozen.")
    put(ctx, "debit_cards", card_id, {**card, "status": "ACTIVE", "unfrozen_date": TODAY})
    return "\n".join(["Debit Card Unfrozen Successfully", f"Card ID: {card_id}", "Status: ACTIVE",
                      f"Unfrozen Date: {TODAY}", "", "The card is now active and ready to use immediately.",
                      "All transactions will process normally."])



WEAK_PINS = frozenset({"0123", "1234", "2345", "3456", "4567", "5678", "6789",
                       "9876", "8765", "7654", "6543", "5432", "4321", "3210"})
"""Sequential PINs τ³ refuses."""


def _check_pin(pin: Any) -> None:
    """Refuse a PIN that is not 4 digits, is sequential, or repeats one digit (τ³'s rules and texts).

    Raises:
        ToolError: the refusal; :class:`.spec.Crash` for a PIN that is not text (a JSON number).
    """
    if not pin:
        raise ToolError("PIN must be exactly 4 digits.")
    text = text_value(pin)
    if not (text.isdigit() and len(text) == 4):
        raise ToolError("PIN must be exactly 4 digits.")
    if text in WEAK_PINS:
        raise ToolError("PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN.")
    if len(set(text)) == 1:
        raise ToolError("PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN.")


ACTIVATION_TOOLS = {"new_account": "activate_debit_card_8291", "first_card": "activate_debit_card_8291",
                    "lost": "activate_debit_card_8292", "stolen": "activate_debit_card_8292",
                    "fraud": "activate_debit_card_8292", "expired": "activate_debit_card_8293",
                    "damaged": "activate_debit_card_8293", "upgrade": "activate_debit_card_8293",
                    "bank_reissue": "activate_debit_card_8293"}
"""Which of the three activation tools activates a card issued for each reason."""


def _activatable(ctx: ToolContext, name: str, a: dict[str, Any]) -> dict[str, Any]:
    """Check an activation call (τ³'s checks, in its order) and return the card.

    Raises:
        ToolError: a missing value, a weak PIN, a malformed CVV or last 4 digits, an unknown card, the wrong tool
            for the card's issue reason, a card that is not PENDING, digits that do not match, a closed account.
    """
    if not all(a.get(f) for f in ("card_id", "last_4_digits", "expiration_date", "cvv", "pin")):
        raise ToolError("Missing required parameters. Required: card_id, last_4_digits, expiration_date, cvv, pin.")
    _check_pin(a["pin"])
    cvv = text_value(a["cvv"])
    if not (cvv.isdigit() and len(cvv) == 3):
        raise ToolError("CVV must be exactly 3 digits.")
    last4 = text_value(a["last_4_digits"])
    if not (last4.isdigit() and len(last4) == 4):
        raise ToolError("Last 4 digits must be exactly 4 digits.")
    card_id = a["card_id"]
    card = record(ctx, "debit_cards", card_id, "Debit card")
    reason = card.get("issue_reason", "new_account")
    right = ACTIVATION_TOOLS.get(reason, "unknown")
    if right != name:
        raise ToolError(f"Wrong activation tool. This card has issue_reason='{reason}'. Please use {right} instead "
                        f"of {name}.")
    if card.get("status") == "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is already active.")
    if card.get("status") != "PENDING":
        raise ToolError(f"Debit card '{card_id}' cannot be activated. Current status: {card.get('status')}. Only "
                        "PENDING cards can be activated.")
    if card.get("last_4_digits") != last4:
        raise ToolError("Card verification failed. The last 4 digits do not match our records.")
    account_id = card.get("account_id")
    linked = Docs(ctx.conn, ordered=True).get("accounts", str(account_id)) if account_id else None
    if linked is not None and linked.get("status") != "OPEN":
        raise ToolError(f"The linked checking account '{account_id}' is no longer open. Card cannot be activated.")
    return card


def _activate(ctx: ToolContext, card_id: str, card: dict[str, Any], retire: dict[str, Any]) -> list[str]:
    """Activate the card; the account's other ACTIVE cards take the fields ``retire``; return their ids."""
    put(ctx, "debit_cards", card_id, {**card, "status": "ACTIVE", "activated_date": TODAY})
    retired = []
    for other_id, other in find(ctx, "debit_cards", account_id=card.get("account_id"), status="ACTIVE"):
        if other_id != card_id:
            put(ctx, "debit_cards", other_id, {**other, **retire})
            retired.append(other_id)
    return retired


_ACTIVATION_PARAMS = "card_id:string last_4_digits:string expiration_date:string cvv:string pin:string"


@_tool(_ACTIVATION_PARAMS, "Activate a NEW debit card (issue reason new_account or first_card).")
def _activate_new(ctx: ToolContext, **a: Any) -> str:
    card = _activatable(ctx, "activate_debit_card_8291", a)
    retired = _activate(ctx, a["card_id"], card, {"status": "DEACTIVATED", "deactivated_date": TODAY,
                                    "deactivation_reason": "New card activated"})
    lines = ["New Debit Card Activation Successful", f"Card ID: {a['card_id']}", "Status: ACTIVE",
             f"Activation Date: {TODAY}", "", "Your card is now ready to use at any ATM or point of sale terminal.",
             "For security, please sign the back of your card."]
    if retired:
        lines.append(f"\nNote: Previous card(s) have been deactivated: {', '.join(retired)}")
    return "\n".join(lines)


@_tool(_ACTIVATION_PARAMS, "Activate a REPLACEMENT debit card (issue reason lost, stolen or fraud).")
def _activate_replacement(ctx: ToolContext, **a: Any) -> str:
    card = _activatable(ctx, "activate_debit_card_8292", a)
    reason = str(card.get("issue_reason", "lost"))
    retired = _activate(ctx, a["card_id"], card, {"status": "DEACTIVATED", "deactivated_date": TODAY,
                                    "deactivation_reason": f"Replacement card activated ({reason})"})
    lines = ["Replacement Debit Card Activation Successful", f"Card ID: {a['card_id']}",
             f"Replacement Reason: {_title(reason)}", "Status: ACTIVE", f"Activation Date: {TODAY}", "",
             "Your replacement card is now ready to use.", "", "IMPORTANT SECURITY REMINDERS:",
             "- Please review your recent transactions for any unauthorized charges",
             "- Report any suspicious activity immediately"]
    if reason == "fraud":
        lines.append("- Since fraud was suspected, we recommend changing your online banking password")
    if retired:
        lines.append(f"\nPrevious card(s) have been deactivated for security: {', '.join(retired)}")
    return "\n".join(lines)


@_tool(_ACTIVATION_PARAMS, "Activate a REISSUED debit card (issue reason expired, damaged, upgrade or bank_reissue).")
def _activate_reissued(ctx: ToolContext, **a: Any) -> str:
    card = _activatable(ctx, "activate_debit_card_8293", a)
    reason = str(card.get("issue_reason", "expired"))
    kept = _activate(ctx, a["card_id"], card, {"status": "GRACE_PERIOD", "grace_period_ends": TODAY,
                                 "deactivation_reason": f"Reissued card activated ({reason})"})
    lines = ["Reissued Debit Card Activation Successful", f"Card ID: {a['card_id']}",
             f"Reissue Reason: {_title(reason)}", "Status: ACTIVE", f"Activation Date: {TODAY}", "",
             "Your reissued card is now ready to use."]
    if kept:
        lines += [f"\nNote: Your previous card(s) ({', '.join(kept)}) will remain active for 24 hours as a grace "
                  "period.", "After 24 hours, the old card(s) will be automatically deactivated."]
    if reason in ("expired", "bank_reissue"):
        lines.append("\nReminder: If your card number changed, please update any recurring payments with your new "
                     "card details.")
    return "\n".join(lines)


@_tool("card_id:string reason:string", "Clear a fraud alert or velocity block on a debit card.")
def _clear_alert(ctx: ToolContext, card_id: str, reason: str) -> str:
    if not card_id:
        raise ToolError("Missing required parameter: card_id.")
    if not reason:
        raise ToolError("Missing required parameter: reason.")
    if reason not in ("customer_verified", "velocity_clear"):
        raise ToolError(f"Invalid reason '{reason}'. Must be one of: customer_verified, velocity_clear")
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if reason == "velocity_clear":
        if not card.get("velocity_blocked", False):
            raise ToolError(f"Debit card '{card_id}' does not have an active velocity block.")
        put(ctx, "debit_cards", card_id, {**card, "velocity_blocked": False, "velocity_cleared_date": TODAY})
        return "\n".join(["Velocity Block Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                          "The card is now unblocked and ready for normal use.",
                          "The velocity monitoring will continue - if the same unusual patterns recur,",
                          "the card may be blocked again automatically."])
    if not card.get("fraud_alert_active", False):
        raise ToolError(f"Debit card '{card_id}' does not have an active fraud alert.")
    if card.get("alert_source") == "bank_initiated":
        raise ToolError("BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's fraud detection system "
                        "and cannot be cleared by customer service agents. Please transfer the customer to the "
                        "security team using transfer_to_human_agents.")
    put(ctx, "debit_cards", card_id, {**card, "fraud_alert_active": False, "alert_source": None,
                                      "fraud_alert_cleared_date": TODAY})
    return "\n".join(["Fraud Alert Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                      "The fraud alert has been removed from the card.", "All transactions will process normally.",
                      "", "Remind the customer to review recent transactions and report any unauthorized charges."])


_PIN_NOTE = ["Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
             "Security reminder: Never share your PIN with anyone."]


@_tool("card_id:string last_4_digits:string new_pin:string", "Reset a forgotten debit card PIN.")
def _reset_pin(ctx: ToolContext, card_id: str, last_4_digits: str, new_pin: str) -> str:
    if not (card_id and last_4_digits and new_pin):
        raise ToolError("Missing required parameters. Required: card_id, last_4_digits, new_pin.")
    last4 = text_value(last_4_digits)
    if not (last4.isdigit() and len(last4) == 4):
        raise ToolError("Last 4 digits must be exactly 4 digits.")
    _check_pin(new_pin)
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("last_4_digits") != last4:
        raise ToolError("Card verification failed. The last 4 digits do not match our records.")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Cannot reset PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their "
                        "PIN reset.")
    put(ctx, "debit_cards", card_id, {**card, "pin_last_changed": TODAY, "pin_locked": False,
                                      "pin_attempts_remaining": 3})
    return "\n".join(["Debit Card PIN Reset Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                      "The new PIN is effective immediately.", "Your card has been unlocked and is ready to use.",
                      *_PIN_NOTE])


@_tool("card_id:string current_pin:string new_pin:string", "Change a debit card PIN the customer knows.")
def _change_pin(ctx: ToolContext, card_id: str, current_pin: str, new_pin: str) -> str:
    if not (card_id and current_pin and new_pin):
        raise ToolError("Missing required parameters. Required: card_id, current_pin, new_pin.")
    current = text_value(current_pin)
    if not (current.isdigit() and len(current) == 4):
        raise ToolError("Current PIN must be exactly 4 digits.")
    _check_pin(new_pin)
    if current == str(new_pin):
        raise ToolError("New PIN must be different from current PIN.")
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Cannot change PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their "
                        "PIN changed.")
    put(ctx, "debit_cards", card_id, {**card, "pin_last_changed": TODAY})
    return "\n".join(["Debit Card PIN Changed Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                      "The new PIN is effective immediately.", *_PIN_NOTE])


@_tool("card_id:string block_recurring:boolean", "Block or unblock the recurring payments of a debit card.")
def _recurring_block(ctx: ToolContext, card_id: str, block_recurring: bool) -> str:
    if not card_id:
        raise ToolError("Missing required parameter: card_id")
    card = record(ctx, "debit_cards", card_id, "Debit card")
    status = str(card.get("status", "")).upper()
    if status != "ACTIVE":
        raise ToolError(f"Cannot update recurring block settings for a card with status '{status}'. Card must be "
                        "ACTIVE.")
    put(ctx, "debit_cards", card_id, {**card, "recurring_blocked": block_recurring})
    if block_recurring:
        return (f"Recurring payments BLOCKED for debit card {card_id}.\nAll recurring/subscription charges will be "
                "declined.\nOne-time purchases are not affected.\nThis change takes effect within 24 hours.")
    return (f"Recurring payments UNBLOCKED for debit card {card_id}.\nRecurring/subscription charges will now be "
            "allowed.\nThis change takes effect within 24 hours.")


DEFAULT_ATM_LIMITS = {"blue account": 500, "green account": 600, "light blue account": 400,
                      "green fee-free account": 500, "evergreen account": 750, "bluest account": 1500,
                      "dark green account": 300, "gold years account": 600, "purple account": 1000}
"""A card's daily ATM limit in USD by its account's level (lower case) when the card names none (τ³'s figures)."""
LIMIT_NAMES = {"atm": "Daily ATM Withdrawal Limit", "purchase": "Daily Purchase Limit"}
"""The limits a temporary increase may raise."""
MINIMUM_AGE_DAYS = 60
"""Days an account must be open before its card's limit may be raised."""


def _current_limit(card: dict[str, Any], account: dict[str, Any], kind: str) -> Any:
    """The card's current daily limit of ``kind`` (the account level's default for an ATM limit it does not name).

    Raises:
        ToolError: a teen (Light Green) account, whose limit is fixed; an unknown level; no limit at all.
    """
    limit = card.get(f"daily_{kind}_limit")
    if limit is None and kind == "atm":
        level = str(account.get("level", "")).lower()
        if "light green" in level:
            raise ToolError("Light Green Account (teen checking) cards have policy-based limits that cannot be "
                            "modified. The daily ATM withdrawal limit of $150 is fixed by account policy for safety "
                            "reasons. The customer may request the parent/guardian to withdraw cash from their own "
                            "account if needed.")
        limit = DEFAULT_ATM_LIMITS.get(level)
        if limit is None:
            raise ToolError(f"Could not determine the default ATM limit for account type '{account.get('level')}'. "
                            "Please verify the account type.")
    if limit is None:
        raise ToolError(f"The card does not have a {LIMIT_NAMES[kind].lower()} configured. This may be a restricted "
                        "account type where limits are set by account policy and cannot be modified.")
    return limit


def _whole(value: Any) -> int:
    """A whole number of USD, or the tool error naming the value as τ³ shows it."""
    try:
        number = float(value)
    except (TypeError, ValueError) as e:
        raise ToolError(f"new_limit must be an integer, got '{value}'.") from e
    if not number.is_integer():
        raise ToolError(f"new_limit must be an integer, got '{number}'.")
    return int(number)


@_tool("card_id:string limit_type:string new_limit:integer", "Raise a debit card's daily ATM or purchase limit for "
       "24 hours.")
def _raise_limit(ctx: ToolContext, card_id: str, limit_type: str, new_limit: Any) -> str:
    if not card_id:
        raise ToolError("Missing required parameter: card_id.")
    if not limit_type:
        raise ToolError("Missing required parameter: limit_type.")
    if limit_type not in LIMIT_NAMES:
        raise ToolError(f"Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'.")
    if new_limit is None:
        raise ToolError("Missing required parameter: new_limit.")
    wanted = _whole(new_limit)
    if wanted <= 0:
        raise ToolError("new_limit must be a positive amount.")
    card = record(ctx, "debit_cards", card_id, "Debit card")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is not active. Current status: {card.get('status')}. Only ACTIVE "
                        "cards can have limit increases.")
    account_id = card.get("account_id")
    account = Docs(ctx.conn, ordered=True).get("accounts", str(account_id)) if account_id else None
    if account is None:
        raise ToolError(f"Could not find linked account for debit card '{card_id}'.")
    if account.get("status") != "OPEN":
        raise ToolError(f"The linked account '{account_id}' is not in good standing. Account status: "
                        f"{account.get('status')}.")
    opened = account.get("date_opened")
    if opened:
        try:
            age = (datetime(2025, 11, 14) - datetime.strptime(str(opened), "%m/%d/%Y")).days  # noqa: DTZ007
        except ValueError:
            age = MINIMUM_AGE_DAYS
        if age < MINIMUM_AGE_DAYS:
            raise ToolError(f"Account must be at least 60 days old for a temporary limit increase. Account age: "
                            f"{age} days.")
    current = _current_limit(card, account, limit_type)
    ceiling = int(current * 1.5)
    if wanted > ceiling:
        raise ToolError(f"Requested limit ${wanted} exceeds the maximum allowed temporary increase. Maximum "
                        f"temporary limit is ${ceiling} (150% of current ${current} limit).")
    if wanted <= current:
        raise ToolError(f"Requested limit ${wanted} is not higher than the current limit of ${current}.")
    put(ctx, "debit_cards", card_id, {**card, f"daily_{limit_type}_limit": wanted,
                                      f"temporary_{limit_type}_limit_increase": True,
                                      f"original_{limit_type}_limit": current,
                                      f"temporary_{limit_type}_limit_expires": TODAY})
    return "\n".join([f"Temporary {LIMIT_NAMES[limit_type]} Increase Granted Successfully", f"Card ID: {card_id}",
                      f"Previous Limit: ${current}", f"New Temporary Limit: ${wanted}",
                      f"Increase Amount: ${wanted - current}", "", "Important Information:",
                      "- This temporary increase expires in 24 hours",
                      f"- After expiration, the limit will revert to ${current}",
                      "- Only one temporary increase is allowed per 24-hour period", "",
                      "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have its own",
                      "per-transaction or daily limits that Rho-Bank cannot override. The customer may need to",
                      "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs."])


DEBIT_TOOLS: dict[str, Discoverable] = {
    "file_debit_card_transaction_dispute_6281": _debit_dispute,
    "get_debit_dispute_status_7483": _debit_dispute_status,
    "order_debit_card_5739": _order_debit,
    "activate_debit_card_8291": _activate_new,
    "activate_debit_card_8292": _activate_replacement,
    "activate_debit_card_8293": _activate_reissued,
    "close_debit_card_4721": _close_debit,
    "freeze_debit_card_3892": _freeze_debit,
    "unfreeze_debit_card_3893": _unfreeze_debit,
    "clear_debit_card_fraud_alert_4892": _clear_alert,
    "reset_debit_card_pin_6284": _reset_pin,
    "change_debit_card_pin_6285": _change_pin,
    "set_debit_card_recurring_block_7382": _recurring_block,
    "get_debit_cards_by_account_id_7823": _debit_cards,
    "request_temporary_debit_card_limit_increase_8374": _raise_limit,
}
"""The agent's debit card tools by τ³'s names."""

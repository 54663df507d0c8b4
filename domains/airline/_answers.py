"""The wording of the airline reference agent's answers: amounts, flights, passengers, payments, money lines."""

from __future__ import annotations

from typing import Any

from domains.airline import _understand as nl
from simulator.agents.kit import ANYTHING_ELSE

__all__ = ["ANYTHING_ELSE", "TRANSFER_TEXT", "flights_text", "fmt", "label_after", "money_after", "payments_text",
           "people_text", "trip_question"]

TRANSFER_TEXT = "I'm transferring you to a human agent."
"""The sentence of every transfer to a human agent."""


def label_after(method: dict[str, Any], charged: float) -> str:
    """Name a payment method after a charge of ``charged`` dollars: a gift card or certificate with its new balance.

    (A confirmation names the balance before the change; the report must not repeat it.)
    """
    label = nl.method_label(method, balance=False)
    if charged > 0 and method.get("source") != "credit_card" and isinstance(method.get("amount"), int | float):
        label += f" (balance now ${fmt(float(method['amount']) - charged)})"
    return label


def money_after(diff: float, method: dict[str, Any], saving: str) -> str:
    """The money line of a done change: ``diff`` dollars more (charged) or back (refunded), or no change."""
    label = label_after(method, diff)
    if diff > 0:
        return f"you paid ${fmt(diff)} more, charged to {label}"
    if diff < 0:
        return f"{saving} ${fmt(-diff)}, refunded to {label}"
    return "the price did not change"


def fmt(x: float) -> str:
    """Dollars as text: ``80`` or ``12.5`` (cents only when there are some)."""
    x = round(float(x), 2)
    return str(int(x)) if x == int(x) else f"{x:.2f}"


def flights_text(flights: list[dict[str, Any]]) -> str:
    """Name flights: number, route and date of each."""
    return ", ".join(f"{f['flight_number']} {f['origin']}-{f['destination']} on {f['date']}" for f in flights)


def people_text(passengers: list[dict[str, Any]]) -> str:
    """Name passengers by first and last name."""
    return ", ".join(f"{p['first_name']} {p['last_name']}" for p in passengers)


def payments_text(record: dict[str, Any], profile: dict[str, Any]) -> str:
    """Name what a reservation's payment methods paid, net of refunds."""
    methods = profile.get("payment_methods", {})
    net: dict[str, float] = {}
    for p in record["payment_history"]:
        net[p["payment_id"]] = net.get(p["payment_id"], 0) + p["amount"]
    parts = []
    for pid, amount in net.items():
        label = nl.method_label(methods[pid], balance=False) if pid in methods else pid
        parts.append(f"${fmt(amount)} to {label}")
    return ", ".join(parts)


_TRIP_QUESTIONS = (
    ("flight_type", "Is it a one-way or a round trip?"),
    ("origin", "From which city or airport, and to which one, do you want to fly?"),
    ("date", "On which date do you want to leave?"),
    ("return_date", "On which date do you want to come back (return date)?"),
    ("cabin", "Which cabin class: basic economy, economy or business?"),
    ("passengers", "Who are the passengers? Please give each passenger's first and last name (and date of birth, "
                   "YYYY-MM-DD, unless saved in your profile)."),
    ("bags", "How many checked bags in total for this trip?"),
    ("insurance", "Travel insurance costs $30 per passenger. What about travel insurance: with it, or without?"),
)


def trip_question(trip: dict[str, Any]) -> str | None:
    """The question for the first booking slot ``trip`` lacks (a return date only for a round trip), or None."""
    for slot, question in _TRIP_QUESTIONS:
        if slot == "return_date" and trip.get("flight_type") != "round_trip":
            continue
        if slot not in trip:
            return question
    return None

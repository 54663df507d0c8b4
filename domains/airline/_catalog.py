"""What the airline reference agent knows of the airline's records: allowances, fees and the policy's checks on them.

The agent reads records only through tools; these helpers apply the policy (``domains/airline/policy.md``) to
the records it has read (a reservation's legs, whether it may be cancelled, free bag allowances).
"""

from __future__ import annotations

from datetime import date as Date
from datetime import datetime, timedelta
from typing import Any

from domains.airline import _understand as nl

__all__ = ["ALLOWANCE", "BAG_FEE", "DAY_AGO", "days_between", "trip_legs", "may_cancel"]

ALLOWANCE = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 3}}
"""Free checked bags per passenger, by membership level and cabin."""
BAG_FEE = 50
"""Price of one non-free checked bag, in dollars."""
DAY_AGO = (datetime.fromisoformat(nl.NOW) - timedelta(hours=24)).isoformat()
"""24 hours before the policy's current time: a reservation booked since then may be cancelled."""


def may_cancel(record: dict[str, Any], reason: str) -> tuple[bool, str]:
    """Apply the policy's cancellation conditions; return (allowed, why not)."""
    if record.get("created_at", "") >= DAY_AGO:
        return True, ""
    if reason == "airline_cancelled":
        return True, ""
    if record.get("cabin") == "business":
        return True, ""
    if record.get("insurance") == "yes" and reason in ("health", "weather"):
        return True, ""
    if record.get("insurance") == "yes":
        return False, ("it was booked more than 24 hours ago, no flight was cancelled by the airline, it is not "
                       "business class, and its travel insurance covers only cancellations for health or weather "
                       "reasons, not this one. Membership level changes nothing here.")
    return False, ("it was booked more than 24 hours ago, no flight was cancelled by the airline, it is not business "
                   "class, and it has no travel insurance. Under our policy such a reservation cannot be cancelled, "
                   "whatever the membership level.")


def trip_legs(record: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Split a reservation's flights into the outbound leg and (round trips) the return leg."""
    flights = record["flights"]
    if record.get("flight_type") != "round_trip":
        return [list(flights)]
    out: list[dict[str, Any]] = []
    for i, f in enumerate(flights):
        out.append(f)
        if f["destination"] == record["destination"]:
            return [out, list(flights[i + 1:])] if flights[i + 1:] else [out]
    return [list(flights)]


def days_between(a: str, b: str) -> int:
    """Return the number of days from ISO date ``a`` to ISO date ``b``."""
    return (Date.fromisoformat(b) - Date.fromisoformat(a)).days

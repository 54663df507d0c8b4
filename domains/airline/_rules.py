"""What the airline's own rules say about time, declared for the authoring checks (``tausim tasks lint``).

The policy's "now" is a constant (``The current time is 2024-05-15 15:00:00 EST``), and "the agent can only
cancel the whole trip that is not flown": a gold ``cancel_reservation`` of a reservation with a segment that
departed before "now" (or whose flight date is flying or landed) is forbidden although the tool accepts it.
"""

from __future__ import annotations

from datetime import datetime

from domains.airline.tools import BOOKING_TIME
from simulator.world.kit import Action, ToolContext

__all__ = ["NOW", "flown_segments", "forbidden_write"]

NOW = datetime.fromisoformat(BOOKING_TIME)
"""The policy's current time (US Eastern, naive)."""


def flown_segments(ctx: ToolContext, reservation_id: str, now: datetime) -> list[str]:
    """Return ``"FLIGHT on DATE"`` for each segment of a reservation that has flown (or is flying) at ``now``.

    A segment has flown when its flight date's status is ``flying`` or ``landed``; without a status, when its
    scheduled departure is not after ``now``.

    Args:
        ctx: a tool context on the trial database.
        reservation_id: the reservation.
        now: the current time.
    """
    rows = ctx.session.connection().exec_driver_sql(
        "SELECT rf.flight_number, rf.date, f.scheduled_departure_time_est, fd.status "
        "FROM reservation_flights rf LEFT JOIN flights f ON f.id = rf.flight_number "
        "LEFT JOIN flight_dates fd ON fd.flight_number = rf.flight_number AND fd.date = rf.date "
        "WHERE rf.reservation_id = ? ORDER BY rf.position", (reservation_id,)).fetchall()
    out = []
    for number, day, departs, status in rows:
        if status is not None:  # the flight date's record says what happened (a cancelled flight never flew)
            flown = status in ("flying", "landed")
        else:
            flown = datetime.fromisoformat(f"{day}T{(departs or '00:00:00')[:8]}") <= now
        if flown:
            out.append(f"{number} on {day}")
    return out


def forbidden_write(ctx: ToolContext, action: Action, now: datetime | None) -> str | None:
    """Return why the airline's policy forbids a gold write at ``now``, or None (see the module docstring)."""
    if action.name != "cancel_reservation" or now is None:
        return None
    rid = str(action.arguments.get("reservation_id", ""))
    flown = flown_segments(ctx, rid, now)
    if flown:
        return (f"reservation {rid} has already flown {', '.join(flown)} at {now.isoformat(sep=' ')}; the policy "
                "allows cancelling only a trip not flown")
    return None

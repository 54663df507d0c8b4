"""The airline reference agent's booking dialogue: trip, passengers, bags, insurance, search and payment."""

from __future__ import annotations

from typing import Any

from domains.airline import _understand as nl
from domains.airline._answers import (
    flights_text,
    fmt,
    people_text,
    trip_question,
)
from domains.airline._catalog import ALLOWANCE, BAG_FEE
from domains.airline._dialogues.core import Dialogue, DialogueCore

__all__ = ["BookingDialogues"]


class BookingDialogues(DialogueCore):
    """The dialogue of a new booking (see the module docstring)."""

    def _book(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            trip, s.resume_trip = s.resume_trip, None
            if trip is None:
                trip = yield from self._trip(request)
            if trip is None:
                return
            itinerary = yield from self._search_trip(trip)
            if itinerary is None:
                return
            flights, prices = itinerary
            pax, cabin = trip["passengers"], trip["cabin"]
            n = len(pax)
            allowance = ALLOWANCE.get(s.profile.get("membership", "regular"), ALLOWANCE["regular"])[cabin] * n
            nonfree = max(0, trip["bags"] - allowance)
            total = sum(prices) * n + (30 * n if trip["insurance"] == "yes" else 0) + BAG_FEE * nonfree
            split = yield from self._split_payment(request, total)
            if split is None:
                s.resume_trip = trip
                return
            methods = s.profile.get("payment_methods", {})
            paying = ", ".join(f"${fmt(a)} with {nl.method_label(methods[pid], balance=False)}" for pid, a in split)
            kind = "round trip" if trip["flight_type"] == "round_trip" else "one-way trip"
            ok, reply = yield from self._confirm(
                f"I will book a {kind} in {nl.CABIN_NAMES[cabin]} from {trip['origin']} to "
                f"{trip['destination']}: {flights_text(flights)}, for {people_text(pax)}; {trip['bags']} "
                f"checked bag(s) "
                f"({nonfree} non-free at ${BAG_FEE} each), travel insurance: {trip['insurance']}. The total is "
                f"${fmt(total)}: {paying}.", "book_reservation")
            if not ok:
                request = f"{request} {reply}"
                continue
            res = yield from self._call(
                "book_reservation", user_id=s.user_id, origin=trip["origin"], destination=trip["destination"],
                flight_type=trip["flight_type"], cabin=cabin,
                flights=[{"flight_number": f["flight_number"], "date": f["date"]} for f in flights],
                passengers=pax, payment_methods=[{"payment_id": pid, "amount": a} for pid, a in split],
                total_baggages=trip["bags"], nonfree_baggages=nonfree, insurance=trip["insurance"])
            if not res.ok:
                self._tell(f"The booking failed: {res.content}")
                return
            booked = res.json()
            s.changed.add(booked["reservation_id"])
            self._money_line(f"the booking costs ${fmt(total)} ({paying})", total)
            self._report(f"Done: reservation {booked['reservation_id']} has been booked; the total of "
                                    f"${fmt(total)} was paid: {paying}.")
            return

    def _trip(self, request: str) -> Dialogue:
        """Collect a booking's trip type, airports, dates, cabin, passengers, bags and insurance (asking for each)."""
        s = self._s
        airports: dict[str, str] = {}
        res = yield from self._call("list_all_airports")
        if res.ok:
            airports = res.json()
        text = request
        trip: dict[str, Any] = {}
        for _ in range(12):
            nl.fill_trip(trip, text, airports, s.profile)
            ask = trip_question(trip)
            if ask is None:
                if len(trip["passengers"]) > 5:
                    self._tell("I'm sorry, but a reservation can have at most five passengers.")
                    return None
                return trip
            text = yield from self._say(ask)
        return None

    def _search_trip(self, trip: dict[str, Any]) -> Dialogue:
        """Find the cheapest available itinerary (direct flights first) for each way; return (flights, prices)."""
        legs = [(trip["origin"], trip["destination"], trip["date"])]
        if trip["flight_type"] == "round_trip":
            legs.append((trip["destination"], trip["origin"], trip["return_date"]))
        cabin, n = trip["cabin"], len(trip["passengers"])
        flights: list[dict[str, Any]] = []
        prices: list[float] = []
        for origin, destination, day in legs:
            options: list[list[dict[str, Any]]] = []
            res = yield from self._call("search_direct_flight", origin=origin, destination=destination, date=day)
            options = [[{**x, "date": day}] for x in (res.json() or [])]
            options = [o for o in options if all((x["available_seats"].get(cabin) or 0) >= n for x in o)]
            if not options:
                res = yield from self._call("search_onestop_flight", origin=origin, destination=destination, date=day)
                options = [o for o in (res.json() or [])
                           if all((x["available_seats"].get(cabin) or 0) >= n for x in o)]
            if not options:
                self._tell(f"I'm sorry, but I found no flight from {origin} to {destination} on {day} "
                                          f"with {n} {nl.CABIN_NAMES[cabin]} seat(s), direct or with one stop.")
                return None
            options.sort(key=lambda o: sum(x["prices"][cabin] for x in o))
            pick = options[0]
            if len(options) > 1 and self._draw("wrong_item", item="flight"):
                pick = options[1]
            for x in pick:
                flights.append({"flight_number": x["flight_number"], "origin": x["origin"],
                                "destination": x["destination"], "date": x["date"]})
                prices.append(x["prices"][cabin])
        return flights, prices

    def _split_payment(self, request: str, total: float) -> Dialogue:
        """Return [(payment id, amount)] covering ``total``: a certificate first, gift cards, then a credit card.

        Returns None after telling the member why the methods it named cannot pay (the policy's limits, or not
        enough balance).
        """
        s = self._s
        methods: dict[str, dict[str, Any]] = s.profile.get("payment_methods", {})
        text = request if nl.find_payment(request, methods) else " ".join([request, *s.texts[-2:]])
        for _ in range(3):
            named = nl.find_payment(text, methods)
            if named:
                break
            options = "; ".join(nl.method_label(m) for m in methods.values())
            text = yield from self._say(f"The total is ${fmt(total)}. Your payment methods: {options}. Which payment "
                                        "method(s) should pay?")
        else:
            self._tell("I can't book without a payment method.")
            return None
        certs = [p for p in named if methods[p]["source"] == "certificate"]
        gifts = [p for p in named if methods[p]["source"] == "gift_card"]
        cards = [p for p in named if methods[p]["source"] == "credit_card"]
        if len(certs) > 1:
            self._tell("I'm sorry, but I can't accept more than one travel certificate: a booking "
                                      "may combine at most one travel certificate, one credit card and three gift "
                                      "cards.")
            return None
        if len(cards) > 1 or len(gifts) > 3:
            self._tell("I'm sorry, but a booking may combine at most one credit card and three gift "
                                      "cards.")
            return None
        split: list[tuple[str, float]] = []
        left = total
        for pid in certs + gifts:
            amount = min(methods[pid].get("amount") or 0, left)
            if amount > 0:
                split.append((pid, amount))
                left = round(left - amount, 2)
        if left > 0 and cards:
            split.append((cards[0], left))
            left = 0
        if left > 0:
            self._tell(f"I'm sorry, but the methods you named cover only ${fmt(total - left)} of the "
                                      f"${fmt(total)} total.")
            return None
        return split

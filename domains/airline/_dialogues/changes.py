"""The airline reference agent's dialogues about an existing reservation.

Cancel, bags, cabin, flights, passengers, compensation, questions and requests for a human.
"""

from __future__ import annotations

from typing import Any

from domains.airline import _understand as nl
from domains.airline._answers import (
    flights_text,
    fmt,
    label_after,
    money_after,
    payments_text,
    people_text,
)
from domains.airline._catalog import ALLOWANCE, BAG_FEE, days_between, may_cancel, trip_legs
from domains.airline._dialogues.core import Dialogue, DialogueCore

__all__ = ["ChangeDialogues"]


class ChangeDialogues(DialogueCore):
    """The dialogues of requests about a reservation the member has (see the module docstring)."""

    # ---------------------------------------------------------------------------------------------- handlers
    def _cancel(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "cancel")
            if record is None:
                return
            rid = record["reservation_id"]
            texts = " ".join(s.texts)
            reason = nl.reason_in(request) or nl.reason_in(texts)
            flown = [f for f in record["flights"] if f["date"] < nl.TODAY]
            if reason is None:
                reply = yield from self._say("What is the reason for the cancellation: a change of plans, a flight "
                                             "cancelled by the airline, or another reason?")
                reason = nl.reason_in(reply) or "other"
            if flown and reason != "airline_cancelled":
                yield from self._transfer(
                    f"Part of reservation {rid} has already been flown ({flights_text(flown)}), so I can't cancel it "
                    "myself.",
                    f"User {s.user_id} wants to cancel reservation {rid}, which is partly flown; the agent cannot "
                    "cancel it.")
            allowed, why_not = may_cancel(record, reason)
            if not allowed:
                self._tell(f"I'm sorry, but I can't cancel reservation {rid}: {why_not}")
                return
            target = record
            if self._draw("wrong_item", item="reservation"):
                other = next((r for r in s.profile.get("reservations", []) if r != rid), None)
                if other is not None:
                    res = yield from self._call("get_reservation_details", reservation_id=other)
                    if res.ok:
                        target = res.json()
            refund = fmt(sum(p["amount"] for p in target["payment_history"]))
            pays = payments_text(target, s.profile)
            ok, reply = yield from self._confirm(
                f"I will cancel reservation {target['reservation_id']} ({target['origin']} to "
                f"{target['destination']}, {target['flight_type'].replace('_', ' ')}, "
                f"{flights_text(target['flights'])}, "
                f"passengers: {people_text(target['passengers'])}). The full ${refund} will be refunded: {pays}.",
                "cancel_reservation")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("cancel_reservation", reservation_id=target["reservation_id"])
            if not res.ok:
                self._tell(f"The cancellation failed: {res.content}")
                return
            s.changed.add(target["reservation_id"])
            self._money_line(f"the refund for reservation {target['reservation_id']} is ${refund}",
                             -float(refund))
            balances = ""
            refunded = [p["payment_id"] for p in target["payment_history"]
                        if s.profile.get("payment_methods", {}).get(p["payment_id"], {}).get("source") == "gift_card"]
            if refunded:
                yield from self._refresh_profile()
                methods = s.profile.get("payment_methods", {})
                balances = " New balance: " + "; ".join(
                    f"gift card {pid}: ${fmt(methods[pid].get('amount', 0))}"
                    for pid in dict.fromkeys(refunded) if pid in methods) + "."
            self._report(f"Done: reservation {target['reservation_id']} has been cancelled; ${refund} "
                                    f"will be refunded ({pays}; a gift card at once, a credit card within 5 to 7 "
                                    f"business days).{balances}")
            return
        self._tell("I have not cancelled anything.")

    def _bags(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "add bags to")
            if record is None:
                return
            rid = record["reservation_id"]
            current, nonfree_now = record["total_baggages"], record["nonfree_baggages"]
            total = nl.bag_request(request, current)
            while total is None:
                reply = yield from self._say(f"Reservation {rid} has {current} checked bag(s). How many checked bags "
                                             "should it have in total?")
                total = nl.bag_request(reply, current)
            if total < current:
                self._tell(f"I'm sorry, but I can't remove bags from reservation {rid}: checked "
                                          "bags can be added but never removed.")
                return
            if total == current:
                self._tell(f"Reservation {rid} already has {current} checked bag(s).")
                return
            if self._draw("wrong_item", item="bags"):
                total += 1
            pax = len(record["passengers"])
            allowance = ALLOWANCE.get(s.profile.get("membership", "regular"), ALLOWANCE["regular"])[
                record["cabin"]] * pax
            nonfree = max(nonfree_now, total - allowance)
            cost = BAG_FEE * (nonfree - nonfree_now)
            payment = yield from self._choose_payment(request, record, cost, "pay for the bags")
            if payment is None:
                self._tell("I can't add the bags without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} to {total} checked bags in total (now {current}); the free "
                f"allowance is {allowance} bag(s), so {nonfree} bag(s) are non-free. The extra bags cost "
                f"${fmt(cost)}, paid with {label}.", "update_reservation_baggages")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("update_reservation_baggages", reservation_id=rid, total_baggages=total,
                                        nonfree_baggages=nonfree, payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the bags cost ${fmt(cost)}", cost)
            self._report(f"Done: reservation {rid} has been updated to {total} checked bags; ${fmt(cost)} "
                         f"was charged to {label_after(s.profile['payment_methods'][payment], cost)}.")
            return

    def _cabin(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the cabin of")
            if record is None:
                return
            rid, current = record["reservation_id"], record["cabin"]
            cabin = nl.target_cabin(request, current)
            while cabin is None:
                reply = yield from self._say(f"Reservation {rid} is in {nl.CABIN_NAMES[current]}. Which cabin should "
                                             "it move to: basic economy, economy or business?")
                cabin = nl.target_cabin(reply, current)
            if cabin == current:
                self._tell(f"Reservation {rid} is already in {nl.CABIN_NAMES[current]}.")
                return
            flown = [f for f in record["flights"] if f["date"] < nl.TODAY]
            if flown:
                self._tell(f"I'm sorry, but I can't change the cabin of reservation {rid}: some of "
                                          "its flights have already been flown, and flown flights cannot change.")
                return
            if self._draw("wrong_item", item="cabin"):
                cabin = next(c for c in nl.CABIN_NAMES if c not in (cabin, current))
            prices = yield from self._prices(record["flights"], cabin, len(record["passengers"]))
            if prices is None:
                return
            pax = len(record["passengers"])
            new_total = sum(prices) * pax
            old_total = sum(f["price"] for f in record["flights"]) * pax
            diff = new_total - old_total
            payment = yield from self._choose_payment(
                request, record, diff, "pay the difference" if diff > 0 else "receive the refund")
            if payment is None:
                self._tell("I can't change the cabin without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            money = (f"you pay ${fmt(diff)} more, charged to {label}" if diff > 0 else
                     f"you save ${fmt(-diff)}, refunded to {label}" if diff < 0 else "the price does not change")
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} from {nl.CABIN_NAMES[current]} to {nl.CABIN_NAMES[cabin]} on the "
                f"same flights ({flights_text(record['flights'])}) for {pax} passenger(s): the new price is "
                f"${fmt(new_total)} against ${fmt(old_total)} paid, so {money}.", "update_reservation_flights")
            if not ok:
                request = reply or request
                continue
            flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in record["flights"]]
            res = yield from self._call("update_reservation_flights", reservation_id=rid, cabin=cabin,
                                        flights=flights, payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the cabin change: {money}", diff)
            done = money_after(diff, s.profile["payment_methods"][payment], "you save")
            self._report(f"Done: reservation {rid} has been updated to {nl.CABIN_NAMES[cabin]}; {done}.")
            return

    def _prices(self, flights: list[dict[str, Any]], cabin: str, pax: int) -> Dialogue:
        """Return the current price of ``cabin`` on each flight (searching each), or None (told the member)."""
        out: list[float] = []
        for f in flights:
            res = yield from self._call("search_direct_flight", origin=f["origin"], destination=f["destination"],
                                        date=f["date"])
            found = next((x for x in (res.json() or []) if x["flight_number"] == f["flight_number"]), None)
            if found is None or (found["available_seats"].get(cabin) or 0) < pax:
                self._tell(f"I'm sorry, but flight {f['flight_number']} on {f['date']} has no "
                                          f"{nl.CABIN_NAMES[cabin]} seats available for {pax} passenger(s).")
                return None
            out.append(found["prices"][cabin])
        return out

    def _change_flights(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the flights of")
            if record is None:
                return
            rid, cabin = record["reservation_id"], record["cabin"]
            if cabin == "basic_economy":
                self._tell(f"I'm sorry, but I can't change the flights of reservation {rid}: it is "
                                          "in basic economy, and basic economy flights can never be changed. "
                                          "(Its cabin could be changed, on the same flights.)")
                return
            plan = yield from self._new_itinerary(record, request)
            if plan is None:
                return
            new_flights, prices = plan
            pax = len(record["passengers"])
            old = {(f["flight_number"], f["date"]): f["price"] for f in record["flights"]}
            diff = 0.0
            for nf, price in zip(new_flights, prices, strict=True):
                diff += (price if (nf["flight_number"], nf["date"]) not in old else old[nf["flight_number"],
                                                                                        nf["date"]]) * pax
            diff -= sum(old.values()) * pax
            payment = yield from self._choose_payment(
                request, record, diff, "pay the difference" if diff >= 0 else "receive the refund")
            if payment is None:
                self._tell("I can't change the flights without a payment method.")
                return
            label = nl.method_label(s.profile["payment_methods"][payment])
            money = (f"you pay ${fmt(diff)} more, charged to {label}" if diff > 0 else
                     f"you get ${fmt(-diff)} back, refunded to {label}" if diff < 0 else
                     "the price does not change")
            ok, reply = yield from self._confirm(
                f"I will update reservation {rid} ({nl.CABIN_NAMES[cabin]}, {pax} passenger(s)) from "
                f"{flights_text(record['flights'])} to {flights_text(new_flights)}; {money}.",
                "update_reservation_flights")
            if not ok:
                request = reply or request
                continue
            refs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in new_flights]
            res = yield from self._call("update_reservation_flights", reservation_id=rid, cabin=cabin, flights=refs,
                                        payment_id=payment)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._money_line(f"the flight change: {money}", diff)
            done = money_after(diff, s.profile["payment_methods"][payment], "you get")
            self._report(f"Done: reservation {rid} has been updated to {flights_text(new_flights)}; {done}.")
            return

    def _new_itinerary(self, record: dict[str, Any], request: str, asked: int = 0) -> Dialogue:
        """Work out the new flights of a change; return (flights with origin/destination/date, prices) or None.

        ``asked`` counts the questions already asked for it (after two, the agent gives up).
        """
        if asked > 2:
            self._tell("I'm sorry, but I couldn't work out which flight should move to which date.")
            return None
        s = self._s
        flights = record["flights"]
        legs = trip_legs(record)
        texts = " ".join([request, *s.texts[-3:]])
        low = texts.lower()
        old_dates = {f["date"] for f in flights}
        new_dates = [d for d in nl.dates_in(request) if d not in old_dates] or [
            d for d in nl.dates_in(texts) if d not in old_dates]
        shift = nl.day_shift(texts)
        # which leg changes: the one whose date the member names, else the one its words point to
        said = [d for d in nl.dates_in(request) if d in old_dates] or [
            d for d in nl.dates_in(texts) if d in old_dates]
        leg = next((i for i, lg in enumerate(legs) for f in lg if f["date"] in said), -1)
        if leg >= 0 or len(legs) == 1:
            leg = max(leg, 0)
        elif any(w in low for w in ("come back", "coming back", "return", "fly back", "way back")):
            leg = 1
        elif any(w in low for w in ("outbound", "going out", "fly out", "departure", "leaving")):
            leg = 0
        else:
            if leg < 0:
                reply = yield from self._say("Which flight do you want to change: the outbound or the return flight, "
                                             "and to which date?")
                return (yield from self._new_itinerary(record, reply, asked + 1))
        changed = legs[leg]
        if any(f["date"] < nl.TODAY for f in changed):
            self._tell("I'm sorry, but flights that have already been flown can't be changed.")
            return None
        if new_dates:
            days = days_between(changed[0]["date"], new_dates[0])
        elif shift is not None:
            days = shift
        else:
            reply = yield from self._say("To which date do you want to move it?")
            return (yield from self._new_itinerary(record, reply, asked + 1))
        if self._draw("wrong_item", item="date"):
            days += 1
        out: list[dict[str, Any]] = []
        prices: list[float] = []
        pax = len(record["passengers"])
        for f in flights:
            if f not in changed:
                out.append(dict(f))
                prices.append(f["price"])
                continue
            day = nl.shifted(f["date"], days)
            res = yield from self._call("search_direct_flight", origin=f["origin"], destination=f["destination"],
                                        date=day)
            options = [x for x in (res.json() or []) if (x["available_seats"].get(record["cabin"]) or 0) >= pax]
            pick = next((x for x in options if x["flight_number"] == f["flight_number"]), None)  # same flight
            if pick is not None and len(options) > 1 and self._draw("forget_constraint", constraint="same flight"):
                pick = next(x for x in options if x is not pick)
            if pick is None and options:
                listing = "; ".join(f"{x['flight_number']} leaving {x['scheduled_departure_time_est'][:5]} "
                                    f"(${x['prices'][record['cabin']]})" for x in options)
                reply = yield from self._say(f"Flight {f['flight_number']} is not available on {day}. These flights "
                                             f"from {f['origin']} to {f['destination']} are: {listing}. Which one "
                                             "do you choose?")
                pick = next((x for x in options if x["flight_number"].lower() in reply.lower()), None)
            if pick is None:
                self._tell(f"I'm sorry, but I found no available flight from {f['origin']} to "
                                          f"{f['destination']} on {day} with {pax} seat(s) in "
                                          f"{nl.CABIN_NAMES[record['cabin']]}.")
                return None
            out.append({"flight_number": pick["flight_number"], "origin": f["origin"], "destination": f["destination"],
                        "date": day})
            prices.append(pick["prices"][record["cabin"]])
        return out, prices

    def _passengers(self, request: str) -> Dialogue:
        s = self._s
        for _attempt in range(3):
            record = yield from self._reservation(request, "change the passengers of")
            if record is None:
                return
            rid = record["reservation_id"]
            texts = " ".join([request, *s.texts[-3:]])
            names = nl.names_in(texts)
            current = record["passengers"]
            outgoing = next((p for p in current for n in names
                             if (p["first_name"], p["last_name"]) == n), None)
            saved = s.profile.get("saved_passengers", [])
            incoming = next(({"first_name": n[0], "last_name": n[1], "dob": p["dob"]} for n in names for p in saved
                             if (p["first_name"], p["last_name"]) == n
                             and all((q["first_name"], q["last_name"]) != n for q in current)), None)
            if incoming is None:
                other = next((n for n in names if all((q["first_name"], q["last_name"]) != n for q in current)
                              and n != (s.profile.get("name", {}).get("first_name"),
                                        s.profile.get("name", {}).get("last_name"))), None)
                dob = next((d for d in nl.dobs_in(texts)), None)
                if other is not None:
                    while dob is None:
                        reply = yield from self._say(f"What is the date of birth of {other[0]} {other[1]} "
                                                     "(YYYY-MM-DD)?")
                        dob = next((d for d in nl.dobs_in(reply)), None)
                    incoming = {"first_name": other[0], "last_name": other[1], "dob": dob}
            if outgoing is None or incoming is None:
                reply = yield from self._say(f"Reservation {rid} has these passengers: {people_text(current)}. "
                                             "Who should be replaced, and by whom (first and last name)?")
                request = f"{request} {reply}"
                continue
            if self._draw("wrong_item", item="passenger"):
                incoming = {**incoming, "dob": outgoing["dob"]}
            new = [dict(incoming) if p is outgoing else {k: p[k] for k in ("first_name", "last_name", "dob")}
                   for p in current]
            ok, reply = yield from self._confirm(
                f"I will update the passengers of reservation {rid}: {incoming['first_name']} {incoming['last_name']} "
                f"(born {incoming['dob']}) replaces {outgoing['first_name']} {outgoing['last_name']}, so the "
                f"passengers will be {people_text(new)}. This costs nothing.", "update_reservation_passengers")
            if not ok:
                request = reply or request
                continue
            res = yield from self._call("update_reservation_passengers", reservation_id=rid, passengers=new)
            if not res.ok:
                self._tell(f"The change failed: {res.content}")
                return
            s.changed.add(rid)
            self._report(f"Done: reservation {rid} has been updated; the passengers are now {people_text(new)}.")
            return

    def _add_passenger(self, request: str) -> Dialogue:
        record = yield from self._reservation(request, "add a passenger to")
        if record is None:
            return
        self._tell(f"I'm sorry, but I can't add a passenger to reservation {record['reservation_id']}: "
                                  "the number of passengers of a reservation can never change, and nobody, not even "
                                  "a human agent, can add or remove one. A separate booking would be needed.")

    def _compensation(self, request: str) -> Dialogue:
        s = self._s
        record = yield from self._reservation(request, "look at for compensation", cancelled_ok=True)
        if record is None:
            return
        rid = record["reservation_id"]
        texts = " ".join([request, *s.texts]).lower()
        delayed = "delay" in texts
        eligible = (s.profile.get("membership") in ("silver", "gold") or record.get("insurance") == "yes"
                    or record.get("cabin") == "business")
        if not eligible:
            self._tell(
                f"I'm sorry for the trouble, but I can't offer compensation for reservation {rid}: under our policy "
                "a regular member without travel insurance flying economy or basic economy receives no "
                "compensation.")
            return
        if rid in s.compensated:
            self._tell(f"A certificate has already been issued for this disruption on {rid}; only "
                                      "one certificate per disruption is possible.")
            return
        pax = len(record["passengers"])
        if delayed:
            if rid not in s.changed:
                self._tell(f"For a delayed flight, compensation is possible once reservation {rid} has "
                                          "been changed or cancelled because of the delay.")
                return
            per, what = 50, "the delayed flight"
        else:
            per, what = 100, "the flight the airline cancelled"
        amount = per * pax
        if self._draw("wrong_item", item="certificate"):
            amount += per
        ok, _reply = yield from self._confirm(
            f"As compensation for {what} on reservation {rid}, I will send a travel certificate of ${amount} "
            f"(${per} for each of the {pax} passenger(s)) to your profile {s.user_id}.", "send_certificate")
        if not ok:
            self._tell("Understood, I will not issue a certificate.")
            return
        res = yield from self._call("send_certificate", user_id=s.user_id, amount=amount)
        if not res.ok:
            self._tell(f"The certificate could not be issued: {res.content}")
            return
        s.compensated.add(rid)
        self._money_line(f"the compensation certificate is ${amount}", 0)
        self._report(f"Done: a travel certificate of ${amount} has been added to your profile.")

    def _info(self, request: str) -> Dialogue:
        s = self._s
        low = request.lower()
        if "balance" in low or "left" in low or "remaining" in low:
            yield from self._refresh_profile()
            methods = s.profile.get("payment_methods", {})
            record = s.last_reservation
            paid = {p["payment_id"] for p in (record or {}).get("payment_history", [])}
            shown = [m for pid, m in methods.items() if m.get("source") in ("gift_card", "certificate")]
            shown.sort(key=lambda m: m["id"] not in paid)
            if not shown:
                self._tell("Your profile has no gift card or certificate with a balance.")
                return
            lines = "; ".join(f"{m['source'].replace('_', ' ')} {m['id']}: balance ${m.get('amount', 0)}"
                              for m in shown)
            self._tell(f"Your balances: {lines}.")
            return
        if s.money:
            self._report("To recap the amounts: " + "; ".join(s.money) + ".")
            return
        self._tell("Nothing has been charged or refunded in this conversation.")

    def _details(self, request: str) -> Dialogue:
        record = yield from self._reservation(request, "look up", cancelled_ok=True)
        if record is None:
            return
        status = " It is cancelled." if record.get("status") == "cancelled" else ""
        self._tell(f"Reservation {record['reservation_id']}: {record['flight_type'].replace('_', ' ')} from "
                   f"{record['origin']} to {record['destination']} in {nl.CABIN_NAMES[record['cabin']]}; flights "
                   f"{flights_text(record['flights'])}; passengers {people_text(record['passengers'])}; "
                   f"{record['total_baggages']} checked bag(s) ({record['nonfree_baggages']} non-free); travel "
                   f"insurance: {record['insurance']}; booked on {record['created_at']}.{status}")

    def _out_of_scope(self, request: str) -> Dialogue:
        s = self._s
        rids = [r for r in nl.reservation_ids(request) if r in s.profile.get("reservations", [])]
        extra = ""
        if rids:
            res = yield from self._call("get_reservation_details", reservation_id=rids[0])
            if res.ok:
                extra = f" on reservation {rids[0]}"
        yield from self._transfer("I'm sorry, but none of my tools can handle that.",
                                  f"User {s.user_id} needs help I cannot give{extra}: {request[:300]}")

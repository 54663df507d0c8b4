"""Plain-English understanding for the airline reference agent: patterns over what the member writes.

Every function here reads user text (and, where needed, the member's profile or a reservation record as the
tools returned them) and returns plain values; nothing here calls a tool or keeps state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date as Date
from datetime import timedelta
from typing import Any

__all__ = [
    "CABIN_NAMES",
    "NOW",
    "TODAY",
    "bag_request",
    "cabin_mentions",
    "dates_in",
    "find_payment",
    "intents_in",
    "method_label",
    "names_in",
    "reason_in",
    "reservation_ids",
    "shifted",
    "target_cabin",
    "user_id_in",
    "day_shift",
]

TODAY = "2024-05-15"
"""The policy's current date."""
NOW = "2024-05-15T15:00:00"
"""The policy's current time (EST), as in a reservation's ``created_at``."""
CABIN_NAMES = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}
"""Cabin code -> how the agent names it."""

_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_NUMBER_WORDS = {"zero": 0, "no": 0, "one": 1, "a": 1, "an": 1, "single": 1, "another": 1, "two": 2, "a couple of": 2,
                 "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_NUMBER = r"(\d+|zero|no|one|an|a|single|another|two|three|four|five|six|seven|eight|nine|ten)"


def user_id_in(text: str) -> str | None:
    """Return the first user id (``first_last_1234``) in a message, or None."""
    m = re.search(r"\b[a-z]+(?:_[a-z]+)+_\d{3,5}\b", text, re.IGNORECASE)
    return m.group(0).lower() if m else None


def reservation_ids(text: str) -> list[str]:
    """Return the reservation-id-like tokens of a message (six upper-case letters/digits), in order.

    Flight numbers (``HAT012``) and user ids are not reservation ids. A token is accepted in lower case only
    when it holds a digit (so that ordinary words are not taken for ids).
    """
    out: list[str] = []
    for m in re.finditer(r"(?<![\w-])#?([A-Za-z0-9]{6})(?![\w-])", text):
        tok = m.group(1)
        if re.fullmatch(r"(?i)HAT\d{3}", tok) or tok.isdigit():
            continue
        if tok != tok.upper() and not any(c.isdigit() for c in tok):
            continue
        if not any(c.isalpha() for c in tok):
            continue
        tok = tok.upper()
        if tok not in out:
            out.append(tok)
    return out


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return Date(year, month, day).isoformat()
    except ValueError:
        return None


def dates_in(text: str) -> list[str]:
    """Return the travel dates of a message as ``YYYY-MM-DD``, in order, without duplicates.

    Understood: ``2024-05-28``, ``May 28``, ``May 28, 2024``, ``28 May``, ``today``, ``tomorrow``. A date right
    after "born" or "birth" (a date of birth) is left out. The year defaults to 2024 (the policy's year).
    """
    found: list[tuple[int, str]] = []
    low = text.lower()
    month_names = "|".join(sorted(_MONTHS, key=len, reverse=True))
    patterns = [
        (r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", lambda m: _iso(int(m[1]), int(m[2]), int(m[3]))),
        (rf"\b({month_names})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?",
         lambda m: _iso(int(m[3] or 2024), _MONTHS[m[1]], int(m[2]))),
        (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month_names})\b(?:,?\s+(\d{{4}}))?",
         lambda m: _iso(int(m[3] or 2024), _MONTHS[m[2]], int(m[1]))),
        (r"\btoday\b", lambda m: TODAY),
        (r"\btomorrow\b", lambda m: "2024-05-16"),
    ]
    for pattern, make in patterns:
        for m in re.finditer(pattern, low):
            before = low[max(0, m.start() - 16):m.start()]
            if re.search(r"\b(born|birth|dob)\b", before):
                continue
            iso = make(m)
            if iso is not None and all(iso != f or abs(p - m.start()) > 0 for p, f in found):
                found.append((m.start(), iso))
    out: list[str] = []
    for _, iso in sorted(found):
        if iso not in out:
            out.append(iso)
    return out


def day_shift(text: str) -> int | None:
    """Return the number of days the member wants to move a flight by ("one day later": 1), or None."""
    m = re.search(rf"\b{_NUMBER}\s+days?\s+(later|earlier|before|after)\b", text.lower())
    if not m:
        return None
    n = _number(m.group(1))
    return None if n is None else (n if m.group(2) in ("later", "after") else -n)


def shifted(iso: str, days: int) -> str:
    """Return ``iso`` moved by ``days`` days."""
    return (Date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word)


def bag_request(text: str, current_total: int) -> int | None:
    """Return the total number of checked bags the member asks for, or None when it says no number.

    "two more bags" / "add 2 bags" / "bring two more" -> ``current_total + 2``; "three bags in total" /
    "check three bags instead of one" -> 3.
    """
    low = text.lower()
    m = re.search(rf"\b{_NUMBER}\s+(?:more|additional|extra)(?:\s+checked)?\s*(?:bags?\b|baggages?\b|luggage\b|"
                  r"suitcases?\b|pieces\b|than\b|$|[.,;!?])", low) or re.search(
        rf"\badd(?:ing)?\s+{_NUMBER}\s+(?:checked\s+)?(?:bags?|baggages?|suitcases?|luggage)", low)
    if m:
        n = _number(m.group(1))
        return None if n is None else current_total + n
    m = re.search(rf"\b{_NUMBER}\s+(?:checked\s+)?(?:bags?|baggages?|suitcases?|pieces of luggage)\b", low)
    if m:
        return _number(m.group(1))
    m = re.search(r"\b(?:bags?|baggages?|luggage)\s*+(?:is|are|:|,|of|count)?\s*+(\d+)\b", low)
    if m:
        return int(m.group(1))
    m = re.search(r"\b(\d+)\b", low)
    if m and re.fullmatch(r"\W*+(\d+)\W*+(bags?)?\W*+(in total|total)?\W*+", low):
        return int(m.group(1))
    return None


def cabin_mentions(text: str) -> list[str]:
    """Return the cabins named in a message (``basic_economy``, ``economy``, ``business``), in order."""
    out: list[tuple[int, str]] = []
    low = text.lower()
    for m in re.finditer(r"\b(basic[ _-]economy|economy|business|first class)\b", low):
        word = m.group(1)
        if word == "economy" and re.search(r"basic[ _-]$", low[:m.start()]):
            continue
        code = "basic_economy" if word.startswith("basic") else "business" if word == "first class" else word
        out.append((m.start(), code))
    return [c for _, c in out]


def target_cabin(text: str, current: str) -> str | None:
    """Return the cabin the member wants to move to, or None when it is not clear.

    A cabin right after "to"/"into"/"for" wins; otherwise the only named cabin that differs from ``current``.
    """
    low = text.lower()
    for pattern in (r"\b(?:to|into)\s+(?:the\s+)?(basic[ _-]economy|economy|business|first class)\b",
                    r"\b(?:for|in)\s+(?:the\s+)?(basic[ _-]economy|economy|business|first class)\b"):
        m = re.search(pattern, low)
        if m and cabin_mentions(m.group(1))[0] != current:
            return cabin_mentions(m.group(1))[0]
    others = [c for c in cabin_mentions(text) if c != current]
    if len(set(others)) == 1:
        return others[0]
    if re.search(r"\bupgrade\b", low) and current != "business":
        return "economy" if current == "basic_economy" and "business" not in low else "business"
    return None


def reason_in(text: str) -> str | None:
    """Return the cancellation reason a message gives, or None when it gives none.

    Reasons: ``airline_cancelled``, ``health``, ``weather``, ``change_of_plans`` or ``other``.
    """
    low = text.lower()
    if re.search(r"(airline|you|they)\s+(has\s+|have\s+)?cancell?ed|cancell?ed by the airline|"
                 r"(flight|it)\s+(was|got|has been|is)\s+cancell?ed", low):
        return "airline_cancelled"
    if re.search(r"\b(ill|sick|illness|health|medical|hospital|injur\w*|surgery|doctor)\b", low):
        return "health"
    if re.search(r"\b(weather|storm|snow|hurricane|blizzard|flood\w*)\b", low):
        return "weather"
    if re.search(r"change of plans?|plans? (have |has )?changed|changed? (my |our |her |his )?plans?|"
                 r"no longer (need|want|going)|not going|can'?t make it|staying longer", low):
        return "change_of_plans"
    if re.search(r"\b(because|reason|since|due to|as)\b", low):
        return "other"
    return None


def names_in(text: str) -> list[tuple[str, str]]:
    """Return capitalised first/last name pairs in a message, in order (``("Malak", "Valdivia")``)."""
    skip = {"I", "My", "The", "On", "In", "He", "She", "They", "We", "You", "Yes", "No", "Please", "Hi", "Hello",
            "Thanks", "Thank", "Could", "Can", "Would", "Mr", "Mrs", "Ms", "Dr"}
    out: list[tuple[str, str]] = []
    for m in re.finditer(r"(?<![\w'])([A-Z][a-z\-]+)\s+([A-Z][a-z'\-]+)\b", text):
        first, last = m.group(1), m.group(2)
        if first in skip or last in skip or first.lower() in _MONTHS:
            continue
        out.append((first, last))
    return out


def method_label(method: dict[str, Any], balance: bool = True) -> str:
    """Return how the agent names a payment method to the member, e.g. ``mastercard credit card ending in 4869``.

    Args:
        method: the method as in the profile.
        balance: add a gift card's or certificate's balance in dollars.
    """
    source = method.get("source")
    if source == "credit_card":
        return f"{method.get('brand', '')} credit card ending in {method.get('last_four', '')}".strip()
    kind = "gift card" if source == "gift_card" else "travel certificate"
    return f"{kind} {method['id']}" + (f" (balance ${method.get('amount', 0)})" if balance else "")


_BRANDS = {"mastercard": "mastercard", "master card": "mastercard", "visa": "visa", "amex": "amex",
           "american express": "amex", "discover": "discover"}


def find_payment(text: str, methods: dict[str, dict[str, Any]], paid_with: list[str] | None = None) -> list[str]:
    """Return the ids of the member's payment methods a message names, in the order named.

    Understood: "credit card ending in 1234", brand names (Mastercard, Visa, American Express, Discover),
    "gift card" (the one that paid ``paid_with`` when the member has several), "certificate", "credit card"
    (when the member has only one), "the same card / the card I paid with" (``paid_with``) and method ids.

    Args:
        text: the member's message(s).
        methods: the profile's ``payment_methods`` (id -> method).
        paid_with: payment ids of the reservation concerned, used to pick among several gift cards.
    """
    low = text.lower()
    hits: dict[str, int] = {}
    for finder in (_by_id, _by_last_four, _by_brand, _by_balance_kind, _by_credit_card):
        for pos, pid in finder(low, methods, paid_with or []):
            hits.setdefault(pid, pos)  # the first mention counts
    if paid_with and re.search(r"\b(same|original) (card|payment|method)|\b(card|method) (i|we) (paid|used)\b|"
                               r"\bpaid with\b", low):
        for pid in paid_with:
            if pid in methods:
                hits.setdefault(pid, len(low))
    return [pid for _, pid in sorted((pos, pid) for pid, pos in hits.items())]


Mentions = Iterator[tuple[int, str]]
"""``(position in the text, payment id)`` of each mention of a payment method."""


def _by_id(low: str, methods: dict[str, dict[str, Any]], paid_with: list[str]) -> Mentions:
    for pid in methods:
        i = low.find(pid.lower())
        if i >= 0:
            yield i, pid


def _by_last_four(low: str, methods: dict[str, dict[str, Any]], paid_with: list[str]) -> Mentions:
    for m in re.finditer(r"\b(\d{4})\b", low):
        for pid, meth in methods.items():
            if meth.get("last_four") == m.group(1):
                yield m.start(), pid


def _by_brand(low: str, methods: dict[str, dict[str, Any]], paid_with: list[str]) -> Mentions:
    for word, brand in _BRANDS.items():
        for m in re.finditer(rf"\b{word}\b", low):
            cards = [pid for pid, meth in methods.items() if meth.get("brand") == brand]
            if len(cards) == 1:
                yield m.start(), cards[0]


def _by_balance_kind(low: str, methods: dict[str, dict[str, Any]], paid_with: list[str]) -> Mentions:
    """Gift cards and certificates named by kind: the only one, the one that paid, both, or the larger."""
    for kind, pattern in (("gift_card", r"gift[ -]?cards?"), ("certificate", r"certificates?|vouchers?")):
        for m in re.finditer(rf"\b({pattern})\b", low):
            own = [pid for pid, meth in methods.items() if meth.get("source") == kind]
            if len(own) > 1 and paid_with:
                own = [pid for pid in own if pid in paid_with] or own
            if kind == "certificate" and len(own) > 1 and re.search(r"\b(both|all)\b[^.]{0,30}certificates", low):
                yield from ((m.start(), pid) for pid in own)
            elif kind == "certificate" and len(own) > 1 and re.search(r"\b(larger|largest|bigger|biggest)\b", low):
                yield m.start(), max(own, key=lambda p: methods[p].get("amount", 0))
            elif len(own) == 1:
                yield m.start(), own[0]


def _by_credit_card(low: str, methods: dict[str, dict[str, Any]], paid_with: list[str]) -> Mentions:
    cards = [pid for pid, meth in methods.items() if meth.get("source") == "credit_card"]
    for m in re.finditer(r"\bcredit card\b|\bcard\b", low):
        if len(cards) == 1 and not re.search(r"gift\s*$", low[:m.start()]):
            yield m.start(), cards[0]

_TRANSFER = re.compile(r"\b(lost|never arrived|missing|damaged|claim|trace|tracing|complaint form|human|"
                       r"supervisor|manager|real person|refund for (the|one|a) (flight|segment)|"
                       r"cancel (only )?the (return|outbound|second|first) (flight|leg))\b", re.IGNORECASE)


_MONEY_QUESTION = re.compile(r"\bhow much\b|\bwhat (do|does|did|will|would)\b[^?]{0,40}\bcost\b|"
                             r"\bwhat (is|was|'s) the (total|price|cost|refund)\b")


def intents_in(text: str) -> list[str]:
    """Return the kinds of request a message makes, in the order they appear.

    Kinds: ``transfer`` (something no tool does: lost bags, claims, a human, part of a trip), ``cancel``,
    ``bags``, ``cabin``, ``change_flights``, ``passengers``, ``add_passenger``, ``book``, ``compensation``,
    ``info`` (a question about balances or amounts; a question about an amount is only that), ``details`` (what
    a reservation holds, when nothing else is asked).
    """
    low = text.lower()
    found: list[tuple[int, str]] = []

    def add(kind: str, m: re.Match[str] | None) -> None:
        if m is not None and all(k != kind for _, k in found):
            found.append((m.start(), kind))

    lost = re.search(r"\b(lost|never arrived|missing|damaged|delayed)\b[^.]{0,40}\b(bag|bags|baggage|luggage|"
                     r"suitcase)\b|\b(bag|bags|baggage|luggage|suitcase)\b[^.]{0,40}\b(lost|never arrived|missing|"
                     r"damaged)\b|\b(claim|trace)\b", low)
    add("transfer", lost or re.search(r"\b(human|supervisor|manager|real person)\b", low))
    partial = re.search(r"\bcancel\w*\s+(only\s+)?(the\s+)?(my\s+)?(return|outbound|second|first|one)\s+(flight|leg|"
                        r"segment)", low)
    add("cancel", partial or re.search(
        r"\bcancel(l?ing|lation)?\b|\b(want|like|need|have|get)\s+(it|this|that|them|(the|my|our|reservation)\b"
        r"[^.?!]{0,40}?)\s*(?<!was )(?<!were )(?<!been )(?<!got )(?<!is )cancell?ed\b", low))
    add("compensation", re.search(r"\b(compensat\w*|voucher|make (it|this) up|reimburs\w*)\b", low))
    if not lost:
        add("bags", re.search(r"\b(more|additional|extra|add|bring|check)\b[^.?!]{0,40}\b(bags?|baggages?|"
                              r"luggage|suitcases?)\b|\b(bags?|baggages?|luggage)\b[^.?!]{0,30}\b(instead of|more)\b",
                              low))
    # "cabin" asks for a cabin change unless it only labels a value ("Cabin: business", "for the cabin, ...")
    cabin = re.search(r"\b(upgrade|downgrade)\b|(?<!for the )\bcabin\b(?!\s*:)|"
                      r"\b(move|change|switch|put)\b[^.?!]{0,60}\b(to|into)\s+(basic[ _-]economy|economy|business)\b|"
                      r"\bfrom (basic[ _-]economy|economy|business) to\b",
                      low)
    add("cabin", cabin)
    add("add_passenger", re.search(r"\badd\b[^.?!]{0,60}\b(passenger|traveller|traveler|person|colleague|friend|"
                                   r"third|fourth)\b|\b(third|extra|another|additional) (passenger|person|"
                                   r"traveller|traveler)\b", low))
    add("passengers", re.search(r"\b(in (his|her|their) place|instead of (him|her)|replace|swap|"
                                r"change the (name|passenger)|passenger'?s? (name|date of birth)|"
                                r"(will|would|should|can) (fly|travel|go) instead)\b", low))
    if not (cabin and re.search(r"same flights?", low)):
        add("change_flights", re.search(
            r"\b(change|move|reschedul\w*|switch)\b[^.?!]{0,40}\b(flights?|dates?|return|outbound|trip)\b|"
            r"\bcome back\b|\bcoming back\b|\bfly back\b|\b(one|two|three|a) days? (later|earlier)\b|"
            r"\b(later|earlier) (flight|date|day)\b|\binstead of (may|june|april|\d)|\bfly\b[^.?!]{0,60}\binstead\b|"
            r"\bsame (flight|flights) (on|the next|tomorrow|\w+ day)", low))
    add("book", re.search(r"\bbook\b(?! (id|number|code|reference))|\bbooking (a|an|new)\b|\b(ticket|new "
                          r"reservation|new booking|reserve a)\b|\b(need|want|like|get) (a|an) "
                          r"(new )?((one|1)[ -]way |round[ -]trip |return |direct )?(flight|trip)\b", low))
    add("info", re.search(r"\b(balance|how much (is )?(left|remaining|do i have))\b", low))
    add("details", re.search(r"\b(details?|status|itinerary|what time|when (is|does|do)|which flights?|"
                             r"look up|check on|what'?s on)\b", low))
    if _MONEY_QUESTION.search(low):
        return ["info"]
    kinds = [k for _, k in sorted(found)]
    if "add_passenger" in kinds and "passengers" in kinds:
        kinds.remove("passengers")
    if "details" in kinds and len(kinds) > 1:
        kinds.remove("details")
    if "book" in kinds and len(kinds) > 1:
        if reservation_ids(text):  # an existing reservation named: the request is about it
            kinds.remove("book")
        else:
            kinds = [k for k in kinds if k not in ("bags", "cabin", "change_flights")]
    return kinds


def dobs_in(text: str) -> list[str]:
    """Dates of birth in a message: ``YYYY-MM-DD`` after "born", "birth" or "dob" (or the whole message)."""
    if re.fullmatch(r"\W*(\d{4}-\d{2}-\d{2})\W*", text):
        return [text.strip(" .")]
    return [m.group(1) for m in re.finditer(r"\b(?:born|birth|dob)\b\D{0,20}(\d{4}-\d{2}-\d{2})\b", text,
                                            re.IGNORECASE)]


def airports_in(text: str, airports: dict[str, str]) -> list[str]:
    """Return the airport codes a message names (by code or city), in order of mention."""
    found: list[tuple[int, str]] = []
    for code, city in airports.items():
        m = re.search(rf"\b{re.escape(code)}\b", text) or re.search(rf"\b{re.escape(city)}\b", text, re.IGNORECASE)
        if m:
            found.append((m.start(), code))
    return [c for _, c in sorted(found)]


def travellers(text: str, profile: dict[str, Any]) -> list[dict[str, str]]:
    """Return the passengers a message names: the member ("me", "myself"), saved passengers, names with a dob."""
    out: list[dict[str, str]] = []
    low = text.lower()
    name = profile.get("name", {})
    me = {"first_name": name.get("first_name", ""), "last_name": name.get("last_name", ""),
          "dob": profile.get("dob", "")}
    if re.search(r"\b(me|myself)\b", low) or f"{me['first_name']} {me['last_name']}".lower() in low:
        out.append(me)
    saved = {(p["first_name"], p["last_name"]): p for p in profile.get("saved_passengers", [])}
    dobs = dobs_in(text)
    for first, last in names_in(text):
        if (first, last) == (me["first_name"], me["last_name"]) or any(
                (p["first_name"], p["last_name"]) == (first, last) for p in out):
            continue
        if (first, last) in saved:
            p = saved[first, last]
            out.append({"first_name": first, "last_name": last, "dob": p["dob"]})
        elif dobs:
            out.append({"first_name": first, "last_name": last, "dob": dobs.pop(0)})
    return out


def insurance_in(text: str) -> str | None:
    """Return whether a message wants travel insurance ("yes", "no"), or None when it does not say."""
    low = text.lower()
    if re.search(r"\b(no|not|don'?t|without|decline)\b[^.]{0,40}insurance|insurance[^.]{0,20}\b(no|not)\b|"
                 r"^\W*no\b", low):
        return "no"
    if re.search(r"\b(yes|with|want|add|buy|include)\b[^.]{0,30}insurance|insurance[^.]{0,20}\byes\b|"
                 r"^\W*yes\b", low):
        return "yes"
    return None


def names_payment(text: str, profile: dict[str, Any]) -> bool:
    """Return whether a message names one of the member's payment methods."""
    return bool(find_payment(text, profile.get("payment_methods", {})))


def fill_trip(trip: dict[str, Any], text: str, airports: dict[str, str], profile: dict[str, Any]) -> None:
    """Fill the booking slots of ``trip`` that a message gives and ``trip`` does not hold yet.

    Slots: ``flight_type``, ``origin`` and ``destination``, ``date`` (and ``return_date`` of a round trip),
    ``cabin``, ``passengers``, ``bags`` and ``insurance``.

    Args:
        trip: the slots collected so far (changed in place).
        text: the member's message.
        airports: code -> city of the airports served.
        profile: the member's profile (the member and its saved passengers).
    """
    low = text.lower()
    if "flight_type" not in trip:
        if re.search(r"round[ -]trip|coming back|come back|\breturn", low):
            trip["flight_type"] = "round_trip"
        elif re.search(r"one[ -]way|single", low):
            trip["flight_type"] = "one_way"
    places = airports_in(text, airports)
    if "origin" not in trip and len(places) >= 2:
        trip["origin"], trip["destination"] = places[0], places[1]
    dates = dates_in(text)
    if "date" not in trip and dates:
        trip["date"] = dates[0]
        dates = dates[1:]
    if trip.get("flight_type") == "round_trip" and "return_date" not in trip and dates:
        trip["return_date"] = dates[0]
    found = {"cabin": next(iter(cabin_mentions(text)), None), "passengers": travellers(text, profile) or None,
             "bags": bag_request(text, 0), "insurance": insurance_in(text)}
    for slot, value in found.items():
        if slot not in trip and value is not None:
            trip[slot] = value

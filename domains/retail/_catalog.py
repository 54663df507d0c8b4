"""The retail reference agent's catalog: the user's account, orders and products as the agent has read them.

Which order a request means (by id, by description, the most recent), which items and variants of an order the
user's words name, which payment method and which address they refer to, and what a change costs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from domains.retail._understand import (
    ADDRESS_REF_RE,
    NEGATED_RE,
    PARTIAL_ADDRESS_RE,
    RECENT_ORDER_RE,
    Intent,
    RetailUnderstanding,
    change_parts,
    mentions,
    name_mentioned,
    normalize,
    split_change,
)
from simulator.agents.kit import AgentTurn

__all__ = ["RetailCatalog"]


class RetailCatalog(RetailUnderstanding):
    """The look-ups in the records the agent has read: orders, items, variants, payment methods, addresses."""

    def _owns(self, order_id: str) -> bool:
        return order_id in (self._user or {}).get("orders", [])

    def _method(self, method_id: str) -> dict[str, Any]:
        return dict((self._user or {}).get("payment_methods", {}).get(method_id) or {"id": method_id})

    @staticmethod
    def _order_method(order: dict[str, Any]) -> str | None:
        pays = [p for p in order.get("payment_history", []) if p.get("transaction_type") == "payment"]
        return str(pays[0]["payment_method_id"]) if pays else None

    @staticmethod
    def _order_total(order: dict[str, Any]) -> float:
        return round(sum(float(it.get("price", 0)) for it in order.get("items", [])), 2)

    def _difference(self, order: dict[str, Any], items: Sequence[str], new_items: Sequence[str]) -> float:
        old = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
        prices = {str(v["item_id"]): float(v["price"]) for p in self._products.values()
                  for v in p.get("variants", {}).values()}
        diff = round(sum(prices.get(n, 0.0) for n in new_items) - sum(old.get(i, 0.0) for i in items), 2)
        self._pending_diff = diff
        return diff

    def _recent_order(self, text: str) -> str | None:
        """The last order of the account when ``text`` speaks of the order placed most recently, else None."""
        orders = (self._user or {}).get("orders", [])
        if orders and RECENT_ORDER_RE.search(ADDRESS_REF_RE.sub("address", text)):
            return str(orders[-1])
        return None

    def _describes_items(self, text: str) -> bool:
        names = {str(it.get("name")) for o in self._orders.values() for it in o.get("items", [])}
        names |= set((self._product_types or {}).keys())
        generic = re.search(r"\b(?:the|my|a|an)\s+[a-z]+(?:\s+[a-z]+)?\b", text, re.IGNORECASE)
        return bool(names and any(name_mentioned(text, n) for n in names)) or bool(generic)

    def _find_order(self, intent: Intent) -> str | AgentTurn | None:
        """Find the order the described items belong to, fetching the user's orders one by one."""
        assert self._user is not None
        wanted_status = {"cancel": "pending", "return": "delivered", "exchange": "delivered",
                         "modify_address": "pending", "modify_payment": "pending", "modify_items": "pending"}
        recent = self._recent_order(intent.text)
        if recent is not None:
            return recent
        for order_id in self._user.get("orders", []):
            if order_id not in self._orders:
                if not self._describes_items(intent.text):
                    return None
                return self._call("get_order_details", {"order_id": order_id})
        matches = []
        text = ADDRESS_REF_RE.sub("address", intent.text)
        said = re.search(r"\b(pending|delivered|processed)\b", text, re.IGNORECASE)
        status = said.group(1).lower() if said else wanted_status.get(str(intent.kind))
        for order_id in self._user.get("orders", []):
            order = self._orders[order_id]
            scores = []
            for it in order.get("items", []):
                name = str(it.get("name"))
                if not name_mentioned(text, name):
                    continue
                described = split_change(text, name)[0] if intent.kind in ("item_change", "exchange",
                                                                            "modify_items") else text
                values = [str(v) for v in it.get("options", {}).values()]
                scores.append(1 + 0.5 * sum(mentions(described, v) for v in values))
            if scores:
                score = sum(scores) + (2 if status is not None and order.get("status") == status else 0)
                matches.append((score, order_id))
        matches.sort(reverse=True)
        if matches and (len(matches) == 1 or matches[0][0] > matches[1][0]):
            return matches[0][1]
        if matches:
            # a tie: the order the conversation is about (the last one handled) is the one meant
            tied = {oid for score, oid in matches if score == matches[0][0]}
            handled = [i.order_id for i in self._intents if i.order_id and i is not intent]
            if handled and handled[-1] in tied:
                return handled[-1]
        return None

    def _order_described(self, text: str) -> str | AgentTurn | None:
        """The order a question describes by its status or its shipping, when exactly one of the orders fits.

        "my cancelled order" names the status; "the tracking number", "still in transit", "sent to" ask about an
        order that has shipped (not a cancelled one). The user's orders are fetched first.

        Args:
            text: the user's question.

        Returns:
            The order id, a tool call fetching one of the user's orders, or None.
        """
        status = re.search(r"\b(pending|delivered|processed|cancell?ed)\s+order\b", text, re.IGNORECASE)
        shipping = re.search(r"\btracking\b|\bin transit\b|\bsent to\b|\bshipped to\b", text, re.IGNORECASE)
        if not status and not shipping:
            return None
        orders = (self._user or {}).get("orders", [])
        for oid in orders:
            if oid not in self._orders:
                return self._call("get_order_details", {"order_id": oid})
        holding = [o for o in orders if any(name_mentioned(text, str(it.get("name")))
                                            for it in self._orders[o].get("items", []))]
        if len(holding) == 1:
            # "the tracking number of the order ... the tablet": the one order holding the product named
            return str(holding[0])
        if status:
            wanted = status.group(1).lower().replace("canceled", "cancelled")
            fits = [o for o in orders if self._orders[o].get("status") == wanted]
        else:
            fits = [o for o in orders if self._orders[o].get("fulfillments")
                    and self._orders[o].get("status") != "cancelled"]
        return str(fits[0]) if len(fits) == 1 else None

    def _match_items(self, intent: Intent, order: dict[str, Any]) -> list[str]:
        """Return the ids of the order's items the user describes (a wrong one under ``wrong_item``)."""
        items = list(order.get("items", []))
        text = intent.text if self._asking != "items" else self._last_user + " " + intent.text
        change = intent.kind in ("exchange", "modify_items", "item_change")
        if re.search(r"\b(?:all|everything|whole order|every item)\b", text, re.IGNORECASE) and \
                intent.kind == "return":
            but = re.search(r"\b(?:except(?: for)?|but not|other than|apart from|besides)\b(?P<rest>[^.;?!]*)", text,
                            re.IGNORECASE)
            kept = {str(it["item_id"]) for it in items if but and name_mentioned(but.group("rest"),
                                                                                  str(it.get("name")))}
            return [str(it["item_id"]) for it in items if str(it["item_id"]) not in kept]
        chosen: list[str] = []
        names = list(dict.fromkeys(str(it.get("name")) for it in items))
        mentioned = [n for n in names if name_mentioned(text, n)]
        for name in mentioned:
            same = [it for it in items if it.get("name") == name]
            segment = self._segment(text, name, mentioned)
            old_part = split_change(segment, name)[0] if change else segment
            if not name_mentioned(old_part, name):
                old_part = segment
            parts = change_parts(segment, name) if change else []
            if len(parts) > 1:
                # one item changed per "X for Y" of this product; the same item id may be there twice
                ranked_items = sorted(same, key=lambda it: -sum(mentions(segment, str(v))
                                                                for v in it.get("options", {}).values()))
                for k in range(min(len(parts), len(same))):
                    chosen.append(str(ranked_items[k]["item_id"]))
                continue
            word = name.lower().split()[-1]
            spots = [m.start() for m in re.finditer(r"\b" + re.escape(word), normalize(old_part))]
            if not change and len(same) > 1 and len(spots) > 1:
                # the same product named several times ("the skateboard (length: 28 inch), the skateboard
                # (length: 34 inch)"): each mention picks its own item by its option values
                low = normalize(old_part)
                for a, b in zip(spots, spots[1:] + [len(low)], strict=True):
                    part = low[a:b]
                    free = [it for it in same if str(it["item_id"]) not in chosen]
                    if not free:
                        break
                    ranked = sorted(((sum(mentions(part, str(v)) for v in it.get("options", {}).values()), i)
                                     for i, it in enumerate(free)), reverse=True)
                    chosen.append(str(free[ranked[0][1]]["item_id"]))
                continue
            scored = sorted(((sum(mentions(old_part, str(v)) for v in it.get("options", {}).values()), i)
                             for i, it in enumerate(same)), reverse=True)
            best = scored[0][0]
            picks = [same[i] for s, i in scored if s == best]
            count = self._count_mentioned(old_part, name)
            for it in picks[:max(1, count)]:
                chosen.append(str(it["item_id"]))
        others = [str(it["item_id"]) for it in items if str(it["item_id"]) not in chosen]
        if chosen and others and self._draw("wrong_item", "picked another item of the order"):
            chosen[0] = others[int(self._faults.rng.integers(len(others)))]
        return chosen

    @staticmethod
    def _count_mentioned(text: str, name: str) -> int:
        m = re.search(r"\b(two|both|2|three|3)\s+(?:of the\s+)?" + re.escape(name.lower().split()[-1]),
                      text.lower())
        return {"two": 2, "both": 2, "2": 2, "three": 3, "3": 3}.get(m.group(1), 1) if m else 1

    def _segment(self, text: str, name: str, names: list[str]) -> str:
        """Return the part of ``text`` about the item named ``name`` (when several items are named)."""
        low = normalize(text)
        spots = sorted((low.find(n.lower().split()[-1]), n) for n in set(names) if low.find(n.lower().split()[-1])
                       >= 0)
        if len(spots) <= 1:
            return text
        cuts = [0]
        for (pos, _), (nxt, _) in zip(spots, spots[1:], strict=False):
            between = low[pos:nxt]
            sep = max(between.rfind(" and "), between.rfind(";"), between.rfind(", the "))
            cuts.append(pos + sep if sep >= 0 else nxt)
        cuts.append(len(low))
        for k, (_, n) in enumerate(spots):
            if n == name:
                return low[cuts[k]:cuts[k + 1]]
        return text

    def _wanted_options(self, old: dict[str, str], variants: list[dict[str, Any]], words: str) -> dict[str, str]:
        """The option values other than the current ones that the user's ``words`` name, one per option at most."""
        wanted: dict[str, str] = {}
        for opt in old:
            values = sorted({str(v["options"].get(opt)) for v in variants if v.get("options", {}).get(opt)},
                            key=len, reverse=True)
            hits = [v for v in values if v != old[opt] and self._value_mentioned(words, v, values)]
            if len(hits) == 1:
                wanted[opt] = hits[0]
        return wanted

    @staticmethod
    def _value_mentioned(text: str, value: str, values: list[str]) -> bool:
        if mentions(text, value):
            return True
        tokens = [t for t in re.findall(r"[a-z]+", value.lower()) if len(t) >= 4]
        # a word of this value alone names it only when no other value has that word (plural or not)
        others = {t.rstrip("s") for v in values if v != value for t in re.findall(r"[a-z]+", v.lower())}
        return any(t.rstrip("s") not in others and mentions(text, t) for t in tokens)

    def _resolve_payment(self, text: str, exclude: str | None, prefer: str | None = None) -> str | None:
        """Return the id of the user's payment method the text names (negated mentions ignored), or None.

        A bare "credit card" that fits several cards means ``prefer`` (the card the order was paid with) when it
        is one of them; otherwise it stays ambiguous (None).
        """
        assert self._user is not None
        clean = NEGATED_RE.sub(" ", text)
        methods = list(self._user.get("payment_methods", {}).values())
        hits: list[str] = []
        for m in methods:
            mid = str(m.get("id"))
            source = str(m.get("source"))
            if source == "gift_card" and re.search(r"gift ?card", clean, re.IGNORECASE):
                hits.append(mid)
            elif source == "paypal" and re.search(r"pay ?pal", clean, re.IGNORECASE):
                hits.append(mid)
            elif source == "credit_card":
                last = str(m.get("last_four", ""))
                brand = str(m.get("brand", "")).lower()
                brands = {brand, {"amex": "american express", "mastercard": "master card"}.get(brand, brand)}
                if (last and re.search(r"\b" + last + r"\b", clean)) or any(
                        re.search(r"\b" + re.escape(b) + r"\b", clean, re.IGNORECASE) for b in brands):
                    hits.append(mid)
        if not hits:
            cards = [str(m.get("id")) for m in methods if m.get("source") == "credit_card"]
            if re.search(r"credit card|\bcard\b", clean, re.IGNORECASE) and not re.search(r"gift ?card", clean,
                                                                                           re.IGNORECASE):
                hits = cards
        hits = [h for h in dict.fromkeys(hits) if h != exclude]
        if len(hits) > 1 and prefer in hits and all(self._method(h).get("source") == "credit_card" for h in hits):
            hits = [prefer]
        if len(hits) > 1 and all(self._method(h).get("source") == "gift_card" for h in hits):
            hits = sorted(hits, key=lambda h: -float(self._method(h).get("balance", 0)))[:1]
        return hits[0] if len(hits) == 1 else None

    def _address_reference(self, intent: Intent, base: Mapping[str, Any]) -> dict[str, str] | AgentTurn | None:
        """The new address when the user names it instead of giving it.

        "the address (in CITY) that my order with ITEMS ships to" / "... that order #W... ships to": the shipping
        address of that order (the user's orders are fetched to find it; another order than the one being changed;
        on a tie the CITY decides); "Suite 641 (the rest of the address stays the same)": ``base`` with the new
        second line.

        Args:
            intent: the request being served; its text is searched.
            base: the address being changed (the order's or the user's default address).

        Returns:
            The address fields, a tool call fetching an order needed to find it, or None when none is named.
        """
        assert self._user is not None
        fields = ("address1", "address2", "city", "state", "country", "zip")
        refs = list(ADDRESS_REF_RE.finditer(intent.text))
        ref = refs[-1] if refs else None
        if ref is not None:
            if ref.group("oid"):
                oid = "#" + ref.group("oid").lstrip("#").upper()
                if not self._owns(oid):
                    return None
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
                a = self._orders[oid].get("address") or {}
                return {k: str(a.get(k, "")) for k in fields} if a else None
            for order_id in self._user.get("orders", []):
                if order_id not in self._orders:
                    return self._call("get_order_details", {"order_id": order_id})
            wanted = ref.group("items") or ""
            city = (ref.group("city") or "").strip().lower()
            scored = []
            for order_id in self._user.get("orders", []):
                order = self._orders[order_id]
                if order_id == intent.order_id or not order.get("address"):
                    continue
                names = {str(it.get("name")) for it in order.get("items", [])}
                hits = sum(name_mentioned(wanted, n) for n in names)
                if not hits:
                    continue
                in_city = bool(city) and str(order["address"].get("city", "")).lower() == city
                scored.append((hits - 0.1 * len(names - {n for n in names if name_mentioned(wanted, n)})
                               + (1 if in_city else 0), order_id))
            scored.sort(reverse=True)
            if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
                a = self._orders[scored[0][1]]["address"]
                return {k: str(a.get(k, "")) for k in fields}
            return None
        partial = PARTIAL_ADDRESS_RE.search(intent.text)
        if partial and base:
            line2 = re.sub(r"\s+", " ", partial.group("a2")).strip()
            return {k: str(base.get(k, "")) for k in fields} | {"address2": line2[0].upper() + line2[1:]}
        return None

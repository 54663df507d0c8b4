"""The retail reference agent's answers: the wording of questions, confirmations, results and information."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from domains.retail._catalog import RetailCatalog
from domains.retail._understand import Intent, name_mentioned
from simulator.agents.kit import ANYTHING_ELSE, AgentTurn

__all__ = ["ASK_IDENTITY", "ASK_ORDER", "RetailAnswers", "money_text"]

ASK_IDENTITY = ("Could you give me your email address, or your first and last name with your zip code, so I can "
                "find your account?")
ASK_ORDER = "Which order is it? Please give the order id (like #W0000000)."


def money_text(x: float) -> str:
    """Dollars with cents and thousands separators (``$1,234.50``)."""
    return f"${x:,.2f}"


class RetailAnswers(RetailCatalog):
    """The wording of the agent's messages: questions, confirmations, results and answers."""

    def _say(self, text: str, question: bool = True) -> AgentTurn:
        if question and self._user_id is not None:
            intent = self._current()
            target = "order id" if intent is not None and intent.order_id else "identity"
            if self._draw("repeat_question", f"asked again for the {target}"):
                return self._text_turn(ASK_ORDER if target == "order id" else ASK_IDENTITY)
        return self._text_turn(text)

    def _finish(self, intent: Intent, text: str) -> AgentTurn:
        intent.done = True
        self._asking = "anything_else"
        return self._say(f"{text} {ANYTHING_ELSE}", question=False)

    def _refuse(self, intent: Intent, reason: str) -> AgentTurn:
        return self._finish(intent, f"I'm sorry, but {reason}")

    def _ask(self, slot: str, text: str) -> AgentTurn:
        self._asking = slot
        return self._say(text)

    def _confirm(self, intent: Intent, name: str, args: dict[str, Any]) -> AgentTurn:
        if self._draw("skip_confirmation", f"{name} without asking"):
            return self._call(name, args)
        self._pending = (name, args)
        self._asking = "confirm"
        return self._say(self._confirm_text(name, args))

    def _method_text(self, method_id: str | None) -> str:
        if method_id is None:
            return "the original payment method"
        m = self._method(method_id)
        source = m.get("source")
        if source == "gift_card":
            return f"your gift card ({method_id}, balance {money_text(float(m.get('balance', 0)))})"
        if source == "paypal":
            return f"your PayPal account ({method_id})"
        if source == "credit_card":
            return f"your {str(m.get('brand', 'credit')).title()} credit card ending in {m.get('last_four')}"
        return str(method_id)

    def _methods_text(self) -> str:
        return "; ".join(self._method_text(str(k)) for k in (self._user or {}).get("payment_methods", {}))

    @staticmethod
    def _options_text(options: Mapping[str, Any]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in options.items())

    def _items_text(self, order: dict[str, Any], options: bool = False) -> str:
        return "; ".join(f"{it.get('name')}" + (f" ({self._options_text(it.get('options', {}))})" if options else "")
                         for it in order.get("items", []))

    def _names_of(self, order: dict[str, Any], item_ids: Sequence[str]) -> str:
        by_id = {str(it["item_id"]): it for it in order.get("items", [])}
        return " and ".join(f"{by_id[i]['name']} ({self._options_text(by_id[i].get('options', {}))})"
                            if i in by_id else i for i in item_ids)

    @staticmethod
    def _address_text(a: Mapping[str, Any]) -> str:
        parts = [a.get("address1"), a.get("address2"), a.get("city"), f"{a.get('state')} {a.get('zip')}",
                 a.get("country")]
        return ", ".join(str(p) for p in parts if p)

    def _confirm_text(self, name: str, args: dict[str, Any]) -> str:
        oid = args.get("order_id")
        order = self._orders.get(str(oid), {})
        if name == "cancel_pending_order":
            refund = self._order_total(order)
            body = (f"I will cancel order {oid} ({self._items_text(order)}) for the reason '{args['reason']}'. The "
                    f"refund of {money_text(refund)} goes back to {self._method_text(self._order_method(order))}.")
        elif name == "modify_pending_order_address":
            body = f"I will change the shipping address of order {oid} to {self._address_text(args)}."
        elif name == "modify_user_address":
            body = f"I will update your default address to {self._address_text(args)}."
        elif name == "modify_pending_order_payment":
            body = (f"I will change the payment method of order {oid} (total {money_text(self._order_total(order))}) "
                    f"from {self._method_text(self._order_method(order))} to "
                    f"{self._method_text(args['payment_method_id'])}.")
        elif name == "return_delivered_order_items":
            prices = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
            total = sum(prices.get(i, 0.0) for i in args["item_ids"])
            body = (f"I will return the {self._names_of(order, args['item_ids'])} from order {oid}; the refund of "
                    f"{money_text(total)} goes to {self._method_text(args['payment_method_id'])}.")
        else:
            variants = {str(v["item_id"]): v for p in self._products.values() for v in p.get("variants", {}).values()}
            by_id = {str(it["item_id"]): it for it in order.get("items", [])}
            swaps = "; ".join(
                f"the {by_id[o]['name']} ({self._options_text(by_id[o].get('options', {}))}) for "
                f"{by_id[o]['name']} ({self._options_text(variants.get(n, {}).get('options', {}))})"
                for o, n in zip(args["item_ids"], args["new_item_ids"], strict=True) if o in by_id)
            diff = self._difference(order, args["item_ids"], args["new_item_ids"])
            who = self._method_text(args["payment_method_id"])
            money = (f"price difference {money_text(diff)} charged to {who}" if diff > 0 else
                     f"price difference {money_text(-diff)} refunded to {who}" if diff < 0 else "no price difference")
            verb = "exchange" if name.startswith("exchange") else "modify order " + str(oid) + ": change"
            where = f" in order {oid}" if name.startswith("exchange") else ""
            body = (f"I will {verb} {swaps}{where}, {money}. This can be done only once for the order, so every "
                    "item to change must be in it.")
        return f"{body} Shall I proceed (yes/no)?"

    def _result_text(self, name: str, args: dict[str, Any], data: dict[str, Any]) -> str:
        oid = args.get("order_id")
        if name == "cancel_pending_order":
            refunds = [p for p in data.get("payment_history", []) if p.get("transaction_type") == "refund"]
            total = sum(float(p.get("amount", 0)) for p in refunds)
            money = f"A refund of {money_text(total)} goes back to " + ", ".join(
                self._method_text(str(p.get("payment_method_id"))) for p in refunds) + "."
            self._last_result["money"] = money
            self._refunds.append((f"order {oid} cancelled", total))
            return f"Done: order {oid} has been cancelled. {money}"
        if name == "return_delivered_order_items":
            order = self._orders.get(str(oid), data)
            prices = {str(it["item_id"]): float(it["price"]) for it in order.get("items", [])}
            total = sum(prices.get(i, 0.0) for i in args["item_ids"])
            money = (f"The refund of {money_text(total)} will go to {self._method_text(args['payment_method_id'])} "
                     "once the items are received.")
            self._last_result["money"] = money
            self._refunds.append((f"return from order {oid}", total))
            return (f"Done: the return of {self._names_of(order, args['item_ids'])} from order {oid} has been "
                    f"requested; you will receive return instructions by email. {money}")
        if name in ("exchange_delivered_order_items", "modify_pending_order_items"):
            diff = self._pending_diff
            who = self._method_text(args["payment_method_id"])
            money = (f"The price difference of {money_text(diff)} is charged to {who}." if diff > 0 else
                     f"The price difference of {money_text(-diff)} is refunded to {who}." if diff < 0 else
                     "There is no price difference.")
            self._last_result["money"] = money
            if diff < 0:
                self._refunds.append((f"price difference of order {oid}", -diff))
            elif diff > 0:
                self._charges.append((f"price difference of order {oid}", diff))
            verb = "exchanged (exchange requested; instructions follow by email)" if name.startswith("exchange") \
                else "updated"
            return f"Done: the items of order {oid} have been {verb}. {money}"
        if name == "modify_pending_order_payment":
            return f"Done: order {oid} has been updated to be paid with {self._method_text(args['payment_method_id'])}."
        if name == "modify_pending_order_address":
            return f"Done: the shipping address of order {oid} has been updated to {self._address_text(args)}."
        return f"Done: your default address has been updated to {self._address_text(args)}."

    def _cheapest_total(self, order_id: str | None, text: str) -> str | AgentTurn | None:
        """What the order would cost with every item switched to its product's cheapest available variant.

        The order is the one asked about, else the user's only pending order. An amount the user names ("bring
        the cost down to $950") is compared with the result.

        Args:
            order_id: the order asked about, if any.
            text: the user's question.

        Returns:
            The answer, a look-up needed first, or None when no order fits.
        """
        orders = (self._user or {}).get("orders", [])
        if order_id is None:
            for oid in orders:
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
            pending = [o for o in orders if self._orders[o].get("status") == "pending"]
            if len(pending) != 1:
                return None
            order_id = str(pending[0])
        order = self._orders.get(order_id) or {}
        for it in order.get("items", []):
            if str(it["product_id"]) not in self._products:
                return self._call("get_product_details", {"product_id": str(it["product_id"])})
        lines, total = [], 0.0
        for it in order.get("items", []):
            variants = [v for v in self._products[str(it["product_id"])].get("variants", {}).values()
                        if v.get("available") or str(v.get("item_id")) == str(it["item_id"])]
            low = min(variants, key=lambda v: float(v["price"]), default=None)
            price = float(low["price"]) if low else float(it.get("price", 0))
            total += price
            lines.append(f"{it.get('name')} {money_text(price)}" + (f" ({self._options_text(low.get('options', {}))})"
                                                                if low else ""))
        answer = (f"With every item switched to its cheapest available option, order {order_id} would cost "
                  f"{money_text(total)} instead of {money_text(self._order_total(order))}: " + "; ".join(lines) + ".")
        target = re.search(r"\$\s?([\d,]+(?:\.\d+)?)", text)
        if target:
            goal = float(target.group(1).replace(",", ""))
            answer += (f" That is within ${target.group(1)}." if total <= goal else
                       f" That is still above ${target.group(1)}.")
        return answer

    def _product_info(self, text: str) -> str | AgentTurn | None:
        """Answer a question about a product: the user's own items of it, or its variants available now."""
        if self._product_types is None:
            return self._call("list_all_product_types", {})
        squashed = re.sub(r"[^a-z0-9]", "", text.lower())
        names = [n for n in self._product_types if re.sub(r"[^a-z0-9]", "", n.lower()) in squashed
                 or name_mentioned(text, n)]
        if not names:
            return None
        name = max(names, key=len)
        if re.search(r"\b(?:i|my|me)\b.{0,300}\b(?:ordered|bought|have|got|purchased)\b|\bmy orders?\b", text,
                     re.IGNORECASE):
            for order_id in (self._user or {}).get("orders", []):
                if order_id not in self._orders:
                    return self._call("get_order_details", {"order_id": order_id})
            mine = [(oid, it) for oid in (self._user or {}).get("orders", [])
                    for it in self._orders[oid].get("items", []) if it.get("name") == name]
            if not mine:
                return f"None of your orders holds a {name}."
            together = f" (together {money_text(sum(float(it.get('price', 0)) for _, it in mine))})" \
                if len(mine) > 1 else ""
            return f"Your orders hold {len(mine)} {name} item(s){together}: " + "; ".join(
                f"in order {oid} ({self._orders[oid].get('status')}): {self._options_text(it.get('options', {}))}, "
                f"{money_text(float(it.get('price', 0)))}" for oid, it in mine) + "."
        pid = self._product_types[name]
        if pid not in self._products:
            return self._call("get_product_details", {"product_id": pid})
        available = [v for v in self._products[pid].get("variants", {}).values() if v.get("available")]
        return (f"The store has {len(available)} {name} variants in stock right now: " + "; ".join(
            f"{self._options_text(v.get('options', {}))} ({money_text(float(v['price']))})" for v in available) + ".")

    # ------------------------------------------------------------------------------------------ answers to questions
    # Each takes the question and the order it is about; it returns the sentences it answers (none when the question
    # is not its own), or the tool call to make first.
    def _product_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        if not re.search(r"\b(?:options?|variants?|available|in stock|how many|kinds?|types?|ordered|bought|paid|"
                         r"purchased|materials?|colou?rs?|sizes?)\b", text, re.IGNORECASE):
            return []
        product = self._product_info(text)
        if isinstance(product, AgentTurn):
            return product
        return [product] if product else []

    def _paid_with_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        """Which method paid: the order asked about, or every order of the account."""
        assert self._user is not None
        if not (re.search(r"\b(?:used|paid|pay)\b", text, re.IGNORECASE) and re.search(
                r"\b(?:card|paypal|visa|mastercard|amex|american express|payment method)\b", text, re.IGNORECASE)):
            return []
        asked = [order_id] if order_id and self._owns(order_id) else list(self._user.get("orders", []))
        for oid in asked:
            if oid not in self._orders:
                return self._call("get_order_details", {"order_id": oid})
        paid = [f"order {oid} was paid with {self._method_text(self._order_method(self._orders[oid]))}"
                for oid in asked if not self._orders[oid].get("missing")]
        return ["; ".join(paid)[0].upper() + "; ".join(paid)[1:] + "."] if paid else []

    def _split_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        if re.search(r"\bsplit\b", text, re.IGNORECASE) and re.search(r"\bpay|\bcard|\bcharge", text, re.IGNORECASE):
            return ["I'm sorry, but splitting a payment is not possible: an order is paid with one payment "
                    "method (a gift card must cover the whole amount)."]
        return []

    def _cheapest_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        if not (re.search(r"\bcheapest\b", text, re.IGNORECASE) and re.search(r"\ball (?:the )?items\b|\bevery item\b",
                                                                              text, re.IGNORECASE)):
            return []
        cheapest = self._cheapest_total(order_id, text)
        if isinstance(cheapest, AgentTurn):
            return cheapest
        return [cheapest] if cheapest else []

    def _gift_card_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        assert self._user is not None
        if not re.search(r"gift card|balance", text, re.IGNORECASE):
            return []
        cards = [m for m in self._user.get("payment_methods", {}).values() if m.get("source") == "gift_card"]
        if not cards:
            return ["You have no gift card on your account."]
        balances = [float(c.get("balance", 0)) for c in cards]
        listing = ", ".join(f"gift card {c.get('id')}: {money_text(b)}" for c, b in zip(cards, balances, strict=True))
        return [f"Your gift card balance{'s are' if len(cards) > 1 else ' is'} {listing}"
                + (f"; together {money_text(sum(balances))}." if len(cards) > 1 else ".")]

    def _money_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        """What the user pays in all, gets back in all, or what the last change cost."""
        if self._charges and re.search(r"\bpay\b", text, re.IGNORECASE) and re.search(
                r"\b(?:total|all|altogether|together|in all|overall|today)\b", text, re.IGNORECASE):
            # what the user pays in all: the charges less the money coming back
            net = sum(a for _, a in self._charges) - sum(a for _, a in self._refunds)
            moves = [f"{what}: {money_text(a)} charged" for what, a in self._charges] + [
                f"{what}: {money_text(a)} back" for what, a in self._refunds]
            return [(f"In total you pay {money_text(net)}" if net >= 0 else
                     f"In total you get back {money_text(-net)}") + " (" + "; ".join(moves) + ")."]
        if len(self._refunds) > 1 and re.search(r"refund|back|money", text, re.IGNORECASE):
            return ["In total you get back " + money_text(sum(a for _, a in self._refunds)) + ": " + "; ".join(
                f"{what}: {money_text(a)}" for what, a in self._refunds) + "."]
        if re.search(r"refund|back|difference|extra|cost|charge|price|pay", text, re.IGNORECASE) and self._last_result:
            return [f"{self._last_result.get('money', '')} {self._last_result.get('detail', '')}"]
        return []

    def _order_answer(self, text: str, order_id: str | None) -> list[str] | AgentTurn:
        """An order's tracking number, address, kept items' total, status and total."""
        if order_id and order_id in self._orders and not self._orders[order_id].get("missing"):
            return self._order_facts(text, order_id, self._orders[order_id])
        if order_id and not self._owns(order_id):
            return [f"Order {order_id} is not one of the orders in your account."]
        return []

    def _order_facts(self, text: str, order_id: str, order: dict[str, Any]) -> list[str]:
        parts: list[str] = []
        if re.search(r"\btracking\b", text, re.IGNORECASE):
            numbers = [str(n) for f in order.get("fulfillments", []) for n in f.get("tracking_id", [])]
            parts.append(f"The tracking number of order {order_id} is {', '.join(numbers)}." if numbers else
                         f"Order {order_id} has no tracking number yet: it has not shipped.")
        if re.search(r"\baddress\b|\bsent to\b|\bshipp(?:ed|ing) to\b|\bwhere\b", text, re.IGNORECASE):
            a = order.get("address") or {}
            parts.append(f"Order {order_id} ships to {self._address_text(a)}." if a else "")
        returned = [str(i) for i in order.get("return_items") or order.get("exchange_items") or []]
        if returned and re.search(r"\bremaining|\bleft\b|\bkeep|\bother items\b|\brest\b", text, re.IGNORECASE):
            prices = {str(it["item_id"]): float(it.get("price", 0)) for it in order.get("items", [])}
            rest = self._order_total(order) - sum(prices.get(i, 0.0) for i in returned)
            parts.append(f"The items of order {order_id} you keep come to {money_text(rest)}.")
        parts.append(f"Order {order_id} is {order.get('status')}; its total is "
                     f"{money_text(self._order_total(order))} ({self._items_text(order)}).")
        return parts

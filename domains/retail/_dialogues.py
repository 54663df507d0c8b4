"""The retail reference agent's dialogues: what it does next for the request being served.

Authenticate the user; find the order concerned; refuse what the policy forbids (saying why); state every write
with its key values and wait for an explicit yes; perform it, report the result with the money that moves; and
ask whether there is anything else. Requests no tool can serve go to a human agent.
"""

from __future__ import annotations

import re
from typing import Any

from domains.retail._answers import ASK_IDENTITY, ASK_ORDER, RetailAnswers, money_text
from domains.retail._understand import UNKNOWN_RE, Intent, change_parts, mentions, name_mentioned, split_change
from simulator.agents.kit import ANYTHING_ELSE, AgentTurn

__all__ = ["RetailDialogues"]


_WRITES = frozenset({"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
                     "modify_pending_order_items", "modify_user_address", "return_delivered_order_items",
                     "exchange_delivered_order_items"})


class RetailDialogues(RetailAnswers):
    """The dialogue flows: authenticate, serve each request in turn, and learn from tool results."""

    def _decide(self) -> AgentTurn:
        if self._transfer is not None:
            summary = self._transfer
            self._transfer = None
            turn = self._call("transfer_to_human_agents", {"summary": summary})
            turn.message.content = "I'm transferring you to a human agent."
            return turn
        if self._user_id is None:
            return self._authenticate()
        if self._user is None:
            return self._call("get_user_details", {"user_id": self._user_id})
        if self._report is not None:
            report, self._report = self._report, None
            self._asking = "anything_else"
            return self._say(f"{report} {ANYTHING_ELSE}", question=False)
        intent = self._current()
        answer, self._answer = self._answer, None
        if self._pending is not None:
            if answer == "yes":
                name, args = self._pending
                self._pending = None
                return self._call(name, args)
            return self._say(self._confirm_text(*self._pending))
        if intent is None:
            return self._between_requests(served=bool(self._intents))
        return self._serve(intent)

    def _authenticate(self) -> AgentTurn:
        if self._email and ("email", self._email) not in self._tried:
            self._tried.add(("email", self._email))
            return self._call("find_user_id_by_email", {"email": self._email})
        if self._name and self._zip and ("name", *self._name, self._zip) not in self._tried:
            self._tried.add(("name", *self._name, self._zip))
            return self._call("find_user_id_by_name_zip",
                              {"first_name": self._name[0], "last_name": self._name[1], "zip": self._zip})
        self._asking = "identity"
        if self._name and not self._zip and not self._auth_failed:
            return self._say(f"Thank you, {self._name[0]}. Could you also give me your zip code?")
        if self._zip and not self._name and not self._auth_failed:
            return self._say("Thank you. Could you also give me your first and last name?")
        if self._auth_failed:
            return self._say("I'm sorry, I could not find an account with those details. " + ASK_IDENTITY)
        prefix = "I'd be glad to help. " if self._intents else "Hello! "
        return self._say(prefix + ASK_IDENTITY)

    def _serve(self, intent: Intent) -> AgentTurn:
        assert self._user is not None
        if intent.kind is None:
            intent.kind = self._kind_of(intent.text)
        if intent.kind is None:
            return self._not_understood(intent)
        if not intent.notes and intent.kind != "info":
            intent.notes.append("started")
            if self._draw("early_transfer", f"transferred the {intent.kind} request before trying"):
                self._transfer = f"User {self._user_id} asks: {intent.text[:200]}"
                return self._decide()
        if intent.kind == "transfer":
            if intent.order_id and intent.order_id not in self._orders and self._owns(intent.order_id):
                return self._call("get_order_details", {"order_id": intent.order_id})
            self._transfer = f"User {self._user_id}: {intent.text.strip()[:300]} (no tool can do this)"
            return self._decide()
        if intent.kind == "info":
            return self._info(intent)
        if intent.kind == "modify_user_address":
            return self._user_address(intent)
        return self._serve_order(intent)

    def _not_understood(self, intent: Intent) -> AgentTurn:
        """Say what the agent can do; the third request in a row it does not understand goes to a human."""
        self._unclear += 1
        intent.done = True
        if self._unclear >= 3:
            self._transfer = f"User {self._user_id}: request not understood: {intent.text[:200]}"
            return self._decide()
        self._asking = None
        return self._say("I'm sorry, I did not understand what you need. I can cancel or modify pending "
                         "orders, return or exchange items of delivered orders, update your default address "
                         "and answer questions about your account. What would you like to do?")

    def _serve_order(self, intent: Intent) -> AgentTurn:
        """Serve a request that acts on one of the user's orders (found first, read, then handled by its kind)."""
        assert self._user is not None and intent.kind is not None
        if intent.order_id is None:
            found = self._find_order(intent)
            if isinstance(found, AgentTurn):
                return found
            if found is None:
                return self._ask_order()
            intent.order_id = found
        if not self._owns(intent.order_id):
            return self._refuse(intent, f"I can't help with order {intent.order_id}: it is not one of the orders in "
                                        "your account, and I can only act on your own orders.")
        if intent.order_id not in self._orders or (self._last_result.get("order_id") == intent.order_id
                                                   and self._orders[intent.order_id].get("stale")):
            return self._call("get_order_details", {"order_id": intent.order_id})
        order = self._orders[intent.order_id]
        if order.get("missing"):
            intent.order_id = None
            return self._ask("order_id", "I could not find that order. " + ASK_ORDER)
        status = str(order.get("status"))
        if intent.kind == "item_change":
            intent.kind = "exchange" if status == "delivered" else "modify_items"
        handler = {"cancel": self._cancel, "modify_address": self._order_address, "modify_payment": self._payment,
                   "return": self._return, "exchange": self._items, "modify_items": self._items}[intent.kind]
        return handler(intent, order)

    def _ask_order(self) -> AgentTurn:
        """Ask for the order id; list the user's orders when the user said it does not know it."""
        assert self._user is not None
        if self._asking == "order_id" and UNKNOWN_RE.search(self._last_user):
            self._listed_orders = [oid for oid in self._user.get("orders", []) if oid in self._orders]
            listing = "\n".join(f"- {oid} ({self._orders[oid].get('status')}): "
                                f"{self._items_text(self._orders[oid])}" for oid in self._listed_orders)
            if listing:
                return self._ask("order_id", f"These are your orders:\n{listing}\nWhich order is it?")
        return self._ask("order_id", ASK_ORDER)

    def _cancel(self, intent: Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"order {intent.order_id} can't be cancelled: its status is {status}, and "
                                        "only pending orders can be cancelled.")
        if intent.reason is None:
            return self._ask("reason", f"Order {intent.order_id} ({self._items_text(order)}) is pending and can "
                                       "be cancelled. What is the reason for the cancellation: no longer needed, "
                                       "or ordered by mistake?")
        return self._confirm(intent, "cancel_pending_order", {"order_id": intent.order_id, "reason": intent.reason})

    def _order_address(self, intent: Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"the shipping address of order {intent.order_id} can't be changed: its "
                                        f"status is {status}, and only pending orders can be modified.")
        if intent.address is None:
            intent.address = self._parse_address(intent.text, intent.kind)
        if intent.address is None:
            found = self._address_reference(intent, order.get("address") or {})
            if isinstance(found, AgentTurn):
                return found
            intent.address = found
        if intent.address is None:
            return self._ask("address", "What is the new shipping address? Please write it like this: 12 Main "
                                        "Street, Apt 3, Springfield, IL 62701, USA.")
        return self._confirm(intent, "modify_pending_order_address", {"order_id": intent.order_id,
                                                                      **intent.address})

    def _user_address(self, intent: Intent) -> AgentTurn:
        if intent.address is None:
            found = self._address_reference(intent, (self._user or {}).get("address") or {})
            if isinstance(found, AgentTurn):
                return found
            intent.address = found
        if intent.address is None:
            return self._ask("address", "What is your new default address? Please write it like this: 12 Main "
                                        "Street, Apt 3, Springfield, IL 62701, USA.")
        return self._confirm(intent, "modify_user_address", {"user_id": self._user_id, **intent.address})

    def _payment(self, intent: Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "pending":
            return self._refuse(intent, f"the payment method of order {intent.order_id} can't be changed: its "
                                        f"status is {status}, and only pending orders can be modified.")
        current = self._order_method(order)
        if intent.payment_id is None:
            intent.payment_id = self._resolve_payment(intent.text if self._asking != "payment" else
                                                      self._last_user, exclude=current)
        if intent.payment_id is None:
            return self._ask("payment", "Which payment method should be used for the order? You have: "
                                        + self._methods_text() + ".")
        if intent.payment_id == current:
            return self._refuse(intent, f"I can't change the payment method of order {intent.order_id} to "
                                        f"{self._method_text(current)}: it is already paid with it, and the new "
                                        "method must be a different one.")
        method = self._method(intent.payment_id)
        total = self._order_total(order)
        if method.get("source") == "gift_card" and float(method.get("balance", 0)) < total:
            return self._refuse(intent, f"I can't change the payment of order {intent.order_id} to your gift card: "
                                        f"its balance is {money_text(float(method.get('balance', 0)))}, less than the "
                                        f"order total {money_text(total)}. The order stays on "
                                        f"{self._method_text(current)}.")
        return self._confirm(intent, "modify_pending_order_payment", {"order_id": intent.order_id,
                                                                      "payment_method_id": intent.payment_id})

    def _return(self, intent: Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        if status != "delivered":
            return self._refuse(intent, f"items of order {intent.order_id} can't be returned: its status is "
                                        f"{status}, and only delivered orders can be returned.")
        if intent.items is None:
            intent.items = self._match_items(intent, order)
            if not intent.items:
                intent.items = None
                return self._ask("items", "Which item(s) do you want to return? The order holds: "
                                          f"{self._items_text(order, options=True)}.")
        original = self._order_method(order)
        if intent.payment_id is None:
            text = intent.text if self._asking != "refund" else self._last_user
            first = self._asking == "refund" and re.search(r"\b(?:first|former)\b", text, re.IGNORECASE)
            if first or re.search(r"\b(?:original|same|paid with|used to pay|back to the)\b", text,
                                  re.IGNORECASE) and not re.search(r"\bnot (?:to )?the (?:card|one|payment)", text,
                                                                   re.IGNORECASE):
                intent.payment_id = original
            else:
                intent.payment_id = self._resolve_payment(text, exclude=None, prefer=original)
        if intent.payment_id is None:
            return self._ask("refund", "Which payment method should the refund go to: the original payment method "
                                       f"({self._method_text(original)}) or one of your gift cards?")
        method = self._method(intent.payment_id)
        if intent.payment_id != original and method.get("source") != "gift_card":
            intent.payment_id = None
            return self._ask("refund", "I'm sorry, but a refund can only go to the original payment method "
                                       f"({self._method_text(original)}) or to a gift card. Which one should it be?")
        return self._confirm(intent, "return_delivered_order_items", {
            "order_id": intent.order_id, "item_ids": intent.items, "payment_method_id": intent.payment_id})

    def _items(self, intent: Intent, order: dict[str, Any]) -> AgentTurn:
        status = str(order.get("status"))
        exchange = intent.kind == "exchange"
        if exchange and status != "delivered":
            return self._refuse(intent, f"items of order {intent.order_id} can't be exchanged: its status is "
                                        f"{status}, and only delivered orders can be exchanged.")
        if not exchange and status != "pending":
            return self._refuse(intent, f"the items of order {intent.order_id} can't be changed: its status is "
                                        f"{status}, and only pending orders can be modified.")
        if intent.items is None:
            items = self._match_items(intent, order)
            if not items:
                return self._ask("items", f"Which item(s) do you want to {'exchange' if exchange else 'change'}? "
                                          f"The order holds: {self._items_text(order, options=True)}.")
            intent.items = items
        by_id = {str(it["item_id"]): it for it in order.get("items", [])}
        for item_id in intent.items:
            pid = str(by_id[item_id]["product_id"])
            if pid not in self._products:
                return self._call("get_product_details", {"product_id": pid})
        if intent.new_items is None:
            chosen: list[str] = []
            seen: dict[str, int] = {}
            for item_id in intent.items:
                name = str(by_id[item_id].get("name"))
                parts = change_parts(intent.text, name) if self._asking != "options" else []
                k = seen[name] = seen.get(name, -1) + 1
                pick = self._choose_variant(intent, by_id[item_id], part=parts[k] if len(parts) > 1 and
                                            k < len(parts) else None)
                if isinstance(pick, AgentTurn):
                    return pick
                chosen.append(pick)
            intent.new_items = chosen
        if intent.payment_id is None:
            text = intent.text if self._asking != "payment" else self._last_user
            intent.payment_id = self._resolve_payment(text, exclude=None, prefer=self._order_method(order))
            if intent.payment_id is None and re.search(r"\b(?:original|same|paid with)\b", text, re.IGNORECASE):
                intent.payment_id = self._order_method(order)
        diff = self._difference(order, intent.items, intent.new_items)
        if intent.payment_id is None:
            return self._ask("payment", f"Which payment method should {'pay' if diff >= 0 else 'receive'} the "
                                        f"price difference of {money_text(abs(diff))}? You have: "
                                        f"{self._methods_text()}.")
        method = self._method(intent.payment_id)
        if method.get("source") == "gift_card" and float(method.get("balance", 0)) < diff:
            intent.payment_id = None
            if "gift card short" in intent.notes:
                # named again after being told it does not cover the difference: the change can't be made with it
                return self._refuse(intent, f"your gift card balance ({money_text(float(method.get('balance', 0)))}) "
                                            f"does not cover the price difference of {money_text(diff)}, so I can't "
                                            "make this change with it.")
            intent.notes.append("gift card short")
            return self._ask("payment", f"Your gift card balance ({money_text(float(method.get('balance', 0)))}) does "
                                        f"not cover the price difference of {money_text(diff)}. Which other payment "
                                        "method should pay it?")
        name = "exchange_delivered_order_items" if exchange else "modify_pending_order_items"
        return self._confirm(intent, name, {"order_id": intent.order_id, "item_ids": intent.items,
                                            "new_item_ids": intent.new_items, "payment_method_id": intent.payment_id})

    def _choose_variant(self, intent: Intent, item: dict[str, Any], part: str | None = None) -> str | AgentTurn:
        """Return the new item id for ``item`` from the user's words, or the message asking which one.

        ``part`` is the user's words about this very item when the same product is changed more than once.
        """
        product = self._products[str(item["product_id"])]
        variants = list(product.get("variants", {}).values())
        old = {k: str(v) for k, v in item.get("options", {}).items()}
        order = self._orders.get(str(intent.order_id), {})
        names = [str(it.get("name")) for it in order.get("items", []) if str(it["item_id"]) in (intent.items or [])]
        text = self._last_user if self._asking == "options" else part if part is not None else self._segment(
            intent.text, str(item["name"]), names)
        new_part = text if self._asking == "options" else split_change(text, str(item["name"]))[1]
        offered = self._offered_choice(text)
        if offered is not None:
            return offered
        # another product named as the new item: not possible
        other = [n for n in (self._product_types or {}) if n != item["name"] and name_mentioned(new_part, n)
                 and not name_mentioned(new_part, str(item["name"]))]
        if other:
            return self._refuse(intent, f"I can't exchange the {item['name']} for a {other[0]}: an item can only be "
                                        "exchanged for another variant of the same product.")
        if self._product_types is None and self._asking != "options" and not any(
                mentions(new_part, str(v)) for var in variants for v in var.get("options", {}).values()):
            return self._call("list_all_product_types", {})
        wanted = self._wanted_options(old, variants, new_part)
        if wanted and len(wanted) > 1 and self._draw("forget_constraint", f"ignored the wanted {item['name']} "
                                                                          "option " + next(iter(wanted))):
            wanted.pop(next(iter(wanted)))
        if not wanted and re.search(r"\b(?:same|identical|exactly|new one|replacement|another one)\b", new_part,
                                    re.IGNORECASE) or not wanted and self._asking == "options" and all(
                                        mentions(new_part, v) for v in old.values()):
            same = next((v for v in variants if str(v["item_id"]) == str(item["item_id"])), None)
            if same is not None and same.get("available"):
                return str(item["item_id"])
        target = {**old, **wanted}
        match = [v for v in variants if {k: str(x) for k, x in v.get("options", {}).items()} == target]
        if wanted and match:
            return self._take_variant(intent, item, variants, match[0], target)
        return self._offer_variants(intent, item, variants, old)

    def _offered_choice(self, text: str) -> str | None:
        """The variant the user picks by its place in the list offered ("the second one", "option 3"), if any."""
        if self._asking != "options" or not self._offered:
            return None
        ordinal = re.search(r"\b(first|second|third|fourth|fifth|last)\b|\b(?:number|option|#)\s*(\d+)\b",
                            text, re.IGNORECASE)
        if ordinal:
            words = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}
            k = words[ordinal.group(1).lower()] if ordinal.group(1) else int(ordinal.group(2)) - 1
            if -1 <= k < len(self._offered):
                return self._offered[k]
        return None

    def _take_variant(self, intent: Intent, item: dict[str, Any], variants: list[dict[str, Any]],
                      chosen: dict[str, Any], target: dict[str, str]) -> str | AgentTurn:
        """The chosen variant's item id (refused when unavailable; ``wrong_item`` may pick another)."""
        if not chosen.get("available"):
            return self._refuse(intent, f"the {item['name']} ({self._options_text(target)}) is not available "
                                        "right now, so that exchange is not possible." if intent.kind ==
                                "exchange" else f"the {item['name']} ({self._options_text(target)}) is not "
                                                "available right now, so that change is not possible.")
        new_id = str(chosen["item_id"])
        others = [str(v["item_id"]) for v in variants if v.get("available") and str(v["item_id"]) not in
                  (new_id, str(item["item_id"]))]
        if others and self._draw("wrong_item", f"picked another {item['name']} variant"):
            new_id = others[int(self._faults.rng.integers(len(others)))]
        return new_id

    def _offer_variants(self, intent: Intent, item: dict[str, Any], variants: list[dict[str, Any]],
                        old: dict[str, str]) -> AgentTurn:
        """List the available variants and ask which one (refused after three rejections, or with none left)."""
        if self._asking == "options" and intent.rejections > 2:
            return self._refuse(intent, "I can't make that change: I could not find the variant you want.")
        available = [v for v in variants if v.get("available") and str(v["item_id"]) != str(item["item_id"])]
        if not available:
            return self._refuse(intent, f"I can't change the {item['name']}: no other variant of it is available "
                                        "right now.")
        if self._asking == "options":
            intent.rejections += 1
        self._offered = [str(v["item_id"]) for v in available]
        listing = "\n".join(f"- {self._options_text(v.get('options', {}))} ({money_text(float(v['price']))})"
                            for v in available)
        self._asking = "options"
        return self._say(f"Which options do you want for the new {item['name']} (now: {self._options_text(old)})? "
                         f"These are available:\n{listing}\nWhich one would you like?")

    def _info(self, intent: Intent) -> AgentTurn:
        assert self._user is not None
        text = intent.text
        order_id = self._info_order(intent)
        if isinstance(order_id, AgentTurn):
            return order_id
        if order_id and self._owns(order_id) and order_id not in self._orders:
            return self._call("get_order_details", {"order_id": order_id})
        parts: list[str] = []
        for answer in (self._product_answer, self._paid_with_answer, self._split_answer, self._cheapest_answer,
                       self._gift_card_answer, self._money_answer, self._order_answer):
            found = answer(text, order_id)
            if isinstance(found, AgentTurn):
                return found
            parts.extend(found)
        parts = [p.strip() for p in parts if p.strip()]
        if not parts and re.search(r"order", text, re.IGNORECASE) and order_id is None:
            return self._which_order(intent)
        if not parts:
            return self._finish(intent, "I'm sorry, I don't have that information. I can tell you about your orders, "
                                        "their status and totals, and your gift card balances.")
        return self._finish(intent, " ".join(parts))

    def _info_order(self, intent: Intent) -> str | AgentTurn | None:
        """The order a question is about: named, the most recent, described, or the one just spoken of."""
        text = intent.text
        order_id = intent.order_id
        if order_id is None:
            order_id = intent.order_id = self._recent_order(text)
        if order_id is None:
            described = self._order_described(text)
            if isinstance(described, AgentTurn):
                return described
            order_id = intent.order_id = described
        if order_id is None and re.search(r"\b(?:the|that|this|same|my new|the new) order\b|\bit\b", text,
                                            re.IGNORECASE):
            order_id = intent.order_id = self._last_result.get("order_id") or next(
                (i.order_id for i in reversed(self._intents) if i.order_id), None)
        return order_id

    def _which_order(self, intent: Intent) -> AgentTurn:
        """Ask which order a question is about; list the orders when the user said it does not know."""
        assert self._user is not None
        if self._asking == "order_id" and UNKNOWN_RE.search(self._last_user):
            for oid in self._user.get("orders", []):
                if oid not in self._orders:
                    return self._call("get_order_details", {"order_id": oid})
            listing = "\n".join(f"- {oid} ({self._orders[oid].get('status')}, total "
                                f"{money_text(self._order_total(self._orders[oid]))}): "
                                f"{self._items_text(self._orders[oid])}"
                                for oid in self._user.get("orders", []) if not self._orders[oid].get("missing"))
            if listing:
                return self._finish(intent, f"These are your orders:\n{listing}\n")
        return self._ask("order_id", ASK_ORDER)

    def _absorb_tool(self, name: str, args: dict[str, Any], data: Any, ok: bool, content: str) -> None:
        if name == "find_user_id_by_email" or name == "find_user_id_by_name_zip":
            if ok and isinstance(data, str) and data:
                self._user_id = data
                self._auth_failed = False
            else:
                self._auth_failed = True
        elif name == "get_user_details" and isinstance(data, dict):
            self._user = data
        elif name == "get_order_details" and isinstance(data, dict):
            self._orders[str(data.get("order_id", args.get("order_id")))] = data
        elif name == "get_order_details":
            self._orders[str(args.get("order_id"))] = {"missing": True}
        elif name == "get_product_details" and isinstance(data, dict):
            self._products[str(data.get("product_id", args.get("product_id")))] = data
        elif name == "list_all_product_types" and isinstance(data, dict):
            self._product_types = {str(k): str(v) for k, v in data.items()}
        elif name in _WRITES:
            self._after_write(name, args, data if isinstance(data, dict) else None, content)

    def _after_write(self, name: str, args: dict[str, Any], data: dict[str, Any] | None, content: str) -> None:
        intent = self._current()
        if intent is None:
            return
        if data is None:
            intent.done = True
            self._last_result = {"error": content}
            self._report = f"I'm sorry, the request could not be completed: {content}"
            return
        self._last_result = {"order_id": args.get("order_id"), "money": "", "detail": ""}
        before = self._orders.get(str(args.get("order_id")), {})
        self._track_balances(name, args, before)
        if "order_id" in args:
            self._orders[str(args["order_id"])] = data
        if name == "modify_user_address":
            old = (self._user or {}).get("address") or {}
            self._previous_address = {k: str(old.get(k, "")) for k in ("address1", "address2", "city", "state",
                                                                       "country", "zip")}
            self._user = data
        intent.done = True
        self._report = self._result_text(name, args, data)
        by_id = {str(it["item_id"]): it for it in before.get("items", [])}
        if name == "cancel_pending_order":
            self._last_result["detail"] = "It covers " + "; ".join(
                f"{it.get('name')} {money_text(float(it.get('price', 0)))}" for it in before.get("items", [])) + "."
        elif name == "return_delivered_order_items":
            self._last_result["detail"] = "It covers " + "; ".join(
                f"{by_id[i].get('name')} {money_text(float(by_id[i].get('price', 0)))}" for i in args["item_ids"]
                if i in by_id) + "."
        elif "new_item_ids" in args:
            prices = {str(v["item_id"]): float(v["price"]) for p in self._products.values()
                      for v in p.get("variants", {}).values()}
            self._last_result["detail"] = "Per item: " + "; ".join(
                f"{by_id[o].get('name')} {money_text(float(by_id[o].get('price', 0)))} -> "
                f"{money_text(prices.get(n, 0.0))}"
                for o, n in zip(args["item_ids"], args["new_item_ids"], strict=True) if o in by_id) + "."

    def _track_balances(self, name: str, args: dict[str, Any], before: dict[str, Any]) -> None:
        """Update the gift card balances known from the user's details after a write (no new look-up)."""
        def add(method_id: str | None, amount: float) -> None:
            method = (self._user or {}).get("payment_methods", {}).get(method_id)
            if method is not None and method.get("source") == "gift_card":
                method["balance"] = round(float(method.get("balance", 0)) + amount, 2)

        payments = [p for p in before.get("payment_history", []) if p.get("transaction_type") == "payment"]
        if name == "cancel_pending_order":
            for p in payments:
                add(str(p.get("payment_method_id")), float(p.get("amount", 0)))
        elif name == "modify_pending_order_payment" and payments:
            amount = float(payments[0].get("amount", 0))
            add(str(args["payment_method_id"]), -amount)
            add(str(payments[0].get("payment_method_id")), amount)
        elif name == "modify_pending_order_items":
            add(str(args["payment_method_id"]), -self._pending_diff)

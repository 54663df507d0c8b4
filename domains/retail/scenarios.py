"""Structured user scenarios for retail tasks that carry only an instruction (tau-bench's task lists).

A tau-bench retail task gives the simulated user a free-text instruction, and the grader gold actions and
required outputs. The rule-based user (:mod:`simulator.users.rule_user`) needs a structured scenario instead:
identity slots and an ordered agenda of :class:`~simulator.types.tasks.Intent`. :func:`derive_retail_scenario`
builds one from three sources:

- the instruction: which identity values the user may state (name and zip code, e-mail, user id), whether it
  knows an order id, which option values and payment details it mentions, and the sentences that ask for the
  required outputs;
- the gold actions: one intent per write action, in gold order (a write repeated on the same order and items,
  e.g. a refund retried to another payment method, becomes the first one's ``fallback``);
- the user's record in the template database: product names and option values of the items (the user
  describes items, it never knows item ids), the payment method's kind, addresses.

The user is never given a value its instruction does not give, except plain descriptions: product names,
option values, payment kinds ("gift card", "paypal", "credit card") and cancellation reasons. Item, product
and payment-method ids, user ids and order ids appear only when the instruction states them. An address is
given in full only when the instruction gives all of it, in part when it gives only the changed part (a new
suite), and otherwise named by where it is (the profile, the order with the items ...).

Each intent's ``confirm_terms`` make the user say no to a confirmation that misses what it wants: the order id
it knows (else the product names), the distinguishing option values of the items, the wanted option values,
the payment kind (when money moves), the cancellation reason, the address line or the parts of the address the
instruction gives.

Where the sources do not determine what the user should say (a payment method among two credit cards, an
address the instruction does not give, a task without write actions), the derivation still returns a
playable scenario and lists the problem in :attr:`Derivation.gaps`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from domains.retail._data import ADDRESS_KEYS, order_record, product_record, user_record
from domains.retail.models import Product
from simulator.world.kit import (
    Action,
    Intent,
    Task,
    TemplateDatabase,
    TrialDatabase,
    UserScenario,
    identity_facts,
    instruction_sections,
)

__all__ = ["WRITE_TOOLS", "Derivation", "derive_retail_scenario", "render_address"]

WRITE_TOOLS = {
    "cancel_pending_order": "cancel",
    "return_delivered_order_items": "return",
    "exchange_delivered_order_items": "exchange",
    "modify_pending_order_items": "modify_items",
    "modify_pending_order_address": "modify_address",
    "modify_pending_order_payment": "modify_payment",
    "modify_user_address": "modify_user_address",
    "transfer_to_human_agents": "transfer",
}
"""Retail tools that change the state or end the conversation, and the intent kind each one serves."""

_UNKNOWN_INFO = ["item ids", "product ids", "payment method ids", "order ids the instruction does not give"]


@dataclass(frozen=True)
class Derivation:
    """A derived scenario and what the derivation could not settle.

    Attributes:
        scenario: the task's scenario with ``identity`` and ``agenda`` filled in.
        gaps: human-readable problems (empty: the agenda says everything the gold actions need), e.g.
            ``"intent 2: the item description 'laptop' fits 2 items"``.
    """

    scenario: UserScenario
    gaps: tuple[str, ...] = ()


def render_address(address: dict[str, Any]) -> str:
    """Render an address as ``ADDRESS1, ADDRESS2, CITY, STATE ZIP, COUNTRY`` (ADDRESS2 left out when empty).

    Args:
        address: an object with the retail address keys (``address1``, ``address2``, ``city``, ``state``,
            ``zip``, ``country``).

    Returns:
        The one-line address.
    """
    parts = [str(address.get("address1", ""))]
    if address.get("address2"):
        parts.append(str(address["address2"]))
    parts += [str(address.get("city", "")), f"{address.get('state', '')} {address.get('zip', '')}".strip(),
              str(address.get("country", ""))]
    return ", ".join(p for p in parts if p)


# --- text helpers -------------------------------------------------------------------------------------------

def _norm(text: str) -> str:
    """Lower-case ``text``, turn every run of non-alphanumerics into one space, and pad it with spaces."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def _mentions(norm_text: str, value: Any) -> bool:
    """Tell whether ``value`` occurs in a text normalised by :func:`_norm`, as whole words."""
    v = _norm(str(value)).strip()
    return bool(v) and f" {v} " in norm_text


def _join(words: Sequence[str]) -> str:
    """Join phrases as ``a``, ``a and b``, ``a, b and c``."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


_PERSON = [
    (r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou've\b", "I've"), (r"\byou'd\b", "I'd"),
    (r"\byou'll\b", "I'll"), (r"\byourself\b", "myself"), (r"\byours\b", "mine"), (r"\byour\b", "my"),
    (r"\bto you\b", "to me"), (r"\bfor you\b", "for me"),
    (r"\b(help|tell|give|show|send|let|ask) you\b", r"\1 me"), (r"\byou\b", "I"),
    (r"\bthe agent\b", "you"),
]


def _first_person(text: str) -> str:
    """Turn an instruction's second-person clause into the user's first-person words (best effort)."""
    out = text
    for pattern, repl in _PERSON:
        out = re.sub(pattern, repl, out, flags=re.IGNORECASE)
    return out


def _sentences(text: str) -> list[tuple[int, str]]:
    """Split an instruction into sentences (and ``;``-separated parts) with their start offsets."""
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"(?<![^.;!?\n])[^.;!?\n]++(?:[.!?;]+|$)", text):
        s = m.group(0).strip()
        if s:
            out.append((m.start() + (len(m.group(0)) - len(m.group(0).lstrip())), s))
    return out


# --- the user's world, read from the template ------------------------------------------------------------------

@dataclass
class _World:
    """Records read from the template for one task (cached by id)."""

    db: TrialDatabase
    orders: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    products: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    _variant_index: dict[str, tuple[str, str, dict[str, Any]]] | None = None

    def order(self, order_id: str) -> dict[str, Any] | None:
        if order_id not in self.orders:
            self.orders[order_id] = order_record(self.db.raw, order_id)
        return self.orders[order_id]

    def product(self, product_id: str) -> dict[str, Any] | None:
        if product_id not in self.products:
            self.products[product_id] = product_record(self.db.raw, product_id)
        return self.products[product_id]

    def all_products(self) -> list[dict[str, Any]]:
        ids = [row[0] for row in self.db.connection.execute(select(Product.id).order_by(Product.position))]
        return [p for p in (self.product(i) for i in ids) if p is not None]

    def variant(self, item_id: str) -> tuple[str, str, dict[str, Any]] | None:
        """Return (product name, product id, options) of a catalogue item id, or None."""
        if self._variant_index is None:
            self._variant_index = {}
            for p in self.all_products():
                for vid, v in p["variants"].items():
                    self._variant_index[vid] = (p["name"], p["product_id"], dict(v["options"]))
        return self._variant_index.get(item_id)


# --- derivation --------------------------------------------------------------------------------------------

class _Deriver:
    """Derives one task's scenario; collects gaps on the way."""

    def __init__(self, task: Task, world: _World):
        self.task = task
        self.world = world
        self.instr = task.scenario.instructions
        self.norm = _norm(self.instr)
        self.gaps: list[str] = []
        told = identity_facts(instruction_sections(self.instr).get("known info") or self.instr)
        self.told = told
        uid = task.user_id or self._gold_user() or (told.get("user_id", "") if user_record(
            world.db.raw, told.get("user_id", "")) else "")
        self.uid = uid
        self.user: dict[str, Any] = user_record(world.db.raw, uid) or {} if uid else {}
        if task.user_id and not self.user:
            self.gaps.append(f"user {task.user_id!r} not found in the data")
        self.user_address: dict[str, Any] = dict(self.user.get("address", {}))
        self.first_user_address = dict(self.user_address)
        self.user_address_changed = False

    def _gold_user(self) -> str:
        """The user the gold actions act for (tau2's tasks name none): a ``user_id`` argument, else an order's owner."""
        for a in self.task.gold_actions:
            uid = a.arguments.get("user_id")
            if isinstance(uid, str) and uid:
                return uid
        for a in self.task.gold_actions:
            oid = a.arguments.get("order_id")
            order = self.world.order(oid) if isinstance(oid, str) else None
            if order is not None and order.get("user_id"):
                return str(order["user_id"])
        return ""

    # identity ------------------------------------------------------------------------------------------------
    def identity(self) -> dict[str, str]:
        ident: dict[str, str] = {}
        uid = self.uid
        low = self.instr.lower()
        given_uid = bool(uid) and re.search(rf"(?<![a-z0-9_]){re.escape(uid.lower())}(?![a-z0-9_])", low) is not None
        if given_uid:
            ident["user_id"] = uid
        name = self.user.get("name", {})
        first, last = str(name.get("first_name", "")), str(name.get("last_name", ""))
        in_uid = given_uid and uid.lower().startswith(f"{first.lower()}_{last.lower()}_")
        has_first = bool(first) and (in_uid or _mentions(self.norm, first))
        has_last = bool(last) and (in_uid or _mentions(self.norm, last))
        if not (has_first and has_last):
            m = re.search(r"\b(?:[Yy]ou are|[Yy]our name is|[Yy]ou name is|called)\s+([A-Z][a-z]+)\s+([A-Z][a-z]+)\b",
                          self.instr)
            if m and not (has_first or has_last):
                first, last, has_first, has_last = m.group(1), m.group(2), True, True
                self.gaps.append(f"identity: the instruction's name {first} {last} is not the user's record")
        if has_first:
            ident["first_name"] = first
        if has_last:
            ident["last_name"] = last
        if has_first and has_last:
            ident["name"] = f"{first} {last}"
        emails = re.findall(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", self.instr)
        record_email = str(self.user.get("email", "")).lower()
        for e in emails:
            if e.lower() == record_email:
                ident["email"] = e
                break
        else:
            if emails:
                ident["email"] = emails[0]
        zip_code = str(self.user.get("address", {}).get("zip", ""))
        if zip_code and re.search(rf"(?<!\d){re.escape(zip_code)}(?!\d)", self.instr):
            ident["zip"] = zip_code
        else:
            m5 = re.search(r"(?<![\d#W$.])\d{5}(?!\d|\.\d)", self.instr)
            if m5:
                ident["zip"] = m5.group(0)
        if not self.user:  # no record to check the instruction against: what it states about the user
            ident = {**self.told, **ident}
        if not ("email" in ident or "user_id" in ident or ("name" in ident and "zip" in ident)):
            self.gaps.append("identity: the instruction gives neither an e-mail, a user id, nor a name with a zip")
        return ident

    # small facts -----------------------------------------------------------------------------------------------
    def order_known(self, order_id: str) -> bool:
        digits = order_id.lstrip("#W")
        return bool(digits) and re.search(rf"(?<![\dA-Za-z])#?W?{re.escape(digits)}(?!\d)", self.instr) is not None

    def user_items(self) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for oid in self.user.get("orders", []):
            order = self.world.order(oid)
            if order:
                out.extend((oid, it) for it in order["items"])
        return out

    def item(self, order_id: str, item_id: str) -> dict[str, Any]:
        order = self.world.order(order_id)
        for it in (order or {}).get("items", []):
            if it["item_id"] == item_id:
                return dict(it)
        found = self.world.variant(item_id)
        if found is None:
            self.gaps.append(f"item of order {order_id} not found in the catalogue")
            return {"name": "item", "item_id": item_id, "product_id": "", "options": {}}
        self.gaps.append(f"an item of the gold action is not in order {order_id}")
        return {"name": found[0], "item_id": item_id, "product_id": found[1], "options": found[2]}

    def distinguishing(self, order_id: str, it: dict[str, Any]) -> list[str]:
        """Option names whose values tell ``it`` from the same-named items the user could mean."""
        scope = ([(order_id, x) for x in (self.world.order(order_id) or {}).get("items", [])]
                 if self.order_known(order_id) else self.user_items())
        peers = [x for _, x in scope if x["name"] == it["name"] and x["item_id"] != it["item_id"]]
        return [k for k in it["options"] if any(p["options"].get(k) != it["options"][k] for p in peers)]

    def describe(self, order_id: str, it: dict[str, Any], where: str) -> str:
        """A plain description: product name plus the option values that tell it from same-named items."""
        scope = ([(order_id, x) for x in (self.world.order(order_id) or {}).get("items", [])]
                 if self.order_known(order_id) else self.user_items())
        peers = [x for _, x in scope if x["name"] == it["name"] and x["item_id"] != it["item_id"]]
        keys = self.distinguishing(order_id, it)
        same = [p for p in peers if all(p["options"].get(k) == v for k, v in it["options"].items())]
        if same:
            self.gaps.append(f"{where}: the description of the {it['name'].lower()} fits several items")
        text = it["name"].lower()
        if keys:
            text += " (" + ", ".join(f"{k}: {it['options'][k]}" for k in keys) + ")"
        return text

    def payment(self, method_id: str, where: str, order_id: str = "") -> str:
        methods: dict[str, Any] = self.user.get("payment_methods", {})
        method = methods.get(method_id) or {}
        source = str(method.get("source") or method_id.rsplit("_", 1)[0])
        if source == "gift_card":
            return "gift card"
        if source == "paypal":
            return "paypal"
        last4 = str(method.get("last_four") or "")
        brand = str(method.get("brand") or "")
        if last4 and re.search(rf"(?<!\d){last4}(?!\d)", self.instr):
            return f"credit card ending in {last4}"
        cards = [m for m in methods.values() if m.get("source") == "credit_card"]
        if brand and _mentions(self.norm, brand):
            if sum(1 for m in cards if m.get("brand") == brand) > 1:
                self.gaps.append(f"{where}: several {brand} cards; the instruction does not say which")
            return f"{brand} credit card"
        history = (self.world.order(order_id) or {}).get("payment_history", []) if order_id else []
        original = bool(history) and history[0].get("payment_method_id") == method_id
        if len(cards) > 1 and original and _mentions(self.norm, "original"):
            return "original credit card"
        if len(cards) > 1 and re.search(rf"(?<![a-z0-9_]){re.escape(method_id)}(?![0-9])", self.instr):
            return f"credit card {method_id}"  # the instruction names the method by its id
        if len(cards) > 1:
            self.gaps.append(f"{where}: the user has {len(cards)} credit cards; the instruction does not say which")
        return "credit card"

    def address_slot(self, new: dict[str, Any], old: dict[str, Any], where: str,
                     order_id: str | None = None) -> tuple[dict[str, str] | str | None, str, list[str]]:
        """Return the address the user gives (None when it does not know it), a phrase naming it, confirm terms.

        The user gives the whole new address when the instruction mentions all of it (state and country follow
        from city and zip); when the instruction gives only the parts that change (e.g. a new suite), only
        those, as a sentence. Otherwise it names the address by where it is (its
        profile, another order) and checks a confirmation only against the parts the instruction mentions.
        """
        new_addr = {k: str(new.get(k, "")) for k in ADDRESS_KEYS}
        differ = [k for k in ADDRESS_KEYS if new_addr[k].lower() != str(old.get(k, "")).lower()]
        told = [k for k in differ if k not in ("state", "country") and new_addr[k]]
        if told and all(_mentions(self.norm, new_addr[k]) for k in told):
            parts = [k for k in ADDRESS_KEYS if k not in ("state", "country") and new_addr[k]]
            if all(_mentions(self.norm, new_addr[k]) for k in parts):
                return new_addr, render_address(new_addr), [new_addr["address1"]]
            # Only the changed parts are the user's to say; the rest stays as the agent finds it.
            said = ", ".join(new_addr[k] for k in told) + " (the rest of the address stays the same)"
            return said, said, [new_addr[k] for k in told]
        same = {k: new_addr[k].lower() for k in ADDRESS_KEYS}

        def equal(a: dict[str, Any]) -> bool:
            return {k: str(a.get(k, "")).lower() for k in ADDRESS_KEYS} == same

        terms = [new_addr[k] for k in ("city", "zip") if new_addr[k] and _mentions(self.norm, new_addr[k])]
        where_city = f" in {new_addr['city']}" if new_addr["city"] in terms else ""
        # A user address "changed" to what it already is names the order that ships there, not the profile.
        if equal(self.first_user_address) and not (order_id is None and equal(old)):
            if self.user_address_changed:
                return None, "the address I had before" + where_city, terms
            return None, "my default address in my profile" + where_city, terms
        for oid in self.user.get("orders", []):
            order = self.world.order(oid)
            if order and oid != order_id and equal(order["address"]):
                names = _join(_dedup(it["name"].lower() for it in order["items"]))
                return None, f"the address{where_city} that my order with the {names} ships to", terms
        self.gaps.append(f"{where}: the new address is neither given by the instruction nor in the user's records")
        return None, "my new address" + where_city, terms

    # intents ---------------------------------------------------------------------------------------------------
    def write_intent(self, action: Action, n: int) -> Intent:
        kind = WRITE_TOOLS[action.name]
        args = action.arguments
        where = f"intent {n}"
        if kind == "transfer":
            return self.transfer_intent()
        if kind == "modify_user_address":
            addr, phrase, terms = self.address_slot(args, self.user_address, where)
            self.user_address = {k: str(args.get(k, "")) for k in ADDRESS_KEYS}
            self.user_address_changed = True
            slots: dict[str, Any] = {"address": addr} if addr else {}
            return Intent(kind=kind, request=[f"update my default address to {phrase}",
                                              f"change the address on my account to {phrase}"],
                          slots=slots, confirm_terms=terms)
        order_id = str(args.get("order_id", ""))
        known = self.order_known(order_id)
        order = self.world.order(order_id)
        if order is None:
            self.gaps.append(f"{where}: order {order_id} not found in the data")
        slots = {"order_id": order_id} if known else {}
        terms = [order_id] if known else []
        order_items = _dedup(it["name"].lower() for it in (order or {}).get("items", []))
        order_phrase = (f"order {order_id}" if known
                        else f"my {(order or {}).get('status', 'recent')} order with the {_join(order_items)}")
        if kind == "cancel":
            reason = str(args.get("reason", ""))
            slots |= {"items": order_items, "reason": reason}
            return Intent(kind=kind, request=[f"cancel {order_phrase}", f"cancel {order_phrase}, {reason}",
                                              f"I'd like {order_phrase} cancelled"],
                          slots=slots, confirm_terms=[*terms, reason])
        if kind == "modify_address":
            addr, phrase, addr_terms = self.address_slot(args, (order or {}).get("address", {}), where, order_id)
            slots |= {"items": order_items}
            if addr:
                slots["address"] = addr
            # The address ends each request: agents read it up to the end of the message.
            return Intent(kind=kind, request=[f"change the shipping address of {order_phrase} to {phrase}",
                                              f"have {order_phrase} shipped instead to {phrase}"],
                          slots=slots, confirm_terms=[*terms, *addr_terms])
        if kind == "modify_payment":
            pay = self.payment(str(args.get("payment_method_id", "")), where, order_id)
            slots |= {"items": order_items, "payment": pay}
            return Intent(kind=kind, request=[f"change the payment method of {order_phrase} to my {pay}",
                                              f"pay for {order_phrase} with my {pay} instead"],
                          slots=slots, confirm_terms=[*terms, _pay_term(pay)])
        return self.item_intent(kind, action, n, order_id, known, slots, terms)

    def item_intent(self, kind: str, action: Action, n: int, order_id: str, known: bool,
                    slots: dict[str, Any], terms: list[str]) -> Intent:
        args = action.arguments
        where = f"intent {n}"
        olds = [self.item(order_id, str(i)) for i in args.get("item_ids", [])]
        items = [self.describe(order_id, it, where) for it in olds]
        pay = self.payment(str(args.get("payment_method_id", "")), where, order_id)
        slots |= {"items": items, "payment": pay}
        status = str((self.world.order(order_id) or {}).get("status", ""))
        in_order = (f" in order {order_id}" if known else " in my pending order" if status.startswith("pending")
                    else " from my delivered order" if status == "delivered" else "")
        if not known:
            terms = [*terms, *_dedup(it["name"].lower() for it in olds)]
        # A confirmation must name the values that tell each item from its same-named siblings.
        terms = _dedup([*terms, *(str(it["options"][k]) for it in olds for k in self.distinguishing(order_id, it))])
        if kind == "return":
            what = _join([f"the {d}" for d in items])
            return Intent(kind=kind, request=[f"return {what}{in_order}",
                                              f"return {what}{in_order} and get the refund to my {pay}",
                                              f"make a return of {what}{in_order}"],
                          slots=slots, confirm_terms=[*terms, _pay_term(pay)])
        news = [str(i) for i in args.get("new_item_ids", [])]
        prefs: dict[str, str] = {}
        wants: list[str] = []
        new_descs: list[str] = []
        for old, desc, new_id in zip(olds, items, news, strict=False):
            same_item = new_id == old["item_id"]
            # The same item again: the user wants exactly its current options.
            p = {k: str(v) for k, v in old["options"].items()} if same_item else self.wanted_options(old, new_id, where)
            name = old["name"].lower()
            for k, v in p.items():
                # Two items wanting different values of one option: key the later one by its product too.
                prefs[k if prefs.get(k, v) == v else f"{name} {k}"] = v
            if same_item:
                wants.append(f"the {desc} for a new one, exactly the same item")
                new_descs.append(f"{name} (the same item: " + ", ".join(f"{k}: {v}" for k, v in p.items()) + ")")
            elif p:
                opts = ", ".join(f"{k} {v}" for k, v in p.items())
                wants.append(f"the {desc} for a {name} with {opts}")
                new_descs.append(f"{name} (" + ", ".join(f"{k}: {v}" for k, v in p.items()) + ")")
            else:
                wants.append(f"the {desc} for a new one, exactly the same item")
                new_descs.append(f"{name} (the same item)")
        slots["new_items"] = new_descs
        verb = "exchange" if kind == "exchange" else "change"
        what = _join(wants)
        items_what = _join([f"the {d}" for d in items])
        requests = [f"{verb} {what}{in_order}"]
        if len(wants) == 1:
            requests.append(f"{verb} {items_what}{in_order}: I want {wants[0].split(' for ', 1)[1]}")
        else:  # several items: keep each new wish beside its item, never a list of wishes apart from the items
            requests.append(f"{verb} some items{in_order}: {what}")
        # With no price difference nothing is charged or refunded: an agent need not name the payment method.
        pay_terms = [] if abs(self.price_difference(olds, news)) < 0.005 else [_pay_term(pay)]
        return Intent(kind=kind, request=requests, slots=slots, preferences=prefs,
                      confirm_terms=_dedup([*terms, *prefs.values(), *pay_terms]))

    def price_difference(self, olds: list[dict[str, Any]], new_ids: list[str]) -> float:
        """New items' catalogue prices minus the old items' paid prices (unknown prices count as a difference)."""
        total = 0.0
        for old, new_id in zip(olds, new_ids, strict=False):
            product = self.world.product(str(old.get("product_id", ""))) or {}
            variant = product.get("variants", {}).get(new_id)
            if variant is None or "price" not in old:
                return float("nan")
            total += float(variant["price"]) - float(old["price"])
        return total

    def wanted_options(self, old: dict[str, Any], new_id: str, where: str) -> dict[str, str]:
        """Option values of the new item that differ from the old one; only the mentioned ones when enough."""
        product = self.world.product(str(old.get("product_id", "")))
        variants: dict[str, Any] = (product or {}).get("variants", {})
        if new_id not in variants:
            found = self.world.variant(new_id)
            if found is None:
                self.gaps.append(f"{where}: a new item is not in the catalogue")
                return {}
            self.gaps.append(f"{where}: a new item is another product than the old one")
            return {k: str(v) for k, v in found[2].items()}
        new_opts = {k: str(v) for k, v in variants[new_id]["options"].items()}
        old_opts = {k: str(v) for k, v in old["options"].items()}
        differ = {k: v for k, v in new_opts.items() if old_opts.get(k) != v}
        told = {k: v for k, v in differ.items() if _mentions(self.norm, v)}
        if told and told != differ:
            target = old_opts | told
            fits = [vid for vid, v in variants.items()
                    if {k: str(x) for k, x in v["options"].items()} == target]
            if fits != [new_id]:
                return differ
        return told or differ

    def transfer_intent(self) -> Intent:
        if re.search(r"\b(human|representative|supervisor|manager|transfer)\b", self.instr, re.IGNORECASE):
            return Intent(kind="transfer", request=["transfer me to a human agent",
                                                    "I want to talk to a human representative"])
        wish = self.main_wish()
        self.gaps.append("transfer: the instruction does not ask for a human; the request is its main wish")
        return Intent(kind="transfer", request=[wish])

    def main_wish(self) -> str:
        for _, s in _sentences(self.instr):
            m = re.search(r"\b(?:want|wants|would like|wish|need)\s+to\s+(.+)", s, re.IGNORECASE)
            if m:
                return _first_person(m.group(1)).rstrip(" .;!?")
        return "I need help with my orders"

    # information requests ------------------------------------------------------------------------------------------
    def info_intents(self) -> list[tuple[int, bool, Intent]]:
        """Intents asking for the required outputs: (position in the instruction, asks about a result, intent)."""
        outputs = self.task.required_outputs
        if not outputs:
            return []
        option_names = self.option_names()
        chosen: dict[int, str] = {}
        for out in outputs:
            # a second output goes to another sentence that asks for it when there is one ("the refund ... and the
            # total amount you paid for the remaining items" are two questions)
            best = self.question_for(out, option_names, avoid=set(chosen)) or self.question_for(out, option_names)
            if best is None:
                self.gaps.append(f"info: no sentence of the instruction asks for output {out!r}")
                continue
            chosen.setdefault(best[0], best[1])
        result: list[tuple[int, bool, Intent]] = []
        for pos in sorted(chosen):
            q = chosen[pos]
            after = bool(re.search(r"\b(get back|refund|after|save|saved|pay today|need to pay|in total|total "
                                   r"amount|remaining|new order|balance after)\b", q, re.IGNORECASE))
            result.append((pos, after, Intent(kind="info", request=[q], ask=q)))
        return result

    def option_names(self) -> dict[str, set[str]]:
        names: dict[str, set[str]] = {}
        for p in self.world.all_products():
            names.setdefault(p["name"].lower(), set()).add("product")
            for v in p["variants"].values():
                for k, x in v["options"].items():
                    names.setdefault(str(x).lower(), set()).add(k)
        return names

    def question_for(self, output: str, option_names: dict[str, set[str]],
                     avoid: set[int] | None = None) -> tuple[int, str] | None:
        """Find the instruction clause asking for ``output``; return (its offset, the user's question).

        Sentences at the offsets in ``avoid`` (already asked) are skipped.
        """
        cues = r"\b(know|wonder|ask|check|confirm|inquire|how much|how many|what|which|whether|tracking|verify)\b"
        keys: set[str] = set()
        text = str(output).strip()
        low_text = text.lower()
        if any(low_text == str(a.get(k, "")).lower() for a in self.known_addresses() for k in ADDRESS_KEYS):
            keys |= {"address", "sent to", "shipped to"}
        elif re.fullmatch(r"\d{9,}", text):
            keys |= {"tracking"}
        elif re.fullmatch(r"[\d,]+(\.\d+)?", text):
            keys |= {"how much", "total", "amount", "price", "prices", "refund", "balance", "pay", "paid", "cost",
                     "save", "get back", "money", "how many", "options"}
        else:
            for name in option_names.get(low_text, set()) - {"product"}:
                keys |= {w for w in re.findall(r"[a-z]+", name.lower()) if len(w) > 2} | {"options", "option"}
            if "product" in option_names.get(low_text, set()):
                keys |= {"item", "most expensive", "cheapest"}
        best: tuple[float, int, str] | None = None
        for pos, s in _sentences(self.instr):
            if avoid and pos in avoid:
                continue
            low = s.lower()
            cue = re.search(cues, low)
            if not cue:
                continue
            score = sum(1 for k in keys if re.search(rf"\b{re.escape(k)}", low))
            if not re.fullmatch(r"[\d,.]+", text) and re.search(rf"\b{re.escape(low_text)}\b", low):
                score += 1
            if score == 0:
                continue
            if best is None or score > best[0]:
                best = (score, pos, s)
        if best is None:
            return None
        _, pos, sentence = best
        return pos, _question(sentence)

    def known_addresses(self) -> list[dict[str, Any]]:
        out = [self.first_user_address]
        for oid in self.user.get("orders", []):
            order = self.world.order(oid)
            if order:
                out.append(order["address"])
        return out

    def anchor(self, action: Action) -> int:
        """Where the instruction first talks about an action's order or items (its length when nowhere)."""
        low = self.instr.lower()
        hits: list[int] = []
        order_id = str(action.arguments.get("order_id", ""))
        digits = order_id.lstrip("#W")
        if digits and digits in low:
            hits.append(low.index(digits))
        order = self.world.order(order_id) if order_id else None
        wanted = set(action.arguments.get("item_ids", []))
        for it in (order or {}).get("items", []):
            if wanted and it["item_id"] not in wanted:
                continue
            for word in (it["name"].lower(), it["name"].lower().split()[-1]):
                if word in low:
                    hits.append(low.index(word))
        if action.name in ("modify_user_address", "modify_pending_order_address") and "address" in low:
            hits.append(low.index("address"))
        return min(hits) if hits else len(low)

    def derive(self) -> UserScenario:
        identity = self.identity()
        writes = [a for a in self.task.gold_actions if a.name in WRITE_TOOLS]
        intents: list[tuple[Action, Intent]] = []
        for action in writes:
            prev = intents[-1] if intents else None
            intent = self.write_intent(action, len(intents) + 1)
            if prev is not None and _same_target(prev[0], action):
                head = prev[1]
                while head.fallback is not None:
                    head = head.fallback
                head.fallback = intent
                continue
            intents.append((action, intent))
        infos = self.info_intents()
        agenda: list[Intent] = []
        pending = [x for x in infos if not x[1]]
        for action, intent in intents:
            at = self.anchor(action)
            agenda.extend(i for pos, _, i in pending if pos < at)
            pending = [x for x in pending if x[0] >= at]
            agenda.append(intent)
        agenda.extend(i for _, _, i in pending)
        agenda.extend(i for _, after, i in infos if after)
        if not agenda:
            self.gaps.append("no write action and no required output: the agenda is the instruction's main wish")
            wish = self.main_wish()
            agenda.append(Intent(kind="info", request=[wish], ask=wish))
        known: dict[str, Any] = dict(identity)
        order_ids = _dedup(str(a.arguments["order_id"]) for a in writes
                           if "order_id" in a.arguments and self.order_known(str(a.arguments["order_id"])))
        if order_ids:
            known["order_ids"] = order_ids
        return self.task.scenario.model_copy(update={
            "identity": identity, "agenda": agenda,
            "known_info": self.task.scenario.known_info or known,
            "unknown_info": self.task.scenario.unknown_info or list(_UNKNOWN_INFO),
        })


def _dedup(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _pay_term(payment: str) -> str:
    """The part of a payment description an agent's confirmation must name (``credit card``, ``paypal``...)."""
    return "credit card" if "credit card" in payment else payment


def _same_target(a: Action, b: Action) -> bool:
    """Two writes on the same order and the same items (the second is a retry, e.g. with another payment)."""
    if a.name == "transfer_to_human_agents" or b.name == "transfer_to_human_agents":
        return False
    if "order_id" not in a.arguments or a.arguments.get("order_id") != b.arguments.get("order_id"):
        return False
    ia, ib = a.arguments.get("item_ids"), b.arguments.get("item_ids")
    return ia is not None and ib is not None and sorted(ia) == sorted(ib)


def _question(sentence: str) -> str:
    """Turn an instruction sentence about wanting to know something into the user's own question."""
    s = re.sub(r"^(?:also|then|and|finally|lastly|but)\b[\s,]*", "", sentence.strip().rstrip(".;!? "),
               flags=re.IGNORECASE)
    # "X, which you want the agent to verify" -> "can you verify that X"
    m = re.match(r"(?:you (?:want|would like|'d like)\s+)?(.+?),?\s+which you want the agent to "
                 r"(verify|confirm|check)\b", s, re.IGNORECASE)
    if m:
        clause = re.sub(r"\bto be\b", "is", m.group(1))
        return f"can you {m.group(2).lower()} that {_first_person(clause)}"
    m = re.search(r"\b(?:want(?:s)? to (?:know|get|find out|learn|see)|like to know|wonder(?:s)?|"
                  r"ask(?:s)?(?: the agent)?(?: about)?|inquire about|check|confirm|know)\b\s*(.*)", s, re.IGNORECASE)
    if m and m.group(1):
        rest = m.group(1)
    else:
        w = re.search(r"\b(?:how|what|which|whether|when|where)\b.*", s, re.IGNORECASE)
        rest = w.group(0) if w else s
    rest = re.split(r",? and (?:choose|pick|then|ask|you want to (?!know))\b", rest, maxsplit=1)[0]
    verb = re.match(r"(?:explicitly\s+)?to\s+(provide|confirm|tell me|give me|check|verify)\s+(.*)", rest,
                    re.IGNORECASE)
    if verb:
        return f"can you {verb.group(1).lower()} {_first_person(verb.group(2)).strip(' ,')}"
    getting = re.match(r"for\s+(?:getting\s+)?(.*)", rest, re.IGNORECASE)
    if getting:
        return f"can I get {_first_person(getting.group(1)).strip(' ,')}"
    q = _first_person(rest).strip(" ,")
    if not re.match(r"(?i)(how|what|which|when|where|who|whether|if|is|are|do|does|can)\b", q):
        q = ("what are " if re.match(r"(?i)all\b", q) else "what is ") + q
    return q[:1].lower() + q[1:]


def derive_retail_scenario(task: Task, template: TemplateDatabase) -> Derivation:
    """Derive a rule-based user's scenario for a retail task that has only an instruction.

    A task whose scenario already has an agenda is returned unchanged (no gaps).

    Args:
        task: the task (tau-bench's: instruction, gold actions, required outputs).
        template: the run's template database; read only (a trial copy is opened and discarded).

    Returns:
        The derived scenario and the list of problems the derivation could not settle.
    """
    if task.scenario.agenda:
        return Derivation(task.scenario)
    with template.trial() as db:
        deriver = _Deriver(task, _World(db))
        scenario = deriver.derive()
    return Derivation(scenario, tuple(_dedup(deriver.gaps)))

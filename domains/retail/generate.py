"""Seeded generator of the built-in retail data set (tau-bench file format, our own vocabulary).

The output folder holds ``users.json``, ``orders.json`` and ``products.json`` with the same field names,
nesting and id formats as tau-bench v1's retail data, so the retail loader reads both. The values (product
types and their options, names, streets, cities) are our own. A ``README.md`` beside them records the seed
and sizes; the loader reads only the three JSON files.

Every random choice comes from one ``numpy.random.Generator(PCG64(seed))`` and every collection is iterated
in a fixed order, so the same seed always gives byte-identical files::

    python -m domains.retail.generate --seed 7 --out domains/retail/data

Consistency rules of the generated data:

- ids: user ``first_last_NNNN``; order ``#W`` + 7 digits; product and item ids 10 digits, unique across both;
  payment methods ``credit_card_NNNNNNN`` / ``paypal_NNNNNNN`` / ``gift_card_NNNNNNN``; tracking ids 12 digits.
- an order item copies its variant's name, product id, item id, price and options (the variant may have
  become unavailable since); an order never lists the same item id twice.
- ``pending`` orders have no fulfillments; ``processed`` and ``delivered`` orders have fulfillments that
  together cover each item exactly once; ``cancelled`` orders were cancelled before shipping (no
  fulfillments) and their history holds the payment and an equal refund to the same method.
- every payment is one entry of the order total (sum of item prices, rounded to cents) on a method of the
  order's user; gift cards carry a balance in dollars and cents.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.world.kit import IdPool as _IdPool
from simulator.world.kit import cli_parser, new_rng, write_data_set
from simulator.world.kit import money as _money
from simulator.world.kit import pick as _pick

__all__ = [
    "DATA_FILES",
    "DEFAULT_ORDERS",
    "DEFAULT_SEED",
    "DEFAULT_USERS",
    "RetailData",
    "generate",
    "main",
    "write_data",
]

DEFAULT_SEED = 7
"""Seed of the shipped data set in ``domains/retail/data``."""
DEFAULT_USERS = 60
"""Number of users in the shipped data set."""
DEFAULT_ORDERS = 150
"""Number of orders in the shipped data set."""
DATA_FILES = ("users.json", "orders.json", "products.json")
"""The files the retail loader reads."""

RetailData = dict[str, dict[str, dict[str, Any]]]
"""``{"users": {...}, "orders": {...}, "products": {...}}``, each keyed by id as in the JSON files."""


# --------------------------------------------------------------------------------------------------------
# Vocabulary (ours). Each option value carries a price factor relative to the product's base price.
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ProductType:
    name: str
    base_price: float
    dimensions: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]


def _dim(name: str, *values: tuple[str, float] | str) -> tuple[str, tuple[tuple[str, float], ...]]:
    return name, tuple(v if isinstance(v, tuple) else (v, 1.0) for v in values)


CATALOG: tuple[_ProductType, ...] = (
    _ProductType("Rain Jacket", 129.0, (
        _dim("size", "XS", "S", "M", ("L", 1.02), ("XL", 1.04)),
        _dim("color", "navy", "olive", "mustard", "charcoal"),
        _dim("hood", "packable", ("fixed", 0.95)),
    )),
    _ProductType("Cast Iron Skillet", 45.0, (
        _dim("diameter", ("8 inch", 0.8), "10 inch", ("12 inch", 1.3)),
        _dim("finish", "pre-seasoned", ("enameled", 1.6)),
        _dim("color", "black", ("cherry red", 1.05), ("teal", 1.05)),
    )),
    _ProductType("Standing Desk", 420.0, (
        _dim("width", ("48 inch", 0.9), "55 inch", ("63 inch", 1.15)),
        _dim("frame color", "black", "white", "silver"),
        _dim("desktop", "oak", ("walnut", 1.1), ("bamboo", 0.95)),
    )),
    _ProductType("Camping Tent", 210.0, (
        _dim("capacity", ("2-person", 0.8), "4-person", ("6-person", 1.35)),
        _dim("season", "3-season", ("4-season", 1.4)),
        _dim("color", "forest green", "orange", "grey"),
    )),
    _ProductType("Blender", 89.0, (
        _dim("capacity", ("48 oz", 0.9), "64 oz", ("72 oz", 1.1)),
        _dim("motor", ("700W", 0.9), "1000W", ("1500W", 1.3)),
        _dim("color", "white", "black", "red"),
    )),
    _ProductType("Chess Set", 65.0, (
        _dim("material", "wood", ("marble", 1.8), ("glass", 1.2), ("resin", 0.7)),
        _dim("board size", ("14 inch", 0.9), "17 inch", ("21 inch", 1.25)),
        _dim("pieces", "standard", ("weighted", 1.15)),
    )),
    _ProductType("Throw Blanket", 55.0, (
        _dim("material", ("wool", 1.4), ("fleece", 0.8), "cotton", ("cashmere", 2.2)),
        _dim("size", ("throw", 0.8), "queen", ("king", 1.2)),
        _dim("color", "ivory", "slate", "rust"),
    )),
    _ProductType("Electric Scooter", 540.0, (
        _dim("range", ("12 mile", 0.8), "20 mile", ("30 mile", 1.35)),
        _dim("top speed", ("15 mph", 0.95), ("20 mph", 1.05)),
        _dim("color", "black", "white", "blue"),
    )),
    _ProductType("Camera Drone", 380.0, (
        _dim("camera", ("2.7K", 0.8), "4K", ("6K", 1.4)),
        _dim("flight time", "25 min", ("35 min", 1.2)),
        _dim("color", "grey", "white", "sand"),
    )),
    _ProductType("Sleeping Bag", 95.0, (
        _dim("temperature rating", ("40F", 0.8), "20F", ("0F", 1.4)),
        _dim("fill", "synthetic", ("down", 1.6)),
        _dim("length", "regular", ("long", 1.08)),
        _dim("color", "red", "blue"),
    )),
    _ProductType("Ceramic Planter", 32.0, (
        _dim("material", "ceramic", ("terracotta", 0.7), ("concrete", 1.2)),
        _dim("diameter", ("6 inch", 0.6), "10 inch", ("14 inch", 1.5)),
        _dim("color", "white", "sage", "speckled black"),
    )),
    _ProductType("Kitchen Knife Set", 150.0, (
        _dim("pieces", ("5-piece", 0.7), "8-piece", ("12-piece", 1.4)),
        _dim("handle", ("walnut", 1.1), "resin", ("stainless", 0.95)),
        _dim("steel", "German", ("Japanese", 1.3)),
    )),
    _ProductType("Mini Projector", 260.0, (
        _dim("resolution", ("720p", 0.6), "1080p", ("4K", 1.8)),
        _dim("brightness", ("300 lumens", 0.9), ("600 lumens", 1.1)),
        _dim("color", "white", "black", "mint"),
    )),
    _ProductType("Winter Gloves", 38.0, (
        _dim("size", "S", "M", "L", "XL"),
        _dim("material", ("leather", 1.5), "wool", ("synthetic", 0.8)),
        _dim("touchscreen tips", ("yes", 1.05), "no"),
    )),
    _ProductType("Microwave Oven", 140.0, (
        _dim("capacity", ("0.9 cu ft", 0.8), "1.2 cu ft", ("1.6 cu ft", 1.25)),
        _dim("finish", ("stainless", 1.1), "black", ("white", 0.95)),
        _dim("mounting", "countertop", ("over-the-range", 1.6)),
    )),
    _ProductType("Bath Towel Set", 48.0, (
        _dim("material", "cotton", ("bamboo", 1.2), ("linen", 1.4)),
        _dim("pieces", ("4-piece", 0.7), "6-piece", ("8-piece", 1.3)),
        _dim("color", "white", "sand", "seafoam", "charcoal"),
    )),
    _ProductType("Rowing Machine", 690.0, (
        _dim("resistance", "air", ("magnetic", 0.85), ("water", 1.4)),
        _dim("foldable", ("yes", 1.05), "no"),
        _dim("monitor", ("basic", 0.95), ("bluetooth", 1.1)),
        _dim("frame", "steel", ("ash wood", 1.2)),
    )),
    _ProductType("Acoustic Guitar", 310.0, (
        _dim("body", "dreadnought", ("concert", 0.95), ("parlor", 0.9)),
        _dim("top wood", "spruce", ("cedar", 1.1), ("mahogany", 1.2)),
        _dim("orientation", "right-handed", ("left-handed", 1.05)),
    )),
    _ProductType("Baby Stroller", 330.0, (
        _dim("type", ("jogging", 1.1), ("compact", 0.7), "full-size"),
        _dim("color", "black", "grey", "navy", "sage"),
        _dim("canopy", "standard", ("extended", 1.08)),
    )),
    _ProductType("Stand Mixer", 280.0, (
        _dim("bowl size", ("4.5 qt", 0.85), "5 qt", ("6 qt", 1.2)),
        _dim("color", "silver", "red", "cream", "matte black"),
        _dim("attachments", "basic", ("deluxe", 1.25)),
    )),
)

FIRST_NAMES = (
    "Aisha", "Arjun", "Beatriz", "Benjamin", "Caleb", "Camila", "Dalia", "Diego", "Elena", "Emil",
    "Farah", "Felix", "Gabriel", "Grace", "Hana", "Hiro", "Idris", "Ingrid", "Jonas", "Julia",
    "Kavya", "Kofi", "Leon", "Lucia", "Mateo", "Maya", "Nadia", "Nora", "Oscar", "Priya",
    "Quinn", "Rosa", "Samuel", "Tara", "Umar", "Valentina", "Wei", "Ximena", "Yuki", "Zoe",
)
LAST_NAMES = (
    "Abara", "Andersen", "Bianchi", "Castillo", "Costa", "Delgado", "Dubois", "Eriksen", "Farouk", "Fischer",
    "Greco", "Haddad", "Horvath", "Iyer", "Jensen", "Keller", "Kowalski", "Laine", "Mendes", "Moreau",
    "Nakamura", "Novak", "Okafor", "Ortiz", "Park", "Petrov", "Quispe", "Reyes", "Romero", "Sato",
    "Schmidt", "Tanaka", "Varga", "Vargas", "Weber", "Yamamoto", "Zhou", "Lindqvist", "Mbatha", "Oduya",
)
STREETS = (
    "Alder Court", "Birch Hollow Road", "Copper Ridge Way", "Dogwood Terrace", "Evergreen Parkway",
    "Foxglove Lane", "Granite Street", "Harbor View Road", "Ironwood Drive", "Juniper Way",
    "Kingfisher Court", "Linden Boulevard", "Magnolia Avenue", "Northgate Road", "Orchard Street",
    "Prairie Wind Drive", "Quarry Lane", "Redwood Circle", "Sycamore Street", "Tamarack Trail",
    "Union Street", "Vineyard Road", "Westbrook Avenue", "Yarrow Lane",
)
CITIES: tuple[tuple[str, str, str], ...] = (  # city, state, first three digits of its zip codes
    ("Portland", "OR", "972"), ("Boise", "ID", "837"), ("Madison", "WI", "537"),
    ("Albuquerque", "NM", "871"), ("Raleigh", "NC", "276"), ("Omaha", "NE", "681"),
    ("Tucson", "AZ", "857"), ("Pittsburgh", "PA", "152"), ("Minneapolis", "MN", "554"),
    ("Salt Lake City", "UT", "841"), ("Richmond", "VA", "232"), ("Louisville", "KY", "402"),
    ("Kansas City", "MO", "641"), ("Sacramento", "CA", "958"), ("Buffalo", "NY", "142"),
    ("Spokane", "WA", "992"), ("Des Moines", "IA", "503"), ("Burlington", "VT", "054"),
    ("Savannah", "GA", "314"), ("Providence", "RI", "029"), ("Tulsa", "OK", "741"),
)
UNIT_KINDS = ("Apt", "Unit", "Suite", "Floor")
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
ORDER_STATUSES = ("pending", "processed", "delivered", "cancelled")
ORDER_STATUS_WEIGHTS = (0.36, 0.14, 0.36, 0.14)

_MIN_VARIANTS, _MAX_VARIANTS = 5, 15
_MIN_AVAILABLE = 3


# --------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------
def _address(rng: np.random.Generator) -> dict[str, str]:
    city, state, zip_prefix = _pick(rng, CITIES)
    if rng.random() < 0.25:
        address2 = ""
    else:
        address2 = f"{_pick(rng, UNIT_KINDS)} {int(rng.integers(1, 60))}"
    return {
        "address1": f"{int(rng.integers(10, 9900))} {_pick(rng, STREETS)}",
        "address2": address2,
        "city": city,
        "country": "USA",
        "state": state,
        "zip": f"{zip_prefix}{int(rng.integers(0, 100)):02d}",
    }


def _products(rng: np.random.Generator, ids: _IdPool) -> dict[str, dict[str, Any]]:
    products: dict[str, dict[str, Any]] = {}
    for ptype in CATALOG:
        product_id = ids.digits(10)
        combos = list(itertools.product(*(values for _, values in ptype.dimensions)))
        k = min(int(rng.integers(_MIN_VARIANTS, _MAX_VARIANTS + 1)), len(combos))
        chosen = sorted(int(i) for i in rng.choice(len(combos), size=k, replace=False))
        available = [bool(rng.random() < 0.72) for _ in chosen]
        for i in range(len(available)):  # keep a few variants of every product on sale
            if sum(available) >= _MIN_AVAILABLE:
                break
            available[i] = True
        variants: dict[str, dict[str, Any]] = {}
        for combo_index, is_available in zip(chosen, available, strict=True):
            combo = combos[combo_index]
            factor = float(np.prod([f for _, f in combo]))
            item_id = ids.digits(10)
            variants[item_id] = {
                "item_id": item_id,
                "options": {dim: value for (dim, _), (value, _) in zip(ptype.dimensions, combo, strict=True)},
                "available": is_available,
                "price": _money(ptype.base_price * factor * rng.uniform(0.96, 1.04)),
            }
        products[product_id] = {
            "name": ptype.name,
            "product_id": product_id,
            "variants": dict(sorted(variants.items())),
        }
    return products


def _payment_methods(rng: np.random.Generator, ids: _IdPool) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}
    n = int(rng.choice([1, 2, 3], p=[0.35, 0.45, 0.20]))
    sources = ["credit_card", "paypal", "gift_card"]
    for _ in range(n):
        source = str(rng.choice(sources, p=[0.45, 0.25, 0.30]))
        if source == "paypal" and any(m["source"] == "paypal" for m in methods.values()):
            source = "credit_card"
        method_id = f"{source}_{ids.digits(7)}"
        if source == "credit_card":
            methods[method_id] = {"source": source, "brand": _pick(rng, CARD_BRANDS),
                                  "last_four": f"{int(rng.integers(0, 10000)):04d}", "id": method_id}
        elif source == "gift_card":
            methods[method_id] = {"source": source, "balance": _money(rng.uniform(5, 400)), "id": method_id}
        else:
            methods[method_id] = {"source": source, "id": method_id}
    return methods


def _users(rng: np.random.Generator, ids: _IdPool, n_users: int) -> dict[str, dict[str, Any]]:
    pairs = [(f, last) for f in FIRST_NAMES for last in LAST_NAMES]
    if n_users > len(pairs):
        raise ValueError(f"n_users={n_users}: at most {len(pairs)} distinct names are available")
    chosen = rng.choice(len(pairs), size=n_users, replace=False)
    suffixes = _IdPool(rng)
    users: dict[str, dict[str, Any]] = {}
    for index in chosen:
        first, last = pairs[int(index)]
        user_id = f"{first.lower()}_{last.lower()}_{suffixes.digits(4)}"
        users[user_id] = {
            "name": {"first_name": first, "last_name": last},
            "address": _address(rng),
            "email": f"{first.lower()}.{last.lower()}{int(rng.integers(10, 1000))}@example.com",
            "payment_methods": _payment_methods(rng, ids),
            "orders": [],
        }
    return users


def _order(
    rng: np.random.Generator,
    order_id: str,
    user_id: str,
    user: dict[str, Any],
    products: list[dict[str, Any]],
    tracking: _IdPool,
) -> dict[str, Any]:
    address = dict(user["address"]) if rng.random() < 0.85 else _address(rng)
    n_items = int(rng.choice([1, 2, 3, 4, 5], p=[0.25, 0.3, 0.2, 0.15, 0.1]))
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(items) < n_items:
        product = products[int(rng.integers(len(products)))]
        variants = list(product["variants"].values())
        on_sale = [v for v in variants if v["available"]]
        pool = on_sale if rng.random() < 0.75 else variants
        variant = pool[int(rng.integers(len(pool)))]
        if variant["item_id"] in seen:
            continue
        seen.add(variant["item_id"])
        items.append({
            "name": product["name"],
            "product_id": product["product_id"],
            "item_id": variant["item_id"],
            "price": variant["price"],
            "options": dict(variant["options"]),
        })
    status = str(rng.choice(ORDER_STATUSES, p=ORDER_STATUS_WEIGHTS))
    fulfillments: list[dict[str, Any]] = []
    if status in ("processed", "delivered"):
        item_ids = [it["item_id"] for it in items]
        if len(item_ids) >= 3 and rng.random() < 0.3:
            cut = int(rng.integers(1, len(item_ids)))
            parts = [item_ids[:cut], item_ids[cut:]]
        else:
            parts = [item_ids]
        fulfillments = [{"tracking_id": [tracking.digits(12)], "item_ids": part} for part in parts]
    method_ids = list(user["payment_methods"])
    method_id = method_ids[int(rng.integers(len(method_ids)))]
    total = _money(sum(it["price"] for it in items))
    history = [{"transaction_type": "payment", "amount": total, "payment_method_id": method_id}]
    if status == "cancelled":
        history.append({"transaction_type": "refund", "amount": total, "payment_method_id": method_id})
    return {
        "order_id": order_id,
        "user_id": user_id,
        "address": address,
        "items": items,
        "fulfillments": fulfillments,
        "status": status,
        "payment_history": history,
    }


# --------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------
def generate(seed: int = DEFAULT_SEED, *, n_users: int = DEFAULT_USERS, n_orders: int = DEFAULT_ORDERS) -> RetailData:
    """Generate a retail data set.

    Args:
        seed: seed of the ``numpy.random.Generator(PCG64(seed))`` that makes every random choice.
        n_users: number of users (at most 1,600: one per distinct first/last name pair).
        n_orders: number of orders, spread over the users (some users may have none).

    Returns:
        ``{"users": ..., "orders": ..., "products": ...}``, each a dict keyed by id and sorted by id,
        with records shaped as in tau-bench's retail JSON files.

    Raises:
        ValueError: ``n_users`` or ``n_orders`` is out of range.
    """
    if n_users < 1:
        raise ValueError(f"n_users={n_users}: need at least one user")
    if n_orders < 0:
        raise ValueError(f"n_orders={n_orders}: must not be negative")
    rng = new_rng(seed)
    catalog_ids = _IdPool(rng)  # product and item ids share one namespace: never confused with each other
    products = _products(rng, catalog_ids)
    users = _users(rng, _IdPool(rng), n_users)
    user_ids = list(users)
    product_list = list(products.values())
    order_ids, tracking = _IdPool(rng), _IdPool(rng)
    orders: dict[str, dict[str, Any]] = {}
    for _ in range(n_orders):
        order_id = f"#W{order_ids.digits(7)}"
        user_id = user_ids[int(rng.integers(len(user_ids)))]
        orders[order_id] = _order(rng, order_id, user_id, users[user_id], product_list, tracking)
        users[user_id]["orders"].append(order_id)  # chronological, as placed
    return {
        "users": dict(sorted(users.items())),
        "orders": dict(sorted(orders.items())),
        "products": dict(sorted(products.items())),
    }


def _readme(seed: int, n_users: int, n_orders: int, data: RetailData) -> str:
    n_variants = sum(len(p["variants"]) for p in data["products"].values())
    return (
        "# Built-in retail data set\n\n"
        "Generated; do not edit by hand. Regenerate with:\n\n"
        f"    python -m domains.retail.generate --seed {seed} --users {n_users} --orders {n_orders} "
        "--out domains/retail/data\n\n"
        "(or `scripts/generate-data`). The loader reads only users.json, orders.json and products.json.\n\n"
        f"- seed: {seed}\n"
        f"- users: {len(data['users'])}\n"
        f"- orders: {len(data['orders'])}\n"
        f"- products: {len(data['products'])} ({n_variants} variants)\n"
    )


def write_data(
    data: RetailData, out_dir: str | Path, *, seed: int | None = None, n_users: int | None = None,
    n_orders: int | None = None,
) -> list[Path]:
    """Write a data set as ``users.json``, ``orders.json`` and ``products.json`` (indent 2, newline at end).

    Args:
        data: the output of :func:`generate`.
        out_dir: the folder to write; created if missing.
        seed: when given (with the sizes), also write a ``README.md`` recording how to regenerate the data.
        n_users: number of users passed to :func:`generate` (for the README).
        n_orders: number of orders passed to :func:`generate` (for the README).

    Returns:
        The paths written.
    """
    readme = None if seed is None else _readme(
        seed, n_users if n_users is not None else len(data["users"]),
        n_orders if n_orders is not None else len(data["orders"]), data,
    )
    return write_data_set(out_dir, data, DATA_FILES, readme)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: generate the retail data set and write it to a folder.

    Args:
        argv: arguments (default: ``sys.argv[1:]``): ``--seed``, ``--users``, ``--orders``, ``--out``.

    Returns:
        The exit status (0).
    """
    parser = cli_parser("generate-data", "Generate the retail data set (tau-bench file format).", DEFAULT_SEED,
                        Path(__file__).parent / "data")
    parser.add_argument("--users", type=int, default=DEFAULT_USERS, help="number of users")
    parser.add_argument("--orders", type=int, default=DEFAULT_ORDERS, help="number of orders")
    args = parser.parse_args(argv)
    try:
        data = generate(args.seed, n_users=args.users, n_orders=args.orders)
    except ValueError as e:
        parser.error(str(e))
    paths = write_data(data, args.out, seed=args.seed, n_users=args.users, n_orders=args.orders)
    n_variants = sum(len(p["variants"]) for p in data["products"].values())
    print(f"wrote {', '.join(str(p) for p in paths)}: {len(data['users'])} users, {len(data['orders'])} orders, "
          f"{len(data['products'])} products ({n_variants} variants)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

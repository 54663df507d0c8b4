"""Generate the returns desk's built-in data set (``data/``) from a seed, byte for byte reproducibly.

Every random choice comes from one ``numpy.random.Generator(PCG64(seed))``; collections are iterated in a
fixed order. ``python -m domains.returns.generate [--seed N] [--out DIR]`` writes ``customers.json``,
``orders.json``, ``returns.json``, ``approvals.json`` and ``refunds.json`` (the last two empty: they fill up
during trials).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_SEED", "generate", "main", "write_data"]

DEFAULT_SEED = 11
TODAY = date(2024, 6, 1)
"""The clock's default day (see ``ReturnsDomain.sinks``); deliveries are dated before it."""
FIRST = ("Ana", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Liam",
         "Maya", "Nikhil", "Olga", "Pablo", "Quinn", "Rosa", "Sam", "Tara")
LAST = ("Lopez", "Okafor", "Martin", "Patel", "Novak", "Haddad", "Kim", "Berg", "Silva", "Weber", "Tanaka",
        "Murphy", "Rossi", "Iyer", "Petrov", "Garcia", "Fischer", "Moreau", "Costa", "Nguyen")
ITEMS = (("wool throw blanket", 59.0), ("ceramic planter", 34.5), ("espresso machine", 289.0),
         ("running shoes", 120.0), ("desk lamp", 45.99), ("noise-cancelling headphones", 249.99),
         ("cast iron skillet", 39.0), ("office chair", 329.0), ("rain jacket", 89.95), ("yoga mat", 28.0))


def generate(seed: int = DEFAULT_SEED, n_customers: int = 20, n_orders: int = 60) -> dict[str, dict[str, Any]]:
    """Return the data set as ``{file stem: {key: record}}``.

    Args:
        seed: seed of the ``numpy.random.Generator(PCG64(seed))`` making every choice.
        n_customers: customers to make (at most 400).
        n_orders: orders to make (ids 1000 upwards).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    customers: dict[str, Any] = {}
    names: set[str] = set()
    while len(customers) < n_customers:
        name = f"{FIRST[int(rng.integers(len(FIRST)))]} {LAST[int(rng.integers(len(LAST)))]}"
        if name in names:
            continue
        names.add(name)
        cid = f"cus_{len(customers) + 1:04d}"
        customers[cid] = {"customer_id": cid, "name": name,
                          "email": name.lower().replace(" ", ".") + "@example.com",
                          "zip": f"{int(rng.integers(10000, 99999))}"}
    orders: dict[str, Any] = {}
    returns: dict[str, Any] = {}
    ids = sorted(customers)
    for i in range(n_orders):
        oid = str(1000 + i)
        item, price = ITEMS[int(rng.integers(len(ITEMS)))]
        status = str(rng.choice(["processing", "shipped", "delivered", "delivered"]))
        delivered = None
        if status == "delivered":
            delivered = (TODAY - timedelta(days=int(rng.integers(2, 60)))).isoformat()
        orders[oid] = {"order_id": oid, "customer_id": ids[int(rng.integers(len(ids)))], "item": item,
                       "total": price, "status": status, "payment_account": f"card-{int(rng.integers(1000, 9999))}",
                       "delivered_at": delivered}
        if status == "delivered" and rng.random() < 0.25:
            opened = (date.fromisoformat(delivered or "") + timedelta(days=1)).isoformat() + "T10:00:00"
            received = bool(rng.random() < 0.5)
            returns[f"R{oid}"] = {"return_id": f"R{oid}", "order_id": oid, "reason": "changed my mind",
                                  "status": "received" if received else "requested", "opened_at": opened,
                                  "received_at": opened if received else None}
    return {"customers": customers, "orders": orders, "returns": returns, "approvals": {}, "refunds": {}}


def write_data(folder: Path, data: dict[str, dict[str, Any]]) -> None:
    """Write each table to ``folder/<table>.json`` (2-space indent, trailing newline)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, records in data.items():
        (folder / f"{name}.json").write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--seed`` (default :data:`DEFAULT_SEED`) and ``--out`` (default the package's data/)."""
    parser = argparse.ArgumentParser("generate-data returns", description="Generate the returns desk data set.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    args = parser.parse_args(argv)
    write_data(args.out, generate(args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

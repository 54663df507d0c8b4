"""Peer data of every JSON-folder domain: the tau-bench data set loads and dumps back losslessly."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from domains.airline import AirlineDomain
from domains.retail import RetailDomain
from simulator.world.kit import JsonFolderDomain
from tests._support.json_folder import assert_same_shape, read_files

DOMAINS: dict[str, tuple[type[JsonFolderDomain], tuple[str, ...]]] = {
    "airline": (AirlineDomain, ("users", "reservations", "flights")),
    "retail": (RetailDomain, ("users", "orders", "products")),
}


@pytest.mark.parametrize("peer_data_dir", list(DOMAINS), indirect=True)
def test_peer_data_round_trips_losslessly(peer_data_dir: Path) -> None:
    domain_class, names = DOMAINS[peer_data_dir.parent.name]
    domain = domain_class()
    t0 = time.perf_counter()
    template = domain.template(peer_data_dir)
    built = time.perf_counter() - t0
    with template.trial() as trial:
        t1 = time.perf_counter()
        dump = domain.dump(trial)
        dumped = time.perf_counter() - t1
    print(f"\ntemplate built in {built * 1000:.0f} ms, full dump in {dumped * 1000:.1f} ms")
    files = read_files(peer_data_dir, names)
    assert dump == files
    assert_same_shape(dump, files)
    for name in names:  # byte-identical re-serialisation: key order, float repr, int vs float
        assert json.dumps(dump[name]) == json.dumps(files[name])

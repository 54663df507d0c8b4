"""Shared helpers of the benchmark scripts (scripts/bench-*): peer data location, retail template, timing.

Benchmarks print figures and never assert times. Peer data is read from ``../shared/peers`` beside the
repository when present (``--peers DIR`` overrides); without it the built-in retail data set is used.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULT_PEERS = (ROOT / ".." / "shared" / "peers").resolve()


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--peers", type=Path, default=DEFAULT_PEERS, help="peer data folder (default: %(default)s)")
    return p


def retail_peer(peers: Path) -> Path | None:
    """Return the tau-bench retail folder when its data is present, else None."""
    path = peers / "tau-bench" / "retail"
    return path if (path / "data" / "orders.json").is_file() else None


def retail(peers: Path, split: str = "test", quiet: bool = False) -> tuple[Any, Any, list[Any], str]:
    """Return (domain, template, tasks, label): the peer retail data and split, or the built-in data set.

    Without peer data a note is printed on stderr, unless ``quiet``.
    """
    from simulator.world.domain import get_domain

    dom = get_domain("retail")
    peer = retail_peer(peers)
    if peer is None:
        if not quiet:
            print(f"note: peer data not found under {peers}; using the built-in retail data set",
                  file=sys.stderr)
        return dom, dom.template(None), dom.load_tasks(None), "built-in retail data"
    template = dom.template(peer / "data")
    return dom, template, dom.load_tasks(str(peer / f"tasks_{split}.json")), f"peer retail data, {split} split"


def machine() -> str:
    return f"python {platform.python_version()}, {os.cpu_count()} cpu(s), {platform.machine()}"

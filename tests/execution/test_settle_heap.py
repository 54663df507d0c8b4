"""settle_heap: the cyclic GC set up for a process that runs trials (frozen run data, rarer young passes)."""

from __future__ import annotations

import gc
import sys

from simulator.execution.runner import RUN_GC_THRESHOLDS, RUN_SWITCH_INTERVAL_S, settle_heap


def test_settle_heap_freezes_live_objects_and_sets_the_run_thresholds() -> None:
    before, switch = gc.get_threshold(), sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        gc.unfreeze()
        kept = [{"row": i} for i in range(1000)]  # alive while the heap is settled: frozen with the rest
        settle_heap()
        assert gc.get_threshold() == (10_000, 20, 50)
        assert RUN_GC_THRESHOLDS == (10_000, 20, 50)
        assert gc.get_freeze_count() >= len(kept)
        scanned = {id(o) for o in gc.get_objects()}  # the generations the GC scans (not the frozen objects)
        assert not any(id(k) in scanned for k in kept)
        assert RUN_SWITCH_INTERVAL_S == 0.05  # the lock handed over every 50 ms, not 5
        assert abs(sys.getswitchinterval() - RUN_SWITCH_INTERVAL_S) < 1e-6
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        sys.setswitchinterval(switch)


def test_settle_heap_still_collects_garbage_cycles() -> None:
    before, switch = gc.get_threshold(), sys.getswitchinterval()
    try:
        settle_heap()

        class Node:
            def __init__(self) -> None:
                self.other: Node | None = None

        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
        assert gc.collect() >= 2  # the cycle is found by a collection
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
        sys.setswitchinterval(switch)

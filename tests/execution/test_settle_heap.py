"""settle_heap: the cyclic GC set up for a process that runs trials (frozen run data, rarer young passes)."""

from __future__ import annotations

import gc

from simulator.execution.runner import RUN_GC_THRESHOLDS, settle_heap


def test_settle_heap_freezes_live_objects_and_sets_the_run_thresholds() -> None:
    before = gc.get_threshold()
    try:
        gc.unfreeze()
        kept = [{"row": i} for i in range(1000)]  # alive while the heap is settled: frozen with the rest
        settle_heap()
        assert gc.get_threshold() == (10_000, 20, 50)
        assert RUN_GC_THRESHOLDS == (10_000, 20, 50)
        assert gc.get_freeze_count() >= len(kept)
        scanned = {id(o) for o in gc.get_objects()}  # the generations the GC scans (not the frozen objects)
        assert not any(id(k) in scanned for k in kept)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_settle_heap_still_collects_garbage_cycles() -> None:
    before = gc.get_threshold()
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

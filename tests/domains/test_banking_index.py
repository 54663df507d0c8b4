"""banking_knowledge's BM25 index: built once per knowledge base, on its first search, even when many trials search
at once (threads), then shared read-only: every search sees the same ranking."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from domains.banking_knowledge.knowledge import KnowledgeBase

rank_bm25 = pytest.importorskip("rank_bm25", reason="the knowledge extra (rank_bm25) is not installed")


def test_concurrent_first_searches_build_one_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "documents"
    docs.mkdir()
    for i, text in enumerate(["card dispute fees", "open a savings account", "close a checking account",
                              "order a new debit card", "reset your online password"]):
        (docs / f"d{i}.json").write_text(json.dumps({"id": f"d{i}", "title": f"Doc {i}", "content": text}))
    built = []
    real = rank_bm25.BM25Okapi

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN204
            built.append(1)
            time.sleep(0.05)  # long enough for the other threads to arrive while it builds
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(rank_bm25, "BM25Okapi", Counting)
    kb = KnowledgeBase(tmp_path)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(kb.bm25("dispute"))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(built) == 1
    assert len(results) == 6 and len(set(results)) == 1
    assert results[0].startswith("1. Doc 0\n   ID: d0\n") and "Score: 0.0000" not in results[0].split("\n\n")[0]

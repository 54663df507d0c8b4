"""The knowledge base of banking_knowledge: its documents, the retrieval configurations, the search tools, the prompt.

tau2-bench (τ³) ships 698 policy documents (``documents/*.json``: ``id``, ``title``, ``content``) and a system prompt
per retrieval configuration (``prompts/*.md`` with ``{{component:NAME}}`` parts from ``prompts/components/``).
A configuration decides which search tools the agent gets and what the prompt holds:

====================  ===========================  =====================================================
configuration         tools                        prompt
====================  ===========================  =====================================================
``bm25``              ``KB_search``                ``classic_rag_bm25_no_grep.md``
``bm25_grep``         ``KB_search``, ``grep``      ``classic_rag_bm25.md``
``grep_only``         ``grep``                     ``grep_only.md``
``full_kb``           none                         ``full_kb.md``, every document inlined
``golden_retrieval``  none                         ``required_docs.md``, the task's required documents
``no_knowledge``      none                         ``no_knowledge.md``
====================  ===========================  =====================================================

τ³'s other configurations need a model this machine cannot load offline (dense embeddings from a hosted API,
rerankers) or a sandboxed shell; :data:`OFFLINE_REFUSED` names them and :func:`check_retrieval` refuses them.

Facts taken from τ³ (not its code): BM25 scores whitespace tokens of the lower-cased document content (Okapi BM25,
k1 = 1.5, b = 0.75, top 10; see :data:`K1` for the one difference of ours); grep compiles the pattern
case-insensitively (a pattern that does not compile is searched literally), scores a document by its number of
matches, keeps the top 10; both list each hit as ``N. TITLE / ID / Score / Content``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from simulator.world.kit import DomainError

__all__ = ["CONFIGURATIONS", "DEFAULT_RETRIEVAL", "OFFLINE_REFUSED", "SLOT", "Document", "KnowledgeBase",
           "check_retrieval", "fill_required", "knowledge_base"]

SLOT = "{{required_documents}}"
"""Where the ``golden_retrieval`` prompt takes a task's required documents."""

TOP_K = 10
"""Documents a search returns."""
K1, B = 1.5, 0.75
"""Okapi BM25's parameters (τ³'s, rank_bm25's defaults). bm25s leaves out Okapi's constant factor (k1 + 1), so its
scores are multiplied by it; a query word found in more than half of the documents (negative idf) scores as bm25s's
Robertson variant scores it, where rank_bm25 substitutes a small positive idf: rankings of such words may differ."""

DEFAULT_RETRIEVAL = "bm25_grep"
"""The configuration used when ``--option retrieval=`` is not given (BM25 and grep: both offline)."""


@dataclass(frozen=True)
class Configuration:
    """One retrieval configuration: its search tools and its prompt template (a file of ``prompts/``)."""

    tools: tuple[str, ...]
    prompt: str


CONFIGURATIONS: dict[str, Configuration] = {
    "bm25": Configuration(("KB_search",), "classic_rag_bm25_no_grep.md"),
    "bm25_grep": Configuration(("KB_search", "grep"), "classic_rag_bm25.md"),
    "grep_only": Configuration(("grep",), "grep_only.md"),
    "full_kb": Configuration((), "full_kb.md"),
    "golden_retrieval": Configuration((), "required_docs.md"),
    "no_knowledge": Configuration((), "no_knowledge.md"),
}
"""The configurations that run offline, by τ³'s names."""

OFFLINE_REFUSED: dict[str, str] = {
    **{name: "dense embeddings from a hosted API (OpenAI text-embedding-3-large or OpenRouter qwen3-embedding-8b)"
       for name in ("openai_embeddings", "openai_embeddings_grep", "qwen_embeddings", "qwen_embeddings_grep",
                    "openai_embeddings_reranker", "openai_embeddings_reranker_grep", "qwen_embeddings_reranker",
                    "qwen_embeddings_reranker_grep")},
    **{name: "a reranking model that cannot be loaded offline" for name in ("bm25_reranker", "bm25_reranker_grep")},
    "alltools": "dense embeddings from a hosted API beside BM25 and a shell",
    "terminal_use": "a sandboxed shell over the documents",
    "terminal_use_write": "a sandboxed shell over the documents",
}
"""τ³ configurations refused here, with what they need."""


def check_retrieval(name: str) -> Configuration:
    """Return the configuration named ``name``.

    Raises:
        DomainError: an unknown name, or one that cannot run offline (the message says what it needs).
    """
    if name in CONFIGURATIONS:
        return CONFIGURATIONS[name]
    if name in OFFLINE_REFUSED:
        raise DomainError(f"--option retrieval={name}: this retrieval configuration needs {OFFLINE_REFUSED[name]}, "
                          "which cannot run offline here; offline configurations: " + ", ".join(CONFIGURATIONS))
    raise DomainError(f"--option retrieval={name}: unknown retrieval configuration (offline: "
                      f"{', '.join(CONFIGURATIONS)}; refused: {', '.join(OFFLINE_REFUSED)})")


@dataclass(frozen=True)
class Document:
    """One knowledge-base document."""

    id: str
    title: str
    content: str


def _hits(docs: Sequence[Document], scored: Sequence[tuple[int, float]]) -> str:
    return "\n".join(f"{i}. {docs[j].title}\n   ID: {docs[j].id}\n   Score: {score:.4f}\n"
                     f"   Content: {docs[j].content}\n" for i, (j, score) in enumerate(scored, 1))


class KnowledgeBase:
    """The documents of a data folder, with BM25 and grep search over their content.

    Args:
        folder: the suite's folder (``documents/`` and ``prompts/`` inside).

    Raises:
        DomainError: no ``documents/`` folder, or a document that is not a JSON object with ``id``, ``title`` and
            ``content`` strings (names the file and field).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        docs_dir = self.folder / "documents"
        if not docs_dir.is_dir():
            raise DomainError(f"--data {self.folder}: no documents/ folder (the knowledge base)")
        docs = []
        for path in sorted(docs_dir.glob("*.json")):
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise DomainError(f"{path}: not readable JSON: {e}") from e
            for field in ("id", "title", "content"):
                if not isinstance(raw, dict) or not isinstance(raw.get(field), str):
                    raise DomainError(f"{path}: field {field}: expected a string")
            docs.append(Document(raw["id"], raw["title"], raw["content"]))
        self.documents: list[Document] = docs
        self.by_key = {d.id: d for d in docs} | {d.title: d for d in docs}
        self._bm25: Any = None
        self._bm25_lock = threading.Lock()  # concurrent trials' first searches build the shared index once

    # ---------------------------------------------------------------------------------------------- search
    def bm25(self, query: str, k: int = TOP_K) -> str:
        """Rank the documents for ``query`` by BM25 (the ``knowledge`` extra's ``bm25s``); return the hits as text.

        Raises:
            DomainError: ``bm25s`` is not installed.
        """
        tokens = query.lower().split()
        if not tokens:
            return "No relevant documents found."
        retriever = self._index()
        import numpy as np

        scores = np.asarray(retriever.get_scores(tokens), dtype=float) * (K1 + 1)  # Okapi's scale, as τ³ shows it
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]  # stable: ties keep document order
        return _hits(self.documents, [(i, float(scores[i])) for i in order]) or "No relevant documents found."

    def _index(self) -> Any:
        """The BM25 index of the documents: built on the first search of the process, then shared read-only."""
        if self._bm25 is not None:
            return self._bm25
        with self._bm25_lock:
            if self._bm25 is None:
                try:
                    import bm25s
                except ImportError as e:
                    raise DomainError("retrieval by BM25 needs the knowledge extra: pip install 'tausim[knowledge]'"
                                      ) from e
                retriever = bm25s.BM25(method="robertson", k1=K1, b=B)
                retriever.index([d.content.lower().split() for d in self.documents], show_progress=False)
                self._bm25 = retriever
        return self._bm25

    def grep(self, pattern: str, k: int = TOP_K) -> str:
        """Rank the documents by the number of case-insensitive matches of ``pattern``; return the hits as text."""
        if not pattern.strip():
            return f"No matches found for pattern: {pattern}"
        try:
            rx = re.compile(pattern, re.IGNORECASE)
        except re.error:
            rx = re.compile(re.escape(pattern), re.IGNORECASE)
        counts = [(i, float(len(rx.findall(d.content)))) for i, d in enumerate(self.documents)]
        scored = sorted(((i, c) for i, c in counts if c > 0), key=lambda t: -t[1])[:k]
        return _hits(self.documents, scored) if scored else f"No matches found for pattern: {pattern}"

    # ---------------------------------------------------------------------------------------------- prompt
    def prompt(self, retrieval: str, required: Sequence[str] = (), *, keep_required_slot: bool = False) -> str:
        """Return the agent's system prompt (the policy) of a configuration.

        Args:
            retrieval: a configuration of :data:`CONFIGURATIONS`.
            required: for ``golden_retrieval``, the task's required documents (ids or titles).
            keep_required_slot: leave :data:`SLOT` in the prompt (filled per task by :func:`fill_required`).

        Raises:
            DomainError: a refused configuration, a missing prompt file or component.
        """
        text = self._template(check_retrieval(retrieval).prompt)
        if "{{full_knowledge_base}}" in text:
            text = text.replace("{{full_knowledge_base}}", _inline(self.documents))
        if SLOT in text and not keep_required_slot:
            text = fill_required(text, self, required)
        return text

    def _template(self, name: str) -> str:
        prompts = self.folder / "prompts"
        try:
            text = (prompts / name).read_text(encoding="utf-8")
        except OSError as e:
            raise DomainError(f"--data {self.folder}: prompt prompts/{name} not readable: {e}") from e

        def component(m: re.Match[str]) -> str:
            path = prompts / "components" / f"{m.group(1)}.md"
            try:
                return path.read_text(encoding="utf-8")
            except OSError as e:
                raise DomainError(f"--data {self.folder}: prompt component {path.name} not readable: {e}") from e

        return re.sub(r"\{\{component:(\w+)\}\}", component, text)


def fill_required(text: str, kb: KnowledgeBase, required: Sequence[str]) -> str:
    """Put the documents ``required`` names (ids or titles) in the prompt's :data:`SLOT`.

    ``(No documents provided)`` when none of them is found (as τ³ does).
    """
    docs = [kb.by_key[r] for r in required if r in kb.by_key]
    return text.replace(SLOT, _inline(docs) if docs else "(No documents provided)")


def _inline(docs: Sequence[Document]) -> str:
    return "\n\n---\n\n".join(f"## {d.title}\n\n{d.content}" for d in docs)


@cache
def knowledge_base(folder: str) -> KnowledgeBase:
    """The knowledge base of a data folder, read once per process (documents are read-only)."""
    return KnowledgeBase(Path(folder))

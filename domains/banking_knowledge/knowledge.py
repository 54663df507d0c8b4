r"""The knowledge base of banking_knowledge: its documents, the retrieval configurations, the search tools, the prompt.

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

τ³'s other configurations need a hosted model (dense embeddings, an LLM reranking BM25's hits) or a sandboxed
shell; :data:`OFFLINE_REFUSED` names them and :func:`check_retrieval` refuses them.

Facts taken from τ³ (not its code): BM25 scores whitespace tokens of the lower-cased document content (Okapi BM25,
k1 = 1.5, b = 0.75, epsilon = 0.25 of rank_bm25's ``BM25Okapi``, top 10); grep compiles the pattern
case-insensitively with Python's ``re`` (a pattern that does not compile is searched literally), scores a document by
its number of matches, keeps the top 10; both list each hit as ``N. TITLE / ID / Score / Content``.

Ours differs in two ways. Documents of equal score are listed in file-name order; τ³ lists them in the order the
file system lists the documents folder (unsorted), which differs between machines, so a query whose top 10 ends
inside a tie may show other documents of that score. And an agent's pattern can backtrack catastrophically
(nested repetition such as ``((\w+\s?)+)*#``), and ``re`` then holds the interpreter for hours where no trial
timeout or signal acts. So the pattern (as ``re`` decides: a regex, or literal) is matched by the ``regex``
module in its ``VERSION0`` (``re``'s syntax and semantics) with a time limit, :data:`GREP_TIMEOUT` seconds for the
whole search; past it the agent gets a tool error and the trial goes on. Two known differences of ``regex`` from
``re`` reach these documents: ``\w`` leaves out numeric characters that are not decimal digits (the subscript in
"CO₂", 5 documents), and case-insensitive ``İ`` matches ``i`` where ``re`` matches ``I``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from time import monotonic
from typing import Any

import regex

from simulator.world.kit import DomainError, ToolError, decode_data_file

__all__ = ["CONFIGURATIONS", "DEFAULT_RETRIEVAL", "OFFLINE_REFUSED", "SLOT", "Document", "KnowledgeBase",
           "check_retrieval", "fill_required", "knowledge_base"]

SLOT = "{{required_documents}}"
"""Where the ``golden_retrieval`` prompt takes a task's required documents."""

TOP_K = 10
"""Documents a search returns."""
K1, B, EPSILON = 1.5, 0.75, 0.25
"""Okapi BM25's parameters: τ³'s, which are rank_bm25's ``BM25Okapi`` defaults (EPSILON: a query word found in more
than half of the documents, whose idf would be negative, gets EPSILON times the mean idf instead)."""

GREP_TIMEOUT = 2.0
"""Seconds one grep may spend matching over all documents (a normal pattern takes milliseconds)."""

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
    **{name: "a hosted LLM that reranks BM25's hits (τ³'s pointwise LLM reranker)"
       for name in ("bm25_reranker", "bm25_reranker_grep")},
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
                          "which is not available offline; offline configurations: " + ", ".join(CONFIGURATIONS))
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
                raw = decode_data_file(path, path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as e:
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
        """Rank the documents for ``query`` by Okapi BM25 (the ``knowledge`` extra's ``rank_bm25``, as τ³ does).

        Returns:
            the top ``k`` documents as text, ties in document order; ``No relevant documents found.`` for a query
            without words (a query whose words are in no document lists ``k`` documents scoring 0, as τ³'s does).

        Raises:
            DomainError: ``rank_bm25`` is not installed.
        """
        tokens = query.lower().split()
        if not tokens:
            return "No relevant documents found."
        scores = self._index().get_scores(tokens)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]  # stable: ties keep document order
        return _hits(self.documents, [(i, float(scores[i])) for i in order]) or "No relevant documents found."

    def _index(self) -> Any:
        """The BM25 index of the documents: built on the first search of the process, then shared read-only."""
        if self._bm25 is not None:
            return self._bm25
        with self._bm25_lock:
            if self._bm25 is None:
                try:
                    from rank_bm25 import BM25Okapi
                except ImportError as e:
                    raise DomainError("retrieval by BM25 needs the knowledge extra: pip install 'tausim[knowledge]'"
                                      ) from e
                self._bm25 = BM25Okapi([d.content.lower().split() for d in self.documents], k1=K1, b=B,
                                       epsilon=EPSILON)
        return self._bm25

    def grep(self, pattern: str, k: int = TOP_K, *, timeout: float | None = None) -> str:
        """Rank the documents by the number of case-insensitive matches of ``pattern``; return the hits as text.

        Args:
            pattern: a regular expression in Python's ``re`` syntax; one ``re`` cannot compile is searched literally.
            k: how many documents to list at most.
            timeout: seconds the matching may take over all documents (default :data:`GREP_TIMEOUT`).

        Raises:
            ToolError: the matching took longer than ``timeout`` seconds (the message names the pattern and limit).
        """
        if not pattern.strip():
            return f"No matches found for pattern: {pattern}"
        try:
            re.compile(pattern, re.IGNORECASE)  # τ³'s rule: what re compiles is a regex, anything else is literal
            source = pattern
        except re.error:
            source = re.escape(pattern)
        try:
            rx = regex.compile(source, regex.IGNORECASE | regex.VERSION0)
        except regex.error:  # re's syntax that regex refuses: none known; searched literally rather than crash
            rx = regex.compile(regex.escape(pattern), regex.IGNORECASE | regex.VERSION0)
        limit = GREP_TIMEOUT if timeout is None else timeout
        deadline = monotonic() + limit
        counts = []
        for i, d in enumerate(self.documents):
            try:
                counts.append((i, float(len(rx.findall(d.content, timeout=max(deadline - monotonic(), 0.0))))))
            except TimeoutError:
                raise ToolError(f"grep pattern {pattern!r} took longer than the {limit:g}-second limit to match; "
                                "use a simpler pattern (no nested repetition)") from None
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

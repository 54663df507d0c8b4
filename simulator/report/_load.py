"""Reading a run document: re-exported from the engine's record models (:mod:`simulator.storage.documents`)."""

from __future__ import annotations

from simulator.storage.documents import RUN_FORMAT, RunDocumentError, load_run_document, load_run_from_store

__all__ = ["RUN_FORMAT", "RunDocumentError", "load_run_document", "load_run_from_store"]

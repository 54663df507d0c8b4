"""Reading a run document: re-exported from :mod:`simulator.storage.documents` and :mod:`simulator.storage.store`."""

from __future__ import annotations

from simulator.storage.documents import RUN_FORMAT, RunDocumentError, load_run_document
from simulator.storage.store import load_run_from_store

__all__ = ["RUN_FORMAT", "RunDocumentError", "load_run_document", "load_run_from_store"]

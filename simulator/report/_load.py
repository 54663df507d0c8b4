"""Reading a run document: an ``--out`` JSON file of ``tausim run`` or a run loaded from the results store."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulator.errors import RunDocumentError

__all__ = ["RUN_FORMAT", "RunDocumentError", "load_run_document", "load_run_from_store"]

RUN_FORMAT = "tausim.run"
"""The value of the ``format`` field of every run document."""





def _check_document(doc: Any, source: str) -> dict[str, Any]:
    """Check the shape of a decoded run document and return it.

    Args:
        doc: the decoded document.
        source: where it came from, for error messages.

    Returns:
        The document (the same object).

    Raises:
        RunDocumentError: the document is not a ``tausim.run`` object with a config and a list of trials.
    """
    if not isinstance(doc, Mapping):
        raise RunDocumentError(f"{source}: expected a JSON object (a tausim run document), got {type(doc).__name__}")
    fmt = doc.get("format")
    if fmt != RUN_FORMAT:
        raise RunDocumentError(f"{source}: not a tausim run document: \"format\" is {fmt!r}, expected {RUN_FORMAT!r} "
                               "(write one with `tausim run --out FILE`)")
    config = doc.get("config")
    if not isinstance(config, Mapping):
        raise RunDocumentError(f"{source}: \"config\" must be an object")
    trials_planned = config.get("trials", 1)
    if isinstance(trials_planned, bool) or not isinstance(trials_planned, int) or trials_planned < 1:
        raise RunDocumentError(f"{source}: config.trials must be a positive integer, got {trials_planned!r}")
    trials = doc.get("trials")
    if not isinstance(trials, list):
        raise RunDocumentError(f"{source}: \"trials\" must be a list")
    for i, trial in enumerate(trials):
        where = f"{source}: trials[{i}]"
        if not isinstance(trial, Mapping):
            raise RunDocumentError(f"{where}: expected an object, got {type(trial).__name__}")
        if not isinstance(trial.get("task_id"), str):
            raise RunDocumentError(f"{where}: \"task_id\" must be a string, got {trial.get('task_id')!r}")
        index = trial.get("trial")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise RunDocumentError(f"{where}: \"trial\" must be a non-negative integer, got {index!r}")
        if not isinstance(trial.get("passed"), bool):
            raise RunDocumentError(f"{where}: \"passed\" must be true or false, got {trial.get('passed')!r}")
        for key in ("grade", "trajectory"):
            if trial.get(key) is not None and not isinstance(trial.get(key), Mapping):
                raise RunDocumentError(f"{where}: \"{key}\" must be an object or null")
    for key in ("planned_task_ids", "task_ids"):
        ids = doc.get(key)
        if ids is not None and not (isinstance(ids, list) and all(isinstance(t, str) for t in ids)):
            raise RunDocumentError(f"{source}: \"{key}\" must be a list of task ids")
    return dict(doc)


def load_run_document(path_or_doc: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Read and check a run document.

    Args:
        path_or_doc: the path of an ``--out`` JSON file written by ``tausim run``, or an already decoded
            document (e.g. from :meth:`ResultsStore.load_run_document`).

    Returns:
        The document: ``{"format": "tausim.run", "config", "trials", ...}``. Optional fields used by the
        reports when present: ``run_id``, ``planned_task_ids`` or ``task_ids`` (every task of the plan, so
        that a task with no recorded trial still counts), ``duplicates``, ``git_revision``.

    Raises:
        RunDocumentError: the file is missing or unreadable, is not valid JSON, or is not a tausim run document;
            the message names the file.
    """
    if isinstance(path_or_doc, Mapping):
        return _check_document(path_or_doc, "run document")
    path = Path(path_or_doc)
    if path.is_dir():
        raise RunDocumentError(f"{path}: is a directory; give the JSON file written by `tausim run --out FILE`")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunDocumentError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunDocumentError(f"{path}: cannot read: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise RunDocumentError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    checked = _check_document(doc, str(path))
    return checked


def load_run_from_store(url: str, run_id: str) -> dict[str, Any]:
    """Load a run from the results store (:mod:`simulator.store`, imported only here) and check it.

    Args:
        url: the store's SQLAlchemy URL, e.g. ``sqlite:///runs.db``.
        run_id: the run's id.

    Returns:
        The run document, as :func:`load_run_document` returns it (with ``run_id`` set).

    Raises:
        RunDocumentError: the store module is not available, the URL is malformed, the SQLite file does not
            exist, the store cannot be opened, or it has no such run.
    """
    try:
        store_module = importlib.import_module("simulator.store")
    except ModuleNotFoundError as e:
        if e.name != "simulator.store":
            raise
        raise RunDocumentError("--store: the results store (simulator/store.py) is not available in this version "
                               "of tausim; report from a file written by `tausim run --out FILE` instead") from None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as e:
        raise RunDocumentError(f"--store {url!r}: not a database URL ({e}); e.g. sqlite:///runs.db") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():
            raise RunDocumentError(f"--store {url}: no such database file {parsed.database}")
    store_error: type[Exception] = getattr(store_module, "StoreError", LookupError)
    try:
        store = store_module.ResultsStore(url, create=False)
        try:
            doc = store.load_run_document(run_id)
        finally:
            store.close()
    except store_error as e:
        raise RunDocumentError(f"--store {url}: {e}") from None
    except SQLAlchemyError as e:
        raise RunDocumentError(f"--store {url}: cannot read the results store: {type(e).__name__}: {e}") from None
    checked = _check_document(doc, f"{url} run {run_id}")
    checked.setdefault("run_id", run_id)
    return checked

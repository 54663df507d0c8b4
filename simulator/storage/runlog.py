"""Per-run structured logs: JSON lines written by a structlog logger that belongs to one run.

:func:`open_run_log` builds a logger with ``structlog.wrap_logger`` over a ``WriteLogger`` writing to the
run's file; structlog's global configuration is never touched, so runs (and tests) in one process never
share or leak logging setup. Every event carries ``run_id``; the runner binds ``task_id`` and ``trial`` per
trial. Events: ``run_start``, ``trial_start``, ``tool_call``, ``model_call`` (tokens, cost, latency,
attempts), ``trial_end`` (termination, passed), ``run_end``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["open_run_log", "run_logger"]


def _timestamp(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event_dict["ts"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")
    return event_dict


def _level(_logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event_dict["level"] = "warning" if method == "warn" else method
    return event_dict


def run_logger(file: Any, run_id: str) -> Any:
    """Return a structlog logger writing one JSON object per line to ``file``, bound to ``run_id``.

    Args:
        file: a text file object opened for writing (kept open by the caller).
        run_id: the run's id, carried by every event.

    Returns:
        A bound logger (``.info(event, **fields)``, ``.bind(**fields)``, ...).
    """
    import structlog  # here, not at import: structlog loads rich's tracebacks and pygments (a run without a log
    # file never needs them)

    return structlog.wrap_logger(
        structlog.WriteLogger(file),  # a line and its newline in one write (see GuardedWriter)
        processors=[_level, _timestamp, structlog.processors.format_exc_info,
                    structlog.processors.JSONRenderer(default=str)],
        wrapper_class=structlog.BoundLogger,
        context_class=dict,
    ).bind(run_id=run_id)


@contextmanager
def open_run_log(path: str | Path, run_id: str) -> Iterator[Any]:
    """Open (append to) a run's JSON-lines log file and yield its logger; the file is closed on exit.

    Args:
        path: the log file; its directory must exist.
        run_id: the run's id, carried by every event.

    Yields:
        The run's bound logger.

    Raises:
        OSError: the file cannot be opened.
    """
    with open(path, "a", encoding="utf-8", buffering=1) as f:
        yield run_logger(f, run_id)

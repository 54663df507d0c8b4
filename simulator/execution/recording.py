"""Where a run's results go: the results store it is recorded in, the partial file, the final run document.

The pieces :func:`simulator.execution.session.run` records a run with; each raises :class:`OptionError` naming
the argument at fault, so that the command line can name its option (``--store``, ``--out``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from simulator.errors import OptionError, WriteError
from simulator.storage.documents import partial_header
from simulator.storage.store import DEFAULT_STORE_URL, ResultsStore
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec

__all__ = ["PARTIAL_SUFFIX", "GuardedWriter", "Interrupts", "WriteOutcome", "append_line", "check_store_url",
           "close_quietly", "document_json", "document_path", "ends_mid_line", "guard_appended", "open_partial",
           "open_results_store", "output_problem", "partial_lock", "partial_path", "sigint_deferred",
           "write_document", "write_json_atomic", "write_text_atomic", "write_with_fallback"]


def check_store_url(url: str) -> None:
    """Refuse a store URL whose database would vanish with the process (``sqlite://``, ``sqlite:///:memory:``).

    Args:
        url: a SQLAlchemy database URL; a malformed one passes here (:func:`open_results_store` reports it).

    Raises:
        OptionError: ``store``: an empty URL, or an in-memory SQLite database.
    """
    from sqlalchemy.engine import make_url

    if not url.strip():
        raise OptionError("store", None, f"empty URL; give one such as {DEFAULT_STORE_URL}")
    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - a malformed URL is reported by open_results_store
        return
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise OptionError("store", url, "an in-memory database keeps nothing after the run; give a file, e.g. "
                                        f"{DEFAULT_STORE_URL}")


def output_problem(path: Path, example: str = "run.json") -> str | None:
    """Say why a file cannot be written, or return None when it can: checked before any work starts.

    A file is created and removed in the target's directory (so read-only file systems, missing permissions and
    pseudo file systems such as ``/proc`` are found); a disk that fills later is found when it is written.

    Args:
        path: the output file.
        example: a file name suggested when ``path`` is a directory.

    Returns:
        The reason (e.g. ``directory /x is not writable (Read-only file system)``), or None.
    """
    if path.is_dir():
        return f"is a directory; give a file name such as {path / example}"
    if path.parent.exists() and not path.parent.is_dir():
        return f"{path.parent} is not a directory"
    if not path.parent.is_dir():
        return f"directory {path.parent} does not exist"
    try:
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=".tausim-probe-")
    except OSError as e:
        return f"directory {path.parent} is not writable ({e.strerror or e})"
    os.close(fd)
    os.unlink(probe)
    if path.exists() and not path.is_file():
        return "is not a regular file"
    return None


def open_results_store(url: str, must_exist: bool = False) -> ResultsStore:
    """Open the results store at ``url``.

    Args:
        url: a SQLAlchemy database URL, e.g. ``sqlite:///runs.db`` or ``postgresql+psycopg://host/db``.
        must_exist: refuse a SQLite file that is not there (instead of creating it).

    Returns:
        The open store (close it, or use ``with``).

    Raises:
        OptionError: ``store``: not a database URL, a missing SQLite file (``must_exist``), or the store cannot
            be opened (driver missing, server unreachable); the message names the URL without its password.
    """
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as e:  # noqa: BLE001 - sqlalchemy raises ArgumentError (and others) on a bad URL
        raise OptionError("store", None, f"not a database URL ({type(e).__name__}); e.g. {DEFAULT_STORE_URL}") from e
    shown = parsed.render_as_string(hide_password=True)
    if must_exist and parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():
            raise OptionError("store", shown, f"no such database file {parsed.database}")
    try:
        return ResultsStore(url)
    except Exception as e:  # noqa: BLE001 - driver missing, server unreachable: one error naming the store
        cause = getattr(e, "orig", None) or e  # the driver's error under SQLAlchemy's wrapper
        first = (str(cause).strip().splitlines() or [""])[0]  # not SQLAlchemy's "(Background on this error ...)"
        raise OptionError("store", shown, f"cannot open the results store: {type(cause).__name__}: {first}") from e


def document_json(doc: Any) -> str:
    """The JSON text of a document: one top-level field a line, each element of a top-level list a line.

    A run document's trials are most of its text: each is written compact on its own line (greppable, one trial a
    line), by the json module's C encoder; ``json.dumps(indent=...)`` falls back to the pure-Python encoder, about
    three times slower (0.4 s more for a 920-trial run). Values not JSON-serialisable are written as ``str(value)``.

    Args:
        doc: a JSON-serialisable value, usually a dict (anything else is written on one line).

    Returns:
        The text; ``json.loads`` gives back ``doc`` (tuples as lists), as for ``json.dumps``.
    """
    if not isinstance(doc, dict) or not doc:
        return json.dumps(doc, default=str)
    fields = []
    for key, value in doc.items():
        name = json.dumps(str(key))
        if isinstance(value, list | tuple) and value:
            items = ",\n  ".join(json.dumps(v, default=str) for v in value)
            fields.append(f" {name}: [\n  {items}\n ]")
        else:
            fields.append(f" {name}: {json.dumps(value, default=str)}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write ``doc`` as JSON (:func:`document_json`) to ``path`` through a temporary file and a rename.

    Never leaves a half-written file.

    Raises:
        OSError: the file cannot be written (the temporary file is removed).
    """
    write_text_atomic(path, document_json(doc))


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file (``PATH.tmp``) and a rename.

    Never leaves a half-written file; a file ``path`` held before is kept when the write fails.

    Raises:
        OSError: the file cannot be written (the temporary file is removed).
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the folder itself is gone: nothing to clean up
        raise


PARTIAL_SUFFIX = ".partial.jsonl"
"""What a run document file's name takes to name its partial file (:func:`partial_path`)."""


def partial_path(out: Path) -> Path:
    """Return the partial file of a run document file: ``FILE.partial.jsonl`` beside ``FILE``."""
    return out.with_name(out.name + PARTIAL_SUFFIX)


def document_path(partial: Path) -> Path | None:
    """Return the run document file a partial file is for (``FILE`` for ``FILE.partial.jsonl``), or None.

    None when ``partial``'s name does not end with ``.partial.jsonl`` (or is nothing but that).
    """
    name = partial.name
    if not name.endswith(PARTIAL_SUFFIX) or name == PARTIAL_SUFFIX:
        return None
    return partial.with_name(name[: -len(PARTIAL_SUFFIX)])


def open_partial(path: Path, spec: RunSpec, planned: int, previous: Sequence[TrialResult],
                 task_ids: list[str]) -> IO[str]:
    """Start the partial run file (header, then the ``previous`` trials) and return it open for appending.

    It is written to a temporary file renamed into place, so resuming from the same file never loses it.

    Args:
        path: the partial file (:func:`partial_path`).
        spec: the run's spec, as built.
        planned: the run's planned trials.
        previous: trials of earlier sessions (a resumed run), written first.
        task_ids: every task of the plan, in order.

    Returns:
        The file, open for appending one trial a line.

    Raises:
        OSError: the file cannot be written.
    """
    tmp = path.with_name(path.name + ".tmp")
    handle = tmp.open("w", encoding="utf-8")
    try:
        handle.write(json.dumps(partial_header(spec, planned, task_ids)) + "\n")
        for t in previous:
            handle.write(t.model_dump_json() + "\n")
        handle.flush()
        os.replace(tmp, path)
    except BaseException:
        close_quietly(handle)  # its flush fails again on a full disk: the temporary file is removed all the same
        tmp.unlink(missing_ok=True)
        raise
    return handle


@contextmanager
def sigint_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C (SIGINT) off while the body runs (main thread only); yields the list of signals received.

    For work that must finish once begun (a result file written, what an interrupted command found kept): a Ctrl-C
    meanwhile is noted in the list, not raised. SIGTERM is held too while it interrupts as Ctrl-C does (an
    :class:`Interrupts` handles it), and told to that handler (:meth:`Interrupts.note`) so that the command still
    exits 143. Keep the body short and free of waits: Ctrl-C cannot stop it.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    old_int = signal.getsignal(signal.SIGINT)
    old_term = signal.getsignal(signal.SIGTERM)

    def hold(signum: int, frame: Any) -> None:
        received.append(signum)
        old = old_int if signum == signal.SIGINT else old_term
        if isinstance(old, Interrupts):
            old.note(signum)

    signal.signal(signal.SIGINT, hold)
    if isinstance(old_term, Interrupts):
        signal.signal(signal.SIGTERM, hold)
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, old_int)
        if isinstance(old_term, Interrupts):
            signal.signal(signal.SIGTERM, old_term)


class Interrupts:
    """The Ctrl-C and SIGTERM of one command invocation (``tausim run``, ``hunt``, ``variance``).

    Within :meth:`handled` (main thread only) both signals raise ``KeyboardInterrupt`` in the main thread, each
    noted in ``received`` first. Python raises it in whatever code runs at that instant; when that is a garbage
    collector or weakref callback (e.g. SQLAlchemy's), Python prints ``Exception ignored in`` and drops it: the
    command would go on as if nothing happened. Such a dropped interrupt is counted (through
    :data:`sys.unraisablehook`, not printed), and :meth:`check`, called at safe points (after each trial, each hunt
    step, before the final writes), raises it again.

    Attributes:
        received: the signals received (``signal.SIGINT``, ``signal.SIGTERM``), in order.
        dropped: interrupts dropped in a callback and not raised again by :meth:`check` yet.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self.dropped = 0

    @property
    def terminated(self) -> bool:
        """True once a SIGTERM was received (the command exits 143, else 130)."""
        return signal.SIGTERM in self.received

    @property
    def code(self) -> int:
        """The exit code of the interrupted command: 143 after a SIGTERM, else 130 (128 + the signal's number)."""
        return 143 if self.terminated else 130

    @property
    def said(self) -> str:
        """How messages begin: ``interrupted (SIGTERM)`` after a SIGTERM, else ``interrupted``."""
        return "interrupted (SIGTERM)" if self.terminated else "interrupted"

    def __call__(self, signum: int, frame: Any) -> None:
        """The signal handler: note the signal, raise ``KeyboardInterrupt``."""
        self.received.append(signum)
        raise KeyboardInterrupt

    def note(self, signum: int) -> None:
        """Note a signal held off meanwhile (:func:`sigint_deferred`); its interruption is the holder's to raise."""
        self.received.append(signum)

    def check(self) -> None:
        """A safe point: raise the interrupt a callback dropped, if any.

        Raises:
            KeyboardInterrupt: an interrupt was dropped since the last check.
        """
        if self.dropped:
            self.dropped = 0
            raise KeyboardInterrupt

    @contextmanager
    def handled(self) -> Iterator[Interrupts]:
        """Within it (main thread only), Ctrl-C and SIGTERM raise ``KeyboardInterrupt`` and dropped ones are counted.

        The signal handlers and :data:`sys.unraisablehook` are restored on leaving; another thread's call changes
        nothing (Python delivers signals to the main thread only). A SIGINT ignored when the process started (a
        background job of a non-interactive shell) stays ignored, as Python leaves it.
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old_int = signal.getsignal(signal.SIGINT)
        if old_int is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, self)
        old_term = signal.signal(signal.SIGTERM, self)
        old_hook, main = sys.unraisablehook, threading.main_thread()

        def unraisable(unraisable: Any) -> None:
            if isinstance(unraisable.exc_value, KeyboardInterrupt) and threading.current_thread() is main:
                self.dropped += 1
                return
            old_hook(unraisable)

        sys.unraisablehook = unraisable
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
            if sys.unraisablehook is unraisable:
                sys.unraisablehook = old_hook


@dataclass(frozen=True)
class WriteOutcome:
    """What became of a run document's (or another result file's) final write (:func:`write_with_fallback`).

    Attributes:
        written: the file written (the one asked for, or a fallback), or None when none could be written.
        error: why the file asked for could not be written (the OS's words), or None.
        interrupted: a Ctrl-C (SIGINT) arrived during the write (which was finished first).
    """

    written: Path | None
    error: str | None = None
    interrupted: bool = False


def write_document(out: Path, doc: dict[str, Any]) -> WriteOutcome:
    """Write the run document to ``out``, or to a fallback file when ``out`` cannot be written; Ctrl-C waits.

    The fallback is ``tausim-run-XXXXXXXX.json`` in the working directory, else in the temporary directory
    (:func:`write_with_fallback`).

    Args:
        out: the file to write.
        doc: the run document (JSON-serialisable; written as :func:`document_json`).

    Returns:
        The file written, the error that made it a fallback, and whether a Ctrl-C came meanwhile.
    """
    return write_with_fallback(out, document_json(doc), "tausim-run", ".json")


def write_with_fallback(out: Path, text: str, prefix: str, suffix: str) -> WriteOutcome:
    """Write ``text`` to ``out``, or to a fallback file when ``out`` cannot be written; Ctrl-C waits.

    For results that would cost work to make again (a run document, a hunt's summary): a full disk or a folder
    removed meanwhile must not lose them. The fallback is ``{prefix}-XXXXXXXX{suffix}`` (8 random hex digits) in
    the working directory, else in the temporary directory. Each file is written whole or not at all
    (:func:`write_text_atomic`).

    Args:
        out: the file to write.
        text: its text.
        prefix: the fallback file's name before its random part, e.g. ``tausim-run``.
        suffix: the fallback file's extension, e.g. ``.json``.

    Returns:
        The file written (``out``, the fallback, or None when neither could be written), the error that made it a
        fallback (the OS's words), and whether a Ctrl-C came meanwhile.
    """
    with sigint_deferred() as received:
        written: Path | None = None
        error = None
        try:
            write_text_atomic(out, text)
            written = out
        except OSError as e:
            error = e.strerror or str(e)
            name = f"{prefix}-{uuid.uuid4().hex[:8]}{suffix}"
            for folder in (Path.cwd(), Path(tempfile.gettempdir())):
                try:
                    write_text_atomic(folder / name, text)
                except OSError:
                    continue
                written = folder / name
                break
    return WriteOutcome(written=written, error=error, interrupted=bool(received))


def append_line(handle: IO[str], path: Path, line: str) -> None:
    """Append one line to an open file and flush it.

    Raises:
        WriteError: the line cannot be written (disk full, read-only, ...); what the file held before stays (a
            reader drops a last line cut short, :func:`~simulator.storage.documents.load_partial`).
    """
    try:
        handle.write(line + "\n")
        handle.flush()
    except OSError as e:
        raise WriteError(str(path), e.strerror or str(e)) from e


def ends_mid_line(path: str | Path) -> bool:
    """Whether a file's last line lacks its newline (a line cut short by a full disk or a crash).

    False for a file that is empty, missing or unreadable.
    """
    try:
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


def guard_appended(handle: IO[str], path: str | Path) -> GuardedWriter:
    """Guard a text file just opened for appending (the run's log, the spans file): a :class:`GuardedWriter`.

    When an earlier writer's last line was cut short (:func:`ends_mid_line`: a full disk, a crash), a newline is
    written first, so that this writer's lines are whole lines (the cut one stays as it was, alone).
    """
    guard = GuardedWriter(handle, str(path))
    if ends_mid_line(path):
        guard.write("\n")
    return guard


def close_quietly(handle: IO[str]) -> None:
    """Close a file whose last write may have failed (disk full): the flush on close fails the same way.

    That failure was already reported (:class:`~simulator.errors.WriteError`); what was written before stays.
    """
    try:
        handle.close()
    except OSError:
        return


class GuardedWriter:
    """A text file that never raises on a failed write: the first error is kept (``error``), later writes dropped.

    For the run's event log and its spans file (``--otel``), which worker threads write to: a full disk must not
    crash trials (nor fill the terminal with the span exporter's tracebacks). The writer notes
    whose events it lost (each line's ``task_id``/``persona``/``trial``); the session asks :meth:`lost` before it
    records a trial and stops the run (:class:`~simulator.errors.WriteError`) at the first trial whose events
    did not all reach the file. A trial whose events were all written before the disk filled is still recorded,
    however late its result reaches the session.

    Args:
        handle: the open text file.
        path: its name, for the error.
    """

    def __init__(self, handle: IO[str], path: str) -> None:
        self.handle = handle
        self.path = path
        self.error: WriteError | None = None
        self._lost: set[tuple[Any, Any, Any]] = set()
        self._lost_other = False  # a line lost that names no trial (run events), or a failed flush
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        """Write ``text`` (nothing once a write failed; its lines are noted as lost); return its length."""
        with self._lock:
            if self.error is None:
                try:
                    self.handle.write(text)
                    return len(text)
                except OSError as e:
                    self.error = WriteError(self.path, e.strerror or str(e))
            self._note_lost(text)
        return len(text)

    def flush(self) -> None:
        """Flush the file (nothing once a write failed)."""
        with self._lock:
            if self.error is None:
                try:
                    self.handle.flush()
                except OSError as e:
                    self.error = WriteError(self.path, e.strerror or str(e))
                    self._lost_other = True  # what the buffer held is not known line by line

    def lost(self, key: tuple[str, str | None, int]) -> bool:
        """Whether events of trial ``key`` (task id, persona or None, trial index) may be missing from the file.

        True once a write failed and a lost line named that trial, or named no trial (the cautious answer).
        """
        if self.error is None:
            return False
        with self._lock:  # a write failing in another thread notes its lines under the lock
            return self._lost_other or key in self._lost

    def _note_lost(self, text: str) -> None:
        """Note the trials whose lines ``text`` held (one JSON object per line, as the run's logger writes)."""
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict) and "task_id" in event and "trial" in event:
                self._lost.add((event["task_id"], event.get("persona"), event["trial"]))
            else:
                self._lost_other = True


@contextmanager
def partial_lock(path: Path, option: str) -> Iterator[None]:
    """Hold the lock of a partial run file (``FILE.lock`` beside it) while a run writes or resumes it.

    Like the store's lease (:class:`~simulator.storage.lease.RunLease`): a second process resuming the same partial
    file, or writing the same ``--out``, is refused instead of running the same trials and overwriting the file.
    The lock is the operating system's (``flock``), so a killed process never leaves it held; the lock file is
    removed on release.

    Args:
        path: the partial file.
        option: the argument it came from, for the error (``resume`` or ``out``).

    Raises:
        OptionError: another live process holds it (the message gives its pid).
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock; the run goes on unlocked
        yield
        return
    lock = path.with_name(path.name + ".lock")
    try:
        handle = lock.open("a+", encoding="utf-8")
    except OSError:  # a read-only folder (a partial file only read): nobody can write it there either
        yield
        return
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise OptionError(option, str(path), f"another tausim process (pid {holder}) is running this run now; "
                                                 "wait for it to end, or stop it first") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)
    finally:
        handle.close()

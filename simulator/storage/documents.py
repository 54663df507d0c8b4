"""Record models: what a run leaves behind, and the run document that carries it.

- :class:`TrialResult`: one finished trial (outcome, grade, trajectory, timings).
- :class:`RunResult`: a run's :class:`~simulator.types.spec.RunSpec` (key ``config``), trials and metrics.
- :func:`run_summary_json`: the run document (``{"format": "tausim.run", "version": 1, ...}``) written by
  ``tausim run --out`` and returned by :meth:`simulator.storage.store.ResultsStore.load_run_document`;
  :func:`load_run_document` reads and checks one (:class:`RunDocumentError`), and
  :func:`simulator.storage.store.load_run_from_store` one from the results store.
- the partial run file (``--out FILE`` writes ``FILE.partial.jsonl`` while the run goes on), a JSON-lines
  file: its first line is the header :func:`partial_header` (``{"format": "tausim.partial", "version": 1,
  "config": <RunSpec>, "planned": N, "planned_task_ids": [...]}``), each further line one finished
  :class:`TrialResult` in completion order, read back strictly (a field of the wrong type, such as
  ``"passed": "yes"`` or ``"trial": "1"``, is an error naming the line, the field and the value, never coerced; so is
  what tausim would not write back as it is, since resuming writes the file again: a field it does not know, a NaN or
  Infinity, a ``passed`` other than ``grade.passed``; two different lines of one trial are refused, an exact repeat
  kept once: :func:`read_partial`).
  A crash can cut the last line short: :func:`load_partial` drops such a line. :func:`load_run_document` reads a
  partial file as the run document of the trials it holds (so ``tausim report FILE.partial.jsonl`` works), and
  ``tausim run --resume-from FILE.partial.jsonl`` runs only the trials it does not hold.

The store, the reports, the gate, budgets and regrade read these; none of them imports the CLI or the report
package to do so.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.errors import RunDocumentError
from simulator.stats.faults import recovery_rates
from simulator.stats.summaries import run_metrics
from simulator.storage.measures import bad_measure, scrub_measurements
from simulator.types.jsonfile import JSONTextError, decode_json, not_utf8
from simulator.types.results import RunResult, TrialKey, TrialResult, trial_key
from simulator.types.sanitize import clipped, excerpt, shown
from simulator.types.spec import RunSpec, format_validation_error, recorded_config
from simulator.types.trajectory import TerminationReason

__all__ = ["PARTIAL_FORMAT", "RUN_FORMAT", "PartialRecords", "RunDocumentError", "check_run_document", "load_partial",
           "load_run_document", "partial_document", "partial_header", "read_partial", "run_summary_json"]









def run_summary_json(result: RunResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the ``--out`` JSON document of a run.

    Args:
        result: the finished run.
        extra: extra top-level fields (e.g. git revision, package versions; ``planned_task_ids``, every task of
            the plan, makes the metrics count a task without any finished trial, as in a run stopped early).

    Returns:
        ``{"format": "tausim.run", "version": 1, "config", "metrics", "termination_reasons", "trials",
        "planned", "recorded", "duplicates", ...}``; ``recorded`` counts the trials present and ``duplicates``
        the trials beyond the first of a (task, persona, trial) key; with personas, ``by_persona`` (see
        :func:`simulator.stats.summaries.persona_metrics`) is also copied to the top level; with environment faults
        (``config.faults``), ``recovery`` (:func:`simulator.stats.faults.recovery_rates` over the trials). ``metrics``
        are those of :func:`simulator.stats.summaries.run_metrics` (the same as ``tausim report``'s): a complete run
        is checked
        strictly (a duplicated trial is refused); a partial one (a results-store run still missing trials) counts
        its missing trials as failed and reports them in ``missing_trials``.
    """
    doc: dict[str, Any] = {"format": "tausim.run", "version": 1}
    doc.update(extra or {})
    doc.update(result.model_dump(mode="json"))
    doc["config"] = recorded_config(result.config)  # secrets redacted
    pairs = Counter(trial_key(t) for t in result.trials)
    doc["recorded"] = len(pairs)
    doc["duplicates"] = sum(n - 1 for n in pairs.values())
    if doc.get("planned") is None:
        doc["planned"] = len(pairs)
    tasks = (doc.get("planned_task_ids") or doc.get("task_ids") or result.config.task_ids
             or list(dict.fromkeys(t.task_id for t in result.trials)))
    if tasks and result.trials:
        complete = doc["recorded"] == doc["planned"] and not doc["duplicates"]
        doc["metrics"] = run_metrics(doc["trials"], [str(t) for t in tasks], result.config.trials,
                                     personas=result.config.personas,
                                     incomplete="refuse" if complete else "count")
        if "by_persona" in doc["metrics"]:
            doc["by_persona"] = doc["metrics"]["by_persona"]
    faults = result.config.faults
    if (faults is not None and faults.active()) or any(t.faults for t in result.trials):
        doc["recovery"] = recovery_rates(doc["trials"])
    return doc


RUN_FORMAT = "tausim.run"
"""The value of the ``format`` field of every run document."""

PARTIAL_FORMAT = "tausim.partial"
"""The value of the ``format`` field of a partial run file's header line."""


def partial_header(spec: RunSpec, planned: int, task_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Return the header (first line) of a partial run file.

    Args:
        spec: the run's spec.
        planned: the run's planned trials (tasks x personas x trials).
        task_ids: every task of the plan, in order, or None; recorded so that a report of the file counts the
            tasks without a finished trial yet as missing (else it sees only the tasks it holds trials of).

    Returns:
        ``{"format": "tausim.partial", "version": 1, "config": <spec as JSON>, "planned": planned}``, plus
        ``"planned_task_ids"`` when ``task_ids`` is given.
    """
    header = {"format": PARTIAL_FORMAT, "version": 1, "config": recorded_config(spec), "planned": planned}
    if task_ids is not None:
        header["planned_task_ids"] = list(task_ids)
    return header


@dataclass(frozen=True)
class PartialRecords:
    """What a partial run file holds (:func:`read_partial`).

    Attributes:
        spec: the run's spec (the header's ``config``).
        trials: the trials in file order, one per (task, persona, trial) key.
        planned: the header's ``planned`` (the run's planned trials).
        task_ids: the header's ``planned_task_ids``, or None when absent.
        lines: each trial's key -> the line (from 1, the header's is 1) it was read from.
    """

    spec: RunSpec
    trials: list[TrialResult]
    planned: int
    task_ids: list[str] | None
    lines: dict[TrialKey, int]


def load_partial(path: str | Path) -> tuple[RunSpec, list[TrialResult], int | None]:
    """Read a partial run file (see the module docstring): :func:`read_partial` as ``(spec, trials, planned)``.

    Raises:
        RunDocumentError: as :func:`read_partial`.
    """
    read = read_partial(path)
    return read.spec, read.trials, read.planned


def read_partial(path: str | Path) -> PartialRecords:
    """Read a partial run file (see the module docstring) exactly as tausim writes it.

    Args:
        path: the ``FILE.partial.jsonl`` file.

    Returns:
        The :class:`PartialRecords`: the trials in file order; a line repeating an earlier line's JSON value exactly
        (the same trial twice) is collapsed into it; a last line cut short by a crash (no newline after it) is
        dropped.

    Raises:
        RunDocumentError: one line naming the file, the line, the field and the value (escaped and cut): a missing
            or unreadable file, a line that is not UTF-8, a first line that is not the header as tausim writes it
            (its ``format``, ``version`` 1, ``config`` a valid spec, ``planned`` an integer >= 0, ``planned_task_ids``
            a list of task ids, no other field), or a trial line that is not a trial as tausim writes it
            (:func:`_recorded_trial`: strict types, no unknown field, no NaN or Infinity, ``passed`` equal to
            ``grade.passed``), but for a last line without its newline; two different lines of the same (task,
            persona, trial) key (both line numbers and the key).
    """
    p = Path(path)
    lines = _partial_lines(p)
    try:
        header = decode_json(lines[0]) if lines else None
    except JSONTextError:
        header = None
    if not isinstance(header, Mapping) or header.get("format") != PARTIAL_FORMAT:
        raise RunDocumentError(f"{p}: line 1: not a tausim partial run file (expected the header "
                               f'{{"format": "{PARTIAL_FORMAT}", ...}} that `tausim run --out` writes)')
    planned, task_ids = _checked_header(header, f"{p}: line 1")
    try:
        spec = RunSpec.model_validate(header.get("config"))
    except ValidationError as e:
        raise RunDocumentError(format_validation_error(f"{p}: line 1: config", e)) from None
    trials: list[TrialResult] = []
    seen: dict[TrialKey, tuple[int, str]] = {}
    body = [(i, line) for i, line in enumerate(lines[1:], start=2) if line.strip()]
    for n, (i, line) in enumerate(body):
        trial = _recorded_trial(line, f"{p}: line {i}")
        if isinstance(trial, str):
            if n == len(body) - 1 and i == len(lines):  # the last line, without its newline: a crash cut it short
                break
            raise RunDocumentError(trial)
        key = trial_key(trial)
        if key not in seen:
            seen[key] = (i, line)
            trials.append(trial)
        elif line != seen[key][1] and decode_json(line) != decode_json(seen[key][1]):
            raise RunDocumentError(_conflict(p, seen[key][0], i, key))
    return PartialRecords(spec=spec, trials=trials, planned=planned, task_ids=task_ids,
                          lines={k: i for k, (i, _) in seen.items()})


def _conflict(p: Path, first: int, second: int, key: TrialKey) -> str:
    """The refusal of two different records of one trial key."""
    task, persona, index = key
    who = f"task {excerpt(task, as_json=True)}" + (f", persona {excerpt(persona, as_json=True)}" if persona is not None
                                                   else "")
    return (f"{p}: lines {first} and {second}: two different records of the same trial ({who}, trial {index}); "
            "tausim records each trial once, so the file was left as it was: keep the line to use and remove the "
            "other")


def _partial_lines(p: Path) -> list[str]:
    """The lines of a partial file, split at newlines only, each decoded from UTF-8.

    A last line without its newline that is not UTF-8 (a crash cut it in the middle of a character) becomes U+FFFD,
    which is not JSON: it is dropped as cut short.

    Raises:
        RunDocumentError: missing or unreadable file; a line that is not UTF-8 (its line and byte).
    """
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise RunDocumentError(f"{p}: no such file") from None
    except OSError as e:
        raise RunDocumentError(f"{p}: cannot read: {e.strerror or e}") from None
    # one trial a line, split at "\n" only: str.splitlines() also splits at U+0085, U+2028, \x1c... which JSON
    # leaves unescaped inside a message's text
    chunks = raw.split(b"\n")
    lines = []
    for i, chunk in enumerate(chunks, start=1):
        try:
            lines.append(chunk.decode("utf-8"))
        except UnicodeDecodeError as e:
            if i == len(chunks) and i > 1:  # the last line, without its newline: cut short, dropped below
                lines.append("\ufffd")  # not JSON, whatever the rest of the line: dropped as cut short
                continue
            why = not_utf8(raw, e) if i == 1 else f"not UTF-8 text ({e.reason} at byte {e.start} of the line)"
            raise RunDocumentError(f"{p}: line {i}: {why}; tausim writes UTF-8: the line was changed since") from None
    return lines


_HEADER_FIELDS = ("format", "version", "config", "planned", "planned_task_ids")
"""The fields of a partial file's header line (:func:`partial_header`)."""


def _checked_header(header: Mapping[str, Any], where: str) -> tuple[int, list[str] | None]:
    """Check a partial file's header as :func:`partial_header` writes it; return its ``planned`` and task ids.

    Raises:
        RunDocumentError: ``WHERE: field F: ... (value V); expected ...``: an unknown field, a ``version`` other than
            1, a ``planned`` that is not an integer >= 0 (or missing), ``planned_task_ids`` not a list of strings.
    """
    def bad(field: str, value: Any, expected: str) -> RunDocumentError:
        return RunDocumentError(f"{where}: field {field}: {expected} (value {excerpt(value, as_json=True)})")

    for field in header:
        if field not in _HEADER_FIELDS:
            raise bad(shown(str(field), one_line=True), header[field],
                      "not a field of the header tausim writes (it may come from another tausim version); expected "
                      + ", ".join(_HEADER_FIELDS))
    version = header.get("version")
    if version != 1 or isinstance(version, bool) or not isinstance(version, int):
        raise bad("version", version, "expected 1, the version this tausim reads (it may come from another tausim "
                                      "version)")
    planned = header.get("planned")
    if isinstance(planned, bool) or not isinstance(planned, int) or planned < 0:
        raise bad("planned", planned, "expected the number of planned trials, an integer >= 0")
    task_ids = header.get("planned_task_ids")
    if task_ids is not None and not (isinstance(task_ids, list) and all(isinstance(t, str) for t in task_ids)):
        raise bad("planned_task_ids", task_ids, "expected a list of task ids")
    return planned, task_ids


_REASONS = frozenset(str(r) for r in TerminationReason)
"""The termination reasons a trial is recorded with (:class:`~simulator.types.trajectory.TerminationReason`)."""


def _recorded_trial(line: str, where: str) -> TrialResult | str:
    """Read one trial line of a partial file exactly as tausim wrote it; return the trial, or what is wrong with it.

    Strict: pydantic's lax mode would read ``"passed": "yes"`` as true and ``"trial": "1"`` as 1, so that a line
    tausim did not write resumed as another trial. ``termination_reason`` must be one tausim records, in its case.
    Nothing the line holds may be lost when the file is written again: a field tausim does not know (at any depth;
    e.g. from another tausim version) is refused, not dropped, and so is a NaN or Infinity (tausim writes a
    non-finite number as null, so none is ever in a line it wrote). A graded trial's ``passed`` is its
    ``grade.passed``, as tausim records it.

    Args:
        line: the line's text.
        where: the file and line, to start the message with (``FILE: line 3``).

    Returns:
        The trial, or one line ``WHERE: field F: MESSAGE (value V)`` (escaped and cut,
        :func:`~simulator.types.spec.format_validation_error`).
    """
    try:
        trial = TrialResult.model_validate_json(line, strict=True)
    except ValidationError as e:
        return format_validation_error(where, e, TrialResult)
    if trial.termination_reason not in _REASONS:
        return (f"{where}: field termination_reason: not a termination reason tausim records (value "
                f"{excerpt(trial.termination_reason, as_json=True)}); expected one of {', '.join(sorted(_REASONS))}")
    lost = next(_lost_values(decode_json(line), json.loads(trial.model_dump_json()), ""), None)
    if lost is not None:
        return f"{where}: field {clipped(shown(lost[0], one_line=True))}: {lost[1]}"
    if trial.grade is not None and trial.passed != trial.grade.passed:
        return (f"{where}: field passed: contradicts grade.passed (value {json.dumps(trial.passed)}, grade.passed "
                f"{json.dumps(trial.grade.passed)}); tausim records a graded trial's passed as its grade's")
    return trial


def _lost_values(line: Any, written: Any, path: str) -> Iterator[tuple[str, str]]:
    """What of a decoded trial line tausim would not write back: ``(field path, why)`` for each such value.

    ``written`` is the line's trial as tausim writes it, decoded. A key of the line that it lacks is a field tausim
    does not know (but a null one: a field written only when set); a float that is not finite is a NaN or Infinity.
    """
    if isinstance(line, float) and not math.isfinite(line):
        yield path, (f"not a finite number (value {json.dumps(line)}); tausim writes a number here, or null, never "
                     "NaN or Infinity")
    elif isinstance(line, dict):
        for key, value in line.items():
            inner = f"{path}.{key}" if path else str(key)
            if not isinstance(written, dict) or key in written or value is None:
                yield from _lost_values(value, written.get(key) if isinstance(written, dict) else None, inner)
            else:
                yield inner, (f"not a field tausim knows (value {excerpt(value, as_json=True)}); it may come from "
                              "another tausim version: resume with that version, or remove the field")
    elif isinstance(line, list):
        for i, value in enumerate(line):
            yield from _lost_values(value, written[i] if isinstance(written, list) and i < len(written) else None,
                                    f"{path}.{i}" if path else str(i))


def partial_document(path: str | Path) -> dict[str, Any]:
    """Return the run document of the trials a partial run file holds (``"partial": true``).

    Raises:
        RunDocumentError: as :func:`load_partial`.
    """
    read = read_partial(path)
    spec, trials, planned, task_ids = read.spec, read.trials, read.planned, read.task_ids
    reasons = Counter(t.termination_reason for t in trials)
    result = RunResult(config=spec, trials=trials, termination_reasons=dict(sorted(reasons.items())),
                       planned=planned)
    extra: dict[str, Any] = {"partial": True, "source": str(path)}
    if task_ids:
        extra["planned_task_ids"] = task_ids
    doc = run_summary_json(result, extra)
    return check_run_document(doc, str(path))


def _is_partial(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    try:
        head = decode_json(first)
    except JSONTextError:
        return False
    return isinstance(head, Mapping) and head.get("format") == PARTIAL_FORMAT


def check_run_document(doc: Any, source: str) -> dict[str, Any]:
    """Check the shape of a decoded run document and return it.

    Args:
        doc: the decoded document.
        source: where it came from, for error messages.

    Returns:
        A shallow copy of the document whose recorded numbers that are not finite numbers >= 0 are None
        (:func:`simulator.storage.measures.scrub_measurements`; the trials holding them are copies, the input is
        not changed), with ``data_notes``, one line per field with such values, when there were any.

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
    return _scrubbed(doc, trials)


def _scrubbed(doc: Mapping[str, Any], trials: list[Any]) -> dict[str, Any]:
    """A shallow copy of the document with its bad recorded numbers None, and ``data_notes`` when there were any."""
    checked = dict(doc)
    checked["trials"], notes = scrub_measurements(trials)
    if bad_measure(checked.get("wall_seconds")):
        notes.append("wall_seconds: the run recorded a value that is not a finite number >= 0; shown as not "
                     "available")
        checked["wall_seconds"] = None
    if notes:
        checked["data_notes"] = notes
    return checked


def load_run_document(path_or_doc: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Read and check a run document.

    Args:
        path_or_doc: the path of an ``--out`` JSON file written by ``tausim run``, or an already decoded
            document (e.g. from :meth:`ResultsStore.load_run_document`).

    Returns:
        The document: ``{"format": "tausim.run", "config", "trials", ...}``; a partial run file (see the
        module docstring) gives the document of the trials it holds. Optional fields used by the
        reports when present: ``run_id``, ``planned_task_ids`` or ``task_ids`` (every task of the plan, so
        that a task with no recorded trial still counts), ``duplicates``, ``git_revision``.

    Raises:
        RunDocumentError: the file is missing or unreadable, is not valid JSON, or is not a tausim run document;
            the message names the file.
    """
    if isinstance(path_or_doc, Mapping):
        return check_run_document(path_or_doc, "run document")
    path = Path(path_or_doc)
    if path.is_dir():
        raise RunDocumentError(f"{path}: is a directory; give the JSON file written by `tausim run --out FILE`")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunDocumentError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunDocumentError(f"{path}: cannot read: {e}") from None
    if _is_partial(text):
        return partial_document(path)
    try:
        doc = decode_json(text)
    except JSONTextError as e:
        raise RunDocumentError(f"{path}: {e}") from None
    checked = check_run_document(doc, str(path))
    return checked

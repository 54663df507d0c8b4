"""Import a peer's results file (tau-bench, tau2-bench) as recorded trials that tausim can grade.

Teams hold results of tau-bench and tau2-bench runs; imported, every conversation becomes a
:class:`~simulator.execution.runner.TrialResult` whose trajectory is the peer's: its messages, its tool calls with the
observation the peer's agent saw (status ``ok``, or ``tool_error`` when the peer reported an error), and a
termination reason. The peer's reward is kept as ``trajectory.agent_metadata["peer_reward"]``. The trial is
stored ungraded (``grade`` None, ``passed`` = the peer's reward is 1);
:func:`simulator.execution.regrade.regrade_trials`
then grades it with every tausim layer and compares its verdict with the peer's.

Formats:

- ``tau-bench``: the JSON list its ``run.py`` writes, each entry ``{"task_id": int, "reward": float, "info":
  {...}, "traj": [OpenAI chat messages], "trial": int}`` (tool-calling agents; a ReAct agent's text actions are
  not tool calls and are refused). The task is the ``task_id``-th of the task file (tau-bench task files load
  with ids ``"0"``, ``"1"``, ...), or ``info["tausim_task_id"]`` when the file was written by ``tausim export``.
- ``tau2``: the results JSON of ``tau2 run`` (``{"info", "tasks", "simulations": [...]}``), each simulation
  ``{"task_id", "trial", "messages", "reward_info": {"reward"}, "termination_reason"}``; tool calls are
  ``{"id", "name", "arguments": {...}}`` and tool messages ``{"id": call id, "content", "error": bool}``. Either
  one file, or τ³'s directory format: a directory (or its ``results.json``) whose ``results.json`` holds the
  metadata and whose ``simulations/`` holds one ``<id>.json`` per simulation (read in file-name order, checked
  against the metadata's ``simulation_index`` when it has one). A simulation written by ``tausim export --format
  tau2`` carries ``info["tausim"]`` (tausim's termination reason, persona and trial index), which the import
  restores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import PeerResultsError
from simulator.storage.codec import RunInfo
from simulator.storage.store import ResultsStore, data_hash
from simulator.types.jsonfile import decode_json
from simulator.types.messages import Message, ToolCall
from simulator.types.results import (
    PEER_REWARD,  # noqa: F401
    TrialResult,
)
from simulator.types.sanitize import admit_message, admit_text
from simulator.types.spec import ComponentSpec, RunSpec
from simulator.types.trajectory import TerminationReason, ToolCallRecord, Trajectory
from simulator.world.domain import Domain
from simulator.world.tools import Toolbox

__all__ = ["PEER_FORMATS", "ImportedRun", "default_peer_tasks", "from_tau2", "from_tau_bench", "is_tau2_dir",
    "read_peer_results",
    "record_imported"]

PEER_FORMATS = ("tau-bench", "tau2")
"""Result formats ``tausim import`` reads."""

_STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
_TAU2_REASONS = {
    "user_stop": TerminationReason.USER_STOP, "agent_stop": TerminationReason.USER_STOP,
    "max_steps": TerminationReason.MAX_STEPS, "too_many_errors": TerminationReason.AGENT_ERROR,
    "agent_error": TerminationReason.AGENT_ERROR, "user_error": TerminationReason.USER_ERROR,
    "transfer": TerminationReason.AGENT_TRANSFER,
}


@dataclass
class ImportedRun:
    """A peer's results, as a run tausim can store and grade.

    Attributes:
        config: the run's configuration (agent ``peer:<format>``, user ``peer``, trials = highest index + 1).
        task_ids: the tasks present, in first-appearance order.
        trials: one ungraded :class:`~simulator.execution.runner.TrialResult` per conversation.
        source: ``{"format", "file", "sha256", "records"}``: where the results came from.
    """

    config: RunSpec
    task_ids: list[str]
    trials: list[TrialResult]
    source: dict[str, Any] = field(default_factory=dict)


def _fail(where: str, problem: str) -> PeerResultsError:
    return PeerResultsError(f"{where}: {problem}")


def _arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(parsed arguments, raw text when they do not parse to an object)``."""
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return None, raw
        return (value, None) if isinstance(value, dict) else (None, raw)
    return None, json.dumps(raw)


def _status(toolbox: Toolbox, name: str, content: str, error: bool | None) -> str:
    """The status of a peer's tool call from what it observed (an explicit error flag wins over the text)."""
    if toolbox.kind(name) is None:
        return "unknown_tool"
    failed = error if error is not None else content.lstrip().startswith("Error")
    return "tool_error" if failed else "ok"


def _trajectory(where: str, messages: Sequence[Any], toolbox: Toolbox, *, call_key: str,
                tool_id_key: str) -> Trajectory:
    """Build a trajectory from a peer's chat messages.

    Args:
        where: the record, for error messages.
        messages: the peer's messages (system messages are dropped: tausim does not record the system prompt).
        toolbox: the domain's tools (for each call's kind).
        call_key: ``"function"`` when tool calls nest name and arguments under it (OpenAI), else ``""``.
        tool_id_key: the key of a tool message that names its call (``tool_call_id`` or ``id``).

    Raises:
        PeerResultsError: a message that is not an object, an unknown role, a tool call without id or name.
    """
    traj = Trajectory()
    pending: dict[str, tuple[int, ToolCall]] = {}
    for i, m in enumerate(messages):
        at = f"{where}: message {i}"
        if not isinstance(m, Mapping):
            raise _fail(at, f"not an object ({type(m).__name__})")
        role = m.get("role")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        if role == "system":
            continue
        if role == "user":
            traj.messages.append(admit_message(Message(role="user", content=content or ""), f"{at} (user)",
                                               traj.notes))
            traj.turns += 1
        elif role == "assistant":
            calls = []
            for j, c in enumerate(m.get("tool_calls") or []):
                spec = c.get(call_key) if call_key and isinstance(c, Mapping) else c
                if not isinstance(spec, Mapping) or not isinstance(c.get("id"), str) or not spec.get("name"):
                    raise _fail(f"{at}: tool call {j}", "needs an id and a name")
                args, raw = _arguments(spec.get("arguments"))
                calls.append(ToolCall(id=c["id"], name=str(spec["name"]), arguments=args, raw_arguments=raw))
            said = admit_message(Message(role="assistant", content=content, tool_calls=calls), f"{at} (agent)",
                                 traj.notes)  # a model's output is data: made safe as a live one would be
            calls = list(said.tool_calls or [])
            traj.messages.append(said)
            for call in calls:
                pending[call.id] = (traj.steps, call)
                traj.steps += 1
            if not calls:
                traj.steps += 1
                traj.turns += 1
        elif role == "tool":
            call_id = m.get(tool_id_key)
            if call_id not in pending:
                raise _fail(at, f"a tool result for call {call_id!r}, which no earlier assistant message made")
            step, call = pending.pop(call_id)
            text, replaced = admit_text(content or "")
            if replaced:
                traj.notes.append(f"{at} (tool result): {replaced} lone surrogate(s) replaced with U+FFFD")
            error = m.get("error") if isinstance(m.get("error"), bool) else None
            traj.tool_calls.append(ToolCallRecord(
                step=step, call_id=call.id, name=call.name, arguments=call.arguments,
                raw_arguments=call.raw_arguments, kind=toolbox.kind(call.name),
                status=_status(toolbox, call.name, text, error), content=text, duration_s=0.0))
            traj.messages.append(Message(role="tool", content=text, tool_call_id=call.id, name=call.name))
        else:
            raise _fail(at, f"unknown role {role!r} (system, user, assistant or tool)")
    return traj


def _termination(traj: Trajectory, transfer_tools: set[str]) -> TerminationReason:
    """How a peer conversation ended, from its messages (tau-bench records no reason)."""
    if any(c.name in transfer_tools and c.status == "ok" for c in traj.tool_calls):
        return TerminationReason.AGENT_TRANSFER
    last_user = next((m for m in reversed(traj.messages) if m.role == "user"), None)
    if last_user is not None and any(t in (last_user.content or "") for t in _STOP_TOKENS):
        return TerminationReason.USER_STOP
    return TerminationReason.MAX_STEPS


def _reward(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, f"reward must be a number, got {value!r}")
    return float(value)


def _trial_result(task_id: str, trial: int, persona: str | None, reward: float, traj: Trajectory,
                  reason: str, error: str | None, extra: Mapping[str, Any]) -> TrialResult:
    traj.termination_reason = TerminationReason(reason)
    traj.error = error
    traj.agent_metadata = {PEER_REWARD: reward, **extra}
    return TrialResult(task_id=task_id, trial=trial, seed=0, persona=persona, passed=reward >= 1 - 1e-6,
                       termination_reason=reason, grade=None, trajectory=traj, duration_s=0.0, error=error)


def from_tau_bench(records: Any, toolbox: Toolbox, *, source: str = "results") -> list[TrialResult]:
    """Convert tau-bench's result entries (``EnvRunResult`` JSON) to ungraded trials.

    Args:
        records: the parsed file: a list of ``{"task_id", "reward", "info", "traj", "trial"}``.
        toolbox: the domain's tools.
        source: the file name, for error messages.

    Returns:
        One trial per entry, in file order; ``task_id`` is ``info["tausim_task_id"]`` when present, else the
        entry's ``task_id`` as text.

    Raises:
        PeerResultsError: not a list, an entry without a task id or reward, malformed messages.
    """
    if not isinstance(records, list):
        raise _fail(source, f"a tau-bench results file is a JSON list of results, got {type(records).__name__}")
    transfer = {n for n, s in toolbox.specs.items() if s.ends_conversation}
    out = []
    for i, rec in enumerate(records):
        where = f"{source}: result {i}"
        if not isinstance(rec, Mapping):
            raise _fail(where, f"not an object ({type(rec).__name__})")
        info_in = rec.get("info")
        info: Mapping[str, Any] = info_in if isinstance(info_in, Mapping) else {}
        task_id = info.get("tausim_task_id", rec.get("task_id"))
        if isinstance(task_id, bool) or not isinstance(task_id, int | str):
            raise _fail(where, f"task_id must be an integer, got {rec.get('task_id')!r}")
        trial = rec.get("trial", 0)
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise _fail(where, f"trial must be a non-negative integer, got {trial!r}")
        traj_in = rec.get("traj")
        if not isinstance(traj_in, list):
            raise _fail(where, f"traj must be a list of messages, got {type(traj_in).__name__}")
        if any(isinstance(m, Mapping) and m.get("role") == "assistant" and "Action:" in str(m.get("content") or "")
               and not m.get("tool_calls") for m in traj_in) and not any(
                isinstance(m, Mapping) and m.get("role") == "tool" for m in traj_in):
            raise _fail(where, "a ReAct agent's text actions ('Action: {...}') are not tool calls; only results of "
                               "tool-calling agents can be imported")
        traj = _trajectory(where, traj_in, toolbox, call_key="function", tool_id_key="tool_call_id")
        error = info.get("error") if isinstance(info.get("error"), str) else None
        reason = info.get("termination_reason")
        if not isinstance(reason, str) or reason not in TerminationReason.__members__.values():
            reason = TerminationReason.AGENT_ERROR if error and not traj_in else _termination(traj, transfer)
        persona = info.get("persona") if isinstance(info.get("persona"), str) else None
        out.append(_trial_result(str(task_id), trial, persona, _reward(where, rec.get("reward")), traj,
                                 str(reason), error, {"peer_format": "tau-bench"}))
    return out


def from_tau2(doc: Any, toolbox: Toolbox, *, source: str = "results") -> list[TrialResult]:
    """Convert a tau2-bench results document's simulations to ungraded trials.

    Args:
        doc: the parsed file: ``{"simulations": [...], ...}``.
        toolbox: the domain's tools.
        source: the file name, for error messages.

    Returns:
        One trial per simulation, in file order.

    Raises:
        PeerResultsError: no ``simulations`` list, a simulation without task id or reward, malformed messages,
            a user tool call (user-side tools are not imported).
    """
    sims = doc.get("simulations") if isinstance(doc, Mapping) else None
    if not isinstance(sims, list):
        raise _fail(source, "a tau2 results file is an object with a 'simulations' list")
    out = []
    for i, sim in enumerate(sims):
        where = f"{source}: simulation {i}"
        if not isinstance(sim, Mapping):
            raise _fail(where, f"not an object ({type(sim).__name__})")
        task_id = sim.get("task_id")
        if isinstance(task_id, bool) or not isinstance(task_id, int | str):
            raise _fail(where, f"task_id must be a string, got {task_id!r}")
        trial = sim.get("trial", 0)
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise _fail(where, f"trial must be a non-negative integer, got {trial!r}")
        messages = sim.get("messages")
        if not isinstance(messages, list):
            raise _fail(where, f"messages must be a list, got {type(messages).__name__}")
        for j, m in enumerate(messages):
            if isinstance(m, Mapping) and m.get("role") == "user" and m.get("tool_calls"):
                raise _fail(f"{where}: message {j}", "user tool calls (tau2 user-side tools) cannot be imported")
        traj = _trajectory(where, messages, toolbox, call_key="", tool_id_key="id")
        reward_info = sim.get("reward_info")
        if not isinstance(reward_info, Mapping):
            raise _fail(where, "reward_info must be an object with a 'reward'")
        peer_reason = sim.get("termination_reason")
        reason = _TAU2_REASONS.get(str(peer_reason)) or _termination(
            traj, {n for n, s in toolbox.specs.items() if s.ends_conversation})
        if reason == TerminationReason.USER_STOP and any(
                c.name in toolbox.specs and toolbox.specs[c.name].ends_conversation and c.status == "ok"
                for c in traj.tool_calls):
            reason = TerminationReason.AGENT_TRANSFER
        ours = _tausim_info(sim)
        persona, error = None, None
        if ours is not None:  # written by tausim export: its own reason, persona and trial index
            if ours.get("termination_reason") in TerminationReason.__members__.values():
                reason = TerminationReason(ours["termination_reason"])
            persona = ours.get("persona") if isinstance(ours.get("persona"), str) else None
            if persona is not None and isinstance(ours.get("trial"), int) and not isinstance(ours["trial"], bool):
                trial = ours["trial"]
            error = ours.get("error") if isinstance(ours.get("error"), str) else None
        out.append(_trial_result(str(task_id), trial, persona, _reward(where, reward_info.get("reward")), traj,
                                 str(reason), error, {"peer_format": "tau2", "peer_termination": peer_reason}))
    return out


def _tausim_info(sim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    info = sim.get("info")
    ours = info.get("tausim") if isinstance(info, Mapping) else None
    return ours if isinstance(ours, Mapping) else None


def _read_json(path: Path) -> tuple[bytes, Any]:
    """Return a results file's bytes and its parsed JSON.

    Raises:
        PeerResultsError: the file cannot be read, or is not JSON (the message names the file).
    """
    try:
        raw = path.read_bytes()
        return raw, _decode(raw)
    except OSError as e:
        raise PeerResultsError(f"{path}: cannot read ({e.strerror or e})") from e
    except ValueError as e:
        raise PeerResultsError(f"{path}: not JSON ({e})") from e


def _decode(raw: bytes) -> Any:
    """The JSON of a file's bytes, in the encoding ``json.loads`` detects (UTF-8, -16 or -32).

    Errors are worded as by :func:`~simulator.types.jsonfile.decode_json` (a ValueError).
    """
    return decode_json(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def _read_tau2_dir(p: Path) -> tuple[bytes, Any]:
    """Read τ³'s directory results format: ``(all bytes read, the document with its simulations)``.

    Raises:
        PeerResultsError: an unreadable or malformed file, or simulation files that do not match the index.
    """
    meta_path = p / "results.json" if p.is_dir() else p
    sims_dir = meta_path.parent / "simulations"
    raw, doc = _read_json(meta_path)
    if not isinstance(doc, dict):
        raise PeerResultsError(f"{meta_path}: a tau2 results file is a JSON object")
    sims = []
    for f in sorted(sims_dir.glob("*.json")):
        try:
            data = f.read_bytes()
            sims.append(_decode(data))
        except OSError as e:
            raise PeerResultsError(f"{f}: cannot read ({e.strerror or e})") from e
        except ValueError as e:
            raise PeerResultsError(f"{f}: not JSON ({e})") from e
        raw += data
    index = doc.get("simulation_index")
    if isinstance(index, list):
        listed = {str(e.get("id")) for e in index if isinstance(e, Mapping)}
        present = {f.stem for f in sims_dir.glob("*.json")}
        if listed != present:
            missing, extra = sorted(listed - present), sorted(present - listed)
            raise PeerResultsError(f"{sims_dir}: simulation files do not match the index of {meta_path} "
                                   f"(missing {missing[:5]}, not listed {extra[:5]})")
    return raw, {**doc, "simulations": sims}


def is_tau2_dir(path: Path) -> bool:
    """Whether ``path`` is τ³'s directory results format (a directory, or a file with ``simulations/`` beside it)."""
    return path.is_dir() or (path.parent / "simulations").is_dir()


def read_peer_results(path: str | Path, fmt: str, domain: Domain, *, data_dir: Path | None = None,
                      tasks: str | None = None, options: Mapping[str, Any] | None = None) -> ImportedRun:
    """Read a peer's results file as a run of ungraded trials.

    Args:
        path: the results file (tau2: also τ³'s results directory, or its ``results.json``).
        fmt: ``tau-bench`` or ``tau2``.
        domain: the domain the conversations ran in.
        data_dir: the data set they ran on (None: the domain's built-in one).
        tasks: the task file or split they ran (recorded in the run's configuration; None: the domain's).
        options: domain options; default the domain's for that data set (tau-bench mode on peer data).

    Returns:
        The :class:`ImportedRun`.

    Raises:
        PeerResultsError: unknown format, unreadable or malformed file, no conversations, a (task, trial)
            present twice.
    """
    if fmt not in PEER_FORMATS:
        raise PeerResultsError(f"--format {fmt!r}: use {' or '.join(PEER_FORMATS)}")
    p = Path(path)
    if fmt == "tau2" and is_tau2_dir(p):
        raw, doc = _read_tau2_dir(p)
    else:
        raw, doc = _read_json(p)
    toolbox = domain.toolbox()
    trials = (from_tau_bench if fmt == "tau-bench" else from_tau2)(doc, toolbox, source=str(p))
    if not trials:
        raise PeerResultsError(f"{p}: no conversations to import")
    seen: set[tuple[str, str | None, int]] = set()
    for t in trials:
        key = (t.task_id, t.persona, t.trial)
        if key in seen:
            raise PeerResultsError(f"{p}: task {t.task_id} trial {t.trial} appears twice")
        seen.add(key)
    task_ids = list(dict.fromkeys(t.task_id for t in trials))
    personas = sorted({t.persona for t in trials if t.persona is not None}) or None
    config = RunSpec(domain=domain.name, data_dir=str(data_dir) if data_dir is not None else None,
                       options=dict(options if options is not None else domain.default_options(data_dir)),
                       tasks=tasks, agent=ComponentSpec(name=f"peer:{fmt}"), user=ComponentSpec(name="peer"),
                       personas=personas,
                       trials=max(t.trial for t in trials) + 1)
    source = {"format": fmt, "file": str(p), "sha256": hashlib.sha256(raw).hexdigest(), "records": len(trials)}
    return ImportedRun(config=config, task_ids=task_ids, trials=trials, source=source)


def record_imported(store: ResultsStore, imported: ImportedRun, domain: Domain, *, run_id: str | None = None
                    ) -> RunInfo:
    """Store an imported run: a run header (with the data set's hash and the source) and every trial.

    Args:
        store: the results store.
        imported: the run read by :func:`read_peer_results`.
        domain: its domain (for the default data set's location).
        run_id: the run id; default a new one.

    Returns:
        The stored run's :class:`~simulator.storage.codec.RunInfo`.

    Raises:
        simulator.storage.store.StoreError: the run id is taken.
    """
    cfg = imported.config
    used = Path(cfg.data_dir) if cfg.data_dir else domain.default_data_dir()
    info = store.create_run(cfg, imported.task_ids, run_id=run_id, data_dir=cfg.data_dir,
                            data_hash=data_hash(used), extra={"imported": imported.source})
    for trial in imported.trials:
        store.record(info.run_id, trial)
    return info


def default_peer_tasks(fmt: str, data_dir: Path | None) -> str | None:
    """The task file a peer's results most likely ran, found next to its data set.

    Args:
        fmt: ``tau-bench`` or ``tau2``.
        data_dir: the data directory (tau-bench: ``<suite>/data``; tau2: the domain's folder).

    Returns:
        tau-bench: ``<data>/../tasks_test.json`` (its default split); tau2: ``<data>/tasks.json``; None when
        there is no data directory or no such file (the domain's own tasks are then used).
    """
    if data_dir is None:
        return None
    candidate = data_dir.parent / "tasks_test.json" if fmt == "tau-bench" else data_dir / "tasks.json"
    return str(candidate) if candidate.is_file() else None

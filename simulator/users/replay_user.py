"""The replay user: a recorded conversation's user turns, replayed against a new agent until it diverges.

``--user replay:RUN[:TASK/TRIAL]`` takes the user turns of a recorded trial (a stored run's, or a run file's) and
says them again, turn by turn, as long as the new agent says what the recorded agent said before each of them:
the conversation the user sees (user and agent text, :class:`simulator.dialogue.conversation.Conversation`'s view)
must equal the recorded one up to that turn (whitespace collapsed). When it differs (the new agent asks something the
recorded user never answered, or keeps going after the recorded user's last turn) the conversation has diverged:
the point is recorded (``user_metadata["replay"]["diverged_at"]``, with the recorded and the new agent message,
and the flag ``replay_diverged``), and the rest is played by the fallback user (``--fallback-user rule|llm:M``),
or the user stops when there is none.

The recorded user's ending is replayed too: a trial that ended ``user_stop`` (or ``user_abandon``) stops (or
abandons) with its last user message, or with an empty turn after the agent's last message.

Which recording: with ``TASK/TRIAL``, that trial for every trial of the new run (its task must be the same);
without, the recorded trial with the same task, persona and trial index, else the task's first recorded trial.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.types.jsonfile import decode_json
from simulator.types.messages import Message, UserTurn
from simulator.types.protocols import Progress, TrialContext, UserSimulator
from simulator.types.results import TrialResult

__all__ = ["ReplayUser", "load_recorded_trials", "parse_replay_source", "replay_user_factory"]

_SPACE = re.compile(r"\s+")


def _norm(m: Message) -> tuple[str, str]:
    return m.role, _SPACE.sub(" ", (m.content or "").strip())


def _visible(m: Message) -> bool:
    return m.role in ("user", "assistant") and bool(m.content) and not m.tool_calls


def parse_replay_source(text: str) -> tuple[str, str | None, int | None]:
    """Split ``RUN[:TASK/TRIAL]`` into the run (id or file), the task id and the trial index.

    Args:
        text: the part of a ``replay:`` user spec after ``replay:``.

    Returns:
        ``(run, task id or None, trial index or None)``.

    Raises:
        ValueError: no run given.
    """
    run, sep, rest = text.rpartition(":")
    if sep and run and re.fullmatch(r".+/\d+", rest):
        task, _, trial = rest.rpartition("/")
        return run, task, int(trial)
    if not text:
        raise ValueError("--user replay:RUN[:TASK/TRIAL] needs a run (a run id in --store, or a run file)")
    return text, None, None


def load_recorded_trials(run: str, store: str | None) -> list[TrialResult]:
    """The recorded trials of a run: a run file (``tausim run --out``) or a run id in a results store.

    Args:
        run: a path to a run file, or a run id.
        store: the results store URL (for a run id).

    Returns:
        The trials as recorded.

    Raises:
        ValueError: a run id without a store, an unreadable or malformed run file.
        simulator.storage.store.StoreError: no such run in the store.
    """
    path = Path(run)
    if path.is_file():
        try:
            doc = decode_json(path.read_text(encoding="utf-8"))
            return [TrialResult.model_validate(t) for t in doc["trials"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"--user replay:{run}: not a readable run file ({type(e).__name__}: {e})") from e
    if store is None:
        raise ValueError(f"--user replay:{run}: no such file, and no --store to find run {run!r} in")
    from simulator.storage.store import ResultsStore

    with ResultsStore(store, create=False) as st:
        return st.load_trials(run)


@dataclass(frozen=True)
class _Turn:
    before: tuple[tuple[str, str], ...]
    """The visible conversation before this user turn (role, normalised text)."""
    content: str
    stop: bool = False
    abandon: bool = False


class ReplayUser:
    """Says a recorded trial's user turns again while the new agent stays on the recorded conversation.

    Args:
        recorded: the recorded trial.
        source: where it comes from (``RUN:TASK/TRIAL``), kept in the metadata.
        fallback: the user that continues after a divergence, or None (the user then stops).
    """

    def __init__(self, recorded: TrialResult, source: str, fallback: UserSimulator | None = None):
        view = [m for m in recorded.trajectory.messages if _visible(m)]
        turns = [_Turn(tuple(_norm(v) for v in view[:i]), m.content or "")
                 for i, m in enumerate(view) if m.role == "user"]
        ending = {"user_stop": "stop", "user_abandon": "abandon"}.get(recorded.termination_reason)
        if ending is not None:
            if view and view[-1].role == "user":
                last = turns[-1]
                turns[-1] = _Turn(last.before, last.content, stop=ending == "stop", abandon=ending == "abandon")
            else:
                turns.append(_Turn(tuple(_norm(v) for v in view), "", stop=ending == "stop",
                                   abandon=ending == "abandon"))
        self._turns = turns
        self._calls = 0
        self._fallback = fallback
        self._replay: dict[str, Any] = {"source": source, "recorded_turns": len(turns), "replayed": 0,
                                        "diverged_at": None, "fallback": fallback is not None}

    @property
    def metadata(self) -> dict[str, Any]:
        """The replay's record (``{"replay": {...}, "flags": [...]}``), merged over the fallback user's metadata."""
        base = dict(getattr(self._fallback, "metadata", None) or {}) if self._replay["diverged_at"] is not None \
            else {}
        flags = list(base.get("flags", []))
        if self._replay["diverged_at"] is not None:
            flags.append("replay_diverged")
        return {**base, "replay": dict(self._replay), "flags": flags}

    @property
    def diverged_at(self) -> int | None:
        """The user turn (0-based) at which the conversation left the recording, or None."""
        value = self._replay["diverged_at"]
        return None if value is None else int(value)

    def observe_progress(self, progress: Progress) -> None:
        """Pass the agent turn's progress on to the fallback user once it plays."""
        observe = getattr(self._fallback, "observe_progress", None)
        if self._replay["diverged_at"] is not None and callable(observe):
            observe(progress)

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """The recorded turn when the conversation so far is the recorded one; else the fallback's reply.

        Args:
            messages: the conversation as the user sees it.

        Returns:
            The :class:`UserTurn`.
        """
        i = self._calls
        self._calls += 1
        if self._replay["diverged_at"] is None:
            seen = tuple(_norm(m) for m in messages)
            if i < len(self._turns) and seen == self._turns[i].before:
                turn = self._turns[i]
                self._replay["replayed"] = i + 1
                return UserTurn(content=turn.content, stop=turn.stop, abandon=turn.abandon)
            expected = self._turns[i].before[len(seen) - 1][1] if i < len(self._turns) and 0 < len(seen) <= len(
                self._turns[i].before) else None
            self._replay.update(diverged_at=i, recorded_agent=expected,
                                new_agent=seen[-1][1] if seen and seen[-1][0] == "assistant" else None)
        if self._fallback is None:
            return UserTurn(content="", stop=True)
        return self._fallback.reply(messages)


def replay_user_factory(source: str, *, store: str | None = None,
                        fallback: Callable[[TrialContext], UserSimulator] | None = None
                        ) -> Callable[[TrialContext], ReplayUser]:
    """Return a factory of :class:`ReplayUser` for ``--user replay:RUN[:TASK/TRIAL]``.

    The recorded run is read once, here.

    Args:
        source: ``RUN[:TASK/TRIAL]`` (the spec after ``replay:``).
        store: the results store URL holding RUN (when RUN is not a file).
        fallback: the fallback user's factory (``--fallback-user``), or None.

    Returns:
        The factory; building a user for a task with no recorded trial (or another task than ``TASK``) raises
        ValueError naming the run and the task.

    Raises:
        ValueError: malformed source, a run id without a store, an unreadable run file, no such recorded trial.
        simulator.storage.store.StoreError: no such run in the store.
    """
    run, task_id, trial = parse_replay_source(source)
    recorded = load_recorded_trials(run, store)
    if task_id is not None:
        chosen = [t for t in recorded if t.task_id == task_id and t.trial == trial]
        if not chosen:
            raise ValueError(f"--user replay:{source}: run {run!r} has no recorded trial {trial} of task {task_id!r}")
    by_key = {(t.task_id, t.persona, t.trial): t for t in recorded}
    first: dict[str, TrialResult] = {}
    for t in sorted(recorded, key=lambda r: r.trial):
        first.setdefault(t.task_id, t)

    def make(ctx: TrialContext) -> ReplayUser:
        if task_id is not None:
            if ctx.task.id != task_id:
                raise ValueError(f"--user replay:{source} replays task {task_id!r}, not task {ctx.task.id!r}")
            pick = chosen[0]
        else:
            persona = ctx.persona.name if ctx.persona is not None else None
            found = by_key.get((ctx.task.id, persona, ctx.trial_index)) or first.get(ctx.task.id)
            if found is None:
                raise ValueError(f"--user replay:{source}: run {run!r} has no recorded trial of task {ctx.task.id!r}")
            pick = found
        return ReplayUser(pick, f"{run}:{pick.task_id}/{pick.trial}", fallback(ctx) if fallback else None)

    return make

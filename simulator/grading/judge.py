"""The LLM judge: yes/no assertions about a conversation, pairwise comparison, calibration (Cohen's kappa).

A task may carry ``judge`` assertions (:class:`~simulator.types.tasks.JudgeAssertion`): yes/no questions about the
conversation that code cannot decide ("the agent explained why the refund cannot go to PayPal"). Each one is
asked to a judge model (:class:`Judge`, any litellm model string) with the rendered transcript (user and agent
messages, tool calls with their results) and the assertion's rubric. An assertion passes only on a ``yes``.

Verdict format (strict; see :func:`parse_verdict`): the judge answers either with exactly one JSON object
``{"verdict": "yes"|"no", "reason": "..."}`` (optionally inside a single ```` ```json ```` fence), or with free
text whose last non-empty line is ``VERDICT: YES`` or ``VERDICT: NO``. Anything else (a bare "yes", a refusal,
"VERDICT: YES" contradicted by another VERDICT line, a JSON verdict outside yes/no, an empty answer) is
unparsable.

Fail-closed: a model error (after retries), a refusal, an empty or unparsable or ambiguous answer grades that
assertion **fail**, with the reason recorded; never pass.

Gating: the judge component counts in a trial's ``passed`` only when the judge is calibrated: a calibration file
(``tausim judge calibrate --out``) for the same model whose kappa is at least the run's minimum. Otherwise the
component is recorded (``gating: false`` with the reason) and reported, but does not change ``passed``.
A task with assertions graded without any judge model gets ``status: "not_graded"`` (not counted either, and
the run summary says how many trials were left ungraded).

The judge's tokens and cost are recorded in the component (``grade.judge.usage``), never added to the agent's
or the user's usage.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from simulator.types.grade import AssertionVerdict, JudgeResult
from simulator.types.jsonfile import JSONTextError, decode_json
from simulator.types.messages import Message, Usage
from simulator.types.spec import format_validation_error
from simulator.types.tasks import JudgeAssertion

__all__ = ["DEFAULT_MIN_KAPPA", "Calibration", "CalibrationItem", "CompareResult", "Judge", "ParsedVerdict",
           "anchors_text", "build_judge", "check_calibration", "cohen_kappa", "compare", "compare_runs", "grade_judge",
           "judge_summary_lines", "load_calibration", "load_labels", "model_family", "parse_verdict",
           "render_transcript", "run_calibration", "self_preference"]

MAX_TOOL_RESULT_CHARS = 2000
"""Tool results longer than this are cut in the rendered transcript (the judge reads the conversation)."""

SYSTEM_PROMPT = """You are a strict grader of a customer-service conversation between a user and an AI agent \
that uses tools. You are given the transcript and one assertion about it. Decide whether the assertion is \
true of the transcript. Judge only from the transcript; when the transcript does not clearly show that the \
assertion holds, answer no.

Answer with exactly one JSON object and nothing else:
{"verdict": "yes" or "no", "reason": "<one or two sentences>"}"""

COMPARE_PROMPT = """You compare two transcripts of customer-service conversations between a user and an AI \
agent against one criterion. Decide which transcript satisfies the criterion better.
Length earns nothing: a longer, more detailed or more polite-sounding transcript is not better for that; judge
only what the criterion asks, and prefer the shorter one when both satisfy it equally.

Answer with exactly one JSON object and nothing else:
{"winner": "1" or "2", "reason": "<one or two sentences>"}"""


# --------------------------------------------------------------------------------------------------------
# transcript and verdict parsing
# --------------------------------------------------------------------------------------------------------

def render_transcript(messages: Sequence[Message | dict[str, Any]]) -> str:
    """Render a conversation as plain text for the judge.

    Args:
        messages: the trajectory's messages (or OpenAI-style dicts): user and agent text, the agent's tool
            calls with their arguments, and tool results (cut at :data:`MAX_TOOL_RESULT_CHARS`). System
            messages are left out.

    Returns:
        One block per message: ``USER: ...``, ``AGENT: ...``, ``AGENT CALLS TOOL name({...})``,
        ``TOOL RESULT (name): ...``.
    """
    lines: list[str] = []
    for raw in messages:
        m = raw if isinstance(raw, Message) else Message.model_validate(
            {**raw, "tool_calls": [_tool_call_dict(c) for c in raw.get("tool_calls") or []]})
        if m.role == "user" and m.content:
            lines.append(f"USER: {m.content}")
        elif m.role == "assistant":
            if m.content:
                lines.append(f"AGENT: {m.content}")
            for c in m.tool_calls:
                args = json.dumps(c.arguments, sort_keys=True) if c.arguments is not None else (c.raw_arguments or "")
                lines.append(f"AGENT CALLS TOOL {c.name}({args})")
        elif m.role == "tool":
            content = m.content or ""
            if len(content) > MAX_TOOL_RESULT_CHARS:
                content = content[:MAX_TOOL_RESULT_CHARS] + f" ... [{len(content) - MAX_TOOL_RESULT_CHARS} chars cut]"
            lines.append(f"TOOL RESULT ({m.name}): {content}")
    return "\n".join(lines)


def _tool_call_dict(c: dict[str, Any]) -> dict[str, Any]:
    """Accept a tool call in our shape or OpenAI's (``{"id", "function": {"name", "arguments": str}}``)."""
    if "function" not in c:
        return c
    fn = c["function"]
    args = fn.get("arguments")
    try:
        parsed = json.loads(args) if isinstance(args, str) else args
    except ValueError:
        parsed = None
    return {"id": c.get("id", ""), "name": fn.get("name", ""),
            "arguments": parsed if isinstance(parsed, dict) else None,
            "raw_arguments": args if isinstance(args, str) else None}


class ParsedVerdict(BaseModel):
    """A judge answer parsed by :func:`parse_verdict`."""

    verdict: str | None
    """One of the allowed answers (``yes``/``no``; ``1``/``2`` for comparisons), lowercase; None when the answer
    could not be parsed."""
    reason: str = ""
    """The judge's reason, or why the answer was not accepted."""
    error: str | None = None
    """Why the answer is unusable (unparsable, ambiguous, empty); None when ``verdict`` is set."""


_FENCE_RE = re.compile(r"^```(?:json)?\s*+(.*?)\n?```$", re.DOTALL | re.IGNORECASE)
_VERDICT_HEAD_RE = re.compile(r"\s*+\**+\s*+verdict\s*+\**+\s*+:(.*)", re.IGNORECASE)
"""The head of a ``VERDICT:`` line (matched at its start); the answer is cut out of the rest by
:func:`_verdict_answer`, without a regex: the old one-pattern form backtracked quadratically on long space runs."""


def _verdict_answer(line: str) -> str | None:
    """The answer of a ``VERDICT: <answer>`` line (``**VERDICT:** YES`` too); None for any other line.

    Spaces and ``*`` around the answer are dropped, as the old one-pattern form did
    (``tests/dialogue/test_regex_linear.py``
    compares the two), in linear time.
    """
    m = _VERDICT_HEAD_RE.match(line)
    if m is None:
        return None
    rest = m.group(1).strip()
    answer = rest.lstrip("*").lstrip() or rest[:1]  # "VERDICT: **": the old pattern's answer was "*"
    return answer.rstrip("*").rstrip() or answer[:1] or None


def parse_verdict(text: str | None, key: str = "verdict", allowed: Iterable[str] = ("yes", "no")) -> ParsedVerdict:
    """Parse a judge's answer strictly.

    Accepted forms (``allowed`` values compared case-insensitively, surrounding spaces ignored):

    1. the whole answer is one JSON object (optionally in a single ```` ``` ```` / ```` ```json ```` fence) with
       ``key`` set to an allowed string; ``reason`` (optional) is kept;
    2. free text whose last non-empty line is ``VERDICT: <allowed>`` (``**VERDICT:** YES`` also accepted); any
       other ``VERDICT:`` line must give the same answer, otherwise the answer is ambiguous.

    Args:
        text: the model's answer (None: no text).
        key: the JSON key holding the answer (``"verdict"``; ``"winner"`` for comparisons).
        allowed: the accepted answers, lowercase.

    Returns:
        The verdict (lowercase), or ``verdict=None`` with ``error`` saying why.
    """
    allowed = tuple(allowed)
    if text is None or not text.strip():
        return ParsedVerdict(verdict=None, error="empty answer")
    body = text.strip()
    fence = _FENCE_RE.match(body)
    candidate = fence.group(1).strip() if fence else body
    if candidate.startswith("{"):
        try:
            doc = json.loads(candidate)
        except ValueError:
            return ParsedVerdict(verdict=None, error=f"unparsable answer (invalid JSON): {body[:200]!r}")
        if not isinstance(doc, dict) or not isinstance(doc.get(key), str):
            return ParsedVerdict(verdict=None, error=f"unparsable answer (no string {key!r}): {body[:200]!r}")
        value = doc[key].strip().lower()
        if value not in allowed:
            return ParsedVerdict(verdict=None, error=f"unparsable answer ({key} {doc[key]!r} not one of "
                                                     f"{'/'.join(allowed)})")
        reason = doc.get("reason")
        return ParsedVerdict(verdict=value, reason=reason if isinstance(reason, str) else "")
    lines = [ln for ln in body.splitlines() if ln.strip()]
    answers = [a.lower().rstrip(".") for ln in lines if (a := _verdict_answer(ln)) is not None]
    last = _verdict_answer(lines[-1])
    if last is None:
        return ParsedVerdict(verdict=None, error=f"unparsable answer (no JSON object, no final VERDICT line): "
                                                 f"{body[:200]!r}")
    value = last.lower().rstrip(".")
    if value not in allowed:
        return ParsedVerdict(verdict=None, error=f"unparsable answer (VERDICT {last!r} not one of "
                                                 f"{'/'.join(allowed)})")
    if any(a != value for a in answers):
        return ParsedVerdict(verdict=None, error=f"ambiguous answer (VERDICT lines disagree: {answers})")
    reason = "\n".join(ln for ln in lines[:-1] if _verdict_answer(ln) is None).strip()
    return ParsedVerdict(verdict=value, reason=reason)


# --------------------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------------------



def anchors_text(anchors: Sequence[CalibrationItem]) -> str:
    """The prompt's block of anchor examples (empty for none): each transcript, assertion and human verdict."""
    if not anchors:
        return ""
    parts = ["REFERENCE EXAMPLES graded by people (keep your verdicts on the same scale):"]
    for i, item in enumerate(anchors, start=1):
        text = item.transcript if isinstance(item.transcript, str) else render_transcript(item.transcript)
        parts.append(f"EXAMPLE {i} TRANSCRIPT:\n{text}\nEXAMPLE {i} ASSERTION: {item.assertion}\n"
                     f"EXAMPLE {i} VERDICT: {item.label}")
    return "\n\n".join(parts) + "\n\nNOW GRADE THIS ONE.\n"


_FAMILIES = (("gpt", "openai"), ("chatgpt", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
             ("claude", "anthropic"), ("gemini", "google"), ("gemma", "google"), ("llama", "meta"),
             ("mistral", "mistral"), ("mixtral", "mistral"), ("codestral", "mistral"), ("qwen", "qwen"),
             ("deepseek", "deepseek"), ("grok", "xai"), ("command", "cohere"), ("phi", "microsoft"))
"""Leading word of a model's name -> its vendor family (the rest of the name is a size or a version)."""


def model_family(model: str) -> str:
    """Return the model family of a litellm model string (a vendor name such as ``openai``).

    ``openai/gpt-4o-mini`` and ``azure/gpt-4.1`` are ``openai``, ``anthropic/claude-3-5-sonnet`` and
    ``bedrock/anthropic.claude-3`` are ``anthropic``. The family is read from the last path segment's leading
    word (after any ``vendor.`` prefix), by the table :data:`_FAMILIES`; an unknown word is its own family
    (``my-model-v2`` -> ``my``).
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    head, dot, tail = name.partition(".")
    if dot and head.isalpha() and tail[:1].isalpha():  # bedrock's vendor.model
        name = tail
    word = "".join(ch if ch.isalnum() else " " for ch in name).split()
    lead = word[0] if word else name
    for prefix, family in _FAMILIES:
        if lead.startswith(prefix):
            return family
    return lead


def self_preference(judge_model: str, agent_model: str | None) -> str | None:
    """A warning when the judge is of the agent's model family (judges favour their own family's answers), else None.

    Args:
        judge_model: the judge's litellm model string.
        agent_model: the agent's litellm model string, or None when the agent is no litellm model (not checked).
    """
    if agent_model is None or model_family(judge_model) != model_family(agent_model):
        return None
    return (f"the judge {judge_model!r} is of the agent's model family ({model_family(agent_model)}, agent "
            f"{agent_model!r}): judges favour their own family's answers; use a judge of another family")


class Judge:
    """Asks one judge model yes/no assertions (fail-closed) and pairwise comparisons.

    Args:
        model: litellm model string (``"openai/gpt-4o-mini"``; ``"openai/NAME"`` with ``api_base``).
        api_base: OpenAI-compatible server URL, if any.
        gating: whether the judge component counts in ``passed`` (see :func:`check_calibration`).
        gating_note: why it does or does not gate (shown in the grade and the summary).
        client: a ready :class:`~simulator.models.llm.LLMClient` (tests); default one is built from ``model``.
        anchors: human-labelled examples shown before every assertion as fixed points of the scale (``--judge-anchors``,
            the labels format of :func:`load_labels`), so the judge's verdicts do not drift between runs or models;
            empty: none.
        **params: further :class:`~simulator.models.llm.LLMClient` arguments (``max_attempts``, ``cache``,
            ``limiters``, ...); temperature defaults to 0.
    """

    def __init__(self, model: str, *, api_base: str | None = None, gating: bool = True, gating_note: str = "",
                 client: Any = None, anchors: Sequence[CalibrationItem] = (), **params: Any) -> None:
        from simulator.models.llm import LLMClient

        params.setdefault("temperature", 0.0)
        self.anchors = list(anchors)
        self.model = model
        self.api_base = api_base
        self.gating = gating
        self.gating_note = gating_note
        self.client = client if client is not None else LLMClient(model, api_base=api_base, **params)

    def _ask(self, system: str, prompt: str, trial_seed: int | None) -> tuple[str | None, Usage, str | None]:
        """Return (answer text, usage, error) of one call; errors never raise."""
        from simulator.models.llm import LLMError

        try:
            r = self.client.complete([{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                                     trial_seed=trial_seed)
        except LLMError as e:
            return None, Usage(), f"judge model error: {type(e).__name__}: {e}"
        if r.finish_reason == "content_filter":
            return None, r.usage, "judge refused (finish_reason content_filter)"
        if r.message.tool_calls:
            return None, r.usage, "judge answered with tool calls, not a verdict"
        return r.message.content, r.usage, None

    def ask(self, transcript: str, assertion: JudgeAssertion | str,
            trial_seed: int | None = None) -> tuple[AssertionVerdict, Usage]:
        """Ask one assertion about a rendered transcript.

        Returns:
            ``(verdict, usage)``: ``passed`` only on a parsed ``yes``; errors, refusals and unusable answers
            fail with the reason recorded.
        """
        a = assertion if isinstance(assertion, JudgeAssertion) else JudgeAssertion(assertion=assertion)
        prompt = anchors_text(self.anchors) + f"TRANSCRIPT:\n{transcript}\n\nASSERTION: {a.assertion}\n"
        if a.rubric:
            prompt += f"\nRUBRIC: {a.rubric}\n"
        prompt += '\nIs the assertion true of the transcript? Answer {"verdict": "yes"|"no", "reason": "..."}.'
        text, usage, error = self._ask(SYSTEM_PROMPT, prompt, trial_seed)
        if error is not None:
            return AssertionVerdict(assertion=a.assertion, passed=False, reason=error, error=error), usage
        parsed = parse_verdict(text)
        if parsed.verdict is None:
            return AssertionVerdict(assertion=a.assertion, passed=False, reason=parsed.error or "",
                                    error=parsed.error), usage
        verdict: Literal["yes", "no"] = "yes" if parsed.verdict == "yes" else "no"
        return AssertionVerdict(assertion=a.assertion, passed=verdict == "yes", verdict=verdict,
                                reason=parsed.reason), usage




def grade_judge(assertions: Sequence[JudgeAssertion], messages: Sequence[Message], judge: Judge | None,
                trial_seed: int | None = None) -> JudgeResult | None:
    """Grade a trial's judge assertions.

    Args:
        assertions: the task's assertions (none: no component, returns None).
        messages: the trajectory's messages.
        judge: the run's judge, or None when no judge model was configured.
        trial_seed: the trial seed (response-cache key).

    Returns:
        None without assertions; ``not_graded`` without a judge; otherwise ``passed`` when every assertion was
        answered ``yes``, ``failed`` otherwise. ``gating`` and ``note`` come from the judge.
    """
    if not assertions:
        return None
    if judge is None:
        return JudgeResult(status="not_graded", gating=False,
                           note=f"{len(assertions)} judge assertion(s) not graded: no judge model (--judge)")
    transcript = render_transcript(messages)
    verdicts: list[AssertionVerdict] = []
    usage = Usage()
    for a in assertions:
        v, u = judge.ask(transcript, a, trial_seed)
        verdicts.append(v)
        usage = usage + u
    ok = all(v.passed for v in verdicts)
    return JudgeResult(status="passed" if ok else "failed", gating=judge.gating, note=judge.gating_note,
                       model=judge.model, assertions=verdicts, usage=usage)


# --------------------------------------------------------------------------------------------------------
# pairwise comparison with position swap
# --------------------------------------------------------------------------------------------------------

class CompareResult(BaseModel):
    """The outcome of :func:`compare`."""

    winner: Literal["a", "b", "tie/inconsistent"]
    first: Literal["a", "b"] | None
    """The winner when A was shown first (None: error or unusable answer)."""
    second: Literal["a", "b"] | None
    """The winner when B was shown first."""
    reasons: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


def compare(transcript_a: str, transcript_b: str, criterion: str, judge: Judge,
            trial_seed: int | None = None) -> CompareResult:
    """Compare two transcripts on a criterion, asking twice with the order swapped.

    The judge answers which of "transcript 1" and "transcript 2" is better (JSON ``{"winner": "1"|"2"}`` or a
    final line ``VERDICT: 1``/``VERDICT: 2``). The first call shows A as 1, the second B as 1. A winner is
    returned only when both orders name the same transcript; a position-biased judge (always "1"), an error or
    an unusable answer gives ``tie/inconsistent``.
    """
    picks: list[Literal["a", "b"] | None] = []
    reasons: list[str] = []
    usage = Usage()
    orders: list[tuple[str, str, tuple[Literal["a", "b"], Literal["a", "b"]]]] = [
        (transcript_a, transcript_b, ("a", "b")), (transcript_b, transcript_a, ("b", "a"))]
    for first, second, names in orders:
        prompt = (f"CRITERION: {criterion}\n\nTRANSCRIPT 1:\n{first}\n\nTRANSCRIPT 2:\n{second}\n\n"
                  'Which transcript satisfies the criterion better? Answer {"winner": "1"|"2", "reason": "..."}.')
        text, u, error = judge._ask(COMPARE_PROMPT, prompt, trial_seed)
        usage = usage + u
        if error is not None:
            picks.append(None)
            reasons.append(error)
            continue
        parsed = parse_verdict(text, key="winner", allowed=("1", "2"))
        if parsed.verdict is None:
            picks.append(None)
            reasons.append(parsed.error or "")
            continue
        picks.append(names[0] if parsed.verdict == "1" else names[1])
        reasons.append(parsed.reason)
    winner: Literal["a", "b", "tie/inconsistent"] = (
        picks[0] if picks[0] is not None and picks[0] == picks[1] else "tie/inconsistent")
    return CompareResult(winner=winner, first=picks[0], second=picks[1], reasons=reasons, usage=usage)


def compare_runs(run_a: Mapping[str, Any], run_b: Mapping[str, Any], criterion: str, judge: Judge,
                 limit: int | None = None) -> dict[str, Any]:
    """Compare two runs trial by trial with :func:`compare` (position-swapped) on one criterion.

    Trials are paired by (task id, persona, trial index), the pairs both runs recorded, in run A's order.

    Args:
        run_a: run document A (``tausim run --out``).
        run_b: run document B.
        criterion: what the judge compares (e.g. "the agent explains the refund policy correctly").
        judge: the judge.
        limit: compare at most this many pairs (None: all).

    Returns:
        ``{"pairs", "a", "b", "tie/inconsistent", "per_pair": [{"task_id", "persona", "trial", "winner",
        "first", "second"}], "usage": Usage JSON, "warnings": [...]}``; a warning is added when the judge model
        is the model of either run's agent (a judge favours its own outputs).

    Raises:
        ValueError: the runs have no trial in common.
    """
    def key(t: Mapping[str, Any]) -> tuple[str, str | None, int]:
        return str(t["task_id"]), t.get("persona"), int(t["trial"])

    b_trials = {key(t): t for t in run_b.get("trials") or []}
    pairs = [(t, b_trials[key(t)]) for t in run_a.get("trials") or [] if key(t) in b_trials]
    if not pairs:
        raise ValueError("the runs have no (task, persona, trial) in common: nothing to compare")
    pairs = pairs[:limit] if limit is not None else pairs
    warnings = []
    for name, doc in (("A", run_a), ("B", run_b)):
        agent_spec = (doc.get("config") or {}).get("agent") or ""
        agent = str(agent_spec.get("name") or "" if isinstance(agent_spec, dict) else agent_spec)  # a component spec
        if agent.split(":", 1)[-1] == judge.model:
            warnings.append(f"the judge model {judge.model} is the agent model of run {name}: judges tend to "
                            "prefer their own outputs; use another model")
    tally = {"a": 0, "b": 0, "tie/inconsistent": 0}
    rows = []
    usage = Usage()
    for a, b in pairs:
        messages_a = (a.get("trajectory") or {}).get("messages") or []
        messages_b = (b.get("trajectory") or {}).get("messages") or []
        r = compare(render_transcript(messages_a), render_transcript(messages_b), criterion, judge,
                    a.get("seed"))
        usage = usage + r.usage
        tally[r.winner] += 1
        rows.append({"task_id": a["task_id"], "persona": a.get("persona"), "trial": a["trial"], "winner": r.winner,
                     "first": r.first, "second": r.second})
    return {"pairs": len(pairs), **tally, "per_pair": rows, "usage": usage.model_dump(), "warnings": warnings}


# --------------------------------------------------------------------------------------------------------
# calibration: agreement and Cohen's kappa
# --------------------------------------------------------------------------------------------------------

def cohen_kappa(rater1: Sequence[str], rater2: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items.

    kappa = (p_o - p_e) / (1 - p_e), where p_o is the observed agreement (share of items with equal labels)
    and p_e = sum over labels k of p1(k) * p2(k), the agreement expected by chance from each rater's label
    frequencies. Source: J. Cohen, "A coefficient of agreement for nominal scales", Educational and
    Psychological Measurement 20(1), 37-46 (1960).

    Args:
        rater1: labels of the first rater (e.g. human).
        rater2: labels of the second rater (e.g. the judge), same length and order.

    Returns:
        kappa in [-1, 1]; None when undefined: no items, or p_e = 1 (both raters gave every item one and the
        same label, so agreement cannot be told from chance).

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(rater1) != len(rater2):
        raise ValueError(f"raters label different numbers of items: {len(rater1)} vs {len(rater2)}")
    n = len(rater1)
    if n == 0:
        return None
    p_o = sum(1 for a, b in zip(rater1, rater2, strict=True) if a == b) / n
    labels = set(rater1) | set(rater2)
    p_e = sum((sum(1 for a in rater1 if a == k) / n) * (sum(1 for b in rater2 if b == k) / n) for k in labels)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


class CalibrationItem(BaseModel):
    """One human-labelled example (one line of the labels file)."""

    transcript: str | list[dict[str, Any]]
    """The rendered transcript, or a list of messages (our or OpenAI's shape) rendered by
    :func:`render_transcript`."""
    assertion: str
    label: Literal["yes", "no"]
    rubric: str | None = None
    id: str | None = None


def load_labels(path: str | Path) -> list[CalibrationItem]:
    """Load a labels file: JSON lines ``{"transcript", "assertion", "label": "yes"|"no"[, "rubric", "id"]}``.

    Blank lines are skipped.

    Raises:
        ValueError: unreadable file, a line that is not such an object (the message names the line), or no item.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"{p}: cannot read labels file: {e.strerror}") from e
    items: list[CalibrationItem] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        expected = 'expected {"transcript", "assertion", "label": "yes"|"no"}'
        try:
            raw = decode_json(line, first_line=i)
        except JSONTextError as e:
            raise ValueError(f"{p}: {e}; {expected}") from None
        if isinstance(raw, dict) and isinstance(raw.get("label"), str):
            raw["label"] = raw["label"].strip().lower()
        try:
            items.append(CalibrationItem.model_validate(raw))
        except ValidationError as e:
            raise ValueError(f"{format_validation_error(f'{p}: line {i}', e)}; {expected}") from e
    if not items:
        raise ValueError(f"{p}: the labels file holds no item")
    return items


class Calibration(BaseModel):
    """A judge calibration against human labels (``tausim judge calibrate --out``)."""

    format: Literal["tausim.judge_calibration"] = "tausim.judge_calibration"
    version: int = 1
    model: str
    n: int
    agreement: float
    """Share of items where the judge's verdict equals the human label."""
    kappa: float | None
    """Cohen's kappa; None when undefined (every label, human and judge, the same)."""
    min_kappa: float
    passed: bool
    """``kappa >= min_kappa`` (an undefined kappa does not pass)."""
    errors: int = 0
    """Items where the judge failed (error or unusable answer), counted as its ``no`` (fail-closed)."""
    confusion: dict[str, int] = Field(default_factory=dict)
    """``{"human_yes_judge_yes": ..., "human_yes_judge_no": ..., "human_no_judge_yes": ..., "human_no_judge_no":
    ...}``."""
    labels_file: str | None = None
    labels_sha256: str | None = None
    date: str
    """UTC time of the calibration, ISO 8601."""
    usage: Usage = Field(default_factory=Usage)
    disagreements: list[dict[str, Any]] = Field(default_factory=list)
    """The items where judge and human differ: ``{"index", "id", "label", "verdict", "reason"}``."""


def run_calibration(items: Sequence[CalibrationItem], judge: Judge, min_kappa: float,
                    labels_file: str | Path | None = None) -> Calibration:
    """Run the judge on every labelled item and measure agreement and Cohen's kappa.

    A judge failure (model error, unusable answer) counts as the judge's ``no`` (what it would grade) and is
    counted in ``errors``.
    """
    human: list[str] = []
    judged: list[str] = []
    usage = Usage()
    errors = 0
    disagreements: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        transcript = item.transcript if isinstance(item.transcript, str) else render_transcript(item.transcript)
        v, u = judge.ask(transcript, JudgeAssertion(assertion=item.assertion, rubric=item.rubric))
        usage = usage + u
        verdict = "yes" if v.passed else "no"
        errors += v.error is not None
        human.append(item.label)
        judged.append(verdict)
        if verdict != item.label:
            disagreements.append({"index": i, "id": item.id, "label": item.label, "verdict": v.verdict,
                                  "reason": v.reason})
    n = len(items)
    kappa = cohen_kappa(human, judged)
    confusion = {f"human_{h}_judge_{j}": sum(1 for a, b in zip(human, judged, strict=True) if (a, b) == (h, j))
                 for h in ("yes", "no") for j in ("yes", "no")}
    digest = None
    if labels_file is not None and Path(labels_file).is_file():
        digest = hashlib.sha256(Path(labels_file).read_bytes()).hexdigest()
    return Calibration(
        model=judge.model, n=n,
        agreement=sum(1 for a, b in zip(human, judged, strict=True) if a == b) / n if n else 0.0,
        kappa=kappa, min_kappa=min_kappa, passed=kappa is not None and kappa >= min_kappa, errors=errors,
        confusion=confusion, labels_file=None if labels_file is None else str(labels_file), labels_sha256=digest,
        date=datetime.now(UTC).isoformat(timespec="seconds"), usage=usage, disagreements=disagreements,
    )


def load_calibration(path: str | Path) -> Calibration:
    """Load a calibration file written by ``tausim judge calibrate --out``.

    Raises:
        ValueError: unreadable or not a calibration file.
    """
    p = Path(path)
    try:
        return Calibration.model_validate_json(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{p}: cannot read calibration file: {e.strerror}") from e
    except ValueError as e:
        raise ValueError(f"{p}: not a judge calibration file (tausim judge calibrate --out): "
                         f"{str(e).splitlines()[0]}") from e


def check_calibration(calibration: Calibration | None, model: str, min_kappa: float) -> tuple[bool, str]:
    """Decide whether a judge may gate: ``(gating, note)``.

    The judge gates only with a calibration of the same model whose kappa is defined and at least
    ``min_kappa`` (the run's minimum, not the one the calibration was made with).
    """
    if calibration is None:
        return False, "judge not calibrated (no --judge-calibration): recorded, not counted in passed"
    if calibration.model != model:
        return False, (f"judge calibration is for model {calibration.model!r}, not {model!r}: recorded, not "
                       "counted in passed")
    if calibration.kappa is None or calibration.kappa < min_kappa:
        shown = "undefined" if calibration.kappa is None else f"{calibration.kappa:.3f}"
        return False, (f"judge calibration kappa {shown} below the minimum {min_kappa}: recorded, not counted "
                       "in passed")
    return True, f"judge calibrated: kappa {calibration.kappa:.3f} >= {min_kappa} (n={calibration.n})"


DEFAULT_MIN_KAPPA = 0.6
"""Kappa a calibration must reach before the judge may gate (0.61-0.80 is "substantial" agreement in Landis &
Koch's 1977 scale)."""


def build_judge(model: str, *, api_base: str | None = None, calibration: Path | None = None,
                min_kappa: float = DEFAULT_MIN_KAPPA, anchors: Path | None = None, agent_model: str | None = None,
                strict: bool = False, **params: Any) -> Judge:
    """Build the run's judge and decide whether it gates (see :func:`simulator.grading.judge.check_calibration`).

    Args:
        model: the judge's litellm model string (``--judge``).
        api_base: ``--judge-api-base``.
        calibration: ``--judge-calibration`` file, or None (the judge then does not gate).
        min_kappa: ``--judge-min-kappa``.
        anchors: ``--judge-anchors`` labels file (:func:`load_labels`): examples shown before every assertion.
        agent_model: the agent's litellm model string (``litellm:MODEL``), or None: for the self-preference check.
        strict: ``--strict-judge``: refuse a gating judge of the agent's model family instead of warning.
        **params: further :class:`~simulator.models.llm.LLMClient` arguments (cache, limiters, max_attempts).

    Raises:
        ValueError: the calibration or anchors file cannot be read, or (``strict``) a gating judge is of the
            agent's model family (the message names both models).
    """
    cal = load_calibration(calibration) if calibration is not None else None
    gating, note = check_calibration(cal, model, min_kappa)
    warning = self_preference(model, agent_model) if gating else None
    if warning is not None:
        if strict:
            raise ValueError(f"--strict-judge: {warning}")
        note = f"{note}; WARNING: {warning}"
    items = load_labels(anchors) if anchors is not None else []
    return Judge(model, api_base=api_base, gating=gating, gating_note=note, anchors=items, **params)


def judge_summary_lines(judged: Iterable[JudgeResult]) -> list[str]:
    """Lines for the run summary about the judge component (empty when no trial has one).

    Args:
        judged: the judge component of each trial that has one.
    """
    judged = list(judged)
    if not judged:
        return []
    not_graded = sum(1 for j in judged if j.status == "not_graded")
    graded = [j for j in judged if j.status != "not_graded"]
    lines = []
    if not_graded:
        lines.append(f"judge: {not_graded} trial(s) have judge assertions NOT GRADED (no --judge model); "
                     "pass^k does not include the judge layer for them")
    if graded:
        failed = sum(1 for j in graded if j.status == "failed")
        errors = sum(1 for j in graded for a in j.assertions if a.error is not None)
        cost: float | None = 0.0
        tokens = 0
        for j in graded:
            tokens += j.usage.prompt_tokens + j.usage.completion_tokens
            cost = None if cost is None or j.usage.cost_usd is None else cost + j.usage.cost_usd
        gating = graded[0].gating
        lines.append(f"judge {graded[0].model}: {len(graded) - failed}/{len(graded)} trials passed, "
                     f"{errors} assertion(s) failed closed (error/unparsable); "
                     f"{'GATING' if gating else 'NOT GATING'}: {graded[0].note}")
        lines.append(f"judge usage: {tokens} tokens, cost {'unknown' if cost is None else f'${cost:.4f}'} "
                     "(not in agent/user cost)")
    return lines

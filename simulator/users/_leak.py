"""What a simulated user must not know, and a normalised matcher that finds it in user text.

A user simulator sees only its scenario. Values it was not given must not appear in what it says: that would
be the simulator leaking the answer to the agent under test. :func:`task_secrets` lists them for a task:

- ``action_value``: argument values of the task's gold actions that the scenario does not give the user;
- ``output``: the task's required outputs the scenario does not give the user;
- ``policy``: the domain policy's sentences of at least :data:`POLICY_MIN_WORDS` words.

Every secret has a *form* that decides how it is matched (case-insensitively, on word boundaries):

- ``id`` (a value with a digit and no whitespace, at least :data:`MIN_ID_CHARS` letters/digits, other than a
  number of fewer than five digits, e.g. ``#W4817420``, ``6777246137``, ``gift_card_8554548``, ``83782``,
  ``64GB``): a leading ``#`` is optional, its parts may be
  separated by any one to three non-alphanumeric characters (``gift card 8554548``), digit groups may be split
  by one space, comma or hyphen (``6,777,246,137``), and a letter and a digit by one space or hyphen
  (``W-4817420``); a run of at least :data:`MIN_DIGIT_RUN` digits in it counts alone too (``4817420``, the
  ``8554548`` of ``gift_card_8554548``). Ids always count, however short their parts.
- ``number`` (a decimal number, or an integer of :data:`MIN_INT_DIGITS` to four digits, e.g. ``1093.34``,
  ``2.80``, ``350``): matched by value, with an optional thousands comma and trailing decimal zeros
  (``1,093.340`` and ``$1093.34`` match ``1093.34``; ``369.00`` matches ``369``). It never matches inside a
  longer number (``93.34`` is not found in ``1093.34``).
- ``text`` (several words, at least :data:`MIN_TEXT_CHARS` characters, and at least :data:`MIN_TEXT_WORDS`
  words unless one has a digit, e.g. ``77 Orchard Street``, ``Suite 641``, ``no longer needed``): the same words
  in order, any punctuation or spacing between them.
- ``sentence`` (a policy sentence): found when the text shares a run of :data:`POLICY_WINDOW` consecutive
  words with it (words are runs of letters and digits, compared lower-case).

Skipped, to keep false positives away: one or two words without a digit (``delivered``, ``USA``, ``yes``,
``New York``), integers of fewer than :data:`MIN_INT_DIGITS` digits (quantities, counts), texts shorter than
:data:`MIN_TEXT_CHARS`, booleans and nulls; a value that appears in the scenario (instructions, known info,
identity, agenda, opening) or in the tool schemas given (public vocabulary such as the cancellation reasons a
tool's description lists) is not a secret, and a policy sentence that shares a word run with the scenario (the
scenario quotes it) is not either.

A secret the agent has already said is no longer a secret: :meth:`SecretMatcher.find` takes the text the user
has heard and ignores whatever also occurs there (an id or policy run the agent stated may be repeated).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from simulator.types.tasks import Intent, Task, UserScenario

__all__ = [
    "MIN_DIGIT_RUN",
    "MIN_ID_CHARS",
    "MIN_INT_DIGITS",
    "MIN_TEXT_CHARS",
    "MIN_TEXT_WORDS",
    "POLICY_MIN_WORDS",
    "POLICY_WINDOW",
    "REDACTED",
    "Secret",
    "SecretMatcher",
    "find_secrets",
    "redact",
    "role_flip",
    "scenario_text",
    "task_secrets",
    "tool_syntax",
]

MIN_ID_CHARS = 4
"""Ids (a digit, no whitespace) need at least this many letters and digits to count."""
MIN_DIGIT_RUN = 5
"""A run of at least this many digits inside an id counts on its own (``4817420`` of ``#W4817420``)."""
MIN_INT_DIGITS = 3
"""Integers with fewer digits (quantities, counts, small numbers) are not secrets; decimals always count."""
MIN_TEXT_CHARS = 8
"""Multi-word texts shorter than this (after normalisation) are not secrets."""
MIN_TEXT_WORDS = 3
"""Texts without a digit need at least this many words to count (two-word names and places do not)."""
"""Multi-word texts shorter than this (after normalisation) are not secrets."""
POLICY_MIN_WORDS = 8
"""Policy sentences with fewer words are not secrets (headings, short rules that are common phrasing)."""
POLICY_WINDOW = 8
"""Consecutive words a text must share with a policy sentence to count as quoting it."""
REDACTED = "[redacted]"
"""What a redacted secret is replaced with."""

_WORD_RE = re.compile(r"[0-9a-z]+")
_DECIMAL_RE = re.compile(r"^[-+]?\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$")


class Secret(str):
    """A value the simulated user must not state: a ``str`` with its kind, form and origin.

    Equality and hashing are those of the string, so a list of secrets can be used as a list of strings.

    Attributes:
        kind: where it comes from: ``action_value``, ``output`` or ``policy``.
        form: how it is matched: ``id``, ``number``, ``text`` or ``sentence`` (see the module docstring).
        origin: a readable origin, e.g. ``return_delivered_order_items.item_ids`` or ``required_outputs[0]``.
    """

    kind: str
    form: str
    origin: str

    def __new__(cls, value: str, kind: str, form: str, origin: str = "") -> Secret:
        """Create a secret.

        Args:
            value: the secret text.
            kind: ``action_value``, ``output`` or ``policy``.
            form: ``id``, ``number``, ``text`` or ``sentence``.
            origin: a readable origin.

        Returns:
            The secret.

        Raises:
            ValueError: unknown kind or form.
        """
        if kind not in ("action_value", "output", "policy"):
            raise ValueError(f"unknown secret kind {kind!r}")
        if form not in ("id", "number", "text", "sentence"):
            raise ValueError(f"unknown secret form {form!r}")
        obj = super().__new__(cls, value)
        obj.kind = kind
        obj.form = form
        obj.origin = origin
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (Secret, (str(self), self.kind, self.form, self.origin))


_PLAIN = str.maketrans("\u2018\u2019\u201c\u201d\u2013\u2014\u2212", "''\"\"---")


def _fold_map(text: str) -> tuple[str, list[int]]:
    """Fold each character (NFKC, lower case, typographic quotes and dashes made plain).

    Returns:
        The folded text and, for each of its characters, the index of the original character it came from
        (folding may expand a character, e.g. a ligature, so spans are mapped back through this list).
    """
    if text.isascii():
        return text.lower(), list(range(len(text)))
    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        folded = _fold_char(ch)
        out.append(folded)
        index.extend([i] * len(folded))
    return "".join(out), index


def _fold_char(ch: str) -> str:
    """One character folded as :func:`_fold_map` folds it."""
    return unicodedata.normalize("NFKC", ch).lower().translate(_PLAIN) if ord(ch) > 127 else ch.lower()


class _FoldTable(dict[int, str]):
    """A ``str.translate`` table that folds each code point on first sight (:func:`_fold_char`) and keeps it.

    One instance per process (:data:`_FOLD_TABLE`); it is a cache of a pure function of the code point, at most one
    entry per distinct character ever folded.
    """

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLD_TABLE = _FoldTable()


def _fold(text: str) -> str:
    """NFKC, lower case, typographic quotes and dashes made plain (character by character, as :func:`_fold_map`)."""
    return text.lower() if text.isascii() else text.translate(_FOLD_TABLE)


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(_fold(text))


def _classify(value: str) -> str | None:
    """Return the form of a candidate value, or None when it is too short or common to be a secret."""
    v = _fold(value).strip()
    m = _DECIMAL_RE.match(v)
    if m is not None:
        int_part, frac = m.group(1).replace(",", ""), m.group(2)
        if frac is not None:
            return "number"
        if len(int_part) >= 5:
            return "id"  # a long digit string is an id (item id, zip code ...)
        return "number" if len(int_part) >= MIN_INT_DIGITS else None
    words = _WORD_RE.findall(v)
    if not words:
        return None
    has_digit = any(ch.isdigit() for ch in v)
    if has_digit and not re.search(r"\s", v):
        return "id" if sum(len(w) for w in words) >= MIN_ID_CHARS else None
    if not has_digit and len(words) < MIN_TEXT_WORDS:
        return None  # a word or two without a digit: a common word, a name, a place ("New York")
    return "text" if len(" ".join(words)) >= MIN_TEXT_CHARS else None


def _number_regex(value: str) -> re.Pattern[str]:
    m = _DECIMAL_RE.match(_fold(value).strip())
    if m is None:  # pragma: no cover - only called on values _classify accepted as numbers
        raise ValueError(f"not a number: {value!r}")
    int_part = m.group(1).replace(",", "").lstrip("0") or "0"
    frac = (m.group(2) or "").rstrip("0")
    alts = [re.escape(int_part)]
    if len(int_part) > 3:
        groups = []
        head = len(int_part) % 3 or 3
        groups.append(int_part[:head])
        groups.extend(int_part[i:i + 3] for i in range(head, len(int_part), 3))
        alts.append(re.escape(",".join(groups)))
    integer = "(?:" + "|".join(alts) + ")"
    tail = rf"\.{frac}0*" if frac else r"(?:\.0+)?"
    return re.compile(rf"(?<![0-9a-z])(?<![0-9][.,])0*{integer}{tail}(?![0-9a-z])(?![.,][0-9])")


def _run_pattern(run: str) -> str:
    """A pattern for one letter/digit run of an id: one separator allowed between digits or letter/digit."""
    out = [re.escape(run[0])]
    for prev, ch in zip(run, run[1:], strict=False):
        if ch.isdigit() and prev.isdigit():
            out.append(r"[\s,\-]?")  # digit groups: "6,777,246,137", "6777 246 137"
        elif ch.isdigit() or prev.isdigit():
            out.append(r"[\s\-]?")  # letter/digit: "W-4817420"
        out.append(re.escape(ch))
    return "".join(out)


def _id_regex(value: str) -> re.Pattern[str]:
    runs = _WORD_RE.findall(_fold(value))
    body = r"[\W_]{1,3}".join(_run_pattern(r) for r in runs)
    digits = [d for d in re.findall(r"\d+", _fold(value)) if len(d) >= MIN_DIGIT_RUN]
    if digits and digits != runs:
        body = "(?:" + "|".join([body, *(_run_pattern(d) for d in digits)]) + ")"
    return re.compile(rf"(?<![0-9a-z])(?<![0-9][.,])#?\s?{body}(?![0-9a-z])(?![.,][0-9])")


def _text_regex(value: str) -> re.Pattern[str]:
    body = r"[\W_]+".join(re.escape(w) for w in _words(value))
    return re.compile(rf"(?<![0-9a-z]){body}(?![0-9a-z])")


def _value_regex(secret: Secret) -> re.Pattern[str]:
    if secret.form == "number":
        return _number_regex(secret)
    if secret.form == "id":
        return _id_regex(secret)
    return _text_regex(secret)


def _windows(words: Sequence[str], size: int = POLICY_WINDOW) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}


class SecretMatcher:
    """Finds and redacts secrets in text; built once per list of secrets (patterns compiled here).

    Attributes:
        secrets: the secrets matched, in the order given.
    """

    def __init__(self, secrets: Iterable[Secret]) -> None:
        """Compile the secrets' patterns.

        Args:
            secrets: the secrets (see :func:`task_secrets`).
        """
        self.secrets: list[Secret] = list(secrets)
        self._regex: dict[int, re.Pattern[str]] = {}
        self._by_window: dict[tuple[str, ...], list[int]] = {}  # policy word run -> secrets holding it
        for i, s in enumerate(self.secrets):
            if s.form == "sentence":
                for w in _windows(_words(s)):
                    self._by_window.setdefault(w, []).append(i)
            else:
                self._regex[i] = _value_regex(s)

    def _units(self, text: str, among: set[tuple[int, Any]] | None = None) -> set[tuple[int, Any]]:
        """The (secret index, matched unit) pairs found in text; a unit is the value or a policy word run.

        ``among``: look only for these units' values and word runs (the result then holds every pair found of
        those, which is all a caller removing ``among``'s found units needs); None: for every secret.
        """
        folded = _fold(text)
        found: set[tuple[int, Any]] = set()
        values = self._regex if among is None else {i: self._regex[i] for i, unit in among if unit is None}
        for i, rx in values.items():
            if rx.search(folded):
                found.add((i, None))
        runs = None if among is None else {unit for _, unit in among if unit is not None}
        if self._by_window and (runs is None or runs):
            for w in _windows(_WORD_RE.findall(folded)):
                if runs is None or w in runs:
                    found.update((i, w) for i in self._by_window.get(w, ()))
        return found

    def find(self, text: str, heard: Iterable[str] = ()) -> list[Secret]:
        """Return the secrets found in ``text`` that are not also found in ``heard``.

        Args:
            text: the user's message.
            heard: what the user has been told (e.g. the agent's messages so far); a value or policy word
                run found there is no longer secret.

        Returns:
            The secrets found, in the matcher's order, each once.
        """
        units = self._units(text)
        if units:
            heard_text = "\n".join(heard)
            if heard_text:  # only the units found in text are looked for in what was heard
                units -= self._units(heard_text, among=units)
        hit = {i for i, _ in units}
        return [s for i, s in enumerate(self.secrets) if i in hit]

    def redact(self, text: str, secrets: Iterable[Secret] | None = None, placeholder: str = REDACTED) -> str:
        """Replace every occurrence of the given secrets in ``text`` with ``placeholder``.

        Args:
            text: the message.
            secrets: which secrets to redact (each must be one of the matcher's); None: all of them.
            placeholder: the replacement text.

        Returns:
            The text with each matched span (the value, or the policy words of a shared run) replaced.
        """
        wanted = set(secrets) if secrets is not None else None
        folded, index = _fold_map(text)
        spans: list[tuple[int, int]] = []
        for i, rx in self._regex.items():
            if wanted is None or self.secrets[i] in wanted:
                spans.extend((m.start(), m.end()) for m in rx.finditer(folded))
        if self._by_window:
            tokens = [(m.start(), m.end(), m.group()) for m in _WORD_RE.finditer(folded)]
            for k in range(len(tokens) - POLICY_WINDOW + 1):
                run = tuple(tok[2] for tok in tokens[k:k + POLICY_WINDOW])
                if any(wanted is None or self.secrets[i] in wanted for i in self._by_window.get(run, ())):
                    spans.append((tokens[k][0], tokens[k + POLICY_WINDOW - 1][1]))
        if not spans:
            return text
        spans = sorted((index[a], index[b - 1] + 1) for a, b in spans if b > a)  # back to the original text
        merged = [list(spans[0])]
        for a, b in spans[1:]:
            if a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out, pos = [], 0
        for a, b in merged:
            out.append(text[pos:a])
            out.append(placeholder)
            pos = b
        out.append(text[pos:])
        return "".join(out)


def find_secrets(text: str, secrets: Iterable[Secret], heard: Iterable[str] = ()) -> list[Secret]:
    """Return the secrets found in ``text`` (normalised match; see the module docstring).

    Args:
        text: the message to check.
        secrets: the secrets (see :func:`task_secrets`).
        heard: text the speaker was told; secrets also found there do not count.

    Returns:
        The secrets found, in the given order.
    """
    return SecretMatcher(secrets).find(text, heard)


def redact(text: str, secrets: Iterable[Secret], placeholder: str = REDACTED) -> str:
    """Return ``text`` with every occurrence of the secrets replaced by ``placeholder``.

    Args:
        text: the message.
        secrets: the secrets to redact.
        placeholder: the replacement.

    Returns:
        The redacted text.
    """
    return SecretMatcher(secrets).redact(text, placeholder=placeholder)


def _strings(value: Any, path: str) -> Iterable[tuple[str, str]]:
    """Yield (text, path) for every scalar inside a JSON-like value (numbers as text; bools/None skipped)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str):
        yield value, path
    elif isinstance(value, int | float):
        yield repr(value) if isinstance(value, float) else str(value), path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v, path)


def _intent_texts(intent: Intent) -> list[str]:
    out = [*intent.request, json.dumps(intent.slots, ensure_ascii=False), *intent.preferences.values(),
           *intent.confirm_terms]
    if intent.ask:
        out.append(intent.ask)
    if intent.fallback is not None:
        out.extend(_intent_texts(intent.fallback))
    return out


def scenario_text(scenario: UserScenario) -> str:
    """Return everything a scenario gives the user, as one text (what the user may legitimately say).

    Args:
        scenario: the user scenario.

    Returns:
        Instructions, known information (keys and values), identity values, agenda texts (requests, slots,
        preferences, confirmation terms, questions, fallbacks) and the scripted opening, one per line.
    """
    parts = [scenario.instructions, *(f"{k}: {v}" for k, v in scenario.known_info.items()),
             json.dumps(scenario.known_info, ensure_ascii=False), *scenario.identity.values()]
    for intent in scenario.agenda:
        parts.extend(_intent_texts(intent))
    if scenario.opening:
        parts.append(scenario.opening)
    return "\n".join(parts)


def _policy_sentences(policy: str) -> list[str]:
    """Split a (markdown) policy into sentences, markup removed."""
    text = re.sub(r"[*_`>|]+", " ", policy)
    text = re.sub(r"(?m)^[ \t]*(#+|[-+]|\d+[.)])[ \t]+", "\n\n", text)  # headings and list items: own blocks
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = " ".join(block.split())
        out.extend(p.strip() for p in re.split(r"(?<=[.!?;:])\s+(?=[\"'(A-Z0-9])", block) if p.strip())
    return out


def task_secrets(task: Task, policy: str, scenario: UserScenario | None = None, *,
                 tools: Sequence[dict[str, Any]] | None = None) -> list[Secret]:
    """List what the simulated user of a task must not say (see the module docstring for the rules).

    Args:
        task: the task (its gold actions and required outputs are read, and its alternative outcomes': their
            intents, which the user may come to want, are public like the scenario).
        policy: the domain policy text (markdown is fine); ``""`` for none.
        scenario: the scenario the user plays (e.g. one derived by the domain); None: ``task.scenario``.
        tools: the domain's tool schemas; values they mention (enumerated options in descriptions) are
            public vocabulary, not secrets. None: no such exemption.

    Returns:
        The secrets, each once: gold-action values first (in action order), then required outputs, then
        policy sentences.
    """
    scenario = scenario if scenario is not None else task.scenario
    public = [scenario_text(scenario), *(t for alt in task.alternatives for t in _intent_texts(alt.intent))]
    if tools:
        public.append(json.dumps(list(tools), ensure_ascii=False))
    public_text = "\n".join(public)
    public_folded = _fold(public_text)
    out: list[Secret] = []
    seen: set[str] = set()

    def add(value: str, kind: str, origin: str) -> None:
        form = _classify(value)
        if form is None or value in seen:
            return
        secret = Secret(value, kind, form, origin)
        if _value_regex(secret).search(public_folded):
            return  # the scenario (or a tool schema) gives it: the user may say it
        seen.add(value)
        out.append(secret)

    for action in [*task.gold_actions, *(a for alt in task.alternatives for a in alt.gold_actions)]:
        for value, path in _strings(action.arguments, action.name):
            add(value, "action_value", path)
    for i, output in enumerate(task.required_outputs):
        add(output, "output", f"required_outputs[{i}]")
    for alt in task.alternatives:
        for i, output in enumerate(alt.required_outputs):
            add(output, "output", f"alternatives.{alt.name}.required_outputs[{i}]")
    public_runs = _windows(_words(public_text))
    for sentence in _policy_sentences(policy):
        words = _words(sentence)
        if len(words) < POLICY_MIN_WORDS or sentence in seen:
            continue
        if _windows(words) & public_runs:
            continue  # the scenario quotes it: the user knows it
        seen.add(sentence)
        out.append(Secret(sentence, "policy", "sentence", "policy"))
    return out


# --- other things a simulated user must not do ---------------------------------------------------------------

_ROLE_FLIP_RE = re.compile(
    r"\bhow (?:can|may) i (?:help|assist)\b"
    r"|\b(?:is there )?anything else (?:i|we) can (?:help|assist|do)\b"
    r"|\bthank(?:s| you) for (?:contacting|reaching out to) (?:us|our)\b"
    r"|\bas an? (?:ai|agent|assistant|language model|customer[- ]service (?:agent|representative))\b"
    r"|\bi(?: have|'ve| just)? (?:cancel+ed|processed|updated|refunded|exchanged|returned|modified|changed|issued"
    r"|booked|transferred) your\b"
    r"|\byour (?:order|reservation|refund|exchange|return|request|booking|account) (?:has|have) been\b"
    r"|\b(?:i|we)(?: can|'ll| will) (?:now )?(?:process|cancel|refund|exchange|modify|update|book) your\b"
    r"|\b(?:shall|should) i (?:proceed|go ahead)\b"
    r"|\bplease confirm \(?yes ?/ ?no\)?"
    r"|\bour polic(?:y|ies)\b"
    r"|\bi(?:'m| am) transferring you\b",
    re.IGNORECASE,
)

_TOOL_SYNTAX_RE = re.compile(
    r"\{\s*\"(?:name|arguments|function|tool|tool_name|action|kwargs|parameters)\"\s*:"
    r"|</?(?:tool_call|tool_calls|function_call|function|tool|invoke|tool_use|action)\b[^>]{0,200}>"
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\s*\(\s*(?:\)|[a-z_][a-z0-9_]*\s*=|[\"'{\[])"
    r"|(?m:^[^\S\n]*+(?:action|action input|observation)\s*+:)"
    r"|```",
    re.IGNORECASE,
)


def role_flip(text: str) -> str | None:
    """Return the phrase showing that a user message talks like the agent, or None.

    Agent phrasing: offering help ("How can I help you"), reporting an action it did ("I have cancelled your
    order", "Your refund has been ..."), asking leave to proceed ("Shall I proceed?"), speaking for the store
    ("our policy", "as an agent").

    Args:
        text: the user's message.

    Returns:
        The matched phrase, or None.
    """
    m = _ROLE_FLIP_RE.search(text)
    return m.group(0) if m else None


def tool_syntax(text: str, tool_names: Iterable[str] = ()) -> str | None:
    """Return the fragment showing tool-call syntax in a user message, or None.

    Tool-call syntax: a JSON object with ``"name"``/``"arguments"``-like keys, tool-call tags, a
    ``snake_case(...)`` call, ReAct ``Action:`` lines, code fences, or a tool's name (``tool_names``) as a word.

    Args:
        text: the user's message.
        tool_names: the domain's tool names.

    Returns:
        The matched fragment, or None.
    """
    m = _TOOL_SYNTAX_RE.search(text)
    if m:
        return m.group(0)
    names = tuple(name for name in tool_names if "_" in name or len(name) >= 12)  # "think" may be plain English
    if not names or not _tool_names_regex(names).search(text):  # none of them (a user reply, nearly always)
        return None
    for name in names:  # the first tool in the given order that is named
        hit = re.search(_tool_name_pattern(name), text, re.IGNORECASE)
        if hit:
            return hit.group(0)
    return None


def _tool_name_pattern(name: str) -> str:
    """The pattern of a tool's name written as a word."""
    return rf"(?<![\w]){re.escape(name)}(?![\w])"


@functools.lru_cache(maxsize=32)
def _tool_names_regex(names: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled pattern finding any of the names as a word (compiled once per tool set: a run has one or two)."""
    return re.compile("|".join(_tool_name_pattern(n) for n in names), re.IGNORECASE)

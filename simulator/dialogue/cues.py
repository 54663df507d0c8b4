"""Dialogue cues: the one place that says what counts as a yes, a no, a closing and a confirmation request.

Every part of tausim that reads plain conversation text for these cues uses this module, so that the agent,
the conversation loop, the simulated user and the grader agree on whether, for example, the user confirmed:

- the orchestrator (:class:`simulator.dialogue.conversation.Conversation`): a user stop while the agent
  :func:`asks_confirmation` is not a stop; a write right after a user :func:`is_yes` is a confirmed action;
  offers of more help (:func:`offers_more_help`) are not questions for the progress judge;
- the process grader (:mod:`simulator.grading.process`): a write needs a user :func:`is_yes` first;
- the rule-based and scripted users read an agent message as a confirmation request by :func:`asks_confirmation`;
- the reference agents of the shipped domains read the user's answer by :func:`is_yes` / :func:`is_no` and the
  end of the conversation by :func:`is_closing`;
- the rule-based user of a dual-control domain reads which of its own tools the agent asks it to use by
  :func:`requested_tool_calls` ("Please toggle airplane mode off.", "Restart your phone.", ``reboot_device()``).

All cues look at plain English text, case-insensitively; the patterns are small and general (no task
wording) and linear in the text's length. The user cues look at how a message starts ("Yes, please go ahead."
is a yes, "I guess yes" is not); the agent cues look at the message's last sentence.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CLOSING_RE",
    "COMPLETION_RE",
    "CONFIRM_IMPERATIVE_RE",
    "CONFIRM_QUESTION_RE",
    "MORE_HELP_RE",
    "NEGATION_RE",
    "NO_RE",
    "RETRYABLE_RE",
    "UNKNOWN_RE",
    "YES_RE",
    "asks_confirmation",
    "claims_completion",
    "is_closing",
    "is_no",
    "is_retryable_error",
    "is_yes",
    "negated",
    "offers_more_help",
    "requested_tool_calls",
    "says_unknown",
]

YES_RE = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|i confirm|confirm(?:ed)?|correct|absolutely|of course|go ahead|proceed|"
    r"please (?:do|proceed|go ahead)|do it|(?:ok|okay|alright)\W+(?:go ahead|proceed|do it|please do))\b",
    re.IGNORECASE,
)
"""An explicit user yes: the message starts with one of these words. A bare "ok" / "okay" / "fine" / "right"
is an acknowledgement, not a yes."""

NO_RE = re.compile(
    r"^\W*(?:no|nope|nah|don'?t|do not|not|cancel that|stop|wait|that'?s (?:not|wrong))\b",
    re.IGNORECASE,
)
"""A user no: the message starts with one of these words ("No, that's wrong.", "Wait, ...", "Don't do that.")."""

CLOSING_RE = re.compile(
    r"\b(?:that'?s (?:all|it)|that is all|nothing else|no,? thanks?|no thank you|all set|(?:good)?bye)\b",
    re.IGNORECASE,
)
"""A user closing: the message says it needs nothing more or says goodbye, anywhere in it."""

MORE_HELP_RE = re.compile(
    r"\banything else\b|\bsomething else\b|\bany(?: other| more| further) (?:questions?|requests?|things?|issues?|"
    r"help|concerns?)\b|\banything more\b|\bhelp (?:you )?with anything\b|\bis that all\b|\bwhat else can i\b|"
    r"\bhow (?:else )?(?:can|may) i (?:help|assist)\b|\bwhat can i (?:help|do for) you\b",
    re.IGNORECASE,
)
"""An agent's offer of more help ("Is there anything else I can help you with?"), anywhere in a sentence."""

CONFIRM_QUESTION_RE = re.compile(
    r"\b(?:confirm|proceed|go ahead|shall i|should i|do you want|would you like|is that (?:correct|right|ok)|"
    r"(?:yes|y)\s*/\s*(?:no|n)|yes or no)\b",
    re.IGNORECASE,
)
"""Words that make a question (a sentence ending in "?" or "(yes/no)") a confirmation request."""

CONFIRM_IMPERATIVE_RE = re.compile(
    r"^\W*(?:please\s+)?(?:"
    r"confirm\b(?:\W*$|\s+(?:that|whether|if|to|and)\b)"
    r"|(?:reply|answer|respond|say|type|write)\s+(?:with\s+)?\W?(?:yes|y)\b"
    r"|(?:let me know|tell me)\s+(?:if|whether)\s+(?:i should|you(?:'d| would) like me to|you want me to)\b"
    r"|(?:let me know|tell me)\s+(?:if|whether)\s+(?:(?:you(?:'d| would) like|you want)\s+)?(?:me\s+)?to\s+"
    r"(?:proceed|go ahead|continue)\b)",
    re.IGNORECASE,
)
"""An imperative confirmation request, matched at the start of the last sentence: "Please confirm.", "Reply yes
to confirm.", "Let me know if I should proceed.", "Please confirm that you want the refund.". "Please confirm
your email address." asks for a value, not a yes."""

_YES_NO_TAIL_RE = re.compile(r"\byes\s*/\s*no\b\)?\W*$", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")


def is_yes(text: str | None) -> bool:
    """Return True when a user message is an explicit yes (:data:`YES_RE`).

    Args:
        text: the user's message (None: not a yes).
    """
    return bool(text) and YES_RE.search(text or "") is not None


def is_no(text: str | None) -> bool:
    """Return True when a user message starts with a no (:data:`NO_RE`).

    Args:
        text: the user's message (None: not a no).
    """
    return bool(text) and NO_RE.search(text or "") is not None


def is_closing(text: str | None) -> bool:
    """Return True when a user message closes the conversation (:data:`CLOSING_RE`: "that's all", "bye" ...).

    Args:
        text: the user's message (None: not a closing).
    """
    return bool(text) and CLOSING_RE.search(text or "") is not None


def offers_more_help(text: str | None) -> bool:
    """Return True when an agent message (or sentence) offers more help (:data:`MORE_HELP_RE`).

    Args:
        text: the agent's message or one of its sentences (None: no offer).
    """
    return bool(text) and MORE_HELP_RE.search(text or "") is not None


COMPLETION_RE = re.compile(
    r"\b(all set|all done|is done|has been (?:\w+ed|done|made|processed|completed)|have been \w+ed|"
    r"successfully|completed|is now (?:\w+ed|updated|complete)|went through)\b", re.IGNORECASE)
"""An agent's claim that the work is done ("All done!", "Your order has been cancelled", "completed
successfully"), anywhere in the message."""


NEGATION_RE = re.compile(
    r"\b(?:not|no(?!\s+longer\b)|nothing|none|never|neither|nor|cannot|unable)\b|n[\u2019']t\b",
    re.IGNORECASE)
"""A negation ("not", "nothing", "couldn't" with a straight or curly apostrophe, "unable"; not "no longer", an
adjective there: "the order you no longer need"): read in the few words before a cue it turns it around ("Nothing has
been cancelled", "the return could not be completed")."""

_NEGATIVE_SUBJECT = re.compile(r"^\W*(?:nothing|none|no(?!\s+longer\b)|neither)\b", re.IGNORECASE)
"""A clause whose subject is negative ("None of the items in your order ...", "Nothing on your account ..."): it
turns the clause's cue around however far it stands."""

_CLAUSE_END = re.compile(r"[.!?;:,\n]|\b(?:but|and|so|then|however)\b", re.IGNORECASE)
"""Where the words a negation reaches stop: a sentence or clause boundary ("No problem, your order has been
cancelled" still claims)."""

NEGATION_WINDOW_WORDS = 3
"""How many words before a cue a negation is looked for."""

_RELATIVE = re.compile(r"\b(?:that|which|who|whom|whose)\b", re.IGNORECASE)
"""A relative pronoun: a negation after it, followed by the relative clause's own verb before the cue, belongs to
that clause ("the items that were not delivered have been refunded")."""

_AUXILIARY = frozenset({"be", "been", "being", "is", "are", "was", "were", "am", "have", "has", "had", "do", "does",
                        "did", "will", "would", "can", "could", "shall", "should", "may", "might", "must", "get",
                        "got", "gotten", "yet", "still", "ever", "fully", "actually", "really", "to", "it"})
"""Words between a negation and a cue that leave the negation on the cue ("could not be completed", "has not yet
been"): auxiliaries and a few adverbs."""

_NEGATED_KNOWING = re.compile(
    r"(?:\b(?:not|never|cannot|unable to)|n[\u2019']t)\s+(?:(?:yet|really|fully|be|be able to)\s+)?"
    r"(?:confirm|verify|see|know|tell|guarantee|say|sure|certain|promise)\b",
    re.IGNORECASE)
"""A negated verb of knowing or saying ("I can't confirm", "I'm not sure", "we cannot verify"): the clause it
governs reports no fact, so a cue inside it claims nothing ("I can't confirm the payment went through")."""


def negated(text: str, start: int) -> bool:
    """Return True when a negation (:data:`NEGATION_RE`) stands in the few words before ``text[start:]``.

    Only the same clause is read (back to the nearest punctuation or conjunction, :data:`_CLAUSE_END`): its start
    when it opens with a negative subject (:data:`_NEGATIVE_SUBJECT`) or holds a negated verb of knowing or saying
    that governs the cue (:data:`_NEGATED_KNOWING`: "I can't confirm the payment went through"), else at most
    :data:`NEGATION_WINDOW_WORDS` words before the cue. A negation inside a relative clause (after a relative
    pronoun, :data:`_RELATIVE`, and followed by the clause's own verb) is that clause's, not the cue's ("the items
    that were not delivered have been refunded" claims).

    Args:
        text: the message.
        start: where the cue matched (a character offset into ``text``).
    """
    before = text[max(0, start - 200):start]
    ends = list(_CLAUSE_END.finditer(before))
    if ends:
        before = before[ends[-1].end():]
    if _NEGATIVE_SUBJECT.search(before) or _NEGATED_KNOWING.search(before):
        return True
    words = before.split()
    window = " ".join(words[-NEGATION_WINDOW_WORDS:])
    found = list(NEGATION_RE.finditer(window))
    if not found:
        return False
    last = found[-1]
    at = len(words) - len(window.split()) + window[:last.start()].count(" ")  # the negation's word
    return not _in_relative_clause(words[:at], words[at + 1:])


def _in_relative_clause(before: list[str], after: list[str]) -> bool:
    """Whether a negation belongs to a relative clause that ends before the cue.

    It does when a relative pronoun (:data:`_RELATIVE`) stands in the words ``before`` it, and a word other than an
    auxiliary (:data:`_AUXILIARY`), the relative clause's own verb, in the words ``after`` it (up to the cue).
    """
    if all(w.strip("\u2019'").lower() in _AUXILIARY for w in after):
        return False
    return _RELATIVE.search(" ".join(before)) is not None


def claims_completion(text: str | None) -> bool:
    """Return True when an agent message claims that the work was done and asks no yes/no.

    A claim is a :data:`COMPLETION_RE` match not turned around by a negation just before it (:func:`negated`:
    "Nothing has been cancelled", "the exchange could not be completed", "I can't confirm the payment went through"
    claim nothing; "the items that were not delivered have been refunded" claims).

    Args:
        text: the agent's message (None: no claim).
    """
    if not text or asks_confirmation(text):
        return False
    return any(not negated(text, m.start()) for m in COMPLETION_RE.finditer(text))


UNKNOWN_RE = re.compile(
    r"\b(?:(?:i|we)\s+(?:really\s+)?(?:do\s*n[o']?t|don'?t|cannot|can'?t|am not sure|'m not sure)\s+"
    r"(?:know|remember|recall|have|find|say)\b|not sure\b|no idea\b|(?:i|we) forgot\b|"
    r"(?:do\s*n[o']?t|don'?t) have (?:it|that|one)\b|(?:is|are)n'?t something i (?:know|have)\b|"
    r"(?:unknown|not known) to me\b)",
    re.IGNORECASE,
)
"""A user saying it does not know a fact ("I don't remember my email", "I'm not sure", "no idea"), anywhere."""


def says_unknown(text: str | None) -> bool:
    """Return True when a user message says it does not know or have what was asked (:data:`UNKNOWN_RE`).

    Args:
        text: the user's message (None: it says nothing of the kind).
    """
    return bool(text) and UNKNOWN_RE.search(text or "") is not None


RETRYABLE_RE = re.compile(r"\b(?:try again|retry|temporarily unavailable|timed out)\b", re.IGNORECASE)
"""What a tool error says when the same call may succeed if made again: a busy service, a timeout, a rolled-back
write ("Please try again", "you may retry")."""


def is_retryable_error(text: str | None) -> bool:
    """Return True when a tool result is an error that invites making the same call again (:data:`RETRYABLE_RE`).

    Only the start of the result is read (its first 400 characters): a tool error says what went wrong first.

    Args:
        text: a tool result's content (None: not an error).
    """
    head = (text or "")[:400]
    return head.lstrip().lower().startswith("error") and RETRYABLE_RE.search(head) is not None


def _last_sentence(text: str) -> str:
    """The last sentence of a stripped message (split after ".", "!" or "?" followed by white space)."""
    return _SENTENCE_END_RE.split(text)[-1]


def asks_confirmation(text: str | None) -> bool:
    """Return True when an agent message asks the user to confirm (a yes or a no is the expected answer).

    A message asks for confirmation when its last sentence is either

    - a question (it ends with "?" or with "yes/no") with a confirmation word (:data:`CONFIRM_QUESTION_RE`):
      "Shall I cancel order #W1?", "Would you like me to proceed?", "Please confirm (yes/no).";
    - or an imperative confirmation request (:data:`CONFIRM_IMPERATIVE_RE`): "Please confirm.", "Reply yes to
      confirm.", "Let me know if I should proceed.".

    Args:
        text: the agent's message (None or blank: False).
    """
    if not text or not text.strip():
        return False
    tail = text.strip()
    last = _last_sentence(tail)
    if tail.endswith("?") or _YES_NO_TAIL_RE.search(tail):
        return CONFIRM_QUESTION_RE.search(last) is not None
    return CONFIRM_IMPERATIVE_RE.search(last) is not None


VERB_WORDS: dict[str, str] = {
    "toggle": r"toggle|turn|switch|enable|disable|activate|deactivate",
    "reboot": r"reboot|restart|power[- ]?cycle",
    "restart": r"reboot|restart|power[- ]?cycle",
    "check": r"check|look(?: at)?|see|verify|tell me|what does|what do|read|open",
    "get": r"check|look(?: at)?|see|tell me|what does|what do|read|get",
    "reseat": r"reseat|re-seat|reinsert|re-insert|take out|remove",
    "reset": r"reset|restore",
    "connect": r"connect|reconnect|turn on|switch on",
    "disconnect": r"disconnect|turn off|switch off",
    "set": r"set|change|switch",
    "run": r"run|do|perform|try|start",
    "grant": r"grant|allow|give|enable",
    "make": r"make|pay|complete",
    "can": r"try|check|see|test|can you|could you",
}
"""A tool name's first word -> the verbs that ask for it in plain text ("turn off airplane mode" asks for
``toggle_airplane_mode``)."""

OBJECT_WORDS: dict[str, str] = {
    "device": r"device|phone|handset",
    "wifi": r"wi-?fi",
    "sim": r"sim",
    "apn": r"apn|access point",
    "mms": r"mms|picture messages?|multimedia messages?",
    "vpn": r"vpn",
    "data": r"data",
    "settings": r"settings?",
    "status": r"status|state",
}
"""Words of a tool name's object and how plain text may say them (any other word: itself, plural allowed)."""

QUALIFIER_WORDS = frozenset({"a", "the", "to", "of", "on", "status", "preference"})
"""Words of a tool name a plain request may leave out ("check your SIM" asks for ``check_sim_status``)."""

_REQUEST_RE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|now|next|first|then|also|and|alright|great|thanks?)\W+)*(?:please\W+)?(?!i\b|we\b|i'|we')"
    r"|\bplease\b|\b(?:can|could|would|will) you\b|\bi(?:'d| would)? (?:need|want|like) you to\b|\btry\b"
    r"|\bgo ahead and\b|\byou (?:should|need to|must|can)\b|\blet'?s\b",
    re.IGNORECASE,
)
"""A sentence that asks the user to act: an imperative start (not "I ..."/"We ..."), "please", "can you",
"I need you to", "try", "you should", "let's"."""

_OWN_ACTION_RE = re.compile(r"^\W*(?:i|we)(?:'ve|'ll| have| will| am| just)?\b", re.IGNORECASE)
_CALL_RE = re.compile(r"\b([a-z][a-z0-9]*+(?:_[a-z0-9]++)++)\b(\s{0,8}\((?:[^()]|\([^()]{0,200}\)){0,1000}\))?")
"""A tool named in call notation, ``reboot_device()`` / ``toggle_data(on=True)``; its parenthesised part is bounded
(1,000 characters), so that a long text is not rescanned from every name in it."""
_ONE_OF_RE = re.compile(r"\bone of ([\w ,/.-]+)", re.IGNORECASE)
_SENTENCE_RE = re.compile(r"(?<=[.!?;:])\s+|\n+")


def _split_sentences(text: str) -> list[str]:
    """Split a message into sentences (:data:`_SENTENCE_RE`), never inside a call's parentheses.

    ``f(arguments='{"a": 1, "b": 2}')`` stays one piece although ``": "`` ends a sentence elsewhere.
    """
    out: list[str] = []
    start = depth = scanned = 0
    for m in _SENTENCE_RE.finditer(text):
        chunk = text[scanned:m.start()]
        depth = max(depth + chunk.count("(") - chunk.count(")"), 0)
        scanned = m.start()
        if depth == 0:
            out.append(text[start:m.start()])
            start = m.end()
    out.append(text[start:])
    return out


def _call_arguments(text: str) -> dict[str, Any] | None:
    """Keyword arguments written as a call's parenthesised part, ``(mode='4g_only', n=2)``; None: not literals."""
    try:
        node = ast.parse("f" + text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or node.args:
        return None
    try:
        return {str(k.arg): ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        return None


def _choices(schema: Mapping[str, Any]) -> list[str]:
    """The values a string parameter allows: its ``enum``, else a "one of a, b, c" list in its description."""
    if schema.get("enum"):
        return [str(v) for v in schema["enum"]]
    m = _ONE_OF_RE.search(str(schema.get("description", "")))
    if m is None:
        return []
    return [c.strip(" .") for c in re.split(r",|\bor\b", m.group(1)) if c.strip(" .")]


def _plain_arguments(sentence: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Required arguments a plain sentence names (only parameters with a fixed set of values); None: missing."""
    props = params.get("properties", {}) or {}
    out: dict[str, Any] = {}
    norm = sentence.lower().replace("/", " ").replace("_", " ")
    for name in params.get("required", []) or []:
        for choice in sorted(_choices(props.get(name, {})), key=len, reverse=True):
            if re.search(r"(?<!\w)" + re.escape(choice.lower().replace("_", " ")) + r"(?!\w)", norm):
                out[name] = choice
                break
        else:
            return None
    return out


def _plain_patterns(name: str) -> tuple[re.Pattern[str], list[re.Pattern[str]]] | None:
    """The verb pattern and object-word patterns of a tool name (``toggle_airplane_mode``); None: no known verb."""
    words = name.lower().split("_")
    verb = VERB_WORDS.get(words[0])
    if verb is None or len(words) < 2:
        return None
    objects = [re.compile(rf"\b(?:{OBJECT_WORDS.get(w, re.escape(w) + r'[a-z]*')})\b", re.IGNORECASE)
               for w in _object_words(name)]
    return re.compile(rf"\b(?:{verb})\b", re.IGNORECASE), objects


def _object_words(name: str) -> list[str]:
    """The words of a tool name a plain request must say: all but the verb and :data:`QUALIFIER_WORDS`."""
    return [w for w in name.lower().split("_")[1:] if w not in QUALIFIER_WORDS]


def _plain_match(sentence: str, patterns: tuple[re.Pattern[str], list[re.Pattern[str]]]) -> int | None:
    """Where a sentence names a tool in plain words (its first object word), or None."""
    verb, objects = patterns
    if verb.search(sentence) is None:
        return None
    at = []
    for o in objects:
        m = o.search(sentence)
        if m is None:
            return None
        at.append(m.start())
    return min(at, default=0)


def _head_at(sentence: str, name: str, others: Sequence[str]) -> int | None:
    """Where a sentence first names a tool's object other than as a modifier of another tool's object; None: never.

    In "turn on data roaming" the word "data" only qualifies "roaming" (the head of a compound noun is its last
    word), so the sentence asks for ``toggle_roaming`` and not also for ``toggle_data``.
    """
    patterns = _plain_patterns(name)
    heads = [p for o in others if (q := _plain_patterns(o)) is not None for p in q[1]]
    if patterns is None or not patterns[1]:
        return 0
    at = []
    for obj in patterns[1]:
        for m in obj.finditer(sentence):
            rest = sentence[m.end():]
            if rest[:1] not in (" ", "-") or not any(head.match(rest.lstrip(" -")) for head in heads):
                at.append(m.start())
                break
    return min(at, default=None)


def requested_tool_calls(text: str | None, tools: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Return the user's own tools an agent message asks the user to use, in the order asked.

    A tool is asked for when the message names it (``toggle_roaming``, optionally with keyword arguments in call
    notation: ``set_network_mode_preference(mode='4g_only')``), or when a sentence asking the user to act
    (:data:`_REQUEST_RE`; not the agent's report of its own action, "I turned on roaming") holds a verb and
    every object word of the tool's name (:data:`VERB_WORDS`, :data:`OBJECT_WORDS`: "Please turn airplane mode
    off", "restart your phone", "check your status bar"). A tool whose required arguments the text does not
    give (call notation, or a value of a parameter with a fixed set of values) is left out. Each tool is asked
    for at most once per sentence.

    Args:
        text: the agent's message (None or blank: nothing asked).
        tools: OpenAI function schemas of the user's tools (``{"type": "function", "function": {...}}`` or
            the bare function objects).

    Returns:
        ``[(tool name, arguments)]`` in the order the message asks for them.
    """
    if not text or not text.strip() or not tools:
        return []
    fns = {str(f["name"]): f for f in (t.get("function", t) for t in tools)}
    found: list[tuple[int, str, dict[str, Any]]] = []
    pos = 0
    for sentence in _split_sentences(text):
        start = text.find(sentence, pos)
        pos = max(start, pos)
        named: set[str] = set()
        for m in _CALL_RE.finditer(sentence):
            fn = fns.get(m.group(1))
            if fn is None:
                continue
            args = _call_arguments(m.group(2)) if m.group(2) else {}
            required = (fn.get("parameters") or {}).get("required", []) or []
            if args is None or any(r not in args for r in required):
                continue
            named.add(m.group(1))
            found.append((pos + m.start(), m.group(1), args))
        if not _REQUEST_RE.search(sentence) or _OWN_ACTION_RE.match(sentence):
            continue
        plain: list[tuple[int, str, dict[str, Any]]] = []
        for name, fn in fns.items():
            patterns = _plain_patterns(name) if name not in named else None
            where = _plain_match(sentence, patterns) if patterns is not None else None
            if where is None:
                continue
            args = _plain_arguments(sentence, fn.get("parameters") or {})
            if args is not None:
                plain.append((pos + where, name, args))
        # "turn Wi-Fi calling on" names toggle_wifi_calling, not also toggle_wifi: the most specific name wins
        words = {name: set(_object_words(name)) for _, name, _ in plain}
        plain = [f for f in plain if not any(
            o != f[1] and o.split("_")[0] == f[1].split("_")[0] and words[f[1]] < words[o] for o in words)]
        for _, name, args in plain:
            at = _head_at(sentence, name, [o for _, o, _ in plain if o != name])
            if at is not None:
                found.append((pos + at, name, args))
    found.sort(key=lambda f: f[0])
    return [(name, args) for _, name, args in found]

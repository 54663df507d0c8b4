"""A rule-based user's scenario read from a task's instruction text: general rules for any domain.

tau2-bench (τ³) tasks give the user structured instructions (reason for call, known info, unknown info, task
instructions; :func:`simulator.world.tau2_tasks.render_instructions` renders them as titled paragraphs) and
tau-bench's task lists a free-text instruction ("Your user id is mia_li_3668. You want to fly ..."). A domain
without its own derivation (:meth:`simulator.world.capabilities.ScenarioDerivation.derive_scenario`) gets its rule
user's scenario from :func:`derive_instruction_scenario`:

- identity: the facts the instruction states about who the user is (its known info when structured, else the whole
  text): a name ("You are Emma Kim", "your name is ..."), a user id ("your user id is ...", or an id spelled like one,
  ``first_last_1234``, after "You are"), e-mail addresses, a zip code, a phone number, a date of birth;
- agenda: one intent whose request is the user's goal in its own words: the first sentence of the reason for call
  (else of the text) that says what the user wants ("You want to cancel reservation EHGLP3." -> "cancel reservation
  EHGLP3"), turned into the first person; its ``slots`` are the ids the instruction states (order, reservation, task).

Only values the instruction states are given to the user, so it cannot say what it was not told. The rules are
general (tuned on tau2's train splits of retail, airline and telecom and on mock, never on a test split); none names
a task.
"""

from __future__ import annotations

import re
from typing import Any

from simulator.errors import DomainError
from simulator.types.tasks import Intent, Task, UserScenario

__all__ = ["derive_instruction_scenario", "first_person", "identity_facts", "instruction_sections", "user_goal"]

_SECTIONS = ("persona", "domain", "reason for call", "known info", "unknown info", "task instructions")
_HEADING_RE = re.compile(r"^(" + "|".join(s.capitalize() for s in _SECTIONS) + r"):[ \t]*$", re.MULTILINE)
_EMAIL_RE = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CAP = r"[A-Z][a-z'-]+"
_NAME_RE = re.compile(rf"\b(?:[Yy]ou are|[Yy]ou're|[Yy]our (?:full )?name is|[Yy]ou name is|called|named)\s+"
                      rf"({_CAP}(?:\s+{_CAP}){{1,2}})\b")
_UID_RE = re.compile(r"\buser[ _-]?(?:id|name)\b[ \t]{0,3}(?:is[ \t]{1,3})?[:=]?[ \t]{0,3}['\"]?([A-Za-z][\w-]{1,80})")
_UID_SHAPED_RE = re.compile(r"\b[Yy]ou(?: are|'re)\s+([a-z]+(?:_[a-z]+)+_\d+)\b")
_ZIP_RE = re.compile(r"\bzip\s?(?:code)?\b\D{0,12}?(\d{5})(?!\d)", re.IGNORECASE)
_PHONE_RE = re.compile(r"\bphone(?: number)?\b(?:\s+is|:)?\s+(\+?\d[\d\s().-]{6,}\d)", re.IGNORECASE)
_DOB_RE = re.compile(r"\b(?:date of birth|born on|birthday)\b\D{0,12}?(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{4})",
                     re.IGNORECASE)
_GOAL_RE = re.compile(
    r"\b(?:you|who)\s+(?:(?:really|also|just|now|only|first)\s+)?"
    r"(?:want|wants|would like|'d like|need|needs|wish|wishes|hope|hopes|plan|plans|"
    r"are (?:looking|hoping|trying|calling|planning)|were (?:told|hoping))\s+to\s+(.+)"
    r"|\byour (?:goal|task|aim|job) (?:is|will be) to\s+(.+)",
    re.IGNORECASE)
_IMPERATIVE_RE = re.compile(r"^(?:please\s+)?(?:ask|request|tell|create|add|update|mark|delete|cancel|change|book|"
                            r"get|find|check|fix|make|return|exchange|modify|remove|set)\b", re.IGNORECASE)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_IDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("order_id", re.compile(r"#W\d{5,}")),
    ("reservation_id", re.compile(r"\b(?:reservation|confirmation|booking)(?: id| number| code)?[ \t]{1,3}"
                                  r"(?:is[ \t]{1,3})?:?[ \t]{0,3}([A-Z0-9]{6})\b")),
    ("task_id", re.compile(r"\b(task_\d+)\b")),
)
_PERSON = (  # second person -> first person, longest first; the object "you" after a verb or preposition is "me"
    (r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou've\b", "I've"), (r"\byou'd\b", "I'd"),
    (r"\byou'll\b", "I'll"), (r"\byou were\b", "I was"), (r"\byourself\b", "myself"), (r"\byours\b", "mine"),
    (r"\byour\b", "my"),
    (r"\byou(?= to\b)(?<!^you)", "me"),
    (r"\b(to|for|with|at|from|tell|told|give|gave|send|sent|call|help|let|ask|asks|asked|offer|offers|about)\s+you\b",
     r"\1 me"),
    (r"\byou\b", "I"),
)


def instruction_sections(text: str) -> dict[str, str]:
    """Split an instruction into its titled parts (tau2's structured instructions as tausim renders them).

    Args:
        text: the scenario's instruction text.

    Returns:
        ``{part name (lower case, e.g. "reason for call"): text}``; a plain instruction is one part, ``"reason for
        call"``, holding all of it.
    """
    heads = list(_HEADING_RE.finditer(text))
    if not heads:
        return {"reason for call": text.strip()}
    out: dict[str, str] = {}
    untitled = [text[:heads[0].start()].strip()]
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[h.end():end].strip()
        if h.group(1).lower() == "persona":  # one paragraph; a plain instruction rendered after it has no title
            body, _, rest = body.partition("\n\n")
            untitled.append(rest.strip())
        out[h.group(1).lower()] = body.strip()
    plain = "\n\n".join(u for u in untitled if u)
    if plain:
        out.setdefault("reason for call", plain)
    return out


def first_person(text: str) -> str:
    """Turn an instruction's second-person words into the user's own ("your order" -> "my order").

    Args:
        text: a clause of the instruction.

    Returns:
        The clause in the first person (best effort: "you" is "me" after a verb or preposition that takes an object,
        else "I").
    """
    out = text
    for pattern, repl in _PERSON:
        out = re.sub(pattern, repl, out, flags=re.IGNORECASE)
    return out


def identity_facts(text: str) -> dict[str, str]:
    """Return the facts a text states about who the user is.

    Args:
        text: the instruction's known info (or its whole text).

    Returns:
        Identity slots among ``name``, ``first_name``, ``last_name`` (a name of two or three capitalized words),
        ``user_id``, ``email`` (the first address; ``emails``: all of them, comma-separated, when several),
        ``zip``, ``phone_number``, ``dob``. A user id shaped ``first_last_1234`` also gives the name when the text
        states none.
    """
    ident: dict[str, str] = {}
    m = _UID_RE.search(text)
    if m is None or not re.search(r"[\d_]", m.group(1)):  # an id has a digit or an underscore ("user id is" ...)
        m = _UID_SHAPED_RE.search(text)
    if m:
        ident["user_id"] = m.group(1).rstrip(".,;-")
    name = _NAME_RE.search(text)
    if name:
        words = name.group(1).split()
        ident.update(name=" ".join(words), first_name=words[0], last_name=words[-1])
    elif "user_id" in ident and re.fullmatch(r"[a-z]+_[a-z]+_\d+", ident["user_id"]):
        first, last, _ = ident["user_id"].split("_")
        ident.update(name=f"{first.capitalize()} {last.capitalize()}", first_name=first.capitalize(),
                     last_name=last.capitalize())
    emails = list(dict.fromkeys(_EMAIL_RE.findall(text)))
    if emails:
        ident["email"] = emails[0]
    if len(emails) > 1:
        ident["emails"] = ", ".join(emails)
    for key, rx in (("zip", _ZIP_RE), ("phone_number", _PHONE_RE), ("dob", _DOB_RE)):
        found = rx.search(text)
        if found:
            ident[key] = found.group(1).strip()
    return ident


def _clause(text: str) -> str:
    """The request clause: up to the sentence's end, trailing punctuation and quotes of the sentence dropped."""
    return re.split(r"(?<=[^.])[.!?](?:\s|$)|\n", text.strip(), maxsplit=1)[0].strip(" .;,:!?")


def user_goal(text: str) -> str | None:
    """Return what the user wants, as a verb phrase in its own words (``"cancel my reservation EHGLP3"``).

    The first sentence saying what the user wants ("You want to ...", "... who needs to ...", "Your goal is to ...")
    gives the phrase after its "to"; else the first imperative sentence ("Request a new task called ..."; "ask",
    "request" and "tell" are the user's own verbs: "request a new task" -> "get a new task"); else the first sentence
    as a whole, framed as "get help: ...".

    Args:
        text: the reason for call (or a plain instruction).

    Returns:
        The phrase (lower-case start, no final stop), or None for a text without a sentence.
    """
    sentences = [s.strip() for s in _SENTENCE_RE.split(text) if s.strip(" .")]
    for s in sentences:
        m = _GOAL_RE.search(s)
        if m:
            phrase = _clause(m.group(1) or m.group(2))
            if phrase:
                return first_person(phrase)
    for s in sentences:
        if _IMPERATIVE_RE.match(s):
            return _imperative_goal(_clause(s))
    if not sentences:
        return None
    return "get help: " + first_person(_clause(sentences[0]))


_ASKS = (  # the user's own verbs of an imperative instruction -> what it asks for
    (re.compile(r"^(?:please\s+)?(?:ask|request)\s+(?:(?:the agent|them)\s+)?to\s+", re.IGNORECASE), ""),
    (re.compile(r"^(?:please\s+)?(?:ask|request) that\s+(.+?)\s+be\s+", re.IGNORECASE), r"have \1 "),
    (re.compile(r"^(?:please\s+)?(?:ask for|request)\s+", re.IGNORECASE), "get "),
    (re.compile(r"^(?:please\s+)?tell\s+(?:the agent|them)\s+(?:that\s+)?", re.IGNORECASE), "let you know that "),
)


def _imperative_goal(sentence: str) -> str | None:
    """The goal of an imperative sentence ("Request that task_1 be marked done" -> "have task_1 marked done")."""
    phrase = sentence
    for rx, repl in _ASKS[:-1]:
        phrase = rx.sub(repl, phrase)
    tell = _ASKS[-1][0].match(phrase)
    phrase = first_person(phrase[tell.end():] if tell else phrase)
    if tell:
        phrase = _ASKS[-1][1] + phrase
    return phrase[:1].lower() + phrase[1:] if phrase else None


def _slots(text: str) -> dict[str, Any]:
    slots: dict[str, Any] = {}
    for key, rx in _IDS:
        found = [m.group(m.lastindex or 0) for m in rx.finditer(text)]
        if found:
            slots[key] = found[0]
    return slots


def derive_instruction_scenario(task: Task) -> UserScenario:
    """Return a rule-based user's scenario read from the task's instruction (see the module docstring).

    Args:
        task: the task; its ``scenario.instructions`` is read, never its gold actions or outputs.

    Returns:
        ``task.scenario`` with ``identity`` and a one-intent ``agenda`` (kind ``"help"``: the request, the ids as
        slots) filled in; a scenario that has an agenda as it is.

    Raises:
        DomainError: the instruction says nothing the user could ask for (it is empty).
    """
    if task.scenario.agenda:
        return task.scenario
    parts = instruction_sections(task.scenario.instructions)
    reason = parts.get("reason for call") or parts.get("task instructions") or ""
    goal = user_goal(reason)
    if goal is None:
        raise DomainError(f"task {task.id!r}: no structured scenario (agenda) and its instruction says nothing the "
                          "user wants; the rule-based user cannot play it")
    known = parts.get("known info") or task.scenario.instructions
    identity = {**identity_facts(task.scenario.instructions), **identity_facts(known)}
    slots = _slots(reason + "\n" + parts.get("known info", ""))
    if "user_id" in identity:
        slots.setdefault("user_id", identity["user_id"])
    intent = Intent(kind="help", request=[goal], slots=slots)
    return task.scenario.model_copy(update={"identity": identity, "agenda": [intent]})

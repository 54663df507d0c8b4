"""The rule-based agenda user: plays a task's structured scenario by patterns, without a model.

:class:`RuleUser` holds the scenario's identity slots and its agenda of intents (:class:`simulator.types.tasks.Intent`).
Each turn it classifies the agent's last message into dialogue acts (:mod:`simulator.users._acts`) and answers
from its own slots only:

- identity requests: its identity facts (email, or name with zip code, or user id; how many at once is the
  persona's reveal style);
- slot requests: the current intent's slot value verbatim, or "I don't know the ..." for anything it was not
  given (item ids, passwords, ...; for an id it describes its items instead); a choice it has no slot for ("the
  original payment method or a gift card?") is left to the agent ("the first one is fine");
- confirmation requests: "yes" only when the agent's message contains every ``confirm_terms`` entry of the
  current intent, otherwise "no" and a restatement of what it wants;
- offered options: names its ``preferences`` (switches to the fallback when no option fits), or the option one
  of its slot values picks out;
- information: answers its pending ``ask`` (or its ``info`` intent) when it states something (not when the agent
  only asks back);
- a reported result: asks the intent's ``ask`` question, or moves to the next intent, or closes with a stop when
  the agenda is done;
- a refusal: insists (policy-pushing persona), then takes the intent's ``fallback``, else gives the intent up;
- a transfer to a human: stops;
- a request to act on its own device (dual-control domains, with ``tools``: the user's own tool schemas): the
  tools :func:`simulator.dialogue.cues.requested_tool_calls` finds in the agent's message are called (a
  :class:`~simulator.types.messages.UserTurn` with ``tool_calls``); once their results are back, it says what it did
  and what it saw (the results, its own device's readings).

It never repeats the agent's words and never states a value that is not in its scenario (identity, slots,
preferences, request wording, ask) or read on its own device (its tools' results), so it cannot leak a secret by
construction.

Wording is drawn from :data:`simulator.users._phrasing.PHRASES` by a generator seeded from the trial seed: the
same seed gives byte-identical messages against the same agent, different seeds give different wording.

The persona (:class:`simulator.Persona`, None: cooperative defaults) sets patience, reveal style, verbosity,
politeness, typos, wrong answers, a mind change and policy pushing. Patience ``N``: the user abandons (with one of
the persona's abandonment phrases, ``UserTurn(abandon=True)``) at the ``N``-th consecutive agent turn without
progress (so ``patience=1`` gives up at the first such turn). A turn made progress when the orchestrator says so
(:meth:`observe_progress`; without it: the agent's message is new) or when a message not seen before moves the
user's agenda (a confirmation request, options, a result, a refusal, a transfer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.dialogue.cues import claims_completion, requested_tool_calls
from simulator.types.messages import Message, ToolCall, UserTurn
from simulator.types.persona import Persona
from simulator.types.prepared import SCENARIO
from simulator.types.protocols import Progress, TrialContext, UserFactory, prepared_for
from simulator.types.tasks import Intent, UserScenario
from simulator.users._acts import SLOT_PATTERNS, DialogueActs, classify, sentences
from simulator.users._phrasing import Phraser, Segment, join_segments

__all__ = ["RuleUser", "RuleUserFactory", "render_value", "rule_user_factory"]

_STREAM = 0x52554C45  # "RULE": keeps the user's stream apart from other generators seeded by the trial seed

SLOT_ALIASES: dict[str, tuple[str, ...]] = {
    "order_id": ("order_id", "order"),
    "reservation_id": ("reservation_id", "reservation", "booking_id"),
    "items": ("items", "item", "products"),
    "new_items": ("new_items", "new_item", "new_options", "options"),
    "payment": ("payment", "new_payment", "payment_method", "refund_payment", "payment_for_difference",
                "refund_to", "refund_method"),
    "reason": ("reason",),
    "address": ("address", "new_address", "shipping_address"),
    "flight": ("flight", "flights", "new_flight", "new_flights", "flight_number"),
    "cabin": ("cabin", "new_cabin"),
    "passengers": ("passengers", "passenger", "new_passengers"),
    "baggage": ("baggage", "bags", "total_baggages", "nonfree_baggages"),
    "insurance": ("insurance",),
    "date": ("date", "dates"),
    "origin": ("origin",),
    "destination": ("destination",),
}
"""Slot names the acts classifier reports, with the scenario slot keys that answer each."""

_NOT_FOUND = re.compile(
    r"\b(?:could ?n[o']?t|can ?n[o']?t|cannot|unable to|did ?n[o']?t|does ?n[o']?t|not able to|failed to) "
    r"(?:find|locate|match|verify|identify|look up)|\bno (?:account|user|profile|customer|match)\w*\b|"
    r"\bnot (?:found|match)\w*\b", re.IGNORECASE)
_BULLET_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+\S")
_AGENDA_ACTS = frozenset({"confirm", "offer_options", "report_result", "refuse", "transfer"})
_NEVER_KNOWN = frozenset({"item_id", "product_id", "payment_method_id", "password", "card_number"})
_SLOT_RX = dict(SLOT_PATTERNS)
_DESCRIBABLE = frozenset({"item_id", "product_id", "order_id", "payment_method_id"})
"""Unknown slots for which the user describes its items instead ("I don't know the order ID. It's the ...")."""
_IDENTITY_ORDER = ("email", "name_zip", "user_id", "dob")


def render_value(value: Any) -> str:
    """Render a slot value as the user says it.

    Strings as they are; numbers with ``str``; lists joined ("a, b and c"); an address object as
    ``"ADDRESS1, ADDRESS2, CITY, STATE ZIP, COUNTRY"`` (ADDRESS2 omitted when empty); another object as
    ``"key: value"`` pairs.

    Args:
        value: a slot value (string, number, list or object of those).

    Returns:
        The text.
    """
    if isinstance(value, dict):
        if "address1" in value or "city" in value:
            state_zip = " ".join(str(value[k]) for k in ("state", "zip") if value.get(k))
            parts = [value.get("address1"), value.get("address2"), value.get("city"), state_zip or None,
                     value.get("country")]
            return ", ".join(str(p) for p in parts if p)
        return ", ".join(f"{str(k).replace('_', ' ')}: {render_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        texts = [render_value(v) for v in value]
        if len(texts) <= 1:
            return "".join(texts)
        return ", ".join(texts[:-1]) + " and " + texts[-1]
    return str(value)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("#", "")).strip()


def _has_term(norm: str, term: str) -> bool:
    """True when ``term`` appears in the normalised text ``norm`` as whole words.

    A short value ("M", "8", "no") must not match inside a longer word or number ("medium", "$18.50", "not").

    Args:
        norm: text already normalised by :func:`_norm`.
        term: the term, in any case.

    Returns:
        Whether the normalised term occurs with no letter, digit or decimal part glued to either side.
    """
    t = _norm(term)
    if not t:
        return True
    return re.search(r"(?<!\w)(?<!\d\.)" + re.escape(t) + r"(?!\w)(?![.,]\d)", norm) is not None


_OWN_FRAME = re.compile(r"^\s*(?:(?:hi|hello)\W+)?(?:(?:then|so|and|also)\s+)?(?:(?:i'?d like to|i would like to|"
                        r"i want to|i need to|please)\s+)?(?=\w)", re.IGNORECASE)
_DETERMINED = re.compile(r"^\s*(?:my|the|both|all|a|an|your|one|two|three|either|any|\d)\b", re.IGNORECASE)


def _bare(request: str) -> str:
    """A request without a framing of its own ("I'd like to ...", "please ..."): the user adds one."""
    return _OWN_FRAME.sub("", request.strip().rstrip(".?!"), count=1)


_OWN_SENTENCE = re.compile(r"^\s*(?:i'?d like|i would like|i want|i need|i'?m looking for|i have|my)\b", re.IGNORECASE)
"""A request worded as a whole sentence of the user's ("I'd like a ticket ..."): said as it is."""


_WHETHER = re.compile(r"^\s*(?:if|whether)\b", re.IGNORECASE)


def _is_question(request: str) -> bool:
    return bool(re.match(r"^\s*(?:what|which|how|when|where|who|why|is|are|can|could|do|does|did|will|would)\b",
                         request, re.IGNORECASE))


_LABELS = {"payment": "payment method", "items": "item", "new_items": "new item", "dob": "date of birth"}


def _label(slot: str) -> str:
    if slot in _LABELS:
        return _LABELS[slot]
    return slot.replace("_", " ").replace(" id", " ID") if slot.endswith("_id") else slot.replace("_", " ")


class RuleUser:
    """Agenda-based simulated user (see the module docstring).

    Args:
        scenario: the structured scenario (``identity`` and a non-empty ``agenda``).
        seed: the trial seed; the user's wording generator is seeded from it.
        persona: how the user behaves; None: cooperative defaults (never abandons, answers when asked, normal
            verbosity, no typos, no mistakes).
        tools: OpenAI function schemas of the user's own tools (dual control; the task's subset); empty: it
            never acts on its side.

    Attributes:
        metadata: facts about the trial for the trajectory: ``persona`` (name or None), ``flags`` (always empty:
            the rule-based user cannot leak), ``abandoned_at_turn`` (1-based user turn of the abandonment message,
            or None), ``mind_changed_at_turn``, ``pushes`` (times it insisted after a refusal), ``wrong_answers``,
            ``intents_done``, ``intents_given_up`` (refused, no fallback) and ``intents`` (agenda length).

    Raises:
        ValueError: the scenario has no agenda.
    """

    def __init__(self, scenario: UserScenario, *, seed: int, persona: Persona | None = None,
                 tools: Sequence[dict[str, Any]] = ()):
        self._tools = list(tools)
        self._acted_on: str | None = None  # the agent message whose requested actions were performed
        self._calls = 0
        if not scenario.agenda:
            raise ValueError("RuleUser needs a scenario with an agenda (see Domain.derive_scenario)")
        self.scenario = scenario
        self.persona = persona
        self._rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed) & (2**63 - 1), _STREAM])))
        self._ph = Phraser(self._rng, typo_rate=persona.typo_rate if persona else 0.0,
                           verbosity=persona.verbosity if persona else "normal",
                           politeness=persona.politeness if persona else "neutral")
        self._identity = dict(scenario.identity)
        if "name" not in self._identity and self._identity.get("first_name") and self._identity.get("last_name"):
            self._identity["name"] = f"{self._identity['first_name']} {self._identity['last_name']}"
        self._agenda = list(scenario.agenda)
        self._idx = 0
        self._intent: Intent | None = self._agenda[0]
        self._state = "open"  # open | confirmed | done | asked
        self._on_fallback = False
        self._turn = 0
        self._stale = 0
        self._observed: Progress | None = None
        self._last_progress: Progress | None = None  # the verdict on the agent turn being answered
        self._claim_checked = False  # asked once, per intent, whether a claimed completion really happened
        self._seen_agent: set[str] = set()
        self._pending: list[list[Segment]] = []
        self._told: set[tuple[str, ...]] = set()  # facts given, by their values
        self._last_method: str | None = None  # identity method last given (email, name_zip, user_id, dob)
        self._failed_methods: set[str] = set()  # identity methods the agent could not find
        self._pushes_this_intent = 0
        self._mind_changed = False
        self._finished = False
        self.metadata: dict[str, Any] = {
            "persona": persona.name if persona else None, "flags": [], "abandoned_at_turn": None,
            "mind_changed_at_turn": None, "pushes": 0, "wrong_answers": 0, "intents_done": 0,
            "intents_given_up": 0, "intents": len(self._agenda),
        }

    # --- protocol ------------------------------------------------------------------------------------------
    def observe_progress(self, progress: Progress) -> None:
        """Record the orchestrator's progress verdict on the agent turn the next :meth:`reply` answers.

        Args:
            progress: the agent turn's :class:`~simulator.types.protocols.Progress`.
        """
        self._observed = progress

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the user's next message.

        Args:
            messages: the conversation as the user sees it (user and assistant text messages).

        Returns:
            The :class:`UserTurn`; ``stop`` when its agenda is done or it was transferred, ``abandon`` when its
            patience ran out.
        """
        if self._finished:
            return UserTurn(content="", stop=True)
        if messages and messages[-1].role == "tool" and messages[-1].requestor == "user":
            return self._report(messages)
        last = next((m.content for m in reversed(messages) if m.role == "assistant" and m.content), None)
        if self._tools and last is not None and messages[-1].role == "assistant" and last != self._acted_on:
            asked = requested_tool_calls(last, self._tools)
            if asked:
                self._acted_on = last
                calls = []
                for name, args in asked:
                    calls.append(ToolCall(id=f"rule_user_{self._calls}", name=name, arguments=args))
                    self._calls += 1
                return UserTurn(content="", tool_calls=calls)
        if last is None:
            return self._say(self._opening())
        acts = classify(last)
        self._last_progress = self._observed
        made = self._observed.made if self._observed is not None else last not in self._seen_agent
        # the user's own sense of progress: a new message that moves its agenda (an action to confirm, a result,
        # an answer or a refusal to react to) is progress even when it carries no new value
        made = made or (last not in self._seen_agent and bool(set(acts.acts) & _AGENDA_ACTS))
        self._observed = None
        self._seen_agent.add(last)
        self._stale = 0 if made else self._stale + 1
        if "transfer" in acts:
            self._finished = True
            return self._say([self._ph.sentence("after_transfer")], stop=True)
        if self._intent is None:
            return self._close()
        persona = self.persona
        if persona is not None and persona.patience is not None and self._stale >= persona.patience:
            self._finished = True
            self.metadata["abandoned_at_turn"] = self._turn + 1
            text = self._ph.choice(persona.abandonment_phrases)
            return self._say([[Segment(text)]], abandon=True)
        changed = None if "refuse" in acts else self._maybe_change_mind()  # a refusal leads to the fallback anyway
        if changed is not None:
            return self._say(changed)
        return self._respond(acts)

    # --- turns ---------------------------------------------------------------------------------------------
    def _report(self, messages: Sequence[Message]) -> UserTurn:
        """Say what it did on its device and what it saw: the results of its last run of tool calls."""
        results: list[str] = []
        for m in reversed(messages):
            if m.role != "tool" or m.requestor != "user":
                break
            results.append(" ".join((m.content or "").split()))
        results.reverse()
        lead = self._ph.sentence("done_on_device")
        said = " ".join(r if r.endswith((".", "!", "?")) else r + "." for r in results if r)
        return self._say([lead, [Segment(said, value=True)]] if said else [lead])

    def _say(self, sentences: list[list[Segment]], *, stop: bool = False, abandon: bool = False,
             yes_no: bool = False) -> UserTurn:
        segs = join_segments(sentences)
        if not abandon:
            segs = self._ph.decorate(segs, yes_no=yes_no)
        self._turn += 1
        return UserTurn(content=self._ph.finish(segs), stop=stop, abandon=abandon)

    def _close(self) -> UserTurn:
        self._finished = True
        return self._say([self._ph.sentence("closing")], stop=True)

    def _respond(self, acts: DialogueActs) -> UserTurn:
        asks = "request_identity" in acts or "request_slot" in acts
        if "refuse" in acts and not asks:
            return self._on_refuse()
        if "confirm" in acts:
            return self._on_confirm(acts)
        if "offer_options" in acts:
            return self._on_options(acts)
        if asks:
            return self._on_request(acts)
        if claims_completion(acts.text) and self._unbacked_claim():
            self._claim_checked = True
            return self._say([self._ph.sentence("check_claim"), self._restate()])
        if "report_result" in acts:
            return self._on_done()
        if "inform" in acts:
            return self._on_inform(acts)
        if "anything_else" in acts:
            return self._on_anything_else()
        if self._pending:
            fact = self._pending.pop(0)
            self._told.add(_fact_key(fact))
            return self._say([fact])
        return self._say([self._ph.sentence("unclear"), self._restate()])

    def _opening(self) -> list[list[Segment]]:
        assert self._intent is not None
        out: list[list[Segment]] = []
        if self._ph.verbosity != "terse":
            out.append(self._ph.sentence("greeting"))
        out.append(self._request(self._intent, "frame_request"))
        if self.persona is not None and self.persona.reveal_style == "all_at_once":
            out.extend(self._all_identity())
            out.extend(self._all_slots(self._intent))
        return out

    def _request(self, intent: Intent, frame: str) -> list[Segment]:
        req = _bare(self._ph.choice(intent.request))
        if _OWN_SENTENCE.match(req):
            frame = "frame_own"
        elif _WHETHER.match(req):
            frame = "frame_whether"
        elif _is_question(req):
            frame = {"frame_request": "frame_question", "next_request": "next_question"}.get(frame, "frame_question")
        elif self._ph.verbosity == "terse" and frame == "frame_request":
            frame = "frame_request_terse"
        segs = self._ph.phrase(frame, request=req)
        return _capitalised(segs)

    def _restate(self) -> list[Segment]:
        assert self._intent is not None
        req = _bare(self._ph.choice(self._intent.request))
        if _OWN_SENTENCE.match(req):
            return _capitalised(self._ph.phrase("frame_own", request=req))
        if _WHETHER.match(req):
            return _capitalised(self._ph.phrase("frame_whether", request=req))
        if _is_question(req):
            return _capitalised(self._ph.phrase("frame_question", request=req))
        return _capitalised(self._ph.phrase("restate", request=req))

    # --- facts ---------------------------------------------------------------------------------------------
    def _identity_fact(self, method: str) -> list[Segment]:
        ident = self._identity
        if method == "name_zip":
            return self._ph.sentence("name_zip", name=ident["name"], zip=ident["zip"])
        if method in ("email", "name", "zip", "user_id", "dob"):
            return self._ph.sentence(method, **{method: ident[method]})
        return self._ph.sentence("identity_other", label=_label(method), value=str(ident[method]))

    def _all_identity(self) -> list[list[Segment]]:
        ident = self._identity
        out = []
        if "name" in ident and "zip" in ident:
            out.append(self._identity_fact("name_zip"))
        elif "name" in ident:
            out.append(self._identity_fact("name"))
        for key in ident:
            if key in ("name", "zip", "first_name", "last_name") and "name" in ident:
                continue
            out.append(self._identity_fact(key))
        return out

    def _identity_answer(self, asked: tuple[str, ...], not_found: bool = False) -> list[list[Segment]]:
        ident = self._identity
        have = {"email": "email" in ident, "name_zip": "name" in ident and "zip" in ident,
                "user_id": "user_id" in ident, "dob": "dob" in ident}
        asked_set = set(asked)
        if asked_set == {"zip"} and "zip" in ident:
            return [self._identity_fact("zip")]
        if asked_set == {"name"} and "name" in ident:
            return [self._identity_fact("name")]
        wanted = [m for m in _IDENTITY_ORDER if not asked_set or
                  (m == "name_zip" and asked_set & {"name", "zip"}) or m in asked_set]
        if not_found and self._last_method is not None:
            self._failed_methods.add(self._last_method)  # the agent could not find it: try another way
        usable = [m for m in wanted if have[m]]
        fresh = [m for m in usable if m not in self._failed_methods]
        if not fresh and not_found:  # every method asked for failed: offer any other it has
            fresh = [m for m in _IDENTITY_ORDER if have[m] and m not in self._failed_methods]
        for method in fresh or usable:
            self._last_method = method
            return self._split_identity(method)
        out: list[list[Segment]] = []
        for missing in asked:
            if missing not in ident:
                out.append(self._ph.sentence("dont_know", label=_label(missing)))
        for method in _IDENTITY_ORDER:
            if have[method]:
                return out[:1] + self._split_identity(method)
        return out or [self._ph.sentence("dont_know", label="that")]

    def _split_identity(self, method: str) -> list[list[Segment]]:
        if method == "name_zip" and self._drip():
            return [self._identity_fact("name"), self._identity_fact("zip")]
        return [self._identity_fact(method)]

    def _slot_key(self, slot: str) -> str | None:
        assert self._intent is not None
        slots = self._intent.slots
        for key in SLOT_ALIASES.get(slot, (slot,)):
            if key in slots:
                return key
        return None

    def _slot_fact(self, key: str) -> list[Segment]:
        assert self._intent is not None
        value = render_value(self._intent.slots[key])
        std = next((s for s, keys in SLOT_ALIASES.items() if key in keys), None)
        if std in ("items", "payment") and _DETERMINED.match(value):
            return self._ph.sentence(f"{std}_bare", value=value)  # "my ...", "the ...": no second determiner
        if std in ("order_id", "reservation_id", "items", "new_items", "payment", "reason", "address"):
            return self._ph.sentence(str(std), value=value)
        return self._ph.sentence("slot_other", label=_label(key), value=value)

    def _all_slots(self, intent: Intent) -> list[list[Segment]]:
        saved = self._intent
        self._intent = intent
        try:
            return [self._slot_fact(k) for k in intent.slots]
        finally:
            self._intent = saved

    def _prefs_text(self, prefs: dict[str, str]) -> str:
        return render_value([f"{k}: {v}" for k, v in prefs.items()])

    def _drip(self) -> bool:
        return self.persona is not None and self.persona.reveal_style == "drip"

    # --- act handlers --------------------------------------------------------------------------------------
    def _on_request(self, acts: DialogueActs) -> UserTurn:
        assert self._intent is not None
        facts: list[list[Segment]] = []
        unknown: list[list[Segment]] = []
        if "request_identity" in acts:
            facts.extend(self._identity_answer(acts.identity_slots, bool(_NOT_FOUND.search(acts.text))))
        questions = [s for s in sentences(acts.text) if "?" in s] or [acts.text]
        asked = self._asked_slots(acts, _norm(" ".join(questions)))
        self._answer_slots(asked, questions, facts, unknown)
        rate = self.persona.wrong_answer_rate if self.persona else 0.0
        if rate > 0 and self._rng.random() < rate:
            wrong = self._wrong_answer(asked, acts.identity_slots)
            if wrong is not None:
                self.metadata["wrong_answers"] += 1
                return self._say([wrong])
        if not facts and not unknown:
            return self._say([self._ph.sentence("dont_know", label="that"), self._restate()])
        if self._drip() and facts:
            # one fact per turn, the first one it has not given yet (an agent asking the same again gets the next)
            untold = [f for f in facts if _fact_key(f) not in self._told]
            chosen = untold[0] if untold else facts[0]
            self._pending = [f for f in untold if f is not chosen]
            facts, unknown = [chosen], []
        self._told.update(_fact_key(f) for f in facts)
        if not facts and len(unknown) == 1:
            unknown.append(self._restate())  # all it can say is what it wants, in its own words
        return self._say(facts + unknown)

    def _asked_slots(self, acts: DialogueActs, question_text: str) -> list[str]:
        """Return the slots a request asks for: those classified, then the intent's own slots the questions name.

        Args:
            acts: the agent message's acts.
            question_text: the message's questions, normalised.

        Returns:
            Slot names in order, each intent slot at most once.
        """
        assert self._intent is not None
        asked = list(acts.value_slots)
        covered = {self._slot_key(s) for s in asked}
        for own in self._intent.slots:
            if re.search(r"\b" + re.escape(own.replace("_", " ")) + r"\b", question_text) and own not in covered:
                asked.append(own)
                covered.add(own)
        return asked

    def _answer_slots(self, asked: list[str], questions: list[str], facts: list[list[Segment]],
                      unknown: list[list[Segment]]) -> None:
        """Answer each asked slot from what the user knows (``facts``), or say it does not know (``unknown``).

        Args:
            asked: the slot names asked for, in order.
            questions: the message's question sentences (a choice between options gets an indifferent answer).
            facts: answers so far (extended).
            unknown: "don't know" answers so far (extended).
        """
        assert self._intent is not None
        seen_keys: set[str] = set()
        for slot in asked:
            key = self._slot_key(slot)
            if key is not None and key not in seen_keys:
                seen_keys.add(key)
                facts.append(self._slot_fact(key))
            elif key is None and slot in ("new_items", "items") and self._intent.preferences:
                facts.append(self._ph.sentence("prefs", prefs=self._prefs_text(self._intent.preferences)))
            elif key is None and slot in self._identity:
                facts.append(self._identity_fact(slot))
            elif key is None and slot not in _NEVER_KNOWN and any(
                    " or " in q and _SLOT_RX[slot].search(q) for q in questions if slot in _SLOT_RX):
                facts.append(self._ph.sentence("indifferent"))  # a choice it has no preference about
            elif key is None:
                unknown.append(self._ph.sentence("dont_know", label=_label(slot)))
                items = self._slot_key("items")
                if slot in _DESCRIBABLE and items is not None:
                    unknown.append(self._ph.sentence(
                        "describe_items", value=render_value(self._intent.slots[items])))

    def _wrong_answer(self, asked: list[str], asked_identity: tuple[str, ...]) -> list[Segment] | None:
        assert self._intent is not None
        options: list[list[Segment]] = []
        asked_keys = {self._slot_key(s) for s in asked}
        for key in self._intent.slots:
            if key not in asked_keys:
                options.append(self._slot_fact(key))
        for key in ("email", "user_id", "zip"):
            if key in self._identity and key not in asked_identity:
                options.append(self._identity_fact(key))
        if not options:
            return None
        return options[int(self._rng.integers(len(options)))]

    def _terms_ok(self, text: str) -> bool:
        assert self._intent is not None
        norm = _norm(text)
        terms = self._intent.confirm_terms
        if not terms:
            # nothing to check against: an information request confirms no action, a transfer request only a
            # transfer; other intents take the agent's word
            if self._intent.kind == "info":
                return False
            if self._intent.kind == "transfer":
                return bool(re.search(r"\b(?:transfer|human|representative|agent)\b", norm))
        return all(_has_term(norm, t) for t in terms)

    def _on_confirm(self, acts: DialogueActs) -> UserTurn:
        assert self._intent is not None
        if self._state in ("open", "confirmed") and self._terms_ok(acts.text):
            self._state = "confirmed"
            return self._say([self._ph.sentence("yes")], yes_no=True)
        return self._say([self._ph.sentence("no"), self._restate()], yes_no=True)

    def _on_options(self, acts: DialogueActs) -> UserTurn:
        assert self._intent is not None
        prefs = self._intent.preferences
        lines = [ln for ln in re.split(r"\n|;", acts.text) if ln.strip()] or [acts.text]
        if not prefs:
            return self._choose_by_slots(lines)

        def fits(p: dict[str, str]) -> bool:
            return any(all(re.search(r"(?<!\w)" + re.escape(v.lower()) + r"(?!\w)", ln.lower()) for v in p.values())
                       for ln in lines)

        if fits(prefs):
            return self._say([self._ph.sentence("choose", prefs=self._prefs_text(prefs))])
        fb = self._intent.fallback
        if fb is not None and not self._on_fallback:
            self._switch(fb)
            first = self._ph.sentence("no_match")
            if fb.preferences and fits(fb.preferences):
                return self._say([first, self._ph.sentence("choose", prefs=self._prefs_text(fb.preferences))])
            return self._say([first, self._request(fb, "fallback")])
        return self._say([self._ph.sentence("no_match"),
                          self._ph.sentence("prefs", prefs=self._prefs_text(prefs))])

    def _choose_by_slots(self, lines: list[str]) -> UserTurn:
        """Options offered to a user without preferences: name the option one of its slot values picks out."""
        assert self._intent is not None
        norm_lines = [_norm(ln) for ln in lines]
        new_key = self._slot_key("new_items")
        for key in self._intent.slots:
            values = self._intent.slots[key]
            for v in values if isinstance(values, list) else [values]:
                text = _norm(render_value(v))
                head = text.split("(")[0].strip()  # "hiking boots (waterproof: yes)": the product name
                if text and any(text in ln or (len(head) > 3 and head in ln) for ln in norm_lines):
                    return self._say([self._slot_fact(key)])
        if len([ln for ln in lines if _BULLET_LINE.match(ln)]) == 1 and not self._intent.preferences:
            return self._say([self._ph.sentence("choose_first")])  # a single option: that one
        if new_key is not None:
            return self._say([self._ph.sentence("no_match"), self._slot_fact(new_key)])
        if self._intent.slots or self._intent.confirm_terms or self._intent.kind == "info":
            return self._say([self._ph.sentence("no_match"), self._restate()])
        return self._say([self._ph.sentence("choose_first")])  # nothing to go by: any option will do

    def _switch(self, intent: Intent) -> None:
        self._intent = intent
        self._state = "open"
        self._claim_checked = False
        self._on_fallback = True
        self._pushes_this_intent = 0
        self._pending = []

    def _advance(self, lead: list[list[Segment]], *, done: bool = True) -> UserTurn:
        self.metadata["intents_done" if done else "intents_given_up"] += 1
        self._idx += 1
        self._on_fallback = False
        self._pushes_this_intent = 0
        self._pending = []
        if self._idx >= len(self._agenda):
            self._intent = None
            self._finished = True
            return self._say([*lead, self._ph.sentence("closing")], stop=True)
        self._intent = self._agenda[self._idx]
        self._state = "open"
        self._claim_checked = False
        out = [*lead, self._request(self._intent, "next_request")]
        if self.persona is not None and self.persona.reveal_style == "all_at_once":
            out.extend(self._all_slots(self._intent))
        return self._say(out)

    def _ask_or_advance(self, lead: list[list[Segment]]) -> UserTurn:
        assert self._intent is not None
        if self._intent.ask and self._state != "asked" and self._intent.kind != "info":
            self._state = "asked"
            return self._say([*lead, _capitalised(self._ph.phrase("frame_ask", request=_bare(self._intent.ask)))])
        return self._advance(lead)

    def _on_done(self) -> UserTurn:
        self._state = "done" if self._state != "asked" else "asked"
        return self._ask_or_advance([])

    def _unbacked_claim(self) -> bool:
        """The agent claims its action done though the user never confirmed it and the orchestrator saw no write.

        A faithful user checks such a claim once (per intent) rather than thank and leave; without the
        orchestrator's progress verdict (no :meth:`observe_progress`), or after a successful tool call in the turn,
        it takes the agent's word.
        """
        assert self._intent is not None
        progress = self._last_progress
        if (self._claim_checked or self._state != "open" or self._intent.kind in ("info", "transfer")
                or not self._intent.confirm_terms or progress is None):
            return False
        return not {"tool_ok", "confirmed_action"} & set(progress.signals)

    def _on_inform(self, acts: DialogueActs) -> UserTurn:
        assert self._intent is not None
        anything_else = "anything_else" in acts
        # an answer states something: a value, or at least no new question back (e.g. "what would you like?")
        answers = bool(re.search(r"\d", acts.text)) or anything_else or not acts.text.rstrip().endswith("?")
        if (self._state == "asked" or self._intent.kind == "info") and answers:
            return self._advance([] if anything_else else [self._ph.sentence("ack")])
        if self._state == "asked" or self._intent.kind == "info":
            return self._say([self._restate() if self._state != "asked" else
                              _capitalised(self._ph.phrase("frame_question", request=_bare(self._intent.ask or "")))])
        if self._state in ("confirmed", "done"):
            self._state = "done"
            return self._ask_or_advance([])
        if anything_else:
            return self._say([self._restate()])
        return self._say([self._ph.sentence("go_on"), self._restate()])

    def _on_anything_else(self) -> UserTurn:
        if self._state in ("confirmed", "done", "asked"):
            if self._state != "asked":
                self._state = "done"
            return self._ask_or_advance([])
        return self._say([self._restate()])

    def _on_refuse(self) -> UserTurn:
        assert self._intent is not None
        persona = self.persona
        if self._state in ("done", "asked"):
            return self._advance([self._ph.sentence("accept_refusal")])
        if persona is not None and persona.policy_push and self._pushes_this_intent < persona.push_attempts:
            self._pushes_this_intent += 1
            self.metadata["pushes"] += 1
            return self._say([[Segment(self._ph.choice(persona.push_phrases))], self._restate()])
        fb = self._intent.fallback
        if fb is not None and not self._on_fallback:
            self._switch(fb)
            out = [self._ph.sentence("accept_refusal"), self._request(fb, "fallback")]
            if persona is not None and persona.reveal_style == "all_at_once":
                out.extend(self._all_slots(fb))
            return self._say(out)
        return self._advance([self._ph.sentence("accept_refusal")], done=False)

    def _maybe_change_mind(self) -> list[list[Segment]] | None:
        persona = self.persona
        if (persona is None or persona.mind_change_turn is None or self._mind_changed or self._intent is None
                or self._turn + 1 < persona.mind_change_turn or self._state != "open" or self._on_fallback):
            return None
        fb = self._intent.fallback
        if fb is None:
            return None
        self._mind_changed = True
        self.metadata["mind_changed_at_turn"] = self._turn + 1
        self._switch(fb)
        out = [[Segment(self._ph.choice(persona.mind_change_phrases))], self._request(fb, "frame_request")]
        if persona.reveal_style == "all_at_once":
            out.extend(self._all_slots(fb))
        return out


def _fact_key(segs: list[Segment]) -> tuple[str, ...]:
    return tuple(s.text for s in segs if s.value)


def _capitalised(segs: list[Segment]) -> list[Segment]:
    if segs and not segs[0].value:
        segs = [Segment(segs[0].text[:1].upper() + segs[0].text[1:]), *segs[1:]]
    return segs


class RuleUserFactory:
    """Builds a :class:`RuleUser` per trial (the ``rule`` user spec); see :func:`rule_user_factory`.

    Attributes:
        needs: ``{"scenario"}``: a run prepares each task's derived scenario once (:mod:`simulator.execution.prepare`).
        domain: the run's domain (to derive a scenario that was not prepared).
        template: the run's template database.
    """

    needs = frozenset({SCENARIO})

    def __init__(self, domain: Any, template: Any) -> None:
        self.domain = domain
        self.template = template

    def __call__(self, ctx: TrialContext) -> RuleUser:
        """Build the trial's user from the prepared scenario (``ctx.prepared``), else one derived now.

        Raises:
            DomainError: the task has no agenda and the domain cannot derive one.
        """
        prepared = prepared_for(ctx)
        scenario = prepared.derived_scenario() if prepared is not None else None
        if scenario is None:  # not prepared for this user (e.g. a factory wrapping this one): derived for this trial
            scenario = self.domain.derive_scenario(ctx.task, self.template)
        return RuleUser(scenario, seed=ctx.seed, persona=ctx.persona, tools=ctx.user_tools)


def rule_user_factory(domain: Any, template: Any) -> UserFactory:
    """Return a factory building a :class:`RuleUser` per trial (the ``rule`` user spec).

    The scenario is the one the run prepared (``ctx.prepared``: ``domain.derive_scenario(task, template)``
    computed once per task when the run is prepared, as the factory's ``needs`` declares), or, when the trial's
    context has none, derived for the trial; the persona comes from ``ctx.persona``; the wording generator from
    ``ctx.seed``.

    Args:
        domain: the run's :class:`~simulator.world.domain.Domain`.
        template: the run's template database (passed to ``derive_scenario``).

    Returns:
        A :class:`RuleUserFactory` (``Callable[[TrialContext], RuleUser]``).
    """
    return RuleUserFactory(domain, template)

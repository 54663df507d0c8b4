"""LLMUser: a simulated user played by a model through :mod:`simulator.models.llm`.

The model plays the customer of the task's scenario. It sees only the scenario (instructions, known
information, what it does not know), never the task's gold actions or required outputs. Roles are flipped
for the model: its own ("assistant") messages are the customer's, and the agent's messages reach it as
"user" messages. It ends the conversation with a token: ``###STOP###`` (done), ``###TRANSFER###`` (it was
transferred to a human), ``###ABANDON###`` (gives up; only used by prompt templates that mention it). Text
before the token is delivered to the agent (the orchestrator decides whether a stop ends the trial: a stop in
reply to a yes/no question delivers the text and the conversation goes on).

Leak guard: every message the model writes is checked against the task's secrets (:mod:`simulator.users._leak`:
gold-action values the scenario does not give, required outputs, policy sentences), ignoring values the agent
has already said. On a hit the message is asked for again with a correction added to the system prompt (the
correction quotes the draft with the secret withheld, never the secret itself), at most ``max_leak_retries``
times; when every draft leaks, the last one is delivered with the secrets replaced by ``[redacted]`` and the
trial is flagged ``user_leak``. Messages that talk like the agent are flagged ``role_flip``, messages with
tool-call syntax ``tool_syntax``. All of this, with the model and the prompt template's hash, is in the user's
``metadata`` (copied into the trajectory's ``user_metadata``).

Dual control: on a domain where the user has its own tools (``ctx.user_tools``: the domain's user tools, or the
task's subset of them, tau2 ``user_tools``), their schemas go to the model with every request. A reply with tool
calls becomes a :class:`~simulator.types.messages.UserTurn` with ``tool_calls``; the orchestrator runs them on the
user's
side and asks again with their results (shown to this user only), until the model writes a message. The results
count as things the user has heard, so values it read on its own device are no leak; any text the model writes,
with or without tool calls, goes through the leak guard.

Persona: its ``llm_instructions`` (or a description made from its fields) are added to the system prompt, and
its patience is applied in code, as by the rule-based user: once ``patience`` consecutive agent turns made no
progress (as reported by the orchestrator through :meth:`LLMUser.observe_progress`) the user abandons with one
of the persona's abandonment phrases, drawn by the trial seed, without asking the model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.models.llm import LLMClient, LLMError, LLMInfraError, LLMResult, LLMSetupError, model_seed
from simulator.types.messages import Message, Usage, UserTurn
from simulator.types.persona import Persona
from simulator.types.prepared import SECRETS
from simulator.types.protocols import Progress, TrialContext, prepared_for
from simulator.types.tasks import UserScenario
from simulator.users._leak import REDACTED, Secret, SecretMatcher, role_flip, task_secrets, tool_syntax

__all__ = [
    "ABANDON_TOKEN",
    "AGENT_GREETING",
    "DEFAULT_USER_PROMPT",
    "LLMUser",
    "LLMUserFactory",
    "STOP_TOKEN",
    "TRANSFER_TOKEN",
    "llm_user_factory",
    "OUT_OF_SCOPE_TOKEN",
    "parse_user_reply",
    "persona_instructions",
    "render_user_prompt",
]

STOP_TOKEN = "###STOP###"
"""The user considers the conversation finished."""
TRANSFER_TOKEN = "###TRANSFER###"
"""The user was transferred to a human agent; the conversation ends."""
ABANDON_TOKEN = "###ABANDON###"
"""The user gives up without its goal met."""

AGENT_GREETING = "Hi! How can I help you today?"
"""The agent line shown to the model before the customer's opening message (as in tau-bench)."""

DEFAULT_USER_PROMPT = """\
You are a customer talking to a customer-service agent. Play the customer described below; the agent is \
someone else, and you only ever write the customer's next message.

Your instructions:
{instructions}

What you know (give it only when the agent needs it, a little at a time):
{known_info}

What you do not know (never state or guess it):
{unknown_info}

Rules:
- Write one short message in the first person, as the customer. Never act as the agent, never write tool calls,
  code or JSON.
- Do not reveal everything at once. Do not invent facts that are not in your instructions or what you know; if
  the agent asks for something you do not know, say so.
- Stay in character and follow your instructions; do not accept an outcome your instructions rule out.
- When your goal is met, or it clearly cannot be met, write a short closing message followed by ###STOP###.
- If the agent transfers you to a human agent, reply with ###TRANSFER###.
"""
"""Default system prompt template (``str.format`` fields: instructions, known_info, unknown_info)."""

_TOOLS_RULE = """
You can act on your own device with the tools you are given (and only on your own device). When the agent asks \
you to check or change something on your device, call the matching tool, then tell the agent in your own words \
what you did and what you saw. Never make up what a tool would show; call it. Never call a tool the agent did not \
ask for unless your instructions say so.
"""
"""Added to the system prompt when the user has tools of its own (dual control)."""

_TOKEN_RE = re.compile(r"(?<!#)#{2,}+\s*+(STOP|TRANSFER|ABANDON)\s*#{2,}", re.IGNORECASE)
"""A stop token; tried only where a run of "#" starts (a long run of "#" is scanned once, not from each "#")."""


def _format_known(known: dict[str, Any]) -> str:
    if not known:
        return "(nothing beyond your instructions)"
    lines = []
    for key, value in known.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        lines.append(f"- {key}: {text}")
    return "\n".join(lines)


def render_user_prompt(scenario: UserScenario, template: str = DEFAULT_USER_PROMPT) -> str:
    """Render the user simulator's system prompt from a scenario.

    Only the scenario is read: the task's gold actions and required outputs never reach the prompt.

    Args:
        scenario: the task's user scenario.
        template: a ``str.format`` template with fields ``instructions``, ``known_info``, ``unknown_info``.

    Returns:
        The system prompt.

    Raises:
        KeyError: the template names a field other than those three.
    """
    unknown = "\n".join(f"- {u}" for u in scenario.unknown_info) or "(nothing in particular)"
    return template.format(
        instructions=scenario.instructions.strip(), known_info=_format_known(scenario.known_info),
        unknown_info=unknown,
    )


_VERBOSITY = {
    "terse": "Reply in a few words; give only what is asked.",
    "normal": "Reply in one or two sentences.",
    "verbose": "Write long, chatty messages with personal asides (the asides carry no facts).",
}
_POLITENESS = {
    "rude": "You are curt and irritable, though you never insult anyone.",
    "neutral": "Your tone is matter-of-fact.",
    "polite": "You are friendly and polite.",
}
_REVEAL = {
    "all_at_once": "Give everything you know about your request in your first message.",
    "when_asked": "Give a fact only when the agent asks for it.",
    "drip": "Give only one fact per message, even when the agent asks for several.",
}


_MIND_CHANGE = ("\nYou changed your mind in your message number {turn}: you no longer want your first request; "
                "you now want to {request} instead. Say so in that message if you have not yet, and from then on "
                "pursue only this.\n")
"""Added to the system prompt once a mind-changing persona switched to a task's alternative outcome."""


def _bare_request(text: str) -> str:
    """A request as the user's own words, without final punctuation (``{request}`` of :data:`_MIND_CHANGE`)."""
    return text.strip().rstrip(".!?")


def persona_instructions(persona: Persona) -> str:
    """Describe a persona's manner for the LLM user's prompt.

    Args:
        persona: the persona.

    Returns:
        Its ``llm_instructions`` when set, else a description made from its fields (verbosity, politeness,
        reveal style, typos, wrong answers, change of mind, policy pushing).
    """
    if persona.llm_instructions:
        return persona.llm_instructions.strip()
    parts = [_VERBOSITY[persona.verbosity], _POLITENESS[persona.politeness], _REVEAL[persona.reveal_style]]
    if persona.typo_rate > 0:
        parts.append("You make the odd typo (never in ids, numbers or email addresses).")
    if persona.wrong_answer_rate > 0:
        parts.append("Now and then you answer a different question than the one asked (still only with facts "
                     "you know).")
    if persona.mind_change_turn is not None:
        parts.append(f"Around your message number {persona.mind_change_turn}, drop your first request and ask "
                     "for your fallback instead, if your instructions give one.")
    if persona.policy_push:
        parts.append(f"Push for an exception the agent's rules may not allow; insist up to {persona.push_attempts} "
                     "times before accepting a refusal.")
    return " ".join(parts)


_WHAT = {
    ("action_value", "id"): "an id you were never given",
    ("action_value", "number"): "an amount you were never given",
    ("action_value", "text"): "details you were never given",
    ("output", "id"): "a fact only the agent can look up",
    ("output", "number"): "an amount only the agent can look up",
    ("output", "text"): "a fact only the agent can look up",
    ("policy", "sentence"): "wording from the agent's internal rules, which you have never seen",
}


def _correction(draft: str, leaks: Sequence[Secret], matcher: SecretMatcher) -> str:
    """The note added to the system prompt after a leaking draft; it never repeats the secret."""
    what = sorted({_WHAT.get((s.kind, s.form), "something you were never given") for s in leaks})
    masked = matcher.redact(draft, leaks, placeholder="[withheld]")
    return ("Correction: your previous draft of this message was not sent, because it stated "
            f"{' and '.join(what)}. The draft, with that part withheld, was: \"{masked}\". Write the message "
            "again without it. Never state or guess a value that is not in your instructions or in what you "
            "know or what the agent told you; if the agent asks for it, say that you do not know it.")


OUT_OF_SCOPE_TOKEN = "###OUT-OF-SCOPE###"
"""tau2-bench's third user stop token (its suites only, see :class:`simulator.types.tasks.Conduct`)."""
_OUT_OF_SCOPE_RULE = ("- If your instructions do not say what to do about what the agent says next, reply with "
                      f"{OUT_OF_SCOPE_TOKEN}.\n")


def parse_user_reply(text: str | None, extra_stops: tuple[str, ...] = ()) -> UserTurn:
    """Split a model reply into delivered text and an end-of-conversation signal.

    The first token (``###STOP###``, ``###TRANSFER###``, ``###ABANDON###``; spacing and case tolerated) ends
    the conversation; the text before it is delivered, anything after it is dropped.

    Args:
        text: the model's reply.
        extra_stops: further stop tokens of the task's suite (``###OUT-OF-SCOPE###``), matched as written.

    Returns:
        A :class:`UserTurn` without usage.
    """
    text = text or ""
    match = _TOKEN_RE.search(text)
    for token in extra_stops:
        at = text.find(token)
        if at >= 0 and (match is None or at < match.start()):
            return UserTurn(content=text[:at].strip(), stop=True)
    if match is None:
        return UserTurn(content=text.strip())
    content = text[: match.start()].strip()
    kind = match.group(1).upper()
    return UserTurn(content=content, stop=kind in ("STOP", "TRANSFER"), abandon=kind == "ABANDON")


class LLMUser:
    """A :class:`~simulator.types.protocols.UserSimulator` played by a model, with a leak guard.

    Attributes:
        client: the model client.
        model: the simulator's model string (recorded with the run).
        prompt_hash: sha256 hex digest of the prompt template (recorded with the run).
        system_prompt: the rendered system prompt (persona manner included).
        seed: the model ``seed`` parameter (the trial seed reduced by :func:`simulator.models.llm.model_seed`).
        trial_seed: the trial seed (used in the response-cache key).
        persona: the trial's persona, or None.
        secrets: what this user must not say (:func:`simulator.users._leak.task_secrets`).
        max_leak_retries: regenerations of a leaking message before it is redacted.
        metadata: ``{"model", "prompt_hash", "persona", "flags", "leaks", "flag_events", "secrets"}`` (with a
            mind-changing persona on a task with alternative outcomes also ``outcome`` and ``mind_changed_at_turn``:
            from its message number ``mind_change_turn`` on, the user is told it wants the task's first
            alternative instead, and ``outcome`` names it), plus
            ``abandoned_at_turn`` once it abandons: flags (``user_leak``, ``role_flip``, ``tool_syntax``, each
            once, in order of first occurrence), leaks (``{"turn", "kind", "form", "origin", "action":
            "regenerated"|"redacted"}``, one per secret per leaking draft), flag events (``{"turn", "flag",
            "match"}``) and the number of secrets; turns count the user's messages from 0. The orchestrator
            copies it into the trajectory.
    """

    def __init__(self, ctx: TrialContext, client: LLMClient, *, prompt_template: str = DEFAULT_USER_PROMPT,
                 max_leak_retries: int = 2, matcher: SecretMatcher | None = None,
                 tool_names: Sequence[str] | None = None) -> None:
        """Build the simulated user for one trial.

        Args:
            ctx: the trial context; ``task`` (its scenario for the prompt; its gold actions and outputs only to
                list the secrets, never shown to the model), ``policy`` (secrets), ``tools`` (tool names and
                public vocabulary), ``persona`` and ``seed`` are read.
            client: the model client. Its ``seed`` default wins; without one the trial seed is sent.
                Temperature is the client's, else the provider's default.
            prompt_template: system prompt template (see :func:`render_user_prompt`).
            max_leak_retries: how many times a message that leaks a secret is asked for again before the
                secret is redacted (0: redact at once).
            matcher: the task's secrets, already compiled; None: the run's prepared ones (``ctx.prepared.secrets``,
                computed once per task when the run was prepared and shared by its trials), else computed from
                ``ctx`` (:func:`~simulator.users._leak.task_secrets`).
            tool_names: :func:`tool_names_of` ``ctx.tools`` (a factory makes them once per run); None: made here.

        Raises:
            ValueError: ``max_leak_retries`` is negative.
        """
        if max_leak_retries < 0:
            raise ValueError(f"max_leak_retries must be >= 0, got {max_leak_retries}")
        self.client = client
        self.model = client.model
        self.prompt_hash = hashlib.sha256(prompt_template.encode("utf-8")).hexdigest()
        self.persona = ctx.persona
        prompt = render_user_prompt(ctx.task.scenario, prompt_template)
        conduct = ctx.task.conduct
        self._extra_stops = tuple(t for t in (conduct.stop_tokens if conduct else []) if not _TOKEN_RE.fullmatch(t))
        if OUT_OF_SCOPE_TOKEN in self._extra_stops:
            prompt += _OUT_OF_SCOPE_RULE
        self.user_tools: list[dict[str, Any]] = list(ctx.user_tools)
        if self.user_tools:
            prompt += _TOOLS_RULE
        if self.persona is not None:
            prompt += f"\nYour manner (how you talk; it never changes what you know or want):\n" \
                      f"{persona_instructions(self.persona)}\n"
        self.system_prompt = prompt
        self.seed = model_seed(ctx.seed)
        self.trial_seed = ctx.seed
        self.log = ctx.log.bind(role="user") if ctx.log is not None else None
        self.max_leak_retries = max_leak_retries
        prepared = prepared_for(ctx)
        if matcher is None and prepared is not None and isinstance(prepared.secrets, SecretMatcher):
            matcher = prepared.secrets
        self._matcher = matcher if matcher is not None else SecretMatcher(
            task_secrets(ctx.task, ctx.policy, tools=ctx.tools))
        self.secrets = self._matcher.secrets
        self._tool_names = tool_names if tool_names is not None else tool_names_of(ctx.tools)
        self._rng_seed = ctx.seed
        self._rng_made: np.random.Generator | None = None
        self._no_progress = 0
        self.metadata: dict[str, Any] = {
            "model": self.model, "prompt_hash": self.prompt_hash,
            "persona": self.persona.name if self.persona is not None else None,
            "flags": [], "leaks": [], "flag_events": [], "secrets": len(self.secrets),
        }
        # a mind-changing persona on a task with alternative outcomes: at its message number mind_change_turn the
        # user is told it now wants the first alternative, and records it (the run grades that outcome's goal)
        changes = self.persona is not None and self.persona.mind_change_turn is not None
        self._alternative = ctx.task.alternatives[0] if changes and ctx.task.alternatives else None
        if self._alternative is not None:
            self.metadata.update(outcome=None, mind_changed_at_turn=None)

    @property
    def _rng(self) -> np.random.Generator:
        """The user's own generator (abandonment wording), so that its draws never shift the agent's.

        Made on first use (a trial that never abandons never draws): ``Generator(PCG64([trial seed, 0x5553]))``.
        """
        if self._rng_made is None:
            self._rng_made = np.random.Generator(np.random.PCG64([self._rng_seed, 0x5553]))
        return self._rng_made

    def observe_progress(self, progress: Progress) -> None:
        """Take note of whether the agent's last turn made progress (called by the orchestrator).

        Args:
            progress: the turn's :class:`~simulator.types.protocols.Progress`; only ``made`` is read.
        """
        self._no_progress = 0 if progress.made else self._no_progress + 1

    def _flag(self, flag: str, turn: int, match: str) -> None:
        if flag not in self.metadata["flags"]:
            self.metadata["flags"].append(flag)
        self.metadata["flag_events"].append({"turn": turn, "flag": flag, "match": match[:80]})

    def build_request(self, messages: Sequence[Message], corrections: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Return the chat messages sent to the model, roles flipped.

        Args:
            messages: the conversation as the user sees it (user and assistant text messages).
            corrections: leak-guard notes appended to the system prompt (see the module docstring).

        Returns:
            The system prompt, the agent greeting as a "user" message, then the conversation with the
            customer's messages as "assistant" and the agent's as "user" (tool traffic skipped).
        """
        system = self.system_prompt
        if self._alternative is not None and self.metadata["outcome"] is not None:
            system += _MIND_CHANGE.format(request=_bare_request(self._alternative.intent.request[0]),
                                          turn=self.metadata["mind_changed_at_turn"])
        if corrections:
            system += "\n" + "\n".join(corrections) + "\n"
        out: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": AGENT_GREETING},
        ]
        for m in messages:
            if m.requestor == "user" and m.role == "user" and m.tool_calls:  # its own tool calls (dual control)
                out.append({"role": "assistant", "content": m.content,
                            "tool_calls": [c.openai() for c in m.tool_calls]})
                continue
            if m.requestor == "user" and m.role == "tool":  # their results, seen by this user only
                out.append({"role": "tool", "tool_call_id": m.tool_call_id, "name": m.name,
                            "content": m.content or ""})
                continue
            if m.role not in ("user", "assistant") or not m.content or m.tool_calls:
                continue
            out.append({"role": "assistant" if m.role == "user" else "user", "content": m.content})
        return out

    def _complete(self, request: list[dict[str, Any]]) -> LLMResult:
        params: dict[str, Any] = {}
        if "seed" not in self.client.params:
            params["seed"] = self.seed
        return self.client.complete(request, self.user_tools or None, trial_seed=self.trial_seed, log=self.log,
                                    **params)

    def _maybe_change_mind(self, message_no: int) -> None:
        """Switch to the task's alternative outcome from message number ``mind_change_turn`` on (once)."""
        alt, persona = self._alternative, self.persona
        if alt is None or persona is None or persona.mind_change_turn is None or self.metadata["outcome"] is not None:
            return
        if message_no >= persona.mind_change_turn:
            self.metadata.update(outcome=alt.name, mind_changed_at_turn=message_no)

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the customer's next message (the opening message when ``messages`` is empty).

        Args:
            messages: the conversation so far, as the user sees it.

        Returns:
            The user's turn; ``stop``/``abandon`` set from the reply's token, ``abandon`` with a persona phrase
            once the persona's patience is exhausted. A message leaking a secret is asked for again, then
            redacted (see the module docstring); usage sums every call. On a model failure an empty turn with
            ``error`` and ``error_kind`` (``infra_error`` when the API failed after retries, ``setup_error``
            for missing credentials or an unknown model, else ``user_error``: a refused request, or an answer of
            the model that cannot be read, :class:`~simulator.models.llm.LLMResponseError`); an empty reply without
            a token is a ``user_error`` too.
        """
        turn_no = sum(1 for m in messages if m.role == "user" and not m.tool_calls)
        persona = self.persona
        if persona is not None and persona.patience is not None and self._no_progress >= persona.patience:
            self.metadata["abandoned_at_turn"] = turn_no
            phrases = persona.abandonment_phrases
            return UserTurn(content=phrases[int(self._rng.integers(len(phrases)))], abandon=True)
        self._maybe_change_mind(turn_no + 1)
        # what the agent said, and what this user read on its own device (its tools' results)
        heard = [m.content for m in messages if m.content and (
            m.role == "assistant" or (m.role == "tool" and m.requestor == "user"))]
        usage = Usage()
        corrections: list[str] = []
        while True:
            try:
                result = self._complete(self.build_request(messages, corrections))
            except LLMInfraError as e:
                return UserTurn(content="", usage=usage, error=str(e), error_kind="infra_error")
            except LLMSetupError as e:  # missing credentials, unknown model: the set-up, not the user
                return UserTurn(content="", usage=usage, error=str(e), error_kind="setup_error")
            except LLMError as e:
                return UserTurn(content="", usage=usage, error=str(e), error_kind="user_error")
            usage = usage + result.usage
            turn = parse_user_reply(result.message.content, self._extra_stops)
            if result.message.tool_calls and self.user_tools:  # acts on its own device; asked again after
                turn = turn.model_copy(update={"tool_calls": list(result.message.tool_calls), "stop": False,
                                               "abandon": False})
            leaks = self._matcher.find(turn.content, heard) if turn.content else []
            if not leaks:
                break
            redact = len(corrections) >= self.max_leak_retries
            for s in leaks:
                self.metadata["leaks"].append({"turn": turn_no, "kind": s.kind, "form": s.form, "origin": s.origin,
                                               "action": "redacted" if redact else "regenerated"})
            if redact:
                content = self._matcher.redact(turn.content, leaks, REDACTED)
                if self._matcher.find(content, heard):  # never deliver a secret, even if a span was missed
                    content = REDACTED
                turn = turn.model_copy(update={"content": content})
                self._flag("user_leak", turn_no, ", ".join(sorted({s.kind for s in leaks})))
                break
            corrections.append(_correction(turn.content, leaks, self._matcher))
        if turn.tool_calls:
            return turn.model_copy(update={"usage": usage})
        if not turn.content and not (turn.stop or turn.abandon):
            return UserTurn(content="", usage=usage, error_kind="user_error",
                            error=f"model {self.model}: empty user message (finish reason {result.finish_reason})")
        flip = role_flip(turn.content)
        if flip is not None:
            self._flag("role_flip", turn_no, flip)
        syntax = tool_syntax(turn.content, self._tool_names)
        if syntax is not None:
            self._flag("tool_syntax", turn_no, syntax)
        return turn.model_copy(update={"usage": usage})


def tool_names_of(tools: Sequence[Any]) -> tuple[str, ...]:
    """Return the names of the tool schemas ``tools`` (OpenAI function schemas; other entries skipped), in order."""
    return tuple(str(t.get("function", t).get("name", "")) for t in tools if isinstance(t, dict))


class LLMUserFactory:
    """Builds an :class:`LLMUser` per trial, all sharing one model client; see :func:`llm_user_factory`.

    Attributes:
        needs: ``{"secrets"}``: a run prepares each task's leak-guard secrets once (:mod:`simulator.execution.prepare`);
            each user reads them from ``ctx.prepared`` (a context without them: computed for the trial).
        client: the model client.
        prompt_template: the system prompt template.
        max_leak_retries: regenerations of a leaking message before it is redacted.
    """

    needs = frozenset({SECRETS})

    def __init__(self, client: LLMClient, prompt_template: str, max_leak_retries: int) -> None:
        self.client = client
        self.prompt_template = prompt_template
        self.max_leak_retries = max_leak_retries
        self._names: tuple[Sequence[Any], int, tuple[str, ...]] | None = None  # (tools, len(tools), their names)

    def __call__(self, ctx: TrialContext) -> LLMUser:
        """Build the trial's user.

        The tool names are made once for the run's tool list (a run gives every trial's context the same list) and
        again whenever a context brings another list.
        """
        names = self._names
        if names is None or names[0] is not ctx.tools or names[1] != len(ctx.tools):
            names = self._names = (ctx.tools, len(ctx.tools), tool_names_of(ctx.tools))
        return LLMUser(ctx, self.client, prompt_template=self.prompt_template,
                       max_leak_retries=self.max_leak_retries, tool_names=names[2])


def llm_user_factory(
    model: str, *, prompt_template: str = DEFAULT_USER_PROMPT, max_leak_retries: int = 2, **params: Any
) -> LLMUserFactory:
    """Return a factory building one :class:`LLMUser` per trial.

    Args:
        model: litellm model string of the simulator.
        prompt_template: system prompt template (see :func:`render_user_prompt`).
        max_leak_retries: regenerations of a message that leaks a secret before it is redacted.
        **params: :class:`~simulator.models.llm.LLMClient` options (``cache``, ``limiters``, ``max_attempts``, ...)
            and default model parameters (``temperature``, ``seed``, ...). Without ``seed`` each trial sends its
            own trial seed; ``seed=None`` sends none.

    Returns:
        A :class:`LLMUserFactory` (a callable taking a :class:`~simulator.types.protocols.TrialContext`).

    Raises:
        KeyError: the template names an unknown field (checked here, before any trial runs).
        ValueError: ``max_leak_retries`` is negative.
    """
    if max_leak_retries < 0:
        raise ValueError(f"max_leak_retries must be >= 0, got {max_leak_retries}")
    render_user_prompt(UserScenario(instructions=""), prompt_template)  # fail fast on a bad template
    return LLMUserFactory(LLMClient(model, **params), prompt_template, max_leak_retries)

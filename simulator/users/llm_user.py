"""LLMUser: a simulated user played by a model through :mod:`simulator.llm`.

The model plays the customer of the task's scenario. It sees only the scenario (instructions, known
information, what it does not know), never the task's gold actions or required outputs. Roles are flipped
for the model: its own ("assistant") messages are the customer's, and the agent's messages reach it as
"user" messages. It ends the conversation with a token: ``###STOP###`` (done), ``###TRANSFER###`` (it was
transferred to a human), ``###ABANDON###`` (gives up; only used by prompt templates that mention it). Text
before the token is delivered to the agent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from simulator._messages import Message, UserTurn
from simulator._protocols import TrialContext
from simulator.llm import LLMClient, LLMError, LLMInfraError, model_seed
from simulator.tasks import UserScenario

__all__ = [
    "ABANDON_TOKEN",
    "AGENT_GREETING",
    "DEFAULT_USER_PROMPT",
    "LLMUser",
    "STOP_TOKEN",
    "TRANSFER_TOKEN",
    "llm_user_factory",
    "parse_user_reply",
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

_TOKEN_RE = re.compile(r"#{2,}\s*(STOP|TRANSFER|ABANDON)\s*#{2,}", re.IGNORECASE)


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


def parse_user_reply(text: str | None) -> UserTurn:
    """Split a model reply into delivered text and an end-of-conversation signal.

    The first token (``###STOP###``, ``###TRANSFER###``, ``###ABANDON###``; spacing and case tolerated) ends
    the conversation; the text before it is delivered, anything after it is dropped.

    Args:
        text: the model's reply.

    Returns:
        A :class:`UserTurn` without usage.
    """
    text = text or ""
    match = _TOKEN_RE.search(text)
    if match is None:
        return UserTurn(content=text.strip())
    content = text[: match.start()].strip()
    kind = match.group(1).upper()
    return UserTurn(content=content, stop=kind in ("STOP", "TRANSFER"), abandon=kind == "ABANDON")


class LLMUser:
    """A :class:`~simulator._protocols.UserSimulator` played by a model.

    Attributes:
        client: the model client.
        model: the simulator's model string (recorded with the run).
        prompt_hash: sha256 hex digest of the prompt template (recorded with the run).
        system_prompt: the rendered system prompt.
        seed: the model ``seed`` parameter (the trial seed reduced by :func:`simulator.llm.model_seed`).
        trial_seed: the trial seed (used in the response-cache key).
    """

    def __init__(self, ctx: TrialContext, client: LLMClient, *, prompt_template: str = DEFAULT_USER_PROMPT) -> None:
        """Build the simulated user for one trial.

        Args:
            ctx: the trial context; only ``task.scenario`` and ``seed`` are read.
            client: the model client. Its ``seed`` default wins; without one the trial seed is sent.
                Temperature is the client's, else the provider's default.
            prompt_template: system prompt template (see :func:`render_user_prompt`).
        """
        self.client = client
        self.model = client.model
        self.prompt_hash = hashlib.sha256(prompt_template.encode("utf-8")).hexdigest()
        self.system_prompt = render_user_prompt(ctx.task.scenario, prompt_template)
        self.seed = model_seed(ctx.seed)
        self.trial_seed = ctx.seed
        self.log = ctx.log.bind(role="user") if ctx.log is not None else None

    def build_request(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """Return the chat messages sent to the model, roles flipped.

        Args:
            messages: the conversation as the user sees it (user and assistant text messages).

        Returns:
            The system prompt, the agent greeting as a "user" message, then the conversation with the
            customer's messages as "assistant" and the agent's as "user" (tool traffic skipped).
        """
        out: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": AGENT_GREETING},
        ]
        for m in messages:
            if m.role not in ("user", "assistant") or not m.content:
                continue
            out.append({"role": "assistant" if m.role == "user" else "user", "content": m.content})
        return out

    def reply(self, messages: Sequence[Message]) -> UserTurn:
        """Return the customer's next message (the opening message when ``messages`` is empty).

        Args:
            messages: the conversation so far, as the user sees it.

        Returns:
            The user's turn; ``stop``/``abandon`` set from the reply's token. On a model failure an empty
            turn with ``error`` and ``error_kind`` (``infra_error`` when the API failed after retries, else
            ``user_error``); an empty reply without a token is a ``user_error`` too.
        """
        params: dict[str, Any] = {}
        if "seed" not in self.client.params:
            params["seed"] = self.seed
        try:
            result = self.client.complete(self.build_request(messages), trial_seed=self.trial_seed, log=self.log,
                                          **params)
        except LLMInfraError as e:
            return UserTurn(content="", error=str(e), error_kind="infra_error")
        except LLMError as e:
            return UserTurn(content="", error=str(e), error_kind="user_error")
        turn = parse_user_reply(result.message.content)
        if not turn.content and not (turn.stop or turn.abandon):
            return UserTurn(content="", usage=result.usage, error_kind="user_error",
                            error=f"model {self.model}: empty user message (finish reason {result.finish_reason})")
        return turn.model_copy(update={"usage": result.usage})


def llm_user_factory(
    model: str, *, prompt_template: str = DEFAULT_USER_PROMPT, **params: Any
) -> Callable[[TrialContext], LLMUser]:
    """Return a factory building one :class:`LLMUser` per trial.

    Args:
        model: litellm model string of the simulator.
        prompt_template: system prompt template (see :func:`render_user_prompt`).
        **params: :class:`~simulator.llm.LLMClient` options (``cache``, ``limiters``, ``max_attempts``, ...)
            and default model parameters (``temperature``, ``seed``, ...). Without ``seed`` each trial sends its
            own trial seed; ``seed=None`` sends none.

    Returns:
        A callable taking a :class:`~simulator._protocols.TrialContext`.

    Raises:
        KeyError: the template names an unknown field (checked here, before any trial runs).
    """
    render_user_prompt(UserScenario(instructions=""), prompt_template)  # fail fast on a bad template
    client = LLMClient(model, **params)

    def build(ctx: TrialContext) -> LLMUser:
        return LLMUser(ctx, client, prompt_template=prompt_template)

    return build

"""LiteLLMAgent: the agent under test is a tool-calling model reached through :mod:`simulator.models.llm`.

The model gets the domain policy as its system prompt (plus a short instruction), the domain's tools as
OpenAI function schemas, and the conversation so far. Its reply is one assistant message: text ends the
agent's turn, tool calls (one or several in one message) continue it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from simulator.models.llm import LLMClient, LLMContextOverflow, LLMError, LLMInfraError, LLMSetupError, model_seed
from simulator.types.messages import AgentTurn, Message
from simulator.types.protocols import TrialContext

__all__ = ["DEFAULT_AGENT_INSTRUCTION", "LiteLLMAgent", "litellm_agent_factory", "to_openai_messages"]

DEFAULT_AGENT_INSTRUCTION = (
    "You are a customer-service agent. Follow the policy above exactly. Use the tools to look up and change "
    "data; never invent ids or values. Make at most one reply to the user per turn; when you call tools, "
    "wait for their results before answering."
)
"""Appended to the policy in the system prompt."""

DEFAULT_AGENT_TEMPERATURE = 0.0
"""Temperature used unless the factory is given one (as in tau-bench)."""


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Convert trial messages to OpenAI chat messages (system messages skipped).

    Tool results keep their ``tool_call_id`` so each pairs with the assistant tool call it answers; keys whose
    value is None (other than ``content``) are dropped, since strict servers reject ``"name": null``.

    Args:
        messages: the trial's messages in order.

    Returns:
        A new list of message dicts.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        d = m.openai()
        out.append({k: v for k, v in d.items() if v is not None or k == "content"})
    return out


class LiteLLMAgent:
    """An :class:`~simulator.types.protocols.Agent` backed by a tool-calling model.

    Attributes:
        client: the model client.
        system_prompt: policy text followed by the instruction.
        tools: OpenAI function schemas offered to the model.
        seed: the model ``seed`` parameter (the trial seed reduced by :func:`simulator.models.llm.model_seed`).
        trial_seed: the trial seed (used in the response-cache key).
        resumes_from_history: True: each step depends on the messages given only, so a trajectory-prefix case
            gives it the prefix's messages without replaying its earlier steps (see :mod:`simulator.dialogue.prefix`).
    """

    resumes_from_history = True

    def __init__(
        self, ctx: TrialContext, client: LLMClient, *, instruction: str = DEFAULT_AGENT_INSTRUCTION
    ) -> None:
        """Build the agent for one trial.

        Args:
            ctx: the trial context; only ``policy``, ``tools`` and ``seed`` are read (never the task's gold
                actions or required outputs).
            client: the model client. Its ``temperature`` and ``seed`` defaults win; when it has none,
                temperature 0.0 and the trial seed are sent.
            instruction: text appended to the policy in the system prompt.
        """
        self.client = client
        self.system_prompt = f"{ctx.policy.rstrip()}\n\n{instruction}" if instruction else ctx.policy
        self.tools: list[dict[str, Any]] = list(ctx.tools)
        self.seed = model_seed(ctx.seed)
        self.trial_seed = ctx.seed
        self.log = ctx.log.bind(role="agent") if ctx.log is not None else None

    @property
    def model(self) -> str:
        """The model string."""
        return self.client.model

    def build_request(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """Return the chat messages sent to the model: the system prompt, then the conversation.

        Args:
            messages: the trial's messages so far.

        Returns:
            OpenAI chat messages.
        """
        return [{"role": "system", "content": self.system_prompt}, *to_openai_messages(messages)]

    def step(self, messages: Sequence[Message]) -> AgentTurn:
        """Return the model's next message.

        Args:
            messages: all messages of the trial in order (user, assistant, tool).

        Returns:
            The assistant message with its usage; on a model failure an empty assistant message with
            ``error`` and ``error_kind``: ``infra_error`` when the API failed after retries (rate limits, timeouts,
            connection, 5xx), ``context_overflow``, ``setup_error`` for missing credentials or an unknown model, else
            ``agent_error``: a refused request, or an answer of the model that cannot be read (a tool call whose
            ``arguments`` is not text: :class:`~simulator.models.llm.LLMResponseError`, whose reason is the error).
        """
        defaults = self.client.params
        params: dict[str, Any] = {}
        if "temperature" not in defaults:
            params["temperature"] = DEFAULT_AGENT_TEMPERATURE
        if "seed" not in defaults:
            params["seed"] = self.seed
        try:
            result = self.client.complete(
                self.build_request(messages), self.tools or None, trial_seed=self.trial_seed, log=self.log,
                **params,
            )
        except LLMInfraError as e:
            return _failed(str(e), "infra_error")
        except LLMContextOverflow as e:
            return _failed(str(e), "context_overflow")
        except LLMSetupError as e:
            return _failed(str(e), "setup_error")
        except LLMError as e:
            return _failed(str(e), "agent_error")
        return AgentTurn(message=result.message, usage=result.usage)


def _failed(error: str, kind: Literal["agent_error", "infra_error", "context_overflow", "setup_error"]) -> AgentTurn:
    return AgentTurn(message=Message(role="assistant", content=None), error=error, error_kind=kind)


def litellm_agent_factory(
    model: str, *, instruction: str = DEFAULT_AGENT_INSTRUCTION, **params: Any
) -> Callable[[TrialContext], LiteLLMAgent]:
    """Return a factory building one :class:`LiteLLMAgent` per trial.

    Args:
        model: litellm model string, e.g. ``"openai/gpt-4o-mini"``.
        instruction: text appended to the policy in the system prompt.
        **params: :class:`~simulator.models.llm.LLMClient` options (``api_base``, ``max_attempts``, ``wait_initial``,
            ``timeout``, ``cache``, ``limiters``, ...) and default model parameters (``temperature``, ``seed``,
            ``max_tokens``, ...). Without ``seed`` each trial sends its own trial seed; ``seed=None`` sends none.

    Returns:
        A callable taking a :class:`~simulator.types.protocols.TrialContext`; its ``client`` attribute is the
        :class:`~simulator.models.llm.LLMClient` its agents share (the pre-flight checks it).
    """
    client = LLMClient(model, **params)

    def build(ctx: TrialContext) -> LiteLLMAgent:
        return LiteLLMAgent(ctx, client, instruction=instruction)

    build.client = client  # type: ignore[attr-defined]
    return build

"""Offline litellm test doubles: scripted in-process providers and tool-call responses.

A scripted provider is a ``litellm.CustomLLM`` registered through ``litellm.custom_provider_map``, so the real
litellm code path runs without a network. It follows a script, one item a call: a string is answered as the
assistant's text, an exception instance is raised, anything else (a ``ModelResponse``, e.g. from
``tool_calls_response``) is returned as is. Each call's model, messages, optional parameters and api_base are
recorded in ``provider.calls``.

litellm is imported lazily (the import takes seconds): use the ``litellm`` fixture from ``tests/conftest.py``.
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

import pytest


def import_litellm() -> Any:
    """Import litellm, never letting it fetch its price list from the network."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    return litellm


@functools.cache
def scripted_provider_class() -> type:
    """Return the ``ScriptedProvider`` class, defined on first use (it subclasses litellm's ``CustomLLM``)."""
    from litellm import CustomLLM

    class ScriptedProvider(CustomLLM):
        def __init__(self, script: list[Any]) -> None:
            super().__init__()
            self.script = list(script)
            self.calls: list[dict[str, Any]] = []

        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, *args: Any, **kwargs: Any) -> Any:
            self.calls.append({"model": model, "messages": copy.deepcopy(messages),
                               "optional_params": copy.deepcopy(optional_params), "api_base": api_base})
            if not self.script:
                raise AssertionError("provider called more often than scripted")
            item = self.script.pop(0)
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, str):
                model_response.choices[0].message.content = item
                model_response.choices[0].finish_reason = "stop"
                model_response.model = model
                return model_response
            return item

    return ScriptedProvider


def scripted_provider(script: list[Any]) -> Any:
    """Return a new ``ScriptedProvider`` that follows ``script`` (not yet registered)."""
    return scripted_provider_class()(script)


def register(monkeypatch: pytest.MonkeyPatch, litellm: Any, scripts: dict[str, list[Any]]) -> dict[str, Any]:
    """Register one scripted provider per name (``{provider_name: script}``) for the current test.

    Returns the providers by name; models are then addressed as ``"<provider_name>/<model>"``.
    """
    providers = {name: scripted_provider(script) for name, script in scripts.items()}
    monkeypatch.setattr(litellm, "custom_provider_map",
                        [{"provider": name, "custom_handler": p} for name, p in providers.items()])
    return providers


def tool_calls_response(litellm: Any, calls: list[tuple[str | None, str, str]], content: str | None = None,
                        prompt_tokens: int = 11, completion_tokens: int = 7) -> Any:
    """Build an assistant ``ModelResponse`` with tool calls ``[(id, name, arguments_text), ...]``, in order."""
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, Usage

    tcs = [ChatCompletionMessageToolCall(id=i, type="function", function=Function(name=n, arguments=a))
           for i, n, a in calls]
    return litellm.ModelResponse(
        choices=[Choices(index=0, finish_reason="tool_calls",
                         message=Message(role="assistant", content=content, tool_calls=tcs))],
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                    total_tokens=prompt_tokens + completion_tokens),
    )

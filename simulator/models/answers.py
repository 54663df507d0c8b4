"""Model answers litellm cannot read: telling them from the failures of the service (see :mod:`simulator.models.llm`).

litellm reports an answer it cannot turn into a ``ModelResponse`` (a tool call whose ``arguments`` is a number,
content that is an object, a NaN token count, JSON without ``choices``, a body that is not JSON or not UTF-8) as a
500 (``InternalServerError``), the class of a server's real 500. The chain of exceptions below it tells them apart.
"""

from __future__ import annotations

import json

from simulator.types.sanitize import clipped, shown

__all__ = ["NOT_AN_OBJECT", "NO_CHOICES", "UNREADABLE_ANSWER", "answer_problem", "unreadable_answer"]


UNREADABLE_ANSWER = "Invalid response object"
"""How litellm's error begins when it cannot turn a provider's decoded answer into a ``ModelResponse``
(``convert_to_model_response_object``); the error it raised on the way is chained below it."""

NOT_AN_OBJECT = "Empty or invalid response from LLM endpoint"
"""How litellm's error begins when the answer is JSON but not an object (a string, a list)."""

NO_CHOICES = "'choices'"
"""In litellm's ``APIError`` for an answer whose ``choices`` is missing or not a list (an answer with an ``error``
object instead is mapped by litellm to its status: a 502 stays a ``BadGatewayError``, transient)."""


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first (at most 16)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 16 and all(seen is not e for e in chain):
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _one_line(error: BaseException, prefix: str = "") -> str:
    """``"Name: message"`` on one line (a pydantic error's lines joined by ``;``, its help link dropped), clipped."""
    lines = [line.strip() for line in str(error).splitlines()]
    text = "; ".join(line for line in lines if line and not line.startswith(("For further information", "Traceback")))
    text = text.removeprefix("litellm.APIError: ").removeprefix("LiteLLM: ")
    return clipped(shown(f"{prefix}{type(error).__name__}: {text}" if text else f"{prefix}{type(error).__name__}",
                         one_line=True), 400)


def answer_problem(exc: BaseException) -> tuple[str, bool] | None:
    """``(reason, retry first)`` when the server answered 200 but litellm cannot read the answer, else None.

    Args:
        exc: the exception litellm raised (or one that wraps it).

    Returns:
        ``(one line naming the error litellm met, whether to ask again first)``, or None.

    litellm reports these as an ``InternalServerError`` with status 500, the class of a server's real 500. They differ
    below it, in the chain of causes: a real HTTP failure holds the OpenAI client's status or connection error (or
    httpx's); a reading failure holds the error litellm met. Only a body that is not JSON is worth asking again (a
    reply cut short); an answer that is JSON but not a completion, or a completion whose message or fields do not
    fit, is what the model (its server) said.
    """
    import httpx
    import openai

    chain = _causes(exc)
    transport = (openai.APIStatusError, openai.APIConnectionError, httpx.HTTPError)
    if any(isinstance(e, transport) for e in chain[1:]):
        return None  # the server or the network failed: not an answer at all
    for i, e in enumerate(chain):
        text = str(e)
        if type(e) is Exception and text.startswith(UNREADABLE_ANSWER):
            return _one_line(chain[-1] if i + 1 < len(chain) else e), False
        if isinstance(e, json.JSONDecodeError):
            return _one_line(e, "the body is not JSON: "), True
        if isinstance(e, UnicodeDecodeError):  # e.g. a character cut in half: asked again, as a body cut short
            return _one_line(e, "the body is not valid UTF-8: "), True
        if i and text.startswith(NOT_AN_OBJECT):
            received = text.split(" Received: ", 1)[-1].split(". Check the reverse proxy", 1)[0]
            return clipped(shown(f"the body is JSON but not an object: {received}", one_line=True), 400), False
        if i and isinstance(e, openai.APIError) and NO_CHOICES in text:
            return _one_line(e), False
    return None


def unreadable_answer(exc: BaseException) -> str | None:
    """Return why the model's answer could not be read when ``exc`` (raised by litellm) says so, else None.

    The server answered (HTTP 200), but litellm cannot turn the answer into a response: a body that is not JSON, JSON
    that is not an object or has no ``choices`` list, a message whose fields do not fit (a tool call whose
    ``arguments`` is a number, content that is an object, a NaN token count). litellm reports each as a 500
    (``InternalServerError``), the class of a server's real 500; a real HTTP or connection failure is not one.

    Args:
        exc: the exception ``litellm.completion`` raised (or one that wraps it, e.g. a framework's).

    Returns:
        One line naming the error litellm met, clipped (it may quote a value), e.g.
        ``"ValidationError: 1 validation error for Function; arguments; Input should be a valid string ..."``.
    """
    problem = answer_problem(exc)
    return None if problem is None else problem[0]

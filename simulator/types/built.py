"""Record models built from values that already have their fields' types, without validating them again.

The conversation loop makes about forty records per trial (messages, tool calls, tool-call records, turns). When
every value comes from the framework itself (a tool's outcome, a call that was validated and admitted when the agent
returned it, a scripted actor's own strings), validating them again only costs time. :func:`built` makes the same
instance as the model's constructor would (same field values, same ``model_fields_set``, equal, dumped and pickled
alike) without the validation, as pydantic's ``BaseModel.model_construct`` does, but without its per-field Python
loop (which makes ``model_construct`` slower than validating).

Never for values from an agent, a user or a model that were not validated and admitted first: a caller that is not
sure checks the exact types first (``type(x) is str``) and otherwise calls the constructor (which converts a ``str``
subclass to ``str``, copies a dict, and raises on a wrong type).

Example::

    msg = built(Message, {"role": "tool", "content": out.content, "tool_calls": [], "tool_call_id": call.id,
                          "name": call.name, "requestor": None}, TOOL_RESULT_SET)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["built", "buildable"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


def buildable(cls: type[BaseModel]) -> bool:
    """True when :func:`built` makes ``cls`` exactly as its constructor would.

    That is: not a root model, no ``model_post_init``, no private attributes, no extra fields kept.
    """
    return (not cls.__pydantic_root_model__ and not cls.__pydantic_post_init__ and not cls.__private_attributes__
            and cls.model_config.get("extra") != "allow")


def built(cls: type[M], fields: dict[str, Any], fields_set: Iterable[str] | None = None) -> M:
    """Return an instance of ``cls`` holding ``fields`` as they are (no validation, no copy).

    Args:
        cls: a model for which :func:`buildable` holds (the record models of :mod:`simulator.types.messages` and
            :mod:`simulator.types.trajectory`).
        fields: every field of ``cls`` -> its value, already of the field's type (an exact ``str`` for a ``str``
            field, a dict the instance may own for a dict field, a fresh list for a list field). The dict becomes
            the instance's ``__dict__``.
        fields_set: the fields given explicitly, as the constructor would record them (``model_fields_set``);
            None: all of ``fields``.

    Returns:
        The instance.
    """
    m = _new(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(fields if fields_set is None else fields_set))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m

"""JSON text as ``json.dumps`` writes it, without the encoder ``json.dumps`` sets up on every call.

``json.dumps(value)`` (and ``JSONEncoder.encode``) builds a new C encoder for each value, which costs more than
encoding a short list or a small dict. :func:`json_text` and :func:`sorted_json_text` keep one C encoder each, built
with the settings of ``json.dumps(value)`` and of ``json.dumps(value, sort_keys=True, default=str)``, and return the
same text for every value, and raise what ``json.dumps`` raises: a value that contains itself (the shared encoder has
no circular check) recurses until :class:`RecursionError` and is then handed to ``json.dumps``, which raises its
:class:`ValueError`. Without the C accelerator (an interpreter built without ``_json``) both are ``json.dumps``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

__all__ = ["json_text", "sorted_json_text"]


def _raise_unknown(value: Any) -> Any:
    """``JSONEncoder.default``: refuse a value of a type JSON has no text for."""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _encoder(sort_keys: bool, default: Callable[[Any], Any]) -> Callable[[Any], str]:
    """One shared C encoder with ``json.dumps``' separators, ASCII output and NaN allowed (stateless: no markers)."""
    if c_make_encoder is None:  # pragma: no cover - CPython always has the accelerator
        return lambda value: json.dumps(value, sort_keys=sort_keys, default=default)
    encode = c_make_encoder(None, default, encode_basestring_ascii, None, ": ", ", ", sort_keys, False, True)

    def text(value: Any) -> str:
        try:
            return "".join(encode(value, 0))
        except RecursionError:  # a value that contains itself (no circular check here), or nested too deep
            return json.dumps(value, sort_keys=sort_keys, default=default)  # raises what json.dumps raises

    return text


json_text: Callable[[Any], str] = _encoder(False, _raise_unknown)
"""``json.dumps(value)``'s text of ``value``.

Raises:
    TypeError: a value of a type JSON has no text for.
"""

sorted_json_text: Callable[[Any], str] = _encoder(True, str)
"""``json.dumps(value, sort_keys=True, default=str)``'s text of ``value`` (other types as their ``str``)."""

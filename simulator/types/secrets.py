"""Secrets in a run's configuration: found by the shape of their key or URL, and never recorded or printed.

A run is recorded with its configuration (the run document's ``config``, the partial file's header, the results
store, the log's ``run_start`` event) so that it can be rebuilt. The credentials a component is built with are not
part of what the run *is*, and must not be written anywhere: :func:`redact_secrets` returns a copy of a JSON value
where

- the value of every object key that names a credential is :data:`REDACTED`: keys whose last word (after ``_``,
  ``-`` or a case change) is ``key`` with ``api``/``access``/``secret``/``private`` before it (``api_key``,
  ``x-api-key``, ``apiKey``), or is ``token``, ``secret``, ``password``, ``passwd``, ``pwd``, ``authorization``,
  ``auth``, ``cookie``, ``credential(s)`` or ``bearer`` (``access_token``, ``Authorization``, ``client_secret``);
  a key ending in ``_env`` names an environment variable and is kept (``api_key_env``: only the name is recorded);
- in every string that is a URL (``scheme://...``), a password in the user part (``https://user:pass@host``) and the
  value of each query parameter whose name names a credential (``?api_key=...``, ``&token=...``) are
  :data:`REDACTED`.

The component built for the run still gets the real values: only what is written or shown is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["REDACTED", "is_secret_key", "redact_secrets", "redact_url"]

REDACTED = "[redacted]"
"""What a secret is recorded and printed as."""

_SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "pwd", "authorization", "auth", "cookie",
                           "credential", "credentials", "bearer", "apikey", "signature", "sig"})
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "auth", "subscription"})
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_END = frozenset(" \t\r\n\f\v'\"<>,")


def _words(key: str) -> list[str]:
    """Return the lower-cased words of a key (``X-API-Key`` -> x, api, key; ``apiKey`` -> api, key).

    Split at every non-alphanumeric character and where a lower case letter meets an upper case one; a loop, not a
    regex: linear by construction.
    """
    words: list[str] = []
    current = ""
    for ch in key:
        if not ch.isalnum():
            ch = ""
        if (not ch or (ch.isupper() and current[-1:].islower())) and current:
            words.append(current.lower())
            current = ""
        current += ch
    if current:
        words.append(current.lower())
    return words


def is_secret_key(key: str) -> bool:
    """Whether an object key or query parameter names a credential (see the module docstring).

    Args:
        key: e.g. ``"api_key"``, ``"Authorization"``, ``"max_tokens"``.

    Returns:
        True for ``api_key``, ``X-API-Key``, ``access_token``, ``password``...; False for ``max_tokens``,
        ``api_key_env``, ``model``.
    """
    words = _words(key)
    if not words or words[-1] == "env":
        return False
    last = words[-1]
    if last in _SECRET_WORDS:
        return True
    return last == "key" and len(words) > 1 and words[-2] in _KEY_QUALIFIERS


def redact_url(text: str) -> str:
    """Return ``text`` with, in each URL it holds, the password of the user part and credential query values redacted.

    Args:
        text: any string: a URL, a component name such as ``http:URL``, a sentence naming URLs.

    Returns:
        E.g. ``"http:https://me:[redacted]@host/v1?api_key=%5Bredacted%5D&x=1"`` for
        ``"http:https://me:s3cret@host/v1?api_key=abc&x=1"``; a text without a URL is returned unchanged.
    """
    if "://" not in text:
        return text
    out: list[str] = []
    pos = 0
    at = text.find("://")
    while at >= 0:
        start = at  # back over the scheme (stops at the previous "://": linear), which starts with a letter
        while start > pos and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < at and not text[start].isalpha():
            start += 1
        end = at + 3
        while end < len(text) and text[end] not in _URL_END:
            end += 1
        if start < at:
            out.append(text[pos:start])
            out.append(_redact_one(text[start:end]))
            pos = end
        at = text.find("://", max(end, at + 3))
    out.append(text[pos:])
    return "".join(out)


def _secret_parameter(key: str) -> bool:
    """Whether a URL's query or fragment parameter names a credential (a bare ``key`` too: ``?key=`` API keys)."""
    return is_secret_key(key) or key.lower() == "key"


def _redact_parameters(text: str) -> str:
    """A query (or fragment) ``a=1&api_key=x`` with its credential values redacted; unchanged when it has none."""
    if "=" not in text:
        return text
    pairs = parse_qsl(text, keep_blank_values=True)
    if not any(_secret_parameter(k) for k, _ in pairs):
        return text
    return urlencode([(k, REDACTED if _secret_parameter(k) else v) for k, v in pairs])


def _redact_one(text: str) -> str:
    """One URL with its user part's password (or bare token) and credential parameters redacted.

    Split by hand, not with ``urlsplit``: its output must read the same when redacted again (``urlsplit`` refuses
    the ``[`` of an already redacted password as a bad IPv6 host), so that a recorded configuration compares equal
    to the same configuration redacted anew (a resumed run).
    """
    scheme, _, rest = text.partition("://")
    cut = len(rest)
    for ch in "/?#":
        i = rest.find(ch)
        if 0 <= i < cut:
            cut = i
    netloc, tail = rest[:cut], rest[cut:]
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            netloc = f"{user.split(':', 1)[0]}:{REDACTED}@{host}"
        elif re.fullmatch(r"[A-Za-z0-9_\-.~]{16,}", user):
            netloc = f"{REDACTED}@{host}"  # a bare token as the user part
    before, hashmark, fragment = tail.partition("#")
    path, qmark, query = before.partition("?")
    tail = f"{path}{qmark}{_redact_parameters(query)}{hashmark}{_redact_parameters(fragment)}"
    return f"{scheme}://{netloc}{tail}"


def redact_secrets(value: Any) -> Any:
    """Return a copy of a JSON value with its secrets redacted (see the module docstring).

    Args:
        value: a JSON value (objects, lists, strings, numbers...); mappings are copied as dicts.

    Returns:
        The value, secrets replaced by :data:`REDACTED`; a value without secrets is equal to the input.
    """
    if isinstance(value, Mapping):
        return {k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v is not None else redact_secrets(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_secrets(v) for v in value]
    if isinstance(value, str):
        return redact_url(value)
    return value

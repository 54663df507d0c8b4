"""Reading a response's fields: dicts, other mappings and litellm-like objects; the mapping test once per type."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from simulator.models import llm


class Frozen(Mapping[str, Any]):
    """A mapping that is not a dict (its items are read with ``get``)."""

    def __init__(self, **items: Any) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Obj:
    """A litellm-like response object (fields as attributes)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def test_fields_of_every_kind_of_object() -> None:
    assert llm._field({"content": "a"}, "content") == "a"
    assert llm._field(Frozen(content="b"), "content") == "b"
    assert llm._field(Obj(content="c"), "content") == "c"
    assert llm._field(Frozen(), "content") is None and llm._field(Obj(), "content") is None
    assert llm._field(Frozen(get=1), "get") == 1  # a mapping's item, not its method


def test_the_mapping_test_is_made_once_per_type() -> None:
    llm._is_mapping.cache_clear()
    for i in range(5):
        assert llm._field(Obj(tool_calls=i), "tool_calls") == i
        assert llm._field(Frozen(tool_calls=i), "tool_calls") == i
    info = llm._is_mapping.cache_info()
    assert (info.misses, info.hits) == (2, 8)  # Obj and Frozen asked once each; dicts never

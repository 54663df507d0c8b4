"""A bad data file is refused with one line naming the file, the record's field and (an excerpt of) the value."""

from __future__ import annotations

import json

import pytest

from simulator.world.domain import DomainError, get_domain

BIG = 100_000


def _copy_retail(tmp_path):
    dom = get_domain("retail")
    for name in ("users.json", "orders.json", "products.json"):
        (tmp_path / name).write_text((dom.default_data_dir() / name).read_text(encoding="utf-8"), encoding="utf-8")
    return dom, json.loads((tmp_path / "users.json").read_text(encoding="utf-8"))


def test_data_file_errors_show_an_excerpt_of_a_huge_value(tmp_path):
    dom, users = _copy_retail(tmp_path)
    first = next(iter(users))
    users[first]["email"] = ["e" * BIG]  # a list where a string belongs: its JSON is 100,000 + 4 characters
    (tmp_path / "users.json").write_text(json.dumps(users), encoding="utf-8")
    with pytest.raises(DomainError) as e:
        dom.template(tmp_path)
    message = str(e.value)
    assert message == (f"{tmp_path / 'users.json'}: record {first!r}: field email: expected a string, got "
                       'list ["' + "e" * 58 + "... (100,004 characters)")

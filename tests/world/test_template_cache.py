"""The templates' disk cache (simulator.world.template_cache): same database as a build, never a stale one."""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
import types

import pytest

from simulator.world.domain import get_domain
from simulator.world.template_cache import CACHE_ENV, load_template, store_template, template_key


def _rows(data: bytes) -> dict[str, list[tuple]]:
    """Every table's rows, read back from a serialized database (an independent look at its content)."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}


@pytest.fixture
def data(tmp_path):
    """A private copy of the built-in retail data set."""
    folder = tmp_path / "data"
    shutil.copytree(get_domain("retail").default_data_dir(), folder)
    return folder


def _template(folder, options=None):
    dom = get_domain("retail")  # a new instance: its in-process templates are empty
    return dom.template(folder, options)


def test_a_second_process_reads_the_stored_template_and_gets_the_same_database(data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "")
    plain = _template(data)  # no cache: built
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    first = _template(data)  # built and stored
    stored = list((tmp_path / "cache" / "templates").glob("*.sqlite"))
    assert len(stored) == 1
    second = _template(data)  # read back
    assert second.data == first.data == plain.data
    assert second.origin == plain.origin
    assert _rows(second.data)["orders"] and _rows(second.data) == _rows(plain.data)
    with second.trial() as db:  # a working template: a trial's copy reads the rows
        assert db.raw.execute("SELECT count(*) FROM orders").fetchone()[0] == len(_rows(plain.data)["orders"])


def test_a_changed_data_file_or_option_is_another_key(data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    dom = get_domain("retail")
    key = template_key(dom, data, {"mode": "tau-bench"})
    assert key is not None and key == template_key(dom, data, {"mode": "tau-bench"})
    assert template_key(dom, data, {"mode": "tau2"}) != key
    users = data / "users.json"
    text = users.read_text(encoding="utf-8")
    users.write_text(re.sub(r'"zip": "\d', '"zip": "X', text, count=1), encoding="utf-8")  # same size
    assert template_key(dom, data, {"mode": "tau-bench"}) != key


def test_a_template_stored_before_a_data_change_is_not_read_after_it(data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    marked = "SELECT count(*) FROM users WHERE zip LIKE 'X%'"
    conn = sqlite3.connect(":memory:")
    conn.deserialize(_template(data).data)  # built and stored
    assert conn.execute(marked).fetchone()[0] == 0
    users = data / "users.json"
    text = users.read_text(encoding="utf-8")
    changed = re.sub(r'"zip": "\d', '"zip": "X', text, count=1)
    assert len(changed) == len(text) and changed != text  # same size: only the bytes tell
    users.write_text(changed, encoding="utf-8")
    conn.deserialize(_template(data).data)  # the same folder, one zip code changed
    assert conn.execute(marked).fetchone()[0] == 1


def test_a_data_file_or_a_damaged_cache_file_is_built_as_without_a_cache(data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    dom = get_domain("retail")
    assert template_key(dom, data / "users.json", {}) is None  # a single file: not cached
    built = _template(data)
    (stored,) = (tmp_path / "cache" / "templates").glob("*.sqlite")
    raw = bytearray(stored.read_bytes())
    raw[-100] ^= 0xFF  # one damaged byte in the database image
    stored.write_bytes(bytes(raw))
    key = template_key(dom, data, built.options)
    assert key is not None and load_template(key) is None
    again = _template(data)
    assert again.data == built.data
    assert load_template(key) == built.data  # stored again, whole


def test_an_unwritable_cache_folder_costs_only_the_build(data, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(blocker))  # its templates subfolder cannot be made
    assert _template(data).data == _template(data).data


def test_a_domain_class_whose_code_has_no_file_to_check_is_not_cached(data):
    retail = type(get_domain("retail"))
    mine = type("MyRetail", (retail,), {"__module__": "__main__"})  # as if defined in a script or a notebook
    assert template_key(mine(), data, {"mode": "tau-bench"}) is None
    assert template_key(retail(), data, {"mode": "tau-bench"}) is not None


def test_a_subclass_from_another_package_is_cached_only_when_it_says_so_itself(data, tmp_path, monkeypatch):
    # its populate may call code of its own package, which the key does not cover (a stale template otherwise)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "my_company", types.ModuleType("my_company"))
    sys.modules["my_company"].__file__ = str(tmp_path / "my_company.py")  # a module with a file the key could see
    (tmp_path / "my_company.py").write_text("")
    base = type(get_domain("retail"))
    elsewhere = type("MyRetail", (base,), {"__module__": "my_company.domains"})
    elsewhere().template(data)
    assert not (tmp_path / "cache" / "templates").exists()
    opted = type("MyRetail", (base,), {"__module__": "my_company.domains", "template_cacheable": True})
    opted().template(data)
    assert len(list((tmp_path / "cache" / "templates").glob("*.sqlite"))) == 1


def test_a_cached_image_that_is_no_database_is_built_again(data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    first = _template(data)
    (path,) = (tmp_path / "cache" / "templates").glob("*.sqlite")
    key = path.stem
    store_template(key, b"not a database at all" * 10)  # a valid header and digest over a forged body
    again = _template(data)
    assert again.data == first.data
    assert load_template(key) == first.data  # stored again, right

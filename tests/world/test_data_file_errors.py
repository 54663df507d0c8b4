"""A bad data file (or tau2 task file) is refused with one line naming the file, the field and an excerpt of the
value: a 100 KB value is never printed whole."""

from __future__ import annotations

import json

import pytest

from simulator.errors import TaskFileError
from simulator.world.domain import DomainError, get_domain
from simulator.world.tau2_tasks import parse_tau2_tasks

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


def test_a_lone_surrogate_in_a_data_file_names_file_field_and_value(tmp_path, monkeypatch):
    """It ended the run with ``'utf-8' codec can't encode character '\\ud83d' in position 3`` and no file."""
    monkeypatch.setenv("TAUSIM_CACHE_DIR", str(tmp_path / "cache"))
    dom, users = _copy_retail(tmp_path)
    first = next(iter(users))
    good = users[first]["name"]["first_name"]
    users[first]["name"]["first_name"] = good[:2] + "\ud83d" + good[2:]
    (tmp_path / "users.json").write_text(json.dumps(users), encoding="utf-8")  # written as the escape \ud83d
    assert "\\ud83d" in (tmp_path / "users.json").read_text(encoding="utf-8")
    with pytest.raises(DomainError) as e:
        dom.template(tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'users.json'}: {first}.name.first_name: "
                                   f"'{good[:2]}\\ud83d{good[2:]}' holds a lone surrogate (half of a UTF-16 pair")
    assert not list((tmp_path / "cache").rglob("*.sqlite"))  # no template of the bad data set is kept
    users[first]["name"]["first_name"] = good
    (tmp_path / "users.json").write_text(json.dumps(users), encoding="utf-8")
    assert dom.template(tmp_path).data  # the repaired folder builds (and is cached) as any other
    assert len(list((tmp_path / "cache").rglob("*.sqlite"))) == 1


def test_a_lone_surrogate_in_a_tau2_db_json_names_its_table_and_key(tmp_path):
    (tmp_path / "folder").mkdir()
    dom, users = _copy_retail(tmp_path / "folder")
    first = next(iter(users))
    users[first]["email"] = "\udc00"
    db = {n: json.loads((tmp_path / "folder" / f"{n}.json").read_text(encoding="utf-8"))
          for n in ("orders", "products")}
    (tmp_path / "db.json").write_text(json.dumps({"users": users, **db}), encoding="utf-8")
    with pytest.raises(DomainError) as e:
        dom.template(tmp_path / "db.json")
    assert str(e.value).startswith(f"{tmp_path / 'db.json'}: users.{first}.email: '\\udc00' holds a lone surrogate")


@pytest.mark.parametrize(("raw", "says"), [
    ({"id": "z" * BIG, "user_scenario": {"instructions": "x"}, "evaluation_criteria": {"reward_basis": ["NOPE"]}},
     "tau2.json: task '" + "z" * 78 + "'... (100,000 characters): field evaluation_criteria.reward_basis[0]: "
     "unknown reward basis 'NOPE'"),
    # JSON of the string: 100,000 + 2 quotes; 60 characters of it kept
    ({"id": "t", "user_scenario": {"instructions": "x"}, "evaluation_criteria": {"communicate_info": "c" * BIG}},
     "tau2.json: task 't': field evaluation_criteria.communicate_info: expected a list, got str "
     '"' + "c" * 59 + "... (100,002 characters)"),
])
def test_tau2_task_file_errors_show_an_excerpt_of_a_huge_value(raw, says):
    with pytest.raises(TaskFileError) as e:
        parse_tau2_tasks([raw], "tau2.json")
    assert str(e.value).startswith(says), str(e.value)[:300]
    assert len(str(e.value)) < 400


@pytest.mark.parametrize("price", [10**30, 2**63, -(2**63) - 1])
def test_a_number_sqlite_cannot_store_names_file_record_and_field(price, tmp_path):
    """It ended with ``OverflowError: Python int too large to convert to SQLite INTEGER`` (a traceback)."""
    dom, _ = _copy_retail(tmp_path)
    orders = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    key = next(iter(orders))
    orders[key]["items"][0]["price"] = price
    (tmp_path / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    with pytest.raises(DomainError) as e:
        dom.template(tmp_path)
    assert str(e.value) == (f"{tmp_path / 'orders.json'}: record {key!r}: field items[0].price: expected a number "
                            f"SQLite can store (an integer from -2**63 to 2**63-1, or a decimal), got int {price}")


def test_the_largest_integers_sqlite_stores_load(tmp_path):
    dom, _ = _copy_retail(tmp_path)
    orders = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    first, second = list(orders)[:2]
    orders[first]["items"][0]["price"] = 2**63 - 1  # 9223372036854775807: SQLite's largest INTEGER
    orders[second]["items"][0]["price"] = -(2**63)
    (tmp_path / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    dom.template(tmp_path)  # no error


def test_an_airline_integer_sqlite_cannot_store_names_file_record_and_field(tmp_path):
    dom = get_domain("airline")
    for name in ("users.json", "flights.json", "reservations.json"):
        (tmp_path / name).write_text((dom.default_data_dir() / name).read_text(encoding="utf-8"), encoding="utf-8")
    reservations = json.loads((tmp_path / "reservations.json").read_text(encoding="utf-8"))
    key = next(iter(reservations))
    reservations[key]["total_baggages"] = 2**63
    (tmp_path / "reservations.json").write_text(json.dumps(reservations), encoding="utf-8")
    with pytest.raises(DomainError) as e:
        dom.template(tmp_path)
    assert str(e.value) == (f"{tmp_path / 'reservations.json'}: record {key!r}: field total_baggages: expected an "
                            "integer SQLite can store (-2**63 to 2**63-1), got int 9223372036854775808")




@pytest.mark.parametrize(("domain", "files", "where"), [
    ("mock", {"db.json": {"tasks": {}, "users": {"u1": {"user_id": "u1", "name": "\ud83d"}}},
              "user_db.json": {"notifications": {}}}, ("db.json", "users.u1.name")),
    ("mock", {"db.json": {"tasks": {}, "users": {}},
              "user_db.json": {"notifications": {"n\ud83d": {}}}}, ("user_db.json", "notifications.n\\ud83d")),
    ("banking_knowledge", {"db.json": {"accounts": {"data": {"a1": {"holder": "\ud83d"}}}}},
     ("db.json", "accounts.data.a1.holder")),
])
def test_a_lone_surrogate_in_a_tau2_domain_data_file_names_file_field_and_value(domain, files, where, tmp_path):
    """mock and banking_knowledge read their own db.json: they refuse a lone surrogate as read_records does."""
    for name, doc in files.items():
        (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")  # json.dumps writes "\ud83d" as an escape
    with pytest.raises(DomainError) as e:
        get_domain(domain).template(tmp_path)
    file, field = where
    shown = "'n\\ud83d'" if field.startswith("notifications") else "'\\ud83d'"
    assert str(e.value).startswith(f"{tmp_path / file}: {field}: {shown} holds a lone surrogate (half of a UTF-16 "
                                   "pair"), str(e.value)


def test_a_lone_surrogate_in_a_tau2_task_file_names_file_field_and_value(tmp_path):
    from simulator.world.tau2_tasks import load_tau2_tasks

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"id": "t1", "user_scenario": {"instructions": "x\ud83d"}}]), encoding="utf-8")
    with pytest.raises(TaskFileError) as e:
        load_tau2_tasks(path)
    assert str(e.value) == (f"{path}: [0].user_scenario.instructions: 'x\\ud83d' holds a lone surrogate (half of a "
                            "UTF-16 pair, e.g. the escape \\ud83d alone): write the whole character, or both escapes "
                            "of its pair")

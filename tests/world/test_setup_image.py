"""A task's set-up captured once (``TemplateDatabase.capture_setup``) and written on a trial's fresh copy
(``apply_setup`` / ``provision_trial``) leaves the same database as running the set-up there (``prepare_trial``).

The comparison reads every table of the SQLite file itself (``sqlite_master``: the domain's tables with their rowids,
the first-write images, the event log, ``sqlite_sequence``; the write log as a set), not the code under test.
The peer suites' checks (telecom every 20th task of the full split, all of banking_knowledge, mock) skip when the
tau2-bench data is absent.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from simulator import get_domain
from simulator.types.tasks import InitialState, RowUpdate, Task, UserScenario
from simulator.world.database import WRITE_LOG, TemplateDatabase
from simulator.world.replay import prepare_trial, provision_trial, replay_gold
from tests._support.peers import TAU2
from tests._support.toy import BankDomain, write_data


def everything(raw: sqlite3.Connection) -> dict[str, Any]:
    """Every table of the database as read from ``sqlite_master`` (rows with their rowids; the write log a set)."""
    out: dict[str, Any] = {}
    for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
        if name == WRITE_LOG:
            out[name] = set(raw.execute(f'SELECT tbl, rid FROM "{name}"').fetchall())
        elif name == "sqlite_sequence":
            out[name] = sorted(raw.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        else:
            out[name] = sorted(raw.execute(f'SELECT rowid, * FROM "{name}"').fetchall(), key=repr)
    return out


def _toy(tmp_path: Path) -> tuple[BankDomain, TemplateDatabase]:
    domain = BankDomain()
    return domain, domain.template(write_data(tmp_path / "data"))


def test_written_rows_gone_rows_and_rows_inserted_then_removed_come_back_the_same(tmp_path):
    _, template = _toy(tmp_path)
    with template.trial() as a:
        raw = a.raw
        raw.execute("UPDATE accounts SET balance = 7.5 WHERE id = 'A1'")
        raw.execute("DELETE FROM accounts WHERE id = 'B2'")
        raw.execute("INSERT INTO accounts (id, owner, balance) VALUES ('C3', 'cy', 1.0)")
        raw.execute("INSERT INTO accounts (id, owner, balance) VALUES ('D4', 'di', 2.0)")
        raw.execute("DELETE FROM accounts WHERE id = 'D4'")  # inserted and removed: only its traces are left
        for name in ("opened", "dropped"):
            raw.execute("INSERT INTO _tausim_events (step, source, kind, name, data) VALUES (NULL, 'setup', "
                        "'domain', ?, '{}')", (name,))
        raw.execute("DELETE FROM _tausim_events WHERE name = 'dropped'")  # the sequence stays at 2
        image = template.capture_setup(raw)
        expected = everything(raw)
    # rowids: A1 1, B2 2; B2 gone, C3 takes max(rowid) + 1 = 2, D4 3 and is gone again
    rows = dict(image.rows["accounts"])
    assert set(rows) == {1, 2, 3}
    assert (rows[1], rows[2], rows[3]) == (("A1", "ann", 7.5), ("C3", "cy", 1.0), None)
    with template.trial() as b:
        assert everything(b.raw) != expected  # a fresh copy: the template again
        template.apply_setup(b.raw, image)
        assert everything(b.raw) == expected
    with template.trial() as c:  # the copy was restored to the template when the trial ended
        assert c.raw.execute("SELECT count(*) FROM _tausim_writes").fetchone() == (0,)
        assert c.raw.execute("SELECT id, balance FROM accounts ORDER BY id").fetchall() == [("A1", 100.0),
                                                                                            ("B2", 25.0)]


def test_an_image_of_another_template_is_refused_and_provisioning_then_runs_the_set_up(tmp_path):
    domain, template = _toy(tmp_path)
    other = TemplateDatabase(template.metadata, lambda s: None, name="empty")
    assert other.origin != template.origin
    task = Task(id="t", scenario=UserScenario(instructions="x"), initial_state=InitialState(
        update={"accounts": [RowUpdate(key={"id": "A1"}, set={"balance": 1.0})]}))
    gold = replay_gold(domain, template, task)
    assert gold.setup is not None and gold.setup.origin == template.origin
    with other.trial() as db, pytest.raises(ValueError, match="captured on another template"):
        other.apply_setup(db.raw, gold.setup)
    with template.trial() as db:
        prepare_trial(domain, db, task)
        expected = everything(db.raw)
    with template.trial() as db:
        db.origin = "elsewhere"  # not a fresh copy of this template: the set-up runs instead
        provision_trial(domain, template, db, task, gold)
        assert everything(db.raw) == expected


@pytest.mark.skipif(not (TAU2 / "telecom" / "tasks.json").is_file(), reason="tau2-bench data absent")
@pytest.mark.parametrize(("suite", "split", "every"), [("telecom", "full", 20), ("banking_knowledge", None, 1),
                                                       ("mock", None, 1)])
def test_peer_suites_provision_the_same_database_as_running_their_set_up(suite, split, every):
    domain = get_domain(suite)
    folder = TAU2 / suite
    template = domain.template(folder)
    tasks = domain.load_tasks(str(folder / "tasks.json"), split=split)[::every]
    with_setup = [t for t in tasks if t.initial_state is not None]
    assert len(with_setup) >= min(len(tasks) // 2, 10)
    for task in with_setup:
        gold = replay_gold(domain, template, task)
        assert gold.setup is not None, task.id
        with template.trial() as db:
            prepare_trial(domain, db, task)
            expected = everything(db.raw)
        with template.trial() as db:
            provision_trial(domain, template, db, task, gold)
            got = everything(db.raw)
        assert got == expected, (task.id, json.dumps(sorted(k for k in got if got[k] != expected.get(k))))

"""``Docs.put`` on a template copy: a new document is an insert, a changed one an update, an unchanged one nothing,
as the write log and the first-write images (kept by the copy's triggers) record them."""

from __future__ import annotations

from sqlalchemy import MetaData

from simulator.world.database import TemplateDatabase
from simulator.world.kit import Docs, doc_table, dumps, insert_docs


def _template() -> TemplateDatabase:
    md = MetaData()
    table = doc_table(md, "recs")
    return TemplateDatabase(md, lambda s: insert_docs(s, table, [("a", {"n": 1}), ("b", {"n": 2})]), name="recs")


def test_put_writes_only_what_changed_and_the_copy_records_each_write_once():
    with _template().trial() as db:
        raw, docs = db.raw, Docs(db.raw)
        docs.put("recs", "a", {"n": 1})  # unchanged: nothing written
        assert raw.execute("SELECT count(*) FROM _tausim_writes").fetchone() == (0,)
        docs.put("recs", "b", {"n": 3})  # changed: an update of row 2, its template text kept
        docs.put("recs", "c", {"n": 4})  # new: an insert at row 3, no template row
        assert raw.execute("SELECT tbl, rid FROM _tausim_writes ORDER BY rowid").fetchall() == [("recs", 2),
                                                                                             ("recs", 3)]
        assert raw.execute('SELECT "_rid", "_absent", doc FROM "_tausim_old_recs" ORDER BY 1').fetchall() == [
            (2, 0, dumps({"n": 2})), (3, 1, None)]
        assert raw.execute("SELECT rowid, id, doc FROM recs ORDER BY rowid").fetchall() == [
            (1, "a", '{"n":1}'), (2, "b", '{"n":3}'), (3, "c", '{"n":4}')]
        raw.execute("DELETE FROM recs WHERE id = 'c'")
        docs.put("recs", "d", {"n": 5})  # takes rowid 3 again, whose first-write image is already kept
        assert raw.execute('SELECT "_rid", "_absent" FROM "_tausim_old_recs" ORDER BY 1').fetchall() == [(2, 0), (3, 1)]
        assert raw.execute("SELECT rowid, id FROM recs ORDER BY rowid").fetchall() == [(1, "a"), (2, "b"), (3, "d")]

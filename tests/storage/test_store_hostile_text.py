"""What SQLite accepts, PostgreSQL accepts: NUL in any text, a 300-character run id, a 100,000-character task id.

Every test runs against SQLite and PostgreSQL (the ``store_url`` fixture; PostgreSQL is skipped without
``TAUSIM_TEST_STORE_URL``, see ``tests/_support/store_urls.py``).
"""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from simulator.agents import NullAgent
from simulator.execution.runner import Runner
from simulator.storage.schema import escape_nul, unescape_nul
from simulator.storage.store import ResultsStore
from simulator.types.messages import Message, ToolCall
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from simulator.users import scripted_user_factory
from tests._support.toy import BankDomain, write_data

HOSTILE = "nul\x00 mark\ue000 mark-zero\ue0000 both\ue000\x00 esc\x1b]0;pwned\x07 end"


@pytest.mark.parametrize("text", ["", "plain", "\x00", "\ue000", "\ue0000", "\ue000\ue000", "\x00\ue000\x00",
                                  HOSTILE])
def test_nul_escape_round_trips_exactly_and_holds_no_nul(text):
    escaped = escape_nul(text)
    assert "\x00" not in escaped
    assert unescape_nul(escaped) == text
    if "\x00" not in text and "\ue000" not in text:
        assert escaped is text


def _trial(tmp_path, task_id):
    dom = BankDomain()
    tasks = parse_tasks({"format": "tausim.tasks", "version": 1,
                         "tasks": [{"id": task_id, "scenario": {"instructions": "say hi"}}]})
    runner = Runner(dom, dom.template(write_data(tmp_path / "d")), tasks, NullAgent, scripted_user_factory(),
                    RunSpec(domain="bank", agent="x", trials=1))
    return runner.config, runner.run().trials[0]


def test_nul_and_long_ids_are_recorded_and_read_back_exactly(tmp_path, store_url):
    run_id = "r" * 300
    task_id = "t" * 100_000
    config, trial = _trial(tmp_path, task_id)
    odd = trial.model_copy(deep=True)
    odd.error = HOSTILE
    odd.trajectory.error = HOSTILE
    odd.trajectory.notes = [HOSTILE]
    odd.trajectory.agent_metadata = {HOSTILE: [HOSTILE, {"k": HOSTILE}]}
    odd.trajectory.messages.append(Message(role="assistant", content=HOSTILE, tool_calls=[
        ToolCall(id="c\x00" + "i" * 300, name="n\x00" + "m" * 300, arguments={"q\x00": HOSTILE}),
        ToolCall(id="c2", name="transfer", arguments=None, raw_arguments=HOSTILE)]))
    store = ResultsStore(store_url)
    try:
        store.create_run(config, [task_id], run_id=run_id)
        assert store.record(run_id, odd) is True
        assert store.record(run_id, odd) is False  # the key (300 + 100,000 characters) matches itself
        loaded = store.load_trials(run_id)
        assert loaded == [odd]
        assert loaded[0].trajectory.messages[-1].content == HOSTILE
        assert run_id in store.run_ids()
    finally:
        store.close()


def test_a_postgresql_store_of_bounded_ids_is_widened_on_open(tmp_path, store_url):
    if not store_url.startswith("postgresql"):
        pytest.skip("SQLite ignores declared lengths: nothing to widen")
    store = ResultsStore(store_url)
    with store.engine.begin() as conn:  # the layout of an older tausim: ids as VARCHAR(255)
        for table in ("runs", "trials", "messages", "tool_calls", "grades", "run_leases"):
            conn.exec_driver_sql(f'ALTER TABLE "{table}" ALTER COLUMN run_id TYPE VARCHAR(255)')
        conn.exec_driver_sql('ALTER TABLE "trials" ALTER COLUMN task_id TYPE VARCHAR(255)')
    store.close()
    length = {c["name"]: getattr(c["type"], "length", None) for c in inspect(store.engine).get_columns("trials")}
    assert length["run_id"] == 255  # the old layout, as set up
    store = ResultsStore(store_url)
    try:
        length = {c["name"]: getattr(c["type"], "length", None)
                  for c in inspect(store.engine).get_columns("trials")}
        assert length["run_id"] is None and length["task_id"] is None
        config, trial = _trial(tmp_path, "x" * 1000)
        store.create_run(config, ["x" * 1000], run_id="r" * 300)
        assert store.record("r" * 300, trial) is True
    finally:
        store.close()


def test_token_counts_past_32_bits_are_recorded_and_an_older_postgresql_store_is_widened(tmp_path, store_url):
    """PostgreSQL's INTEGER is 32 bits (SQLite's 64): a trial's 2**31 tokens failed the recording on PostgreSQL."""
    store = ResultsStore(store_url)
    if store_url.startswith("postgresql"):
        with store.engine.begin() as conn:  # the layout of an older tausim: counts as INTEGER
            conn.exec_driver_sql('ALTER TABLE "trials" ALTER COLUMN agent_prompt_tokens TYPE INTEGER')
            conn.exec_driver_sql('ALTER TABLE "trials" ALTER COLUMN user_calls TYPE INTEGER')
        store.close()
        store = ResultsStore(store_url)  # widened on open
    try:
        config, trial = _trial(tmp_path, "big")
        trial.trajectory.agent_usage.prompt_tokens = 2**31 + 5  # hand-set: past 32 bits, within 64
        trial.trajectory.user_usage.calls = 2**40
        store.create_run(config, ["big"], run_id="big")
        assert store.record("big", trial) is True
        (loaded,) = store.load_trials("big")
        assert (loaded.trajectory.agent_usage.prompt_tokens, loaded.trajectory.user_usage.calls) == (2**31 + 5, 2**40)
    finally:
        store.close()


def test_partial_file_keeps_texts_with_unicode_line_breaks(tmp_path):
    from simulator.execution.recording import open_partial
    from simulator.storage.documents import load_partial

    config, trial = _trial(tmp_path, "t")
    odd = trial.model_copy(deep=True)
    odd.trajectory.messages.append(Message(role="user", content="nel\x85 ls\u2028 ps\u2029 fs\x1c vt\x0b ff\x0c"))
    path = tmp_path / "run.json.partial.jsonl"
    handle = open_partial(path, config, 1, [], ["t"])
    handle.write(odd.model_dump_json() + "\n")
    handle.close()
    assert load_partial(path)[1] == [odd]  # str.splitlines() cut this line at U+0085


def test_a_partial_file_s_bad_last_line_is_dropped_only_when_a_crash_cut_it(tmp_path):
    """A last line without its newline is the one a crash cut short (dropped); with its newline it was written
    whole, so a bad one is an error naming the line, as in the middle of the file (it was dropped silently)."""
    from simulator.errors import RunDocumentError
    from simulator.execution.recording import open_partial
    from simulator.storage.documents import load_partial

    config, trial = _trial(tmp_path, "t")
    path = tmp_path / "run.json.partial.jsonl"
    handle = open_partial(path, config, 2, [trial], ["t"])
    handle.close()
    whole = path.read_text()
    path.write_text(whole + '{"task_id": "t", "tri')  # cut short
    assert load_partial(path)[1] == [trial]
    path.write_text(whole + '{"task_id": "t", "trial": "one"}\n')  # complete, and not a trial
    with pytest.raises(RunDocumentError, match=r"run\.json\.partial\.jsonl: line 3"):
        load_partial(path)

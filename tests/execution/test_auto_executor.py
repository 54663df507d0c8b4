"""``--executor auto`` (the default): which executor a run gets, and that it says why."""

import json

import pytest
from typer.testing import CliRunner

from simulator.execution.executors import AUTO_PROCESSES_MIN_CONCURRENCY, choose_executor
from simulator.types.spec import RunSpec, parse_executor


def spec(agent="oracle", user="scripted", concurrency=1, **extra):
    return RunSpec.model_validate({"domain": "retail", "agent": {"name": agent}, "user": {"name": user},
                                   "concurrency": concurrency, **extra})


def test_auto_is_the_default_and_parses():
    assert RunSpec(domain="retail").executor == "auto"
    assert parse_executor("auto") == ("auto", None)


@pytest.mark.parametrize("agent,user", [("oracle", "scripted"), ("reference", "rule"), ("null", "confirming")])
def test_a_model_free_run_takes_threads_at_any_concurrency(agent, user):
    choice = choose_executor(spec(agent, user, concurrency=512), cores=8, dask_installed=True)
    assert choice.executor == "threads" and "no model is called" in choice.reason and agent in choice.reason


@pytest.mark.parametrize("agent,user", [("litellm:gpt-4o", "scripted"), ("oracle", "llm:gpt-4o-mini"),
                                        ("langgraph:m:f", "rule"), ("openai-agents:m:f", "rule")])
def test_many_model_calling_trials_on_several_cores_take_one_process_per_core(agent, user):
    choice = choose_executor(spec(agent, user, concurrency=128), cores=2, dask_installed=True)
    assert choice.executor == "local:2" and "concurrency 128 on 2 cores" in choice.reason


def test_a_judge_or_a_model_fallback_user_counts_as_model_calls():
    judged = spec(concurrency=128, judge={"name": "gpt-4o-mini"})
    assert choose_executor(judged, cores=4, dask_installed=True).executor == "local:4"
    fallback = spec(user="replay:run.json", concurrency=128)
    fallback = fallback.model_copy(update={"user": fallback.user.model_copy(update={"args": {"fallback": "llm:m"}})})
    assert choose_executor(fallback, cores=4, dask_installed=True).executor == "local:4"


def test_threads_below_the_concurrency_bar_on_one_core_or_without_dask():
    low = spec("litellm:m", concurrency=AUTO_PROCESSES_MIN_CONCURRENCY - 1)
    assert choose_executor(low, cores=8, dask_installed=True).executor == "threads"
    at_bar = spec("litellm:m", concurrency=AUTO_PROCESSES_MIN_CONCURRENCY)
    assert choose_executor(at_bar, cores=8, dask_installed=True).executor == "local:8"
    one_core = choose_executor(at_bar, cores=1, dask_installed=True)
    assert one_core.executor == "threads" and "1 usable core" in one_core.reason
    no_dask = choose_executor(at_bar, cores=8, dask_installed=False)
    assert no_dask.executor == "threads" and "Dask is not installed" in no_dask.reason


def test_an_executor_asked_for_is_kept():
    for executor in ("threads", "local:2", "dask://127.0.0.1:8786"):
        choice = choose_executor(spec("litellm:m", concurrency=256, executor=executor), cores=8, dask_installed=True)
        assert choice.executor == executor and "asked for" in choice.reason


def test_tausim_run_says_which_executor_and_why_in_its_header_and_document(tmp_path):
    from simulator.cli import app

    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--task-ids", "cancel-no-longer-needed", "--out", str(out),
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("executor:")]
    assert line == "executor: auto: threads (no model is called: agent oracle, user scripted)"
    doc = json.loads(out.read_text())
    assert doc["executor"] == {"chosen": "threads", "reason": line.removeprefix("executor: ")}
    assert doc["config"]["executor"] == "auto"


def test_only_tausims_own_model_free_runs_are_batched_coarsely_by_dask():
    pytest.importorskip("distributed")
    from simulator.execution.dask_executor import MODEL_FREE_BATCHES_PER_THREAD, DaskExecutor
    from simulator.execution.executors import known_model_free

    assert known_model_free(spec("oracle", "scripted")) and known_model_free(spec("reference:wrong_item=0.1", "rule"))
    assert not known_model_free(spec("py:m:f", "scripted")) and not known_model_free(spec("oracle", "llm:m"))
    assert not known_model_free(spec(judge={"name": "gpt-4o-mini"}))

    class FakeClient:
        def scheduler_info(self):
            return {"workers": {"a": {"nthreads": 1}, "b": {"nthreads": 1}}}

    ex = DaskExecutor.__new__(DaskExecutor)  # no cluster: only the batch arithmetic is under test
    ex.client, ex.model_free = FakeClient(), True
    assert MODEL_FREE_BATCHES_PER_THREAD == 8
    assert ex.batch_size(920) == 58  # 460 trials per thread in 8 batches of 58 (the last of 54): 16 Dask tasks
    assert ex.batch_size(10) == 1  # 5 per thread: never fewer than one trial per batch
    assert ex.batch_size(0) == 1  # nothing left to run (a resumed run, all recorded): a step for range(), not 0
    ex.model_free = False
    assert ex.batch_size(920) == 4

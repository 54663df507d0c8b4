"""Conformance checks run over every registered domain (entry point group tausim.domains)."""

import json

import pytest

from simulator.agents import NullAgent, OracleAgent
from simulator.domain import available_domains, get_domain
from simulator.replay import apply_actions
from simulator.runner import RunConfig, Runner
from simulator.users import scripted_user_factory

DOMAINS = [d for d in available_domains() if get_domain(d).task_splits()]
"""Domains with built-in data and tasks; the tau2-bench worlds (mock, telecom) load the suite's files and are
tested in tests/domains/test_telecom.py and test_mock.py."""


def test_retail_is_registered():
    assert "retail" in DOMAINS


@pytest.fixture(scope="module", params=DOMAINS)
def domain(request):
    return get_domain(request.param)


def test_tools_have_schemas_and_docstrings(domain):
    tb = domain.toolbox()
    assert tb.specs
    for name, spec in tb.specs.items():
        fn = spec.schema["function"]
        assert fn["name"] == name and fn["description"].strip(), name
        params = fn["parameters"]
        assert params["type"] == "object"
        for pname, prop in params["properties"].items():
            assert prop.get("description"), f"{name}.{pname} has no description"
        assert spec.kind in ("read", "write")


def test_policy_is_a_document(domain):
    assert len(domain.policy()) > 500


def test_builtin_round_trip_is_lossless(domain):
    with domain.template().trial() as t:
        dumped = domain.dump(t)
    folder = domain.default_data_dir()
    for table, records in dumped.items():
        original = json.loads((folder / f"{table}.json").read_text())
        assert records == original, table
        assert json.dumps(records) == json.dumps(original), f"{table}: key order or number types differ"


def test_gold_actions_replay_without_tool_bug(domain):
    tasks = domain.load_tasks()
    assert len(tasks) >= 20
    for task in tasks:
        with domain.template().trial() as t:
            outcomes = apply_actions(domain.toolbox(), t, task.gold_actions, raise_on_bug=False)
        assert all(o.status != "tool_bug" for o in outcomes), (task.id, [o.bug for o in outcomes])
        assert all(o.status not in ("unknown_tool", "invalid_arguments") for o in outcomes), task.id


def _run(domain, agent):
    tasks = domain.load_tasks()
    cfg = RunConfig(domain=domain.name, trials=1, concurrency=2)
    return Runner(domain, domain.template(), tasks, agent, scripted_user_factory(), cfg).run()


def test_oracle_passes_every_builtin_task(domain):
    res = _run(domain, OracleAgent)
    failed = [(t.task_id, t.grade.failure if t.grade else t.error) for t in res.trials if not t.passed]
    assert not failed


def test_null_agent_fails_every_builtin_task(domain):
    """Tasks whose goal state equals the initial state (refusals, transfers) carry process rules, so a
    do-nothing agent passes none of them."""
    res = _run(domain, NullAgent)
    passed = [t.task_id for t in res.trials if t.passed]
    assert not passed, f"a do-nothing agent passes {passed}"
    tb = domain.toolbox()
    by_id = {t.id: t for t in domain.load_tasks()}
    for trial in res.trials:
        task = by_id[trial.task_id]
        writes = any(tb.kind(a.name) == "write" for a in task.gold_actions)
        if not writes and not task.required_outputs:  # only the process rules can catch these
            assert trial.grade.failure == "process", (task.id, trial.grade.failure)

"""The built-in domains' task contracts encode their policy's necessary precedence (issue: numbers you can trust).

Each built-in task file states, once, its policy's rules (``process.precedence`` at the file's top): identify the
customer before acting, read a record before changing it. An agent that performs only the gold writes (the faulty
oracle's ``skip_reads``: no identification, no look-ups) must then pass no task the do-nothing agent fails, while
the oracle (the gold actions) still passes every task.
"""

from __future__ import annotations

import pytest

from simulator import RunSpec, build_runner
from simulator.types.results import RunResult

DOMAINS = ["retail", "airline", "returns"]


def _run(domain: str, agent: str) -> RunResult:
    return build_runner(RunSpec(domain=domain, agent=agent, user="rule", preflight=False)).run()


@pytest.fixture(scope="module", params=DOMAINS)
def runs(request: pytest.FixtureRequest) -> tuple[str, dict[str, RunResult]]:
    domain = request.param
    return domain, {a: _run(domain, a) for a in ("oracle", "null", "faulty:skip_reads=1")}


def test_the_oracle_still_passes_every_task(runs):
    domain, r = runs
    failed = [(t.task_id, t.grade.process.violations if t.grade else None) for t in r["oracle"].trials
              if not t.passed]
    assert not failed and len(r["oracle"].trials) >= 20, (domain, failed)


def test_the_writes_alone_pass_no_task_the_do_nothing_agent_fails(runs):
    domain, r = runs
    null_fails = {t.task_id for t in r["null"].trials if not t.passed}
    writes_pass = {t.task_id for t in r["faulty:skip_reads=1"].trials if t.passed}
    assert null_fails, domain
    assert not (writes_pass & null_fails), (domain, sorted(writes_pass & null_fails))


def test_each_failure_of_the_writes_alone_names_the_broken_rule(runs):
    domain, r = runs
    for t in r["faulty:skip_reads=1"].trials:
        assert t.grade is not None
        assert t.trajectory.agent_metadata.get("fault") == "skip_reads", t.task_id
        assert not t.grade.process.passed, (domain, t.task_id)
        assert any(v.startswith("precedence (identify-first)") for v in t.grade.process.violations), (
            domain, t.task_id, t.grade.process.violations)
        # the same finding as a safety violation, of kind policy_rule
        assert any(v.kind == "policy_rule" and "identify-first" in v.detail for v in t.grade.violations or []), (
            domain, t.task_id)


def test_a_change_without_reading_that_record_names_read_before_change(runs):
    domain, r = runs
    tasks = {t.id: t for t in build_runner(RunSpec(domain=domain, preflight=False)).tasks}
    checked = 0
    for t in r["faulty:skip_reads=1"].trials:
        rule = next(p for p in tasks[t.task_id].process.precedence if p.name == "read-before-change")
        if not any(c.name in rule.after_items() for c in t.trajectory.tool_calls):
            continue
        checked += 1
        assert t.grade is not None
        assert any(v.startswith("precedence (read-before-change)") for v in t.grade.process.violations), (
            domain, t.task_id, t.grade.process.violations)
    assert checked >= 5, domain

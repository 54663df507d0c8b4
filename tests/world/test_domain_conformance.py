"""Conformance of every registered domain (entry point group tausim.domains): a thin call of check_domain.

The checks themselves (tool schemas, policy, data round trip, gold replay, read tools never writing, the domain
clock, determinism, oracle passes, do-nothing agent fails, task lint) live in :mod:`simulator.authoring.check`,
shipped so that a third party's CI runs the same; their own tests are in tests/authoring/test_authoring_check.py.
"""

import pytest

from simulator.authoring import check_domain, errors
from simulator.world.domain import available_domains, get_domain

DOMAINS = [d for d in available_domains() if get_domain(d).task_splits()]
"""Domains with built-in data and tasks; the tau2-bench worlds (mock, telecom) load the suite's files and are
tested in tests/domains/test_telecom.py."""


SHIPPED = {"retail", "airline", "returns"}


def test_builtin_domains_are_registered():
    assert SHIPPED <= set(DOMAINS)


@pytest.mark.parametrize("name", DOMAINS)
def test_domain_passes_check_domain(name):
    domain = get_domain(name)
    if name in SHIPPED:  # a user's own domain installed beside them (the scaffold ships 4 tasks) need not have 20
        assert len(domain.load_tasks()) >= 20
    findings = check_domain(domain)
    assert not errors(findings), "\n".join(f.line() for f in errors(findings))
    assert not [f for f in findings if f.rule in ("policy", "round-trip", "tool-schema")]

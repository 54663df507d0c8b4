"""Honest comparisons: runs with different comparability fingerprints are refused by gate, calibrate, judge compare."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.comparability import IncomparableRunsError, check_comparable
from simulator.cli import app
from simulator.storage.fingerprint import fingerprint_differences, fingerprint_of, make_fingerprint


def invoke(*args: Any):
    return CliRunner().invoke(app, [str(a) for a in args])


def config(user: str = "rule", **extra: Any) -> dict[str, Any]:
    return {"domain": "retail", "trials": 2, "user": {"name": user}, "policy_sha256": "p" * 64, **extra}


def doc(user: str = "rule", *, recorded: bool = True, tasks_hash: str = "h1", grader: str = "1",
        basis: tuple[str, ...] = ("state",), **extra: Any) -> dict[str, Any]:
    cfg = config(user, **extra)
    out: dict[str, Any] = {"format": "tausim.run", "version": 1, "config": cfg, "planned_task_ids": ["a", "b"],
                           "trials": [{"task_id": t, "trial": i, "passed": True, "termination_reason": "user_stop"}
                                      for t in ("a", "b") for i in range(2)]}
    if recorded:
        out["fingerprint"] = make_fingerprint(cfg, tasks_hash=tasks_hash, user_prompt_sha256=None,
                                              grader_version=grader, reward_basis=list(basis))
    return out


def test_same_fingerprint_compares():
    assert fingerprint_differences(doc(), doc(), names=("x", "y")).comparable
    assert check_comparable(doc(), doc(), names=("x", "y")) == []


def test_each_part_named():
    a = doc("rule")
    b = doc("llm:openai/gpt-4o", tasks_hash="h2", grader="2", basis=("state", "outputs"), options={"mode": "tau2"})
    cmp = fingerprint_differences(a, b, names=("baseline", "candidate"))
    parts = {p for p, _, _ in cmp.differences}
    # by hand: kind rule -> llm, model None -> gpt-4o, task hash, grader version, reward basis, domain options
    assert parts == {"user.kind", "user.model", "tasks.hash", "grader.version", "grader.reward_basis", "domain.mode"}
    with pytest.raises(IncomparableRunsError, match=r'user\.kind: baseline "rule", candidate "llm"'):
        check_comparable(a, b, names=("baseline", "candidate"))
    notes = check_comparable(a, b, names=("baseline", "candidate"), allow=True)
    assert any(n.startswith("incomparable: grader.version") for n in notes)


def test_exempt_part_not_compared():
    assert check_comparable(doc("rule"), doc("human"), names=("real", "simulated"), exempt=("user",)) == []


def test_old_document_warns_and_compares_what_it_can():
    old, new = doc(recorded=False), doc()
    fp, recorded = fingerprint_of(old)
    assert not recorded and fp["user"]["kind"] == "rule" and fp["grader"]["version"] is None
    notes = check_comparable(old, new, names=("baseline", "candidate"))
    assert len(notes) == 1 and "baseline recorded no comparability fingerprint" in notes[0]
    assert "grader.version" in notes[0] and "tasks.hash" in notes[0]
    # what the old config still tells is compared: another user kind is refused
    with pytest.raises(IncomparableRunsError, match="user.kind"):
        check_comparable(doc(recorded=False), doc("llm:m", recorded=False), names=("a", "b"))


def test_gate_refuses_runs_graded_with_different_users(tmp_path):
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(json.dumps(doc("rule")))
    cand.write_text(json.dumps(doc("llm:openai/gpt-4o")))
    r = invoke("gate", "--baseline", base, "--candidate", cand, "--k", "2")
    assert r.exit_code == 2, r.output
    assert "user.kind" in r.output and "user.model" in r.output and "--allow-incomparable" in r.output
    r = invoke("gate", "--baseline", base, "--candidate", cand, "--k", "2", "--allow-incomparable")
    assert r.exit_code == 0, r.output
    assert r.output.index("incomparable: user.kind") < r.output.index("gate: pass")


def test_calibrate_and_judge_compare_refuse(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc("rule")))
    b.write_text(json.dumps(doc("rule", tasks_hash="other")))
    r = invoke("calibrate", "--real", a, "--sim", b)
    assert r.exit_code == 2 and "tasks.hash" in r.output, r.output
    r = invoke("judge", "compare", a, b, "--criterion", "c", "--model", "m")
    assert r.exit_code == 2 and "tasks.hash" in r.output, r.output


def test_real_runs_record_a_fingerprint(tmp_path):
    import simulator

    outs = []
    for user in ("rule", "scripted"):
        spec = simulator.RunSpec(domain="retail", agent="oracle", user=user, task_ids=None, trials=1)
        out = tmp_path / f"{user}.json"
        simulator.run(spec.model_copy(update={"tags": None}), out=out)
        outs.append(json.loads(out.read_text()))
    fp, recorded = fingerprint_of(outs[0])
    assert recorded and fp["grader"]["version"] and fp["tasks"]["hash"] and fp["policy"]
    assert "state" in fp["grader"]["reward_basis"]
    cmp = fingerprint_differences(outs[0], outs[1], names=("a", "b"))
    assert [p for p, _, _ in cmp.differences] == ["user.kind"]


def test_a_run_with_a_held_side_is_not_compared_with_one_where_both_vary():
    """tausim run --vary user: the agent's seed held per task correlates its trials (pass^k changes)."""
    held, default = doc(vary="user"), doc(vary="both")
    assert "vary" in held["fingerprint"] and "vary" not in default["fingerprint"]  # default fingerprints unchanged
    cmp = fingerprint_differences(default, held, names=("baseline", "candidate"))
    assert cmp.differences == [("vary", "both", "user")] and cmp.unknown == []
    # an older document (no vary, no fingerprint) compares with a default run, nothing unknown about vary
    old = fingerprint_differences(doc(recorded=False), default, names=("old", "new"))
    assert "vary" not in old.unknown and old.comparable

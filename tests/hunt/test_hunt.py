"""Failure hunting: snapshot and fork, signatures and clusters, the search, regression cases (simulator.hunt).

`tausim hunt`: the command, and the errors it stops on before hunting (no model key, an unwritable path, --prefix
without --export).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import SnapshotError, TausimError
from simulator.execution.build import build_runner
from simulator.execution.runner import Runner
from simulator.grading.signature import core, signature
from simulator.hunt import MOVES, Harness, at_decisions, every_turn, export_cases, hunt, run_case
from simulator.types.spec import RunSpec
from simulator.types.tasks import load_tasks
from simulator.types.trajectory import Trajectory
from simulator.world.database import snapshot as db_snapshot
from simulator.world.replay import prepare_trial, replay_trajectory
from tests._support.hunt_runners import FAULTS, PERSONAS, make_runner


@pytest.fixture(scope="module")
def retail() -> Runner:
    return make_runner("retail", f"reference:{FAULTS}", PERSONAS)


@pytest.fixture(scope="module")
def airline() -> Runner:
    return make_runner("airline", f"reference:{FAULTS}", PERSONAS)


def _kinds(runner: Runner) -> dict[str, str | None]:
    return {n: ("ending" if s.ends_conversation else s.kind) for n, s in runner.domain.toolbox().specs.items()}


def _calls(traj: Trajectory) -> list[tuple[object, ...]]:
    return [(c.step, c.name, c.arguments, c.status, c.content, c.requestor) for c in traj.tool_calls]


@pytest.mark.parametrize("domain", ["retail", "airline"])
@pytest.mark.parametrize("path", ["as_captured", "replayed"])
def test_forking_an_unchanged_snapshot_reproduces_the_original_continuation(domain, path, request):
    runner: Runner = request.getfixturevalue(domain)
    harness = Harness(runner)
    for task in runner.tasks[:4]:
        orig = harness.play(task, 0, "impatient", capture=every_turn)
        assert len(orig.snapshots) >= 2  # the opening and at least one answer
        for snap in orig.snapshots:
            if path == "replayed":  # the actors rebuilt from the seed and the logged calls, not unpickled
                snap = dataclasses.replace(snap, actors=None)
            fork = harness.fork(snap)
            assert [m.model_dump() for m in fork.result.trajectory.messages] == \
                [m.model_dump() for m in orig.result.trajectory.messages]
            assert _calls(fork.result.trajectory) == _calls(orig.result.trajectory)
            assert fork.result.passed == orig.result.passed
            assert fork.result.termination_reason == orig.result.termination_reason
            assert fork.result.grade is not None and orig.result.grade is not None
            assert fork.result.grade.failure == orig.result.grade.failure
            assert fork.result.trajectory.agent_metadata == orig.result.trajectory.agent_metadata
            # only the continuation is played again
            assert fork.fresh_agent_turns == len(orig.result.trajectory.progress) - snap.agent_turns


def test_the_snapshot_holds_turn_user_state_and_generator_states(retail):
    harness = Harness(retail)
    orig = harness.play(retail.tasks[0], 0, "policy-pusher", capture=every_turn)
    turns = [s.turn for s in orig.snapshots]
    assert turns == list(range(len(turns)))  # one per user reply, in order
    first = orig.snapshots[0]
    assert first.kind is None and first.agent_turns == 0 and first.conversation().trajectory.messages == []
    assert first.user_state == {"intent": 0, "stale": 0, "persona": "policy-pusher"}
    assert "trial" in first.rng and "agent._faults.rng" in first.rng
    later = orig.snapshots[-1]
    rng = "agent._faults.rng"
    assert later.rng[rng] != first.rng[rng] or not orig.result.trajectory.agent_metadata.get("faults")


def test_a_fork_resumes_the_database_the_original_trial_had_at_that_turn(retail):
    """The state at the fork equals the original trial's state then (rebuilt independently by replaying calls)."""
    harness = Harness(retail)
    spec = retail.domain.state_spec()
    task = next(t for t in retail.tasks if any(a.name.startswith(("cancel", "modify", "return", "exchange"))
                                               for a in t.gold_actions))
    orig = harness.play(task, 0, "cooperative", capture=every_turn)
    assert orig.result.trajectory.tool_calls
    checked = 0
    for snap in orig.snapshots[1:]:
        n_calls = len(snap.conversation().trajectory.tool_calls)
        prefix = orig.result.trajectory.model_copy(update={"tool_calls": orig.result.trajectory.tool_calls[:n_calls]})
        with retail.template.trial() as db:  # independent: the template, the fixture and the calls made so far
            prepare_trial(retail.domain, db, task)
            replay_trajectory(retail.domain.toolbox(), db, prefix)
            expected = db_snapshot(db.raw, spec)
        fork = harness.fork(snap, capture=every_turn)
        at_fork = fork.snapshots[0]  # taken by the fork at its first user turn: the fork point
        assert at_fork.turn == snap.turn
        raw = sqlite3.connect(":memory:")
        raw.deserialize(at_fork.database)
        assert db_snapshot(raw, spec) == expected
        raw.close()
        checked += 1
    assert checked >= 2


def test_a_user_move_replaces_the_next_user_turn_and_keeps_the_prefix(retail):
    harness = Harness(retail)
    orig = harness.play(retail.tasks[1], 0, "cooperative", capture=at_decisions)
    snap = orig.snapshots[0]
    fork = harness.fork(snap, user_move="off_topic")
    users = [m.content for m in fork.result.trajectory.messages if m.role == "user"]
    before = [m.content for m in snap.conversation().trajectory.messages if m.role == "user"]
    assert users[:len(before)] == before
    assert users[len(before)] == "Sorry, unrelated question first: do you also sell gift wrapping?"
    assert fork.moves == {snap.turn: "off_topic"}
    # wrong then correct: the digits of the user's own answer altered, then the answer itself
    fork = harness.fork(snap, user_move="wrong_then_correct")
    users = [m.content or "" for m in fork.result.trajectory.messages if m.role == "user"]
    wrong, fixed = users[len(before)], users[len(before) + 1]
    assert fixed.startswith("Sorry, I got that wrong. ")
    right = fixed.removeprefix("Sorry, I got that wrong. ")
    assert len(wrong) == len(right) and wrong != right
    assert all((c == d) if not d.isdigit() else (int(c) == (int(d) + 3) % 10)
               for c, d in zip(wrong, right, strict=True))


def test_switching_persona_at_a_fork(retail):
    harness = Harness(retail)
    orig = harness.play(retail.tasks[0], 0, "cooperative", capture=at_decisions)
    fork = harness.fork(orig.snapshots[0], persona="impatient", capture=every_turn)
    assert fork.result.trajectory.user_metadata["persona"] == "impatient"
    assert fork.snapshots[-1].persona == "impatient"
    assert fork.moves == {orig.snapshots[0].turn: "switch_persona:impatient"}


def test_bad_moves_and_personas_are_snapshot_errors(retail):
    harness = Harness(retail)
    snap = harness.play(retail.tasks[0], 0, None, capture=at_decisions).snapshots[0]
    with pytest.raises(SnapshotError, match="unknown user move 'sing'"):
        harness.fork(snap, user_move="sing")
    with pytest.raises(SnapshotError, match="unknown persona 'pirate'"):
        harness.fork(snap, persona="pirate")
    assert issubclass(SnapshotError, TausimError) and issubclass(SnapshotError, ValueError)
    assert "deny" in MOVES and "switch_persona" in MOVES


def test_a_fork_that_does_not_replay_is_refused(retail):
    harness = Harness(retail)
    snap = harness.play(retail.tasks[0], 0, None, capture=every_turn).snapshots[-1]
    bad = dataclasses.replace(snap, actors=None, calls=tuple(c for c in snap.calls if c[0] != "a")[:-1])
    with pytest.raises(SnapshotError, match="does not replay"):
        harness.fork(bad)


def test_signatures_name_layer_reason_first_difference_and_divergence():
    runner = make_runner("retail", "reference:wrong_item=1.0")
    kinds = _kinds(runner)
    task = next(t for t in runner.tasks if t.id == "modify-items-two-refund")
    res = runner.run_trial(task, 0)
    assert not res.passed
    sig = signature(task, res, kinds)
    assert sig is not None and res.grade is not None
    assert sig[0] == res.grade.failure and sig[1] == res.termination_reason
    table, field = sig[2].split(".")  # the first differing field: a column of a compared table
    tables = {t.name: t for t in runner.domain.state_spec().tables()}
    assert table in tables and field in tables[table].columns
    # the agent's last call before its first write that differs from gold (+missing: a gold write never made)
    assert sig[4].removesuffix("+missing") in kinds
    assert core(sig) == (sig[0], sig[2], sig[3], sig[4])
    clean = make_runner("retail", "reference")
    ok = clean.run_trial(task, 0)
    assert ok.passed and signature(task, ok, kinds) is None


def test_hunt_is_deterministic_for_a_seed_and_spends_its_budget(retail):
    a = hunt(retail, 120, seed=3)
    b = hunt(retail, 120, seed=3)
    key = [(t.result.task_id, t.result.persona, t.result.trial, tuple(sorted(t.moves.items())), t.reseeded,
            t.result.passed) for t in a.trials]
    assert key == [(t.result.task_id, t.result.persona, t.result.trial, tuple(sorted(t.moves.items())), t.reseeded,
                    t.result.passed) for t in b.trials]
    assert [c.signature for c in a.clusters] == [c.signature for c in b.clusters]
    assert 120 <= a.agent_turns < 120 + 40
    assert a.agent_turns == sum(t.fresh_agent_turns for t in a.trials)
    assert any(t.parent is not None for t in a.trials)  # it forked
    assert a.saved_turns == sum(t.parent.agent_turns for t in a.trials if t.parent is not None)
    c = hunt(retail, 120, seed=4)
    assert [t.result.task_id for t in c.trials] != [t.result.task_id for t in a.trials]


@pytest.fixture(scope="module")
def exported(retail, tmp_path_factory):
    result = hunt(retail, 600, seed=1)
    clean = make_runner("retail", "reference")
    doc, notes = export_cases(retail, result, clean=clean)
    path = tmp_path_factory.mktemp("hunt") / "regressions.json"
    path.write_text(json.dumps(doc))
    return result, doc, notes, path, clean


def test_every_exported_case_fails_on_the_faulty_agent_and_passes_on_the_clean_one(retail, exported):
    result, doc, notes, path, clean = exported
    assert doc["tasks"], f"no case exported; notes: {notes}"
    assert len(doc["tasks"]) + len(notes) == len(result.clusters)
    cases = load_tasks(path, domain="retail")  # the task format round-trips
    from simulator.authoring import errors as lint_errors
    from simulator.authoring.lint import lint_tasks

    assert lint_errors(lint_tasks(retail.domain, cases, template=retail.template)) == []
    by_sig = {c.case_id: c for c in result.clusters}
    kinds = _kinds(retail)
    for case in cases:
        assert case.seed is not None and "hunt" in case.tags
        assert case.scenario.persona is None or case.scenario.persona.name in PERSONAS
        faulty = run_case(retail, case)
        assert not faulty.passed, case.id
        sig = signature(case, faulty, kinds)
        assert sig is not None and core(sig) == core(by_sig[case.id].signature)
        assert run_case(clean, case).passed, case.id


def test_tausim_run_replays_an_exported_file(exported):
    from typer.testing import CliRunner

    from simulator.cli import app

    _, doc, _, path, _ = exported
    out = Path(str(path) + ".run.json")
    cli = CliRunner().invoke(app, ["run", "--domain", "retail", "--tasks", str(path), "--user", "rule",
                                   "--agent", "reference", "--out", str(out), "--no-preflight"])
    assert cli.exit_code == 0, cli.output
    run = json.loads(out.read_text())
    trials = run["trials"]
    assert len(trials) == len(doc["tasks"]) and all(t["passed"] for t in trials)  # the clean agent passes
    assert {t["seed"] for t in trials} == {c["seed"] for c in doc["tasks"]}  # the pinned seeds


def test_a_cached_llm_agent_forks_from_its_message_history_without_model_calls(litellm, monkeypatch, tmp_path):
    """An LLM agent is resumed by replaying its steps: the response cache answers the whole prefix and, for an
    unchanged snapshot, the whole continuation too (the same requests)."""
    from tests._support.fake_llm import register

    replies = [f"Thanks. Could you tell me your email address, please? ({i})" for i in range(40)]
    providers = register(monkeypatch, litellm, {"scripted": replies})
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    spec = RunSpec(domain="retail", agent="litellm:scripted/m", user="rule", max_turns=8, preflight=False,
                   cache=str(tmp_path / "cache.sqlite"))
    runner = build_runner(spec)
    harness = Harness(runner)
    orig = harness.play(runner.tasks[0], 0, None, capture=every_turn)
    calls = len(providers["scripted"].calls)
    assert calls >= 3 and orig.result.termination_reason == "max_turns"
    for snap in orig.snapshots:
        fork = harness.fork(dataclasses.replace(snap, actors=None))
        assert [m.model_dump() for m in fork.result.trajectory.messages] == \
            [m.model_dump() for m in orig.result.trajectory.messages]
    assert len(providers["scripted"].calls) == calls  # every step of every fork came from the cache


def test_tausim_hunt_command_writes_summary_and_cases(tmp_path):
    from typer.testing import CliRunner

    from simulator.cli import app

    out, export = tmp_path / "hunt.json", tmp_path / "regressions.json"
    args = ["hunt", "--domain", "retail", "--agent", f"reference:{FAULTS}", "--personas", "cooperative,impatient",
            "--budget", "150", "--seed", "2", "--out", str(out), "--export", str(export)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    doc = json.loads(out.read_text())
    assert doc["agent_turns"] >= 150 and doc["trials"] >= doc["forks"] > 0
    assert doc["signatures"] == len(doc["clusters"])
    assert all(c["count"] >= 1 and 0 <= c["budget_share"] <= 1 for c in doc["clusters"])
    cases = load_tasks(export, domain="retail")
    assert {c.id for c in cases} <= {c["id"] for c in doc["clusters"]}
    again = CliRunner().invoke(app, [*args[:-4], "--out", str(tmp_path / "again.json")])
    assert again.exit_code == 0, again.output
    again_doc = json.loads((tmp_path / "again.json").read_text())  # the same seed: the same hunt
    assert [c["signature"] for c in again_doc["clusters"]] == [c["signature"] for c in doc["clusters"]]
    assert again_doc["agent_turns"] == doc["agent_turns"]
    bad = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--personas", "no-such-persona"])
    assert bad.exit_code == 2 and "no-such-persona" in bad.output


def test_hunt_without_the_model_key_exits_2_naming_it(monkeypatch):
    """A hunt with an LLM user and no key used to play every trial (all setup_error), report them as failure
    clusters and exit 0."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--agent", "reference", "--user",
                                   "llm:openai/gpt-4o-mini", "--budget", "20"])
    assert res.exit_code == 2, res.output
    assert "OPENAI_API_KEY" in res.output and "Failure clusters" not in res.output


def test_hunt_stops_on_a_setup_error_trial():
    """Without the pre-flight (library use), the first trial ending setup_error stops the hunt."""
    from simulator.errors import SetupError
    from simulator.execution.build import build_runner
    from simulator.hunt import hunt
    from simulator.types.spec import RunSpec

    runner = build_runner(RunSpec(domain="retail", agent="reference", user="llm:openai/gpt-4o-mini",
                                  task_ids=["cancel-no-longer-needed"], preflight=False))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(SetupError, match=r"cancel-no-longer-needed.*setup_error"):
            hunt(runner, 20)


@pytest.mark.parametrize("option", ["--export", "--out"])
def test_hunt_to_an_unwritable_path_exits_2_before_hunting(tmp_path, option):
    target = tmp_path / "gone" / "x.json"
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "20", option, str(target)])
    assert res.exit_code == 2, res.output
    assert f"{option} {target}" in res.output.replace("\n", "") and "Failure clusters" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_hunt_prefix_without_export_exits_2():
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "20", "--prefix"])
    assert res.exit_code == 2, res.output
    assert "--prefix" in res.output and "--export" in res.output


@pytest.mark.parametrize("vary", ["user", "agent"])
def test_a_hunt_refuses_a_held_side_naming_why(vary):
    """A spec holding one side's seed (``vary`` user/agent) used to be hunted with both sides on the trial seed,
    silently: its exported cases pin one seed, which a held side does not replay from."""
    from simulator.hunt.session import run_hunt

    spec = RunSpec(domain="retail", agent="reference", user="rule", task_ids=["cancel-no-longer-needed"],
                   vary=vary, preflight=False)
    with pytest.raises(ValueError, match=rf"vary {vary}: tausim hunt varies both sides.*tausim variance"):
        run_hunt(spec, 10)
    with pytest.raises(ValueError, match=rf"vary {vary}"):
        Harness(build_runner(spec))


def test_hunt_vary_option_refuses_a_held_side_and_takes_both(monkeypatch):
    from simulator.cli import hunt as hunt_cli

    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "5", "--vary", "user"])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--vary user" in text and "varies both sides" in text and "Failure clusters" not in text
    seen: dict[str, RunSpec] = {}

    def fake(spec: RunSpec, *a: object, **kw: object) -> object:
        seen["spec"] = spec
        raise ValueError("stop here")

    monkeypatch.setattr(hunt_cli, "run_hunt", fake)
    res = CliRunner().invoke(app, ["hunt", "--domain", "retail", "--budget", "5", "--vary", "both"])
    assert res.exit_code == 2 and "stop here" in res.output
    assert seen["spec"].vary == "both"


@pytest.mark.parametrize(("side", "raised"), [("agent", RuntimeError("no model")), ("agent", KeyboardInterrupt()),
                                              ("user", GeneratorExit())])
def test_a_failing_factory_is_the_trials_error_and_the_hunt_goes_on(side, raised):
    import threading

    runner = make_runner("retail", "reference:repeat_question=0.5")
    built = {"n": 0}
    factory = runner.agent_factory if side == "agent" else runner.user_factory

    def flaky(ctx):
        built["n"] += 1
        if built["n"] % 3 == 0:
            raise raised
        return factory(ctx)

    if side == "agent":
        runner.agent_factory = flaky
    else:
        runner.user_factory = flaky
    box: dict = {}
    # a KeyboardInterrupt from the agent's code is its own failure off the main thread (on it: the user's Ctrl-C)
    worker = threading.Thread(target=lambda: box.update(result=hunt(runner, 60, seed=2)))
    worker.start()
    worker.join(120)
    assert not worker.is_alive() and "result" in box, "the hunt stopped or hung"
    result = box["result"]
    failed = [t for t in result.trials if t.result.error and "factory failed" in t.result.error]
    assert failed, "every third factory call raised: some trials must have ended so"
    for t in failed:
        assert t.result.termination_reason == f"{side}_error" and not t.result.passed
        assert type(raised).__name__ in t.result.error and t.fresh_agent_turns == 1
    assert any("factory failed" not in (t.result.error or "") for t in result.trials)  # the others were played
    assert result.agent_turns >= 60  # the budget was spent: the hunt ended on its own




_BUILDS: dict = {"n": 0, "inner": None}  # the flaky factory's count (reset by its test)


def _second_build_fails(ctx):
    """An agent factory whose second build fails (the pre-flight's is the first, the hunt's async check the second)."""
    _BUILDS["n"] += 1
    if _BUILDS["n"] == 2:
        raise GeneratorExit("a flaky build")
    if _BUILDS["inner"] is None:
        _BUILDS["inner"] = make_runner("retail", "reference").agent_factory
    return _BUILDS["inner"](ctx)


def test_a_flaky_factory_at_the_async_agent_check_does_not_stop_the_hunt():
    import importlib

    from simulator.hunt.session import run_hunt

    builds = importlib.import_module("tests.hunt.test_hunt")._BUILDS  # the module the py: agent spec imports
    builds["n"] = 0
    spec = RunSpec(domain="retail", agent="py:tests.hunt.test_hunt:_second_build_fails", user="rule",
                   task_ids=["cancel-no-longer-needed"])
    found = run_hunt(spec, 8)  # the check's build raised GeneratorExit: it stopped the hunt with it
    assert builds["n"] > 2 and found.result.trials
    assert all(t.result.termination_reason != "agent_error" for t in found.result.trials)

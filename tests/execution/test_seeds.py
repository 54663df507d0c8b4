"""Each side's seed under RunSpec.vary (simulator.execution.seeds): what each side of a trial is built with."""

import hashlib

import pytest

from simulator.agents import OracleAgent
from simulator.execution.runner import Runner, derive_seed
from simulator.execution.seeds import side_seed, trial_seeds
from simulator.types.results import TrialResult
from simulator.types.spec import RunSpec
from simulator.users import scripted_user_factory
from tests._support.toy import BankDomain, write_data
from tests.execution.test_runner import TASKS


def test_side_seed_is_the_documented_digest():
    expected = int.from_bytes(hashlib.sha256(b"12345/agent").digest()[:8], "big")
    assert side_seed(12345, "agent") == expected
    assert side_seed(12345, "user") != expected
    with pytest.raises(ValueError, match="side"):
        side_seed(1, "judge")  # type: ignore[arg-type]


def test_trial_seeds_per_condition():
    both = trial_seeds(7, 3, "both")
    assert (both.agent, both.user, both.faults, both.shared) == (7, 7, 7, True)
    user = trial_seeds(7, 3, "user")  # the agent held at the task's trial-0 draw, the user keeps the trial seed
    assert (user.agent, user.user, user.faults, user.shared) == (side_seed(3, "agent"), 7, 7, False)
    agent = trial_seeds(7, 3, "agent")
    assert (agent.agent, agent.user, agent.faults) == (7, side_seed(3, "user"), side_seed(3, "user"))
    with pytest.raises(ValueError, match="vary"):
        trial_seeds(7, 3, "neither")  # type: ignore[arg-type]


def test_the_spec_refuses_an_unknown_vary():
    with pytest.raises(ValueError, match="vary"):
        RunSpec(domain="bank", vary="judge")
    assert RunSpec(domain="bank").vary == "both"


def built_with(tmp_path, vary, trials=3):
    """Run the toy tasks; return the contexts each side was built with, by (task, trial)."""
    seen: dict[tuple[str, int, str], object] = {}
    users = scripted_user_factory()

    def agent(ctx):
        seen[(ctx.task.id, ctx.trial_index, "agent")] = ctx
        return OracleAgent(ctx)

    def user(ctx):
        seen[(ctx.task.id, ctx.trial_index, "user")] = ctx
        return users(ctx)

    dom = BankDomain()
    cfg = RunSpec(domain="bank", agent="x", trials=trials, seed=5, vary=vary)
    res = Runner(dom, dom.template(write_data(tmp_path / vary)), TASKS, agent, user, cfg).run()
    assert all(t.passed for t in res.trials)
    return seen, res


def test_both_builds_both_sides_with_one_context_as_before(tmp_path):
    seen, res = built_with(tmp_path, "both")
    for t in res.trials:
        a, u = seen[(t.task_id, t.trial, "agent")], seen[(t.task_id, t.trial, "user")]
        assert a is u  # one context, one generator shared by both sides (the behaviour before `vary`)
        assert a.seed == t.seed == derive_seed(5, t.task_id, t.trial)
        assert t.side_seeds is None and "side_seeds" not in t.model_dump(mode="json")  # records as before


@pytest.mark.parametrize(("vary", "held", "varies"), [("user", "agent", "user"), ("agent", "user", "agent")])
def test_one_side_held_for_every_trial_of_a_task(tmp_path, vary, held, varies):
    seen, res = built_with(tmp_path, vary)
    for t in res.trials:
        ctx = {s: seen[(t.task_id, t.trial, s)] for s in ("agent", "user")}
        assert ctx["agent"] is not ctx["user"] and ctx["agent"].rng is not ctx["user"].rng
        assert t.seed == derive_seed(5, t.task_id, t.trial)  # the recorded trial seed does not change
        assert ctx[varies].seed == t.seed  # the varying side keeps the seed it has in a `both` run
        assert ctx[held].seed == side_seed(derive_seed(5, t.task_id, 0), held)  # same in every trial of the task
        # the trial records what each side used (the faults are the user's side, see simulator.execution.seeds)
        assert t.side_seeds == {"agent": ctx["agent"].seed, "user": ctx["user"].seed, "faults": ctx["user"].seed}
        assert TrialResult.model_validate_json(t.model_dump_json()).side_seeds == t.side_seeds
    held_seeds = {seen[(t.task_id, t.trial, held)].seed for t in res.trials if t.task_id == "move"}
    varying = {seen[(t.task_id, t.trial, varies)].seed for t in res.trials if t.task_id == "move"}
    assert len(held_seeds) == 1 and len(varying) == 3


def test_a_both_run_derives_no_held_seed(tmp_path, monkeypatch):
    """``vary="both"`` holds no side: a trial derives its own seed only, never its task's trial-0 seed."""
    derived: list[tuple[str, int]] = []
    real = Runner.trial_seed

    def counting(self, task, trial_index):
        derived.append((task.id, trial_index))
        return real(self, task, trial_index)

    monkeypatch.setattr(Runner, "trial_seed", counting)
    seen, res = built_with(tmp_path, "both", trials=3)
    assert {i for _, i in derived} == {0, 1, 2}
    later = [t for t in res.trials if t.trial == 2]
    assert later and all(seen[(t.task_id, 2, "agent")].seed == derive_seed(5, t.task_id, 2) for t in later)
    # by hand: each trial asks for its own index; a trial-0 seed asked for by trial 1 or 2 would be a held seed
    per_trial = {i: sum(1 for _, j in derived if j == i) for i in (0, 1, 2)}
    assert per_trial[1] == per_trial[2] == per_trial[0]

"""The persona dimension of runs: task x persona x trial, seeds shared across personas, by_persona metrics,
the store key, resume, reports and the gate, compared with counts worked out by hand."""

import json

import pytest
from typer.testing import CliRunner

from personas.loader import load_personas
from simulator.agents import OracleAgent
from simulator.analysis.gate import run_outcomes
from simulator.cli import app
from simulator.execution.runner import Runner, run_summary_json
from simulator.report import analyze_run
from simulator.stats.summaries import cell_id, persona_metrics, run_metrics
from simulator.storage.store import ResultsStore
from simulator.types.messages import UserTurn
from simulator.types.spec import RunSpec
from simulator.types.tasks import parse_tasks
from tests._support.toy import BankDomain, write_data

TASKS = parse_tasks({"format": "tausim.tasks", "version": 1, "tasks": [
    {"id": "move", "scenario": {"instructions": "move $10 from A1 to B2"},
     "gold_actions": [{"name": "transfer", "arguments": {"src": "A1", "dst": "B2", "amount": 10}}]},
    {"id": "ask", "scenario": {"instructions": "ask your balance"},
     "gold_actions": [{"name": "get_balance", "arguments": {"account_id": "A1"}}], "required_outputs": ["100"]},
]})


class PersonaUser:
    """A test user: a persona with patience 3 or less gives up at once; any other says one line and stops."""

    def __init__(self, ctx):
        self.persona = ctx.persona
        self.seed = ctx.seed
        self.turn = 0
        self.metadata = {"persona": None if ctx.persona is None else ctx.persona.name,
                         "flags": ["user_leak"] if ctx.persona is not None and ctx.persona.name == "verbose" else []}

    def reply(self, messages):
        self.turn += 1
        if self.persona is not None and self.persona.patience is not None and self.persona.patience <= 3:
            return UserTurn(content=self.persona.abandonment_phrases[0], abandon=True)
        if self.turn == 1:
            return UserTurn(content="please do it")
        return UserTurn(content="", stop=True)


@pytest.fixture()
def bank(tmp_path):
    dom = BankDomain()
    return dom, dom.template(write_data(tmp_path / "d"))


def persona_run(bank, names, trials=2, only=None):
    dom, tpl = bank
    found = load_personas(names)
    cfg = RunSpec(domain="bank", agent="oracle", user="py:test", trials=trials, personas=names)
    runner = Runner(dom, tpl, TASKS, OracleAgent, PersonaUser, cfg, personas=found)
    return runner, runner.run(only=only)


def test_plan_is_task_by_persona_by_trial_with_shared_seeds(bank):
    runner, res = persona_run(bank, ["cooperative", "impatient", "verbose"], trials=2)
    assert len(runner.planned()) == 2 * 3 * 2
    assert [(t.task_id, t.persona, t.trial) for t in res.trials] == [
        (task, p, i) for task in ("move", "ask") for p in ("cooperative", "impatient", "verbose") for i in (0, 1)]
    seeds = {(t.task_id, t.trial): set() for t in res.trials}
    for t in res.trials:
        seeds[(t.task_id, t.trial)].add(t.seed)
    assert all(len(s) == 1 for s in seeds.values())  # common random numbers across personas
    # cooperative and verbose (patience none and 10) pass every trial; impatient (patience 3) abandons at once
    by = {p: [t for t in res.trials if t.persona == p] for p in ("cooperative", "impatient", "verbose")}
    assert all(t.passed for t in by["cooperative"] + by["verbose"])
    assert all(t.termination_reason == "user_abandon" and not t.passed for t in by["impatient"])
    assert all(t.trajectory.turns == 1 for t in by["impatient"])  # its one (abandonment) message


def test_by_persona_in_the_out_document_matches_hand_counts(bank):
    _, res = persona_run(bank, ["cooperative", "impatient", "verbose"], trials=2)
    doc = run_summary_json(res)
    assert (doc["planned"], doc["recorded"], doc["duplicates"]) == (12, 12, 0)
    by = doc["by_persona"]
    assert set(by) == {"cooperative", "impatient", "verbose"}
    assert by["cooperative"]["pass^1"] == 1.0 and by["cooperative"]["pass^2"] == 1.0
    assert by["impatient"]["pass^1"] == 0.0 and by["impatient"]["abandon_rate"] == 1.0
    assert by["impatient"]["mean_turns_to_abandon"] == 1.0
    assert by["cooperative"]["abandon_rate"] == 0.0 and by["cooperative"]["mean_turns_to_abandon"] is None
    assert by["verbose"]["user_flags"] == {"user_leak": 4} and by["cooperative"]["user_flags"] == {}
    assert all(by[p]["trials"] == 4 for p in by)
    # the whole run: 6 cells (task@persona), 4 of them always passing -> pass^1 = 4/6
    assert doc["metrics"]["tasks"] == 6
    assert doc["metrics"]["pass^1"] == pytest.approx(4 / 6)
    assert doc["metrics"]["abandonment_rate"] == pytest.approx(4 / 12)
    assert all(t["persona"] in by for t in doc["trials"])


def test_persona_metrics_by_hand():
    def rec(task, persona, i, passed, reason="user_stop", turns=4):
        return {"task_id": task, "persona": persona, "trial": i, "passed": passed, "termination_reason": reason,
                "grade": None, "trajectory": {"turns": turns}, "duration_s": 0.1}

    trials = [rec("x", "a", 0, True), rec("x", "a", 1, False, "user_abandon", 6),
              rec("y", "a", 0, True), rec("y", "a", 1, True),
              rec("x", "b", 0, False, "user_abandon", 3), rec("x", "b", 1, False, "user_abandon", 5),
              rec("y", "b", 0, True), rec("y", "b", 1, False)]
    by = persona_metrics(trials, ["x", "y"], 2, ["a", "b"])
    # a: x passes 1 of 2, y 2 of 2 -> pass^1 = (0.5 + 1) / 2; pass^2 = (0 + 1) / 2
    assert by["a"]["pass^1"] == pytest.approx(0.75) and by["a"]["pass^2"] == pytest.approx(0.5)
    assert by["a"]["abandon_rate"] == pytest.approx(1 / 4) and by["a"]["mean_turns_to_abandon"] == 6.0
    # b: x 0 of 2, y 1 of 2 -> pass^1 = 0.25, pass^2 = 0
    assert by["b"]["pass^1"] == pytest.approx(0.25) and by["b"]["pass^2"] == 0.0
    assert by["b"]["abandon_rate"] == pytest.approx(2 / 4) and by["b"]["mean_turns_to_abandon"] == 4.0
    whole = run_metrics(trials, ["x", "y"], 2, personas=["a", "b"])
    assert whole["tasks"] == 4 and whole["pass^1"] == pytest.approx((0.5 + 1 + 0 + 0.5) / 4)
    assert whole["by_persona"] == by
    with pytest.raises(ValueError, match="persona 'a'"):
        persona_metrics(trials[1:], ["x", "y"], 2, ["a", "b"])  # a trial of persona a is missing


def test_cell_id():
    assert cell_id("t1", None) == "t1" and cell_id("t1", "") == "t1" and cell_id("t1", "terse") == "t1@terse"


def test_runner_refuses_personas_that_do_not_match_the_config(bank):
    dom, tpl = bank
    cfg = RunSpec(domain="bank", trials=1, personas=["terse"])
    with pytest.raises(ValueError, match="do not match"):
        Runner(dom, tpl, TASKS, OracleAgent, PersonaUser, cfg, personas=load_personas(["verbose"]))


def test_store_keys_resume_and_reports_with_personas(bank, store_url):
    runner, res = persona_run(bank, ["cooperative", "impatient"], trials=2)
    with ResultsStore(store_url) as st:  # SQLite and PostgreSQL
        st.create_run(runner.config, [t.id for t in TASKS], run_id="R")
        for t in res.trials[:5]:
            assert st.record("R", t) is True
        assert st.record("R", res.trials[0]) is False  # the same (task, persona, trial) is refused
        info = st.get_run("R")
        assert info.planned == 8
        todo = {k for k in info.planned_pairs() if k not in st.recorded_keys("R")}
        # recorded: move x (cooperative, impatient) x (0, 1), then ask/cooperative/0
        assert todo == {("ask", "cooperative", 1), ("ask", "impatient", 0), ("ask", "impatient", 1)}
        _, rest = persona_run(bank, ["cooperative", "impatient"], trials=2, only=todo)
        assert len(rest.trials) == 3
        for t in rest.trials:
            assert st.record("R", t) is True
        loaded = st.load_trials("R")
        assert loaded[:5] == res.trials[:5]  # equal to what was recorded, persona kept
        key = [(t.task_id, t.persona, t.trial, t.seed, t.passed, t.termination_reason) for t in res.trials]
        assert [(t.task_id, t.persona, t.trial, t.seed, t.passed, t.termination_reason) for t in loaded] == key
        doc = st.load_run_document("R")
    assert (doc["planned"], doc["recorded"], doc["duplicates"], doc["complete"]) == (8, 8, 0, True)
    assert doc["by_persona"]["impatient"]["abandon_rate"] == 1.0
    report = analyze_run(doc)
    assert report.metrics["personas"]["impatient"]["pass^1"] == 0.0
    assert report.metrics["personas"]["cooperative"]["pass^1"] == 1.0
    assert {c.task_id for c in report.cells} == {"move@cooperative", "move@impatient", "ask@cooperative",
                                                 "ask@impatient"}
    outcomes, n = run_outcomes(doc, "run")
    assert n == 2 and outcomes["move@impatient"] == [False, False] and outcomes["ask@cooperative"] == [True, True]


def test_cli_personas_need_a_persona_playing_user():
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--personas", "terse", "--user", "scripted"])
    assert res.exit_code != 0 and "--personas needs a user that plays personas" in res.output
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--personas", "nobody", "--user", "llm:x/y"])
    assert res.exit_code != 0 and "nobody" in res.output


def test_cli_run_with_personas_writes_by_persona(tmp_path):
    out = tmp_path / "o.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--task-ids", "cancel-no-longer-needed",
                                   "--agent", "oracle", "--user", "py:tests.users.test_personas_run:PersonaUser",
                                   "--personas", "terse,abandoner", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["config"]["personas"] == ["terse", "abandoner"]
    assert set(doc["by_persona"]) == {"terse", "abandoner"}
    assert doc["by_persona"]["abandoner"]["abandon_rate"] == 1.0
    assert doc["by_persona"]["terse"]["trials"] == 1
    assert "by persona" in res.output


def test_play_shows_the_scenario_relays_the_agent_and_grades(monkeypatch):
    lines = iter(["hello, please cancel my order", "/help", "/stop"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    res = CliRunner().invoke(app, ["play", "--domain", "retail", "--task", "cancel-no-longer-needed",
                                   "--agent", "oracle"])
    assert res.exit_code == 0, res.output
    assert "You are Samuel Laine" in res.output and "item ids" in res.output  # scenario, with what it does not know
    assert "agent: Your request has been handled." in res.output  # the oracle's reply, relayed
    assert "/stop ends the conversation" in res.output  # /help
    assert "PASS (user_stop); 3 tool calls" in res.output
    assert "cancel_pending_order" in res.output


def test_play_person_abandons_with_end_of_input(monkeypatch):
    def read(prompt=""):
        raise EOFError

    monkeypatch.setattr("builtins.input", read)
    res = CliRunner().invoke(app, ["play", "--domain", "retail", "--task", "cancel-no-longer-needed",
                                   "--agent", "null"])
    assert res.exit_code == 0, res.output
    assert "FAIL (user_abandon)" in res.output


def test_play_unknown_task():
    res = CliRunner().invoke(app, ["play", "--domain", "retail", "--task", "nope", "--agent", "oracle"])
    assert res.exit_code == 2 and "no such task" in res.output


def test_impatient_personas_abandon_significantly_more_with_a_question_repeating_agent(tmp_path):
    """The issue's persona table: built-in retail tasks, the reference agent re-asking questions half the time,
    cooperative vs impatient vs abandoner through `tausim run --personas`; counts from the trials themselves,
    significance by Fisher's exact test (one-sided, scipy)."""
    from scipy.stats import fisher_exact

    out = tmp_path / "stress.json"
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--agent", "reference:repeat_question=0.5",
                                   "--user", "rule", "--personas", "cooperative,impatient,abandoner", "--trials", "4",
                                   "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    trials = {p: [t for t in doc["trials"] if t["persona"] == p] for p in ("cooperative", "impatient", "abandoner")}
    n = {p: len(v) for p, v in trials.items()}
    assert n == {"cooperative": 116, "impatient": 116, "abandoner": 116}  # 29 tasks x 4 trials each
    abandoned = {p: sum(t["termination_reason"] == "user_abandon" for t in v) for p, v in trials.items()}
    for p in trials:  # the reported rate is the hand count over the persona's trials
        assert doc["by_persona"][p]["abandon_rate"] == pytest.approx(abandoned[p] / n[p])
        assert doc["by_persona"][p]["trials"] == n[p]
    print("\npersona      abandoned/trials")
    for p in trials:
        print(f"{p:12} {abandoned[p]:3d}/{n[p]}")
    assert abandoned["cooperative"] == 0  # patience none: it never gives up
    for p in ("impatient", "abandoner"):
        coop = abandoned["cooperative"]
        table = [[abandoned[p], n[p] - abandoned[p]], [coop, n["cooperative"] - coop]]
        assert fisher_exact(table, alternative="greater").pvalue < 0.01, (p, abandoned)
    assert abandoned["abandoner"] > abandoned["impatient"]  # patience 1 < patience 3


def test_resume_refuses_other_personas_or_edited_persona_files(tmp_path, store_url):
    mine = tmp_path / "good.json"
    mine.write_text(json.dumps({"name": "good", "description": "a test user", "patience": 8,
                                "abandonment_phrases": ["bye"]}))
    url = store_url  # SQLite and PostgreSQL

    def run(*personas):
        extra = ["--personas", ",".join(personas)] if personas else []
        return CliRunner().invoke(app, ["run", "--agent", "reference", "--user", "rule", "--task-ids",
                                        "cancel-no-longer-needed", "--store", url, "--run-id", "X", "--no-progress",
                                        *extra])

    assert run("cooperative", str(mine)).exit_code == 0
    res = run("verbose")
    assert res.exit_code == 2 and "personas: stored ['cooperative', 'good'], now ['verbose']" \
        in res.output
    res = run()
    assert res.exit_code == 2 and "now None" in res.output
    mine.write_text(mine.read_text().replace('"patience": 8', '"patience": 2'))
    res = run("cooperative", str(mine))
    assert res.exit_code == 2 and "persona_defs.good.patience: stored 8, now 2" in res.output
    with ResultsStore(url) as st:  # the definitions are recorded with the run
        assert st.get_run("X").config.persona_defs["good"]["patience"] == 8

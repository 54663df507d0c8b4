"""``tausim variance`` (and ``tausim run --vary``) as a fresh user meets them: inputs kept, interruptions resumable,
shares that say how much data they rest on, task ids printed as text, the same option checks as ``tausim run``."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from simulator.analysis.variance import run_variance
from simulator.cli import app
from simulator.cli.variance import _print
from simulator.stats.variance import decompose_variance
from simulator.storage.documents import partial_header
from simulator.types.spec import RunSpec
from tests._support.slow_agents import interrupt_run

IDS = ["cancel-no-longer-needed", "modify-order-address"]
FLAKY = {"name": "flaky", "description": "Answers the wrong question half the time and gives up at once.",
         "patience": 1, "wrong_answer_rate": 0.5, "abandonment_phrases": ["Forget it."]}


def _stopped_after_first_trial(doc_file: Path) -> tuple[Path, dict]:
    """Turn a condition's finished run document into its partial file holding its first trial only.

    Returns:
        ``(the partial file, the document it was made from)``.
    """
    doc = json.loads(doc_file.read_text())
    doc_file.unlink()
    partial = doc_file.with_name(doc_file.name + ".partial.jsonl")
    header = partial_header(RunSpec.model_validate(doc["config"]), len(doc["trials"]), doc["planned_task_ids"])
    partial.write_text(json.dumps(header) + "\n" + json.dumps(doc["trials"][0]) + "\n")
    return partial, doc


def _persona_file(tmp_path: Path) -> Path:
    file = tmp_path / "flaky.json"
    file.write_text(json.dumps(FLAKY))
    return file


@pytest.mark.parametrize("command", [["run", "--user", "rule"], ["variance"]])
def test_out_on_the_personas_file_is_refused_and_the_file_kept(tmp_path: Path, command: list[str]):
    file = _persona_file(tmp_path)
    before = file.read_text()
    res = CliRunner().invoke(app, [*command, "--personas", str(file), "--out", str(file), "--task-ids", IDS[0],
                                   "--trials", "2", "--no-progress"])
    assert res.exit_code == 2, res.output
    assert f"error: --out {file}: is the --personas file; writing it would overwrite that input" in res.output
    assert file.read_text() == before


def test_out_on_a_file_of_the_runs_dir_is_refused(tmp_path: Path):
    runs = tmp_path / "vr3"
    runs.mkdir()
    res = CliRunner().invoke(app, ["variance", "--task-ids", IDS[0], "--trials", "2", "--runs-dir", str(runs),
                                   "--out", str(runs / "variance-both.json"), "--no-progress"])
    assert res.exit_code == 2
    assert f"--out {runs / 'variance-both.json'}: is the --runs-dir's own variance-both.json" in res.output
    assert not list(runs.iterdir())  # refused before any run


def test_a_runs_dir_that_is_a_file_is_named_in_one_line(tmp_path: Path):
    file = tmp_path / "flaky.json"
    file.write_text("{}")
    res = CliRunner().invoke(app, ["variance", "--task-ids", IDS[0], "--trials", "2", "--runs-dir", str(file),
                                   "--no-progress"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"error: --runs-dir {file}: exists and is not a folder; give a folder (it is created when missing)"]


@pytest.mark.parametrize("given", [["--agent", "reference"], ["--user", "rule"], ["--domain", "retail"]])
def test_run_options_beside_a_spec_are_refused_even_at_their_default(tmp_path: Path, given: list[str]):
    spec = tmp_path / "spec.json"
    spec.write_text(RunSpec(domain="retail", agent="reference", user="rule", trials=2, task_ids=IDS).model_dump_json())
    res = CliRunner().invoke(app, ["variance", "--spec", str(spec), *given, "--no-progress"])
    assert res.exit_code == 2
    assert f"error: {given[0]}: ignored with --spec" in res.output
    # tausim run says the same of its own options given with their default values
    res = CliRunner().invoke(app, ["run", "--spec", str(spec), "--seed", "0"])
    assert res.exit_code == 2 and "error: --seed: ignored with --spec" in res.output


def test_empty_task_ids_are_refused_as_by_run():
    for command in ("run", "variance"):
        res = CliRunner().invoke(app, [command, "--task-ids", "", "--no-progress"])
        assert res.exit_code == 2 and "error: --task-ids: no task id given" in res.output, (command, res.output)


def test_the_spec_s_vary_is_not_claimed_and_trials_apply_beside_it(tmp_path: Path):
    spec = tmp_path / "spec.json"
    spec.write_text(RunSpec(domain="retail", agent="reference", user="rule", trials=5, task_ids=IDS[:1],
                            vary="user").model_dump_json())
    out = tmp_path / "v.json"
    res = CliRunner().invoke(app, ["variance", "--spec", str(spec), "--trials", "2", "--out", str(out),
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["config"]["vary"] == ["both", "user", "agent"] and doc["trials"] == 2


def _doc(outcomes: dict[str, dict[str, list[float]]], personas=None) -> dict:
    d = decompose_variance(outcomes, rng=np.random.Generator(np.random.PCG64(0)), n_resamples=200)
    return {"config": {"personas": personas}, **d.as_dict()}


def test_task_ids_are_printed_as_text_not_markup(capsys):
    evil = ["[bold red]EVIL[/bold red]", "[link=https://x.invalid]click[/link]"]
    table = {c: {evil[0]: [1.0, 0.0], evil[1]: [0.0, 1.0] if c != "agent" else [1.0, 1.0]}
             for c in ("both", "user", "agent")}
    _print(_doc(table))
    out = capsys.readouterr().out
    assert evil[0] in out and evil[1] in out


def test_few_varying_cells_are_counted_and_warned_about(capsys):
    # one of 10 cells varies: its share 1.00 [1.00, 1.00] would look certain
    cells = {f"t{i}": [1.0, 1.0, 1.0] for i in range(9)}
    table = {c: {**cells, "t9": [1.0, 0.0, 1.0] if c != "agent" else [1.0, 1.0, 1.0]}
             for c in ("both", "user", "agent")}
    doc = _doc(table)
    assert doc["cells_with_spread"] == {"both": 1, "user": 1, "agent": 0}
    # a resample draws t9 with probability 1 - 0.9**10 = 0.651: about 35% of 200 resamples define no share
    assert 40 <= doc["undefined_resamples"] <= 100 and doc["resamples"] == 200
    assert doc["warning"].startswith("only 1 of 10 task cells vary in the 'both' run (fewer than 5 or 20%")
    _print(doc)
    captured = capsys.readouterr()
    assert "cells with spread: both run 1 of 10, user run 1 of 10, agent run 0 of 10" in captured.out
    assert "bootstrap resamples drew only cells without spread" in captured.out
    assert "warning: only 1 of 10 task cells vary" in captured.err and "--trials" in captured.err


def test_undefined_shares_say_why_and_personas_are_named_in_the_header(capsys):
    table = {c: {f"t{i}@{p}": [1.0, 1.0] for i in range(2) for p in ("a", "b", "c")} for c in ("both", "user", "agent")}
    _print(_doc(table, personas=["a", "b", "c"]))
    out = capsys.readouterr().out
    assert "- (no task varied in the 'both' run)" in out
    assert "2 tasks x 3 personas (6 cells) x 2 trials per run" in out
    assert "pass rate (both run)" not in out  # no row printed: no table


def test_a_rerun_resumes_finished_and_partial_runs_instead_of_deleting_them(tmp_path: Path):
    spec = RunSpec(domain="retail", agent="reference", user="rule", trials=2, task_ids=IDS, personas=["flaky"],
                   persona_defs={"flaky": FLAKY}, seed=3)
    first = run_variance(spec, out_dir=tmp_path)
    # the agent run was interrupted after its first trial: only its partial file is left
    partial, doc = _stopped_after_first_trial(tmp_path / "variance-agent.json")
    with pytest.raises(ValueError, match="rerun with --resume to keep them"):
        run_variance(spec, out_dir=tmp_path)
    assert partial.exists()  # not deleted
    ran: list[object] = []
    again = run_variance(spec, out_dir=tmp_path, resume=True, on_trial=ran.append)
    assert len(ran) == len(doc["trials"]) - 1  # only the agent run's missing trials ran
    assert again.decomposition.per_task == first.decomposition.per_task
    # another spec is not taken for this one
    with pytest.raises(ValueError, match="was run with other settings"):
        run_variance(spec.model_copy(update={"seed": 4}), out_dir=tmp_path, resume=True)


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "interrupted (SIGTERM)"),
                                                   (signal.SIGINT, 130, "interrupted")])
def test_a_signal_during_variance_says_where_the_trials_are_and_releases_the_lock(tmp_path: Path, sig, code, said):
    runs = tmp_path / "vr"
    partial = runs / "variance-both.json.partial.jsonl"
    got, stderr, lines = interrupt_run(
        ["variance", "--agent", "py:tests._support.slow_agents:stuck_after_first", "--user", "rule", "--trials", "2",
         "--concurrency", "2", "--task-ids", IDS[0], "--runs-dir", str(runs), "--no-progress"], partial, 1, 60,
        sig=sig)
    assert got == code, stderr
    assert f"{said}: finished trials are in {partial}; rerun the same command with --resume to keep them" in stderr
    assert "Traceback" not in stderr
    assert lines and not partial.with_name(partial.name + ".lock").exists()


@pytest.mark.parametrize("command", [["hunt", "--budget", "1"], ["user", "check", "--user", "rule"]])
def test_other_commands_taking_personas_keep_the_file_too(tmp_path: Path, command: list[str]):
    file = _persona_file(tmp_path)
    before = file.read_text()
    res = CliRunner().invoke(app, [*command, "--personas", str(file), "--out", str(file)])
    assert res.exit_code == 2, res.output
    assert f"error: --out {file}: is the --personas file" in res.output
    assert file.read_text() == before


def test_reports_and_plan_say_a_run_held_one_side(tmp_path: Path):
    out = tmp_path / "held.json"
    res = CliRunner().invoke(app, ["run", "--agent", "reference", "--user", "rule", "--task-ids", ",".join(IDS),
                                   "--trials", "2", "--vary", "user", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    said = "vary: user (the agent's seed held per task): the trials of a task are correlated"
    assert said in res.output  # the run's own header
    res = CliRunner().invoke(app, ["report", str(out)])
    assert res.exit_code == 0 and said in res.output and "not those of independent trials" in res.output
    res = CliRunner().invoke(app, ["report", str(out), "--format", "json"])
    metrics = json.loads(res.output)["metrics"]
    assert metrics["vary"] == "user" and metrics["vary_note"].startswith(said)
    html = tmp_path / "held.html"
    res = CliRunner().invoke(app, ["report", str(out), "--html", str(html)])
    assert res.exit_code == 0 and "vary: user" in html.read_text()
    res = CliRunner().invoke(app, ["plan", "--baseline", str(out)])
    assert res.exit_code == 2 and "rerun the baseline with --vary both" in res.output


def _fp_doc(options: dict, vary: str = "both") -> dict:
    from simulator.storage.fingerprint import make_fingerprint

    config = {"domain": "retail", "user": {"name": "rule"}, "options": options, "vary": vary}
    return {"config": config, "fingerprint": make_fingerprint(config, tasks_hash="t", user_prompt_sha256=None,
                                                              grader_version="1", reward_basis=["db"])}


def test_incomparable_domain_modes_name_the_options_and_the_vary_setting():
    from simulator.analysis.comparability import IncomparableRunsError, check_comparable

    with pytest.raises(IncomparableRunsError) as caught:
        check_comparable(_fp_doc({"retrieval": "bm25"}), _fp_doc({"retrieval": "full_kb"}),
                         names=("baseline", "candidate"))
    assert 'domain options differ (retrieval: baseline "bm25", candidate "full_kb"' in str(caught.value)
    with pytest.raises(IncomparableRunsError) as caught:
        check_comparable(_fp_doc({}), _fp_doc({}, vary="user"), names=("baseline", "candidate"))
    message = str(caught.value)
    assert 'vary: baseline "both", candidate "user"' in message and "vary setting (`tausim run --vary`)" in message


def test_the_report_headline_prints_run_id_and_components_as_text(tmp_path: Path):
    out = tmp_path / "run.json"
    res = CliRunner().invoke(app, ["run", "--task-ids", IDS[0], "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    doc["run_id"] = "[bold red]EVIL[/bold red]"
    doc["config"]["agent"]["name"] = "py:[link=https://x.invalid]m[/link]:f"
    out.write_text(json.dumps(doc))
    res = CliRunner().invoke(app, ["report", str(out)])
    assert res.exit_code == 0, res.output
    assert "run=[bold red]EVIL[/bold red]" in res.output and "agent=py:[link=https://x.invalid]m[/link]:f" in res.output


def test_the_cli_refuses_to_drop_a_partial_run_and_resumes_it_with_resume(tmp_path: Path):
    runs = tmp_path / "vr"
    args = ["variance", "--task-ids", IDS[0], "--trials", "2", "--runs-dir", str(runs), "--no-progress"]
    assert CliRunner().invoke(app, args).exit_code == 0
    doc_file = runs / "variance-user.json"
    partial, doc = _stopped_after_first_trial(doc_file)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and f"error: {partial}: holds the finished trials of an interrupted run" in res.output
    assert partial.exists()
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    assert not partial.exists() and json.loads(doc_file.read_text())["trials"][0] == doc["trials"][0]
    res = CliRunner().invoke(app, ["variance", "--task-ids", IDS[0], "--resume"])
    assert res.exit_code == 2 and "--resume: resumes the runs kept in --runs-dir; give --runs-dir DIR" in res.output


def test_resuming_a_complete_runs_dir_gives_the_original_figures(tmp_path: Path):
    runs = tmp_path / "vr"
    args = ["variance", "--task-ids", ",".join(IDS), "--trials", "2", "--runs-dir", str(runs), "--no-progress"]
    assert CliRunner().invoke(app, [*args, "--out", str(tmp_path / "first.json")]).exit_code == 0
    res = CliRunner().invoke(app, [*args, "--resume", "--out", str(tmp_path / "again.json")])
    assert res.exit_code == 0, res.output
    first, again = (json.loads((tmp_path / f).read_text()) for f in ("first.json", "again.json"))
    for condition in ("both", "user", "agent"):
        # independently: each condition's own run document holds its pass^1
        recorded = json.loads((runs / f"variance-{condition}.json").read_text())["metrics"]["pass^1"]
        assert recorded is not None
        assert first["conditions"][condition]["pass^1"] == recorded
        assert again["conditions"][condition]["pass^1"] == recorded  # was null
    assert {k: v for k, v in again.items() if k != "conditions"} == \
        {k: v for k, v in first.items() if k != "conditions"}


def test_resume_refuses_runs_made_with_another_policy_text(tmp_path: Path):
    """The runs dir's runs were made with a policy file edited since: resuming would mix two policies (the policy
    was compared by its path only)."""
    from simulator.world.domain import get_domain

    policy = tmp_path / "policy.md"
    policy.write_text(get_domain("retail").policy())
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"domain": "retail", "task_ids": [IDS[0]], "agent": "reference", "user": "rule",
                                     "policy": str(policy), "preflight": False}))
    runs = tmp_path / "vr"
    args = ["variance", "--spec", str(spec_file), "--trials", "2", "--runs-dir", str(runs), "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    before = {f.name: f.read_bytes() for f in runs.iterdir()}
    policy.write_text(policy.read_text() + "\nNever confirm anything.\n")
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert "was run with other settings (policy_sha256:" in said, said
    # an interrupted condition (its partial file) is refused by the run itself
    doc_file = runs / "variance-user.json"
    partial, doc = _stopped_after_first_trial(doc_file)
    (runs / "variance-both.json").unlink()  # the both run starts over with the new text; the user run is refused
    kept = partial.read_bytes()
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert f"{partial}: the run cannot be resumed with a different spec: policy_sha256" in said, said
    assert partial.read_bytes() == kept
    assert (runs / "variance-agent.json").read_bytes() == before["variance-agent.json"]


def test_an_interrupted_final_write_names_the_runs_dir_document_not_out(tmp_path: Path, monkeypatch):
    """Ctrl-C while a condition's document was being written to a full disk: the message named ``--out None``."""
    import simulator.analysis.variance as variance
    from simulator.execution.session import Interruption

    runs = tmp_path / "vr"
    document = runs / "variance-both.json"

    def stopped_in_the_final_write(spec, **options):
        options["on_interrupt"](Interruption(finished=True, written=tmp_path / "tausim-run-x.json",
                                             write_error="No space left on device", out=document))
        raise KeyboardInterrupt

    monkeypatch.setattr(variance, "run_variance", stopped_in_the_final_write)
    res = CliRunner().invoke(app, ["variance", "--task-ids", IDS[0], "--trials", "2", "--runs-dir", str(runs),
                                   "--no-progress"])
    assert res.exit_code == 130, res.output
    said = " ".join(res.output.split())
    assert "--out" not in said, said
    assert (f"--runs-dir {runs}: the run document {document}: cannot write (No space left on device); the run was "
            f"written to {tmp_path / 'tausim-run-x.json'}") in said, said

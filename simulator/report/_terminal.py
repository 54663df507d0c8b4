"""Terminal summary of a run (rich tables): the one summary ``tausim run`` and ``tausim report`` print."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.grading.judge import judge_summary_lines
from simulator.types.grade import JudgeResult
from simulator.types.sanitize import clipped, counted

from ._analysis import RunReport, trial_outcome
from ._clusters import SIGNATURE_FIELDS, ClusterRow, run_clusters, share_text

__all__ = ["assertion_lines", "data_notes", "failure_lines", "format_cost", "format_seconds", "involved_text",
           "print_clusters", "print_failure", "print_recovery", "print_summary", "recovery_text"]

MAX_CLUSTERS = 10
"""Failure clusters the terminal summary lists (largest first)."""
EXAMPLE_LINES = 6
"""Lines of each cluster's example transcript the terminal shows (the HTML page shows it whole)."""

MAX_INVOLVED = 3
"""Rows or events shown under each failed assertion in the terminal (the HTML view shows them all)."""
MAX_ASSERTION_ROWS = 40
"""Per-assertion rows the summary lists in full; beyond it, only the assertions that failed at least once."""


def format_cost(stats: Mapping[str, Any], key: str = "total", show_missing: bool = True) -> str:
    """Format a cost statistic; unknown costs are shown as unknown, never as $0.

    Args:
        stats: a summary-statistics dict (``count``, ``missing``, ``total``, ``mean``, ...).
        key: which statistic.
        show_missing: append how many values are unknown.

    Returns:
        E.g. ``"$0.0123"``, ``"$0.0123 (+3 unknown)"`` or ``"unknown"``.
    """
    value = stats.get(key)
    if value is None:
        return "unknown"
    text = f"${value:.4f}"
    if show_missing and stats.get("missing"):
        text += f" (+{stats['missing']} unknown)"
    return text


def format_seconds(value: float | None) -> str:
    """Format a duration in seconds (``-`` when unknown)."""
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1.0:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _count(value: Any) -> str:
    """A count as text; ``-`` when absent (a document written before the count existed)."""
    return "-" if value is None else str(value)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str, sort_keys=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value: Any) -> str:
    """A scalar as ``repr`` (as the state differences show values), a list or object as JSON (cut)."""
    return _short(value) if isinstance(value, Mapping | list) else repr(value)


def involved_text(item: Mapping[str, Any], limit: int = 160) -> str:
    """Describe one row, change or event behind an assertion's verdict, in one line.

    Args:
        item: one entry of an assertion result's ``involved``: a row ``{"table", "row"}``, a change
            ``{"table", "key", "field", "initial", "final"}``, an added or removed row ``{"table", "key",
            "change", "row"}``, an event ``{"seq", "step", "source", "name", "data"}`` or a tool call.
        limit: the longest JSON shown for a row or an event's data (longer is cut with ``...``).

    Returns:
        E.g. ``row refunds {"refund_id": "RF4812-1", ...}``, ``event #5 refund_committed (agent, step 5)
        {"amount": 108.0, ...}``, ``changed orders["7351"].status: 'processing' -> 'cancelled'``.
    """
    if "seq" in item and "name" in item:
        step = item.get("step")
        where = f"{item.get('source')}" + (f", step {step}" if step is not None else "")
        return f"event #{item['seq']} {item['name']} ({where}) {_short(item.get('data') or {}, limit)}"
    key = json.dumps(item.get("key"), default=str) if "key" in item else ""
    if "field" in item:
        return (f"changed {item.get('table')}{key}.{item['field']}: {item.get('initial')!r} -> "
                f"{item.get('final')!r}")
    if "change" in item:
        return f"{item['change']} {item.get('table')}{key} {_short(item.get('row'), limit)}"
    if "row" in item:
        return f"row {item.get('table')} {_short(item['row'], limit)}"
    return _short(dict(item), limit)


def assertion_lines(record: Mapping[str, Any], indent: str = "    ") -> list[str]:
    """Describe the failed assertions of a trial: each with expected vs actual and the rows or events involved.

    Args:
        record: the trial (the JSON form of ``TrialResult``).
        indent: the prefix of each headline (details get four more spaces).

    Returns:
        For each failed assertion: ``assertion #I TYPE: SUMMARY[; note: NOTE]``, then ``expected X, actual Y``
        (scalars as ``repr``) and up to
        :data:`MAX_INVOLVED` lines of :func:`involved_text` (``... and N more``); no line when none failed or the
        trial has no assertions.
    """
    grade = record.get("grade")
    part = grade.get("assertions") if isinstance(grade, Mapping) else None
    if not isinstance(part, Mapping):
        return []
    lines: list[str] = []
    for r in part.get("results") or []:
        if not isinstance(r, Mapping) or r.get("passed"):
            continue
        note = f"; note: {r['note']}" if r.get("note") else ""
        lines.append(f"{indent}assertion #{r.get('index')} {r.get('type')}: {r.get('summary')}{note}")
        lines.append(f"{indent}    expected {_value(r.get('expected'))}, actual {_value(r.get('actual'))}")
        involved = [i for i in r.get("involved") or [] if isinstance(i, Mapping)]
        lines.extend(f"{indent}    {involved_text(i)}" for i in involved[:MAX_INVOLVED])
        if len(involved) > MAX_INVOLVED:
            lines.append(f"{indent}    ... and {len(involved) - MAX_INVOLVED} more")
    return lines


FAILURE_LINE_CHARS = 400
"""Characters of a line of :func:`failure_lines` at most: a longer one (a model's 48 kB error, a huge value in a
state difference) keeps its start and end around a count of what was cut (:func:`~simulator.types.sanitize.clipped`)."""


def failure_lines(record: Mapping[str, Any], failures: Sequence[str] | None = None) -> list[str]:
    """Describe one failed trial (:func:`_failure_lines`), each line at most :data:`FAILURE_LINE_CHARS` long."""
    return [clipped(line, FAILURE_LINE_CHARS) for line in _failure_lines(record, failures)]


def _failure_lines(record: Mapping[str, Any], failures: Sequence[str] | None = None) -> list[str]:
    """Describe one failed trial: a headline, then what went wrong (state differences, missing outputs, ...).

    Args:
        record: the trial (the JSON form of ``TrialResult``, as in a run document).
        failures: the trial's failures for the headline; default those of :func:`trial_outcome`.

    Returns:
        Plain-text lines (no rich markup): ``FAIL task T[ persona P] trial I: REASON; FAILURES``, then indented
        details: the error's last line, up to 5 state differences (``table[key].field: expected X, got Y``), up
        to 3 added and removed rows, missing outputs, process violations, loops, exceeded budgets, the failed
        declarative assertions (:func:`assertion_lines`), a prefix case's failed next-step expectations (each
        with what the agent did, then the agent's turn: its calls and closing message) and the failed assertions
        of a gating judge.
    """
    if failures is None:
        failures = trial_outcome(record)[1]
    persona = record.get("persona")
    if isinstance(persona, Mapping):
        persona = persona.get("name")
    task = str(record.get("task_id"))
    if persona and task.endswith(f"@{persona}"):  # a task cell of the report's analysis: task@persona
        task = task[: -len(str(persona)) - 1]
    who = f" persona {persona}" if persona else ""
    lines = [f"FAIL task {task}{who} trial {record.get('trial')}: "
             f"{record.get('termination_reason')}; {', '.join(failures) or 'not graded'}"]
    error = record.get("error")
    if error:
        parts = [ln for ln in str(error).strip().splitlines() if ln.strip()]
        lines.append(f"    error: {parts[-1] if parts else error}")
    g = record.get("grade")
    if not isinstance(g, Mapping):
        return lines

    def part(name: str) -> Mapping[str, Any]:
        value = g.get(name)
        return value if isinstance(value, Mapping) else {}

    lines.extend(_state_lines(part("state")))
    if part("outputs").get("missing"):
        lines.append(f"    missing outputs: {part('outputs')['missing']}")
    lines.extend(f"    process: {v}" for v in part("process").get("violations") or [])
    loops = part("loops")
    for r in loops.get("repeats") or []:
        lines.append(f"    loop: {r.get('tool')}({json.dumps(r.get('arguments'))}) called {r.get('count')} times "
                     f"({loops.get('threshold')} repeats allowed)")
    lines.extend(f"    budget: {v}" for v in part("budget").get("exceeded") or [])
    lines.extend(assertion_lines(record))
    lines.extend(_next_step_lines(part("next_step")))
    judge = part("judge")
    for a in (judge.get("assertions") or []) if judge.get("gating") else []:
        if not a.get("passed"):
            lines.append(f"    judge: {a.get('assertion')!r}: {a.get('verdict') or 'no verdict'}: {a.get('reason')}")
    return lines


def _state_lines(state: Mapping[str, Any]) -> list[str]:
    """Up to 5 state differences, then up to 3 added and 3 removed rows, of a grade's ``state`` component."""
    lines = [f"    {d.get('table')}{d.get('key')}.{d.get('field')}: expected {d.get('expected')!r}, "
             f"got {d.get('actual')!r}" for d in (state.get("differences") or [])[:5]]
    for kind in ("added", "removed"):
        for r in (state.get(kind) or [])[:3]:
            lines.append(f"    {kind} {r.get('table')}{r.get('key')}")
    return lines


def _next_step_lines(step: Mapping[str, Any]) -> list[str]:
    """A prefix case's failed next-step expectations, then the agent's turn (its calls and closing message)."""
    if not step or step.get("passed", True):
        return []
    lines = [f"    next step: {f}" for f in step.get("failures") or []]
    called = ", ".join(str(c) for c in step.get("calls") or [])
    if len(called) > 160:
        called = called[:157] + "..."
    said = step.get("message")
    lines.append("    the agent's turn: " + (f"called {called}" if called else "no tool call")
                 + ("; no closing message" if said is None else f"; said {_short(said, 120)}"))
    return lines


def print_failure(record: Mapping[str, Any], console: Console, failures: Sequence[str] | None = None) -> None:
    """Print :func:`failure_lines` of a failed trial (the headline's ``FAIL`` in red)."""
    head, *rest = failure_lines(record, failures)
    console.print("[red]FAIL[/]", end=" ", highlight=False)
    console.print(head.removeprefix("FAIL "), highlight=False, markup=False)
    for line in rest:
        console.print(line, highlight=False, markup=False)


def _judge_results(report: RunReport) -> list[JudgeResult]:
    """The judge components of the run's planned trials (a malformed one, from an old document, is left out)."""
    out = []
    for cell in report.cells:
        grade = cell.record.get("grade") if cell.record is not None else None
        judge = grade.get("judge") if isinstance(grade, Mapping) else None
        if isinstance(judge, Mapping):
            try:
                out.append(JudgeResult.model_validate(judge))
            except ValidationError:
                continue  # not a judge component this version can read: the summary has no judge line for it
    return out


def _print_assertion_rates(report: RunReport, console: Console) -> None:
    """Print the per-assertion pass counts (all of them up to :data:`MAX_ASSERTION_ROWS`, else the failing ones)."""
    rows = report.metrics.get("assertions") or []
    if not rows:
        return
    failing = [r for r in rows if r["passed"] < r["trials"]]
    shown = rows if len(rows) <= MAX_ASSERTION_ROWS else failing
    tasks = len({r["task_id"] for r in rows})
    title = (f"assertions: {len(rows) - len(failing)} of {len(rows)} passed in every trial ({tasks} tasks)"
             + ("" if shown is rows or not failing else "; those failing at least once"))
    if not shown:
        console.print(title, highlight=False, markup=False)
        return
    table = Table(title=title)
    for col, just in (("task", "left"), ("#", "right"), ("type", "left"), ("assertion", "left"),
                      ("passed", "right"), ("trials", "right"), ("rate", "right")):
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in shown:
        table.add_row(escape(r["task_id"]), str(r["index"]), escape(r["type"]), escape(r["label"]), str(r["passed"]),
                      str(r["trials"]), _rate(r["rate"]))
    console.print(table)


def violation_lines(v: Mapping[str, Any] | None) -> list[str]:
    """Return the summary lines of a run's safety violations (``metrics["violations"]``); none without the key.

    Args:
        v: the run's :func:`simulator.stats.summaries.violation_metrics`, or None (a document from before violations).
    """
    if not v:
        return []
    if not v["total"]:
        return [f"safety violations: 0 (violation rate {_rate(v['rate'])})"]
    kinds = "; ".join(f"{kind} {k['count']} in {k['trials']} trials ({_rate(k['rate'])})"
                      for kind, k in v["by_kind"].items())
    sev = ", ".join(f"{s} {n}" for s, n in v["by_severity"].items())
    return [f"safety violations: {v['total']} in {v['trials_with_violation']} of {v['trials']} trials "
            f"(violation rate {_rate(v['rate'])}; {sev}): {kinds}"]


def trajectory_lines(m: Mapping[str, Any]) -> list[str]:
    """Return the summary lines of a run's trajectory metrics (reported apart from pass); none without them.

    Args:
        m: the run's metrics (``trajectory``, ``mean_steps``, ``timeout_rate`` of
            :func:`~simulator.stats.summaries.run_metrics`).
    """
    t = m.get("trajectory")
    if not t:
        return []
    errors = ", ".join(f"{k} {_rate(v)}" for k, v in t["per_tool_error_rate"].items() if v) or "none"
    return [
        f"trajectory vs reference ({t['trials']} trials, apart from pass): exact {_rate(t['exact_match'])}, "
        f"in order {_rate(t['in_order_match'])}, set {_rate(t['set_match'])}, prefix {_rate(t['prefix_match'])}; "
        f"tool decision {_rate(t['tool_decision_accuracy'])}, selection {_rate(t['tool_selection_accuracy'])}, "
        f"parameters {_rate(t['parameter_accuracy'])}, utilisation {_rate(t['utilisation_accuracy'])}",
        f"abstention {_rate(t['abstention_rate'])} ({t['abstention_trials']} trials); redundant calls "
        f"{_rate(t['redundant_call_rate'])}; recovery {_rate(t['recovery_rate'])}; timeout rate "
        f"{_rate(m.get('timeout_rate'))}; mean steps "
        + ("-" if m.get("mean_steps") is None else f"{m['mean_steps']:.1f}") + f"; tool error rates: {errors}",
    ]


def component_label(component: Any) -> str:
    """Return a run component (agent, user) as a user reads it: ``litellm:openai/gpt-4o-mini (temperature=0.0)``.

    Args:
        component: the run document's ``config.agent`` / ``config.user``: a component spec as a dict
            (``{"name", "temperature", "api_base", "max_tokens", "args"}``) or, in older documents, a string.

    Returns:
        The name, followed by the parameters that are set, in parentheses.
    """
    if not isinstance(component, Mapping):
        return str(component)
    extras = [f"{k}={v}" for k, v in component.items() if k != "name" and v not in (None, {}, [])]
    return str(component.get("name")) + (f" ({', '.join(extras)})" if extras else "")


def print_summary(report: RunReport, console: Console, max_failures: int = 10, *, command: str = "report",
                  see: str | None = "--html") -> None:
    """Print the terminal summary of a run: the one summary of ``tausim run`` and ``tausim report``.

    Args:
        report: the analysed run (:func:`analyze_run` of its run document).
        console: where to print.
        max_failures: failed trials listed at most (each with its state differences and other failures).
        command: the command named in the headline (``run``, ``report``).
        see: where the failed trials beyond ``max_failures`` can be read (``--out``, ``--html``), or None.
    """
    m = report.metrics
    _print_headline(report, console, command)
    if report.task_ids:
        _print_reliability(report, console)
    if m.get("by_tag"):
        _print_by_tag(report, console)
    _print_grading(report, console)
    _print_endings(m, console)
    if m["personas"]:
        _print_personas(report, console)
    _print_cost_latency(m, console)
    print_recovery(m.get("recovery"), console)
    if report.failed_cells():
        rows, unsigned = run_clusters(report)
        print_clusters(rows, console, unsigned=unsigned)
    _print_failures(report, console, max_failures, see)


def _print_headline(report: RunReport, console: Console, command: str) -> None:
    """Print the run's headline (command, run, domain, agent, user, plan, seed, wall time), split and counts."""
    m = report.metrics
    cfg = report.config
    wall = report.document.get("wall_seconds")
    console.print(
        f"[bold]tausim {command}[/] run={escape(str(report.run_id or '-'))} domain={escape(str(cfg.get('domain')))} "
        f"agent={escape(component_label(cfg.get('agent')))} user={escape(component_label(cfg.get('user')))} " + (
            f"tasks={len(report.task_ids) // len(cfg['personas'])} personas={len(cfg['personas'])} "
            f"trials/cell={report.trials_per_task}" if cfg.get("personas")
            else f"tasks={len(report.task_ids)} trials/task={report.trials_per_task}")
        + f" seed={cfg.get('seed')}" + (f" ({wall:.2f} s)" if isinstance(wall, int | float) and wall else ""),
        highlight=False, markup=True)
    if m.get("vary_note"):
        console.print(f"[yellow]{escape(m['vary_note'])}[/]", highlight=False)
    split = report.document.get("split")
    if split:
        console.print(f"task split: {split}" + (" (HOLDOUT: report on it, never tune on it)" if split == "holdout"
                                                else ""), highlight=False, markup=False)
    for note in data_notes(report.document):
        console.print(f"note: {note}", highlight=False, markup=False, style="yellow")
    line = f"planned {report.planned}, recorded {report.recorded}, duplicates {report.duplicates}"
    if m["missing_trials"]:
        line += f", [red]missing {m['missing_trials']} (counted as failures)[/]"
    if report.unplanned:
        line += f", unplanned {report.unplanned} (ignored)"
    console.print(line, highlight=False)


def data_notes(document: Mapping[str, Any]) -> list[str]:
    """Return the document's notes on recorded values it could not use, strings only.

    See ``data_notes`` in :func:`simulator.storage.documents.check_run_document`.
    """
    notes = document.get("data_notes")
    return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []


def noise_floor_text(m: Mapping[str, Any], personas: Any = None) -> str | None:
    """The report's sentence on the run's noise floor (``metrics["noise_floor"]``), or None when not computed.

    Example: ``noise floor (29 tasks x 4 trials): a paired comparison detects a pass^1 difference of 0.071 and a
    pass^4 difference of 0.112 (80% power, 5% level; ...)``. A run with personas counts its task cells (task x
    persona, what the noise floor is computed over: ``nf["tasks"]``) as tasks x personas, as the run's header does
    (``tasks=1 personas=2``): ``noise floor (1 task x 2 personas x 2 trials)``.

    Args:
        m: the run's metrics.
        personas: the run's persona names (``config["personas"]``); None: ``m["personas"]``, if any.
    """
    nf = m.get("noise_floor")
    if not isinstance(nf, Mapping):
        return None
    k = nf.get("k", 1)
    keys = ["pass^1", *([f"pass^{k}"] if f"pass^{k}" in nf and k != 1 else [])]
    values = {key: nf.get(key) for key in keys}
    cells, personas = nf["tasks"], m.get("personas") if personas is None else personas
    groups = len(personas) if isinstance(personas, list) and isinstance(cells, int) else 0
    if groups and cells % groups == 0:  # cells are task x persona
        sample = f"{counted(cells // groups, 'task')} x {counted(groups, 'persona')}"
    else:
        sample, groups = counted(cells, "task"), 0
    size = f"noise floor ({sample} x {counted(nf['trials_per_task'], 'trial')})"
    plan = "`tausim plan --baseline RUN --detect D` gives the trials per task needed for D"
    if all(not _probability(v) for v in values.values()):
        few = "tasks x personas x trials" if groups else "tasks x trials"
        return (f"{size}: cannot be estimated with so few {few}: a paired comparison of two such runs "
                f"would detect no difference of {' or '.join(keys)}, not even 1 ({nf['method']}); {plan}")
    parts = [f"a {key} difference of {v:.3f}" if _probability(v) else f"no {key} difference (not even 1)"
             for key, v in values.items()]
    return (f"{size}: the smallest difference a paired comparison of two such runs detects is {' and '.join(parts)} "
            f"(minimum detectable difference; {nf['method']}); {plan}")


def _probability(value: Any) -> bool:
    """Whether a recorded value is a probability (an older document may hold an mdd above 1, NaN, a string)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def user_review_lines(review: Mapping[str, Any]) -> list[str]:
    """Return the user-simulator review's lines, from :func:`simulator.stats.user_review.review_summary`.

    Flags, the failures the simulator caused (per cause) apart from those where it only showed a weakness, and
    pass^k as measured and with simulator-caused trials set apart; ``[]`` without flags.
    """
    if not review.get("flags"):
        return []
    lines = ["user-simulator review: " + ", ".join(f"{k} {v}" for k, v in review["flags"].items())
             + " (trials flagged)"]
    failures = review.get("failures")
    if "caused" not in review or failures is None:  # an older summary: flags only
        return lines
    shares = review.get("failure_share_by_cause") or {}
    by_cause = ", ".join(f"{c} {v} ({shares.get(c, 0):.1%})" for c, v in (review.get("caused") or {}).items())
    lines.append(f"  of {failures} failed trials: {review['caused_failures']} caused by the simulator"
                 + (f" ({by_cause})" if by_cause else "") + f"; {review['weakness_only_failures']} with a "
                 "simulator weakness only (the outcome was the agent's)"
                 + (f"; {review['caused_passes']} passed trials set apart too (answer leaked)"
                    if review.get("caused_passes") else ""))
    measured, apart, used = review.get("measured") or {}, review.get("set_apart") or {}, review.get("tasks_used") or {}

    def show(value: Any) -> str:
        return "-" if value is None else f"{value:.4f}"

    lines.append("  pass^k as measured / with simulator-caused trials set apart: " + "; ".join(
        f"{k} {show(measured.get(k))} / {show(apart.get(k))}" + (f" ({used[k]} tasks)" if k in used else "")
        for k in measured))
    if review.get("set_apart_trials"):
        lines.append("  set apart, e.g.: " + "; ".join(review["set_apart_trials"][:5]))
    return lines


def _print_reliability(report: RunReport, console: Console) -> None:
    """Print the pass^k / pass@k table and which tasks (or task cells) pass every trial."""
    m = report.metrics
    cfg = report.config
    unit = "task cells (task x persona)" if cfg.get("personas") else "tasks"
    table = Table(title=f"reliability (mean over {unit}, 95% bootstrap CI over {unit})")
    for col in ("k", "pass^k", "95% CI", "pass@k", "95% CI"):
        table.add_column(col, justify="right")
    for k in range(1, report.trials_per_task + 1):
        hat, at = m["ci95"][f"pass^{k}"], m["ci95"][f"pass@{k}"]
        table.add_row(str(k), f"{m[f'pass^{k}']:.3f}", f"[{hat[0]:.3f}, {hat[1]:.3f}]",
                      f"{m[f'pass@{k}']:.3f}", f"[{at[0]:.3f}, {at[1]:.3f}]")
    console.print(table)
    line = noise_floor_text(m, cfg.get("personas"))
    if line is not None:
        console.print(line, highlight=False, markup=False)
    passing_by_cell: dict[str, bool] = {}
    for cell in report.cells:
        passing_by_cell[cell.task_id] = passing_by_cell.get(cell.task_id, True) and cell.outcome == "passed"
    failing = [tid for tid, ok in passing_by_cell.items() if not ok]
    what = "task cells (task@persona)" if cfg.get("personas") else "tasks"
    console.print(f"{what} passing every trial: {len(passing_by_cell) - len(failing)}/{len(passing_by_cell)}",
                  highlight=False)
    if 0 < len(failing) <= 30:
        console.print("  not passing every trial: " + ", ".join(failing), highlight=False, markup=False)


def _print_by_tag(report: RunReport, console: Console) -> None:
    """Print pass^k per tag: its distinct tasks, with personas its task cells, its recorded trials."""
    ks = [f"pass^{k}" for k in range(1, report.trials_per_task + 1)]
    personas = bool(report.config.get("personas"))
    by_tag = Table(title=f"by tag (mean over the {'task cells' if personas else 'tasks'} carrying it)")
    counts = ("tasks", "cells", "trials") if personas else ("tasks", "trials")
    for col in ("tag", *counts, *ks):
        by_tag.add_column(col, justify="left" if col == "tag" else "right")
    for tag, t in report.metrics["by_tag"].items():
        by_tag.add_row(escape(tag), *(_count(t.get(c)) for c in counts), *(_rate(t.get(k)) for k in ks))
    console.print(by_tag)


def _print_grading(report: RunReport, console: Console) -> None:
    """Print the grading components, assertion rates, judge, "got lucky", violations, trajectory and tool accuracy."""
    m = report.metrics
    comps = Table(title="grading components (graded trials)")
    for col, just in (("component", "left"), ("passed", "right"), ("graded", "right"), ("rate", "right")):
        comps.add_column(col, justify=just)  # type: ignore[arg-type]
    for name, c in (m.get("layers") or m["components"]).items():
        comps.add_row(name, str(c["passed"]), str(c["graded"]), _rate(c["rate"]))
    console.print(comps)
    _print_assertion_rates(report, console)
    for line in judge_summary_lines(_judge_results(report)):
        console.print(line, highlight=False, markup=False)
    if "state_pass_other_fail_rate" in m:
        console.print(
            f"state passed but another layer failed (\"got lucky\"): {_rate(m['state_pass_other_fail_rate'])}; "
            f"infra errors: {m['infra_errors']} ({_rate(m['infra_error_rate'])} of planned, counted as failures); "
            f"loop rate: {_rate(m['loop_rate'])}; abandonment rate: {_rate(m['abandonment_rate'])}",
            highlight=False, markup=False)
    for line in violation_lines(m.get("violations")):
        console.print(line, highlight=False, markup=False)
    for line in trajectory_lines(m):
        console.print(line, highlight=False, markup=False)
    acc = m.get("tool_accuracy")
    if acc:
        console.print(
            f"tool calls vs gold: name precision {_rate(acc['name_precision'])}, recall {_rate(acc['name_recall'])}; "
            f"write tools precision {_rate(acc['write_name_precision'])}, recall {_rate(acc['write_name_recall'])}; "
            f"argument accuracy {_rate(acc['argument_accuracy'])}", highlight=False)


def _print_endings(m: Mapping[str, Any], console: Console) -> None:
    """Print termination reasons beside failure kinds, then the user-simulator review's flags."""
    counts = Table(title="termination reasons / failure kinds")
    counts.add_column("termination reason")
    counts.add_column("trials", justify="right")
    counts.add_column("failure kind")
    counts.add_column("trials", justify="right")
    reasons = list(m["termination_reasons"].items())
    kinds = list(m["failure_kinds"].items())
    for i in range(max(len(reasons), len(kinds))):
        r = reasons[i] if i < len(reasons) else ("", "")
        f = kinds[i] if i < len(kinds) else ("", "")
        counts.add_row(r[0], str(r[1]), f[0], str(f[1]))
    console.print(counts)
    for line in user_review_lines(m.get("user_review") or {}):
        console.print(line, highlight=False, markup=False)


def _print_personas(report: RunReport, console: Console) -> None:
    """Print the by-persona table (reliability, abandonment, turns, user flags)."""
    personas = Table(title="by persona")
    ks = [f"pass^{k}" for k in range(1, report.trials_per_task + 1)]
    for col in ("persona", "trials", "passed", "success", *ks, "abandoned", "mean turns",
                "turns to abandon", "user flags"):
        personas.add_column(col, justify="left" if col in ("persona", "user flags") else "right")
    for name, p in report.metrics["personas"].items():
        turns_out = p.get("mean_turns_to_abandon")
        personas.add_row(name, str(p["trials"]), str(p["passed"]), _rate(p["success_rate"]),
                         *(_rate(p.get(k)) for k in ks), f"{p['abandoned']} ({_rate(p['abandonment_rate'])})",
                         "-" if p["mean_turns"] is None else f"{p['mean_turns']:.1f}",
                         "-" if turns_out is None else f"{turns_out:.1f}",
                         ", ".join(f"{k} {v}" for k, v in (p.get("user_flags") or {}).items()) or "-")
    console.print(personas)


def _print_cost_latency(m: Mapping[str, Any], console: Console) -> None:
    """Print the cost and latency table, cost per task and per success, and tool call statuses."""
    cost = Table(title="cost (USD) and latency per trial")
    for col in ("quantity", "total", "mean", "p50", "p95"):
        cost.add_column(col, justify="left" if col == "quantity" else "right")
    judged = "judge" in (m.get("layers") or {}) or bool((m["cost_usd"].get("judge") or {}).get("total"))
    for who in ("agent", "user", *(("judge",) if judged else ()), "total"):
        s = m["cost_usd"][who]
        cost.add_row(f"cost {who}", format_cost(s, "total"), format_cost(s, "mean"), format_cost(s, "p50"),
                     format_cost(s, "p95"))
    for who, label in (("trial", "trial duration"), ("agent", "agent time"), ("user", "user time"),
                       ("tool", "tool time")):
        s = m["latency_s"][who]
        cost.add_row(label, format_seconds(s["total"]), format_seconds(s["mean"]), format_seconds(s["p50"]),
                     format_seconds(s["p95"]))
    tc = m["tool_calls"]["per_trial"]
    cost.add_row("tool calls", "-" if tc["total"] is None else f"{tc['total']:.0f}",
                 "-" if tc["mean"] is None else f"{tc['mean']:.2f}",
                 "-" if tc["p50"] is None else f"{tc['p50']:.0f}", "-" if tc["p95"] is None else f"{tc['p95']:.1f}")
    console.print(cost)
    per_task, per_success = m["cost_usd"]["per_task"], m["cost_usd"]["per_success"]
    console.print(f"cost per task: {'unknown' if per_task is None else f'${per_task:.4f}'}; per success: "
                  f"{'unknown' if per_success is None else f'${per_success:.4f}'}", highlight=False)
    statuses = m["tool_calls"]["statuses"]
    if statuses:
        console.print("tool call statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.items())
                      + f" ({m['tool_calls']['errors']} not ok)", highlight=False)


def _print_failures(report: RunReport, console: Console, max_failures: int, see: str | None) -> None:
    """Print up to ``max_failures`` failed trials, then how many more there are (and where to read them)."""
    failed = report.failed_cells()
    for cell in failed[:max_failures]:
        if cell.record is not None:
            print_failure(cell.record, console, cell.failures)
    if len(failed) > max_failures:
        console.print(f"... and {len(failed) - max_failures} more failed trials" + (f" (see {see})" if see else ""),
                      highlight=False)


def recovery_text(recovery: Mapping[str, Any] | None) -> str | None:
    """Return the one-line recovery rate of a run with environment faults, or None without faults.

    Args:
        recovery: :func:`simulator.stats.faults.recovery_rates` of the run (``metrics["recovery"]``), or None.

    Returns:
        E.g. ``"recovery from environment faults: 7/12 faulted trials passed (58.3%); transient 5/8, timeout
        1/3 (faulted calls: transient 9, timeout 3)"``.
    """
    if not recovery:
        return None
    faulted = recovery.get("faulted", 0)
    if not faulted:
        return f"recovery from environment faults: no fault was injected in {recovery.get('trials', 0)} trials"
    kinds = ", ".join(f"{k} {v['recovered']}/{v['trials']}" for k, v in (recovery.get("by_kind") or {}).items())
    calls = ", ".join(f"{k} {v}" for k, v in (recovery.get("faults") or {}).items())
    return (f"recovery from environment faults: {recovery['recovered']}/{faulted} faulted trials passed "
            f"({share_text(recovery.get('rate'))}); {kinds} (faulted calls: {calls})")


def print_recovery(recovery: Mapping[str, Any] | None, console: Console) -> None:
    """Print :func:`recovery_text` when the run injected environment faults."""
    text = recovery_text(recovery)
    if text is not None:
        console.print(text, highlight=False, markup=False)


def print_clusters(rows: Sequence[ClusterRow], console: Console, *, title: str = "Failure clusters",
                   unsigned: int = 0, max_clusters: int = MAX_CLUSTERS, lines: int = EXAMPLE_LINES) -> None:
    """Print the "Failure clusters" section: a table of clusters, then each cluster's example transcript.

    Args:
        rows: the clusters (:func:`~simulator.report._clusters.run_clusters` or ``hunt_clusters``).
        console: where to print.
        title: the table's title.
        unsigned: failed trials recorded without a signature (named in a note).
        max_clusters: clusters listed at most.
        lines: transcript lines shown per example.
    """
    table = Table(title=f"{title} ({len(rows)} signatures, {sum(r.count for r in rows)} failed trials)")
    for col in ("#", *SIGNATURE_FIELDS, "count", "share of trials", "share of agent turns", "regression case"):
        table.add_column(col, justify="right" if col in ("#", "count") or col.startswith("share") else "left")
    for i, r in enumerate(rows[:max_clusters], start=1):
        table.add_row(str(i), *(escape(s) for s in r.signature), str(r.count), share_text(r.trial_share),
                      share_text(r.turn_share), escape(r.case_id or "-"))
    console.print(table)
    for i, r in enumerate(rows[:max_clusters], start=1):
        kind = "shrunk example" if r.shrunk else "example"
        console.print(f"cluster {i} {kind} ({r.example}, {len(r.transcript)} lines):", highlight=False,
                      markup=False)
        for role, text in r.transcript[:lines]:
            flat = " ".join(text.split())
            console.print(f"    {role}: {flat if len(flat) <= 140 else flat[:137] + '...'}", highlight=False,
                          markup=False)
        if len(r.transcript) > lines:
            console.print(f"    ... {len(r.transcript) - lines} more lines", highlight=False, markup=False)
    if len(rows) > max_clusters:
        console.print(f"... and {len(rows) - max_clusters} more clusters", highlight=False)
    if unsigned:
        console.print(f"{unsigned} failed trials have no recorded signature (recorded before signatures were)",
                      highlight=False)

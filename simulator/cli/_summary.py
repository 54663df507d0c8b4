"""The terminal summary of a finished run (``tausim run``) and of one failed trial."""

from __future__ import annotations

import json

from rich.table import Table

from simulator.cli._common import (
    console,
)
from simulator.metrics import cell_id, persona_metrics
from simulator.runner import RunResult, TrialResult


def print_summary(result: RunResult, max_failures: int = 20, see: str | None = None) -> None:
    cfg = result.config
    n = len(result.trials)
    cells = n // max(cfg.trials, 1)
    shape = (f"tasks={cells // len(cfg.personas)} personas={len(cfg.personas)} trials/cell={cfg.trials}"
             if cfg.personas else f"tasks={cells} trials/task={cfg.trials}")
    console.print(f"[bold]tausim run[/] domain={cfg.domain} agent={cfg.agent} user={cfg.user} {shape} "
                  f"seed={cfg.seed} ({result.wall_seconds:.2f} s)", highlight=False)
    table = Table(title="reliability (mean over task cells: task x persona)" if cfg.personas
                  else "reliability (mean over tasks)")
    table.add_column("k", justify="right")
    table.add_column("pass^k", justify="right")
    table.add_column("pass@k", justify="right")
    for k in range(1, cfg.trials + 1):
        table.add_row(str(k), f"{result.metrics[f'pass^{k}']:.4f}", f"{result.metrics[f'pass@{k}']:.4f}")
    console.print(table)
    reasons = Table(title="termination reasons")
    reasons.add_column("reason")
    reasons.add_column("trials", justify="right")
    for reason, count in result.termination_reasons.items():
        reasons.add_row(reason, str(count))
    console.print(reasons)
    if cfg.personas:
        print_personas(result)
    by_task: dict[str, list[bool]] = {}
    for t in result.trials:
        by_task.setdefault(cell_id(t.task_id, t.persona), []).append(t.passed)
    passing = [tid for tid, oks in by_task.items() if all(oks)]
    what = "task cells (task@persona)" if cfg.personas else "tasks"
    console.print(f"{what} passing every trial: {len(passing)}/{len(by_task)}", highlight=False)
    failing = [tid for tid, oks in by_task.items() if not all(oks)]
    if 0 < len(failing) <= 30:
        console.print("  not passing every trial: " + ", ".join(failing), highlight=False)
    from simulator.grading.judge import judge_summary_lines

    for line in judge_summary_lines(result.trials):
        console.print(line, highlight=False, markup=False)
    failed = [t for t in result.trials if not t.passed]
    for t in failed[:max_failures]:
        print_failure(t)
    if len(failed) > max_failures:
        console.print(f"... and {len(failed) - max_failures} more failed trials" + (f" (see {see})" if see else ""))


def print_personas(result: RunResult) -> None:
    """Print the per-persona table: pass^k, abandonment, turns to abandonment, user flags."""
    cfg = result.config
    docs = [t.model_dump(mode="json") for t in result.trials]
    tasks = list(dict.fromkeys(t.task_id for t in result.trials))
    by = persona_metrics(docs, tasks, cfg.trials, cfg.personas or [], incomplete="count", n_resamples=200)
    table = Table(title="by persona")
    for col in ("persona", "trials", *(f"pass^{k}" for k in range(1, cfg.trials + 1)), "abandoned",
                "mean turns to abandon", "user flags"):
        table.add_column(col, justify="left" if col in ("persona", "user flags") else "right")
    for name, m in by.items():
        abandoned = sum(1 for t in result.trials if t.persona == name and t.termination_reason == "user_abandon")
        turns = m["mean_turns_to_abandon"]
        flags = ", ".join(f"{k} {v}" for k, v in m["user_flags"].items()) or "-"
        table.add_row(name, str(m["trials"]), *(f"{m[f'pass^{k}']:.3f}" for k in range(1, cfg.trials + 1)),
                      f"{abandoned} ({m['abandon_rate'] or 0:.0%})", "-" if turns is None else f"{turns:.1f}", flags)
    console.print(table)


def print_failure(t: TrialResult) -> None:
    g = t.grade
    why = g.failure if g else "not graded"
    who = f" persona {t.persona}" if t.persona else ""
    console.print(f"[red]FAIL[/] task {t.task_id}{who} trial {t.trial}: {t.termination_reason}; {why}",
                  highlight=False, markup=True)
    if t.error:
        lines = [ln for ln in t.error.strip().splitlines() if ln.strip()]
        console.print(f"    error: {lines[-1] if lines else t.error}", highlight=False, markup=False)
    if g is None:
        return
    for d in g.state.differences[:5]:
        console.print(f"    {d['table']}{d['key']}.{d['field']}: expected {d['expected']!r}, got {d['actual']!r}",
                      highlight=False)
    for kind in ("added", "removed"):
        for r in getattr(g.state, kind)[:3]:
            console.print(f"    {kind} {r['table']}{r['key']}", highlight=False)
    if g.outputs["missing"]:
        console.print(f"    missing outputs: {g.outputs['missing']}", highlight=False, markup=False)
    for v in g.process.violations:
        console.print(f"    process: {v}", highlight=False, markup=False)
    for r in g.loops.repeats:
        console.print(f"    loop: {r['tool']}({json.dumps(r['arguments'])}) called {r['count']} times "
                      f"({g.loops.threshold} repeats allowed)", highlight=False, markup=False)
    for v in g.budget.exceeded:
        console.print(f"    budget: {v}", highlight=False, markup=False)
    for a in (g.judge.assertions if g.judge is not None and g.judge.gating else []):
        if not a.passed:
            console.print(f"    judge: {a.assertion!r}: {a.verdict or 'no verdict'}: {a.reason}", highlight=False,
                          markup=False)


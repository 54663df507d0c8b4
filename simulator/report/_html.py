"""One self-contained HTML page for a run: inline CSS, JavaScript and SVG, no external resource.

Every text that comes from a run document (task ids, messages, tool arguments and results, errors) is escaped
with :func:`html.escape`, its control characters and lone surrogates written visibly
(:func:`simulator.types.sanitize.shown`: ESC as four characters), and a text longer than :data:`TEXT_LIMIT`
characters is cut with a note of its length: transcripts hold arbitrary model text. The page works from a
``file://`` URL: each trial's transcript is rendered (hidden) into the page, and the script shows the trial named
by the URL hash (``#trial=TASK/INDEX``, URL-encoded), or the first failed trial when the hash names none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from simulator.types.sanitize import shown

from ._analysis import OUTCOMES, RunReport, TrialCell
from ._clusters import SIGNATURE_FIELDS, ClusterRow, hunt_clusters, run_clusters, share_text
from ._terminal import (
    component_label,
    data_notes,
    format_cost,
    format_seconds,
    involved_text,
    noise_floor_text,
    user_review_lines,
)

__all__ = ["clusters_section", "recovery_section", "render_html", "render_hunt_html", "trial_anchor"]

_OUTCOME_LABELS = {
    "passed": "passed",
    "state": "failed: state",
    "outputs": "failed: outputs",
    "process": "failed: process",
    "loops": "failed: loops",
    "budget": "failed: budget",
    "assertions": "failed: assertions",
    "cutoff": "failed: cut off (max turns/steps)",
    "error": "error",
    "missing": "missing",
}

_CSS = """
:root{--ok:#2e9e5b;--state:#d64545;--outputs:#e08a1e;--process:#8e5bd6;--error:#333;--bg:#f6f7f9;--fg:#1d2330;
--muted:#687085;--line:#dde1e8;--accent:#2d6cdf}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;background:var(--bg);
color:var(--fg)}
header{background:#1d2330;color:#fff;padding:16px 24px}
header h1{margin:0 0 4px;font-size:20px}
header .meta{color:#c5cbd8;font-size:13px}
main{padding:16px 24px;max-width:1400px;margin:0 auto}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 16px;margin:0 0 16px}
h2{font-size:16px;margin:0 0 10px}
h3{font-size:15px;margin:0 0 8px}
h4{font-size:13px;margin:12px 0 6px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.cards{display:flex;flex-wrap:wrap;gap:10px;background:none;border:0;padding:0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:130px}
.card .v{font-size:22px;font-weight:600}
.card .l{color:var(--muted);font-size:12px}
.card .s{color:var(--muted);font-size:11px}
.row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.row>section{flex:1 1 300px}
.row>section.wide{flex:2 1 520px}
table.t{border-collapse:collapse;width:100%;font-size:13px}
table.t th,table.t td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
table.t td.n,table.t th.n{text-align:right;font-variant-numeric:tabular-nums}
.matrix{overflow:auto;max-height:75vh}
.matrix table{border-collapse:collapse}
.matrix td{padding:1px 2px}
.matrix td.task{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;padding-right:10px;white-space:nowrap;
max-width:320px;overflow:hidden;text-overflow:ellipsis}
.matrix td.cnt{color:var(--muted);font-size:12px;padding-left:8px;white-space:nowrap}
.matrix th{font-size:11px;color:var(--muted);font-weight:normal}
a.cell{display:block;width:20px;height:20px;border-radius:3px;border:1px solid rgba(0,0,0,.08)}
a.cell:hover{outline:2px solid var(--accent)}
a.cell.sel{outline:3px solid var(--accent);outline-offset:1px}
.o-passed{background:var(--ok)}.o-state{background:var(--state)}.o-outputs{background:var(--outputs)}
.o-process{background:var(--process)}.o-loops{background:#c2418f}.o-budget{background:#8a6d1f}.o-cutoff{background:#6b7a8f}.o-error{background:var(--error)}
.o-assertions{background:#b8502a}tr.a-fail td{background:#fdecec}
ul.involved{margin:4px 0 0;padding-left:18px;font-size:12px}
.o-missing{background:#fff;border:1px dashed #999 !important}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:0 0 8px;font-size:12px;color:var(--muted)}
.legend span.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px;
border:1px solid rgba(0,0,0,.08)}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;color:#fff;margin-left:6px}
.badge.o-missing{color:var(--fg)}
.st{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;background:#e6f4ea;color:#1e6b3a}
.st.bad{background:#fde8e8;color:#a12727}
.msg{border-left:3px solid var(--line);padding:4px 10px;margin:6px 0;background:#fafbfc;border-radius:0 6px 6px 0}
.msg .who{font-size:11px;color:var(--muted);letter-spacing:.05em}
.msg .who .role{text-transform:uppercase}
summary{cursor:pointer;margin:4px 0}
.msg.user{border-color:#2d6cdf}.msg.assistant{border-color:#2e9e5b}.msg.tool{border-color:#999;background:#f3f4f6}
.msg.system{border-color:#e08a1e}
.txt{white-space:pre-wrap;word-break:break-word;margin:2px 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f6;border-radius:4px;padding:6px 8px;margin:4px 0;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.call{border:1px solid var(--line);border-radius:6px;padding:4px 8px;margin:4px 0;background:#fff}
.call .fn{font:600 12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 8px;font-size:13px}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0}
ul.fails{columns:3 260px;font-size:13px;padding-left:18px;margin:0}
#detail .empty{color:var(--muted)}
svg text{font:11px system-ui,sans-serif;fill:#555}
.note{color:var(--muted);font-size:12px}
"""

_JS = """
(function () {
  "use strict";
  var body = document.body;
  window.addEventListener("error", function (e) { body.setAttribute("data-report-error", String(e.message)); });
  function findTrial(task, trial) {
    var arts = document.querySelectorAll("#trials article.trial");
    for (var i = 0; i < arts.length; i++) {
      if (arts[i].getAttribute("data-task") === task && arts[i].getAttribute("data-trial") === trial) {
        return arts[i];
      }
    }
    return null;
  }
  function parseHash() {
    var h = window.location.hash.replace(/^#/, "");
    if (h.indexOf("trial=") !== 0) { return null; }
    var v;
    try { v = decodeURIComponent(h.slice(6)); } catch (err) { return null; }
    var i = v.lastIndexOf("/");
    if (i < 0) { return null; }
    return {task: v.slice(0, i), trial: v.slice(i + 1)};
  }
  function select(task, trial) {
    var cells = document.querySelectorAll("a.cell");
    for (var i = 0; i < cells.length; i++) {
      var on = cells[i].getAttribute("data-task") === task && cells[i].getAttribute("data-trial") === trial;
      cells[i].classList.toggle("sel", on);
    }
  }
  function openTrial(task, trial) {
    var detail = document.getElementById("detail");
    var art = findTrial(task, trial);
    select(task, trial);
    if (!art) {
      var p = document.createElement("p");
      p.className = "empty";
      p.textContent = "No recorded trial " + task + " / " + trial + " (missing from the run).";
      detail.replaceChildren(p);
      body.setAttribute("data-open-trial", "");
      return false;
    }
    detail.replaceChildren(art.cloneNode(true));
    body.setAttribute("data-open-trial", task + "/" + trial);
    return true;
  }
  function route(scroll) {
    var h = parseHash();
    if (h) {
      openTrial(h.task, h.trial);
      if (scroll) { document.getElementById("detail-panel").scrollIntoView({block: "start"}); }
      return;
    }
    var first = document.querySelector("#trials article.trial[data-failed='1']");
    if (first) { openTrial(first.getAttribute("data-task"), first.getAttribute("data-trial")); }
  }
  window.addEventListener("hashchange", function () { route(true); });
  route(parseHash() !== null);
  body.setAttribute("data-report-ready", "1");
})();
"""


def trial_anchor(task_id: str, trial: int) -> str:
    """Return the URL fragment that opens a trial in the page: ``trial=`` + the URL-encoded ``TASK/INDEX``."""
    return "trial=" + quote(shown(f"{task_id}/{trial}"), safe="")  # shown: a lone surrogate has no UTF-8 form


TEXT_LIMIT = 20_000
"""Characters of one text (a message, a tool result, arguments, an error) shown on the page; a longer text is cut
there, with a note of its full length (the run record keeps it whole), so that a trial of three 10 MB messages
does not make a 30 MB page."""


def _e(value: Any) -> str:
    r"""HTML-escaped text, control characters and lone surrogates written visibly (ESC as ``\x1b``: see shown)."""
    return escape(shown("" if value is None else str(value)), quote=True)


def _long(value: Any) -> str:
    """:func:`_e` of a text that may be long: cut at :data:`TEXT_LIMIT` characters, with a note of its length."""
    text = "" if value is None else str(value)
    if len(text) <= TEXT_LIMIT:
        return _e(text)
    return (f"{_e(text[:TEXT_LIMIT])}<span class=note>&hellip; [cut: {len(text):,} characters in all, the first "
            f"{TEXT_LIMIT:,} shown; the run record holds the whole text]</span>")


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def _fmt_rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th{' class=n' if i in numeric else ''}>{_e(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if i in numeric else ''}>{_e(v)}</td>" for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    if not rows:
        body = f"<tr><td colspan={len(headers)} class=note>none</td></tr>"
    return f"<table class=t><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _svg_curve(report: RunReport) -> str:
    """Return the pass^k (and pass@k) curve over k = 1..n with the 95% bootstrap band, as inline SVG."""
    m = report.metrics
    n = report.trials_per_task
    if not report.task_ids:
        return "<p class=note>no tasks</p>"
    width, height, left, right, top, bottom = 620, 280, 48, 20, 16, 40
    pw, ph = width - left - right, height - top - bottom

    def x(k: int) -> float:
        return left + (pw / 2 if n == 1 else (k - 1) * pw / (n - 1))

    def y(v: float) -> float:
        return top + (1.0 - v) * ph

    parts = [f'<svg role="img" aria-label="pass^k curve" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">']
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e5e7eb"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    step = max(1, n // 16)
    for k in range(1, n + 1, step):
        parts.append(f'<text x="{x(k):.1f}" y="{height - bottom + 16}" text-anchor="middle">{k}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle">k (trials that must all '
                 'succeed)</text>')
    hat = [(k, m[f"pass^{k}"], *m["ci95"][f"pass^{k}"]) for k in range(1, n + 1)]
    at = [(k, m[f"pass@{k}"], *m["ci95"][f"pass@{k}"]) for k in range(1, n + 1)]
    if n > 1:
        band = [f"{x(k):.1f},{y(hi):.1f}" for k, _, _, hi in hat] + [f"{x(k):.1f},{y(lo):.1f}"
                                                                       for k, _, lo, _ in reversed(hat)]
        parts.append(f'<polygon points="{" ".join(band)}" fill="#2d6cdf" fill-opacity="0.18" stroke="none"/>')
        parts.append('<polyline fill="none" stroke="#9aa3b5" stroke-width="1.5" stroke-dasharray="5 4" points="'
                     + " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v, _, _ in at) + '"/>')
        parts.append('<polyline fill="none" stroke="#2d6cdf" stroke-width="2.5" points="'
                     + " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v, _, _ in hat) + '"/>')
    for k, v, lo, hi in hat:
        parts.append(f'<line x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{y(hi):.1f}" y2="{y(lo):.1f}" stroke="#2d6cdf" '
                     'stroke-opacity="0.5"/>')
        parts.append(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="4" fill="#2d6cdf"><title>pass^{k} = {v:.3f} '
                     f'(95% CI {lo:.3f} to {hi:.3f})</title></circle>')
    for k, v, lo, hi in at:
        parts.append(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3" fill="#9aa3b5"><title>pass@{k} = {v:.3f} '
                     f'(95% CI {lo:.3f} to {hi:.3f})</title></circle>')
    parts.append("</svg>")
    legend = ('<div class=legend><span><span class=sw style="background:#2d6cdf"></span>pass^k (all k succeed)</span>'
              '<span><span class=sw style="background:#2d6cdf;opacity:.25"></span>95% bootstrap CI over tasks</span>'
              '<span><span class=sw style="background:#9aa3b5"></span>pass@k (at least one)</span></div>')
    return legend + "".join(parts)


def _matrix(report: RunReport) -> str:
    n = report.trials_per_task
    legend = "".join(f'<span><span class="sw o-{o}"></span>{_e(_OUTCOME_LABELS[o])} '
                     f'({report.metrics["outcomes"].get(o, 0)})</span>' for o in OUTCOMES)
    head = "<tr><th></th>" + "".join(f"<th>{i}</th>" for i in range(n)) + "<th></th></tr>"
    rows = []
    by_task: dict[str, list[TrialCell]] = {}
    for c in report.cells:
        by_task.setdefault(c.task_id, []).append(c)
    for tid in report.task_ids:
        cells = by_task.get(tid, [])
        tds = []
        for c in cells:
            reason = c.record.get("termination_reason") if c.record else None
            tip = f"{tid} / trial {c.trial}: {_OUTCOME_LABELS[c.outcome]}"
            if c.failures and c.outcome != "passed":
                tip += f" ({', '.join(c.failures)})"
            if reason:
                tip += f"; ended by {reason}"
            persona = c.record.get("persona") if c.record else None
            if persona is not None:
                tip += f"; persona {persona.get('name') if isinstance(persona, Mapping) else persona}"
            tds.append(f'<td><a class="cell o-{c.outcome}" href="#{_e(trial_anchor(tid, c.trial))}" '
                       f'data-task="{_e(tid)}" data-trial="{c.trial}" title="{_e(tip)}" '
                       f'aria-label="{_e(tip)}"></a></td>')
        passed = sum(1 for c in cells if c.outcome == "passed")
        rows.append(f'<tr><td class=task title="{_e(tid)}">{_e(tid)}</td>{"".join(tds)}'
                    f"<td class=cnt>{passed}/{n}</td></tr>")
    return (f"<div class=legend>{legend}</div><div class=matrix><table><thead>{head}</thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _status_badge(status: str | None) -> str:
    cls = "st" if status == "ok" else "st bad"
    return f'<span class="{cls}">{_e(status or "no record")}</span>'


def _tool_result(content: str) -> str:
    """Render a tool result: JSON pretty-printed; a long one folded behind its first line."""
    text = content
    try:
        decoded = json.loads(content)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict | list):
        text = _json_text(decoded)
    if len(text) <= 600 and text.count("\n") < 15:
        return f"<pre>{_e(text)}</pre>"
    preview = " ".join(content[:1000].split())[:140]
    return (f"<details><summary class=note>{_e(preview)}&hellip; ({len(content)} chars)</summary>"
            f"<pre>{_long(text)}</pre></details>")


def _transcript(trial: Mapping[str, Any]) -> str:
    traj = trial.get("trajectory") or {}
    records = {str(c.get("call_id")): c for c in traj.get("tool_calls") or [] if isinstance(c, Mapping)}
    out = []
    for msg in traj.get("messages") or []:
        if not isinstance(msg, Mapping):
            continue
        role = str(msg.get("role") or "?")
        role_cls = role if role in ("user", "assistant", "tool", "system") else "other"
        parts = [f'<div class="msg {role_cls}"><div class=who><span class=role>{_e(role)}</span>']
        if msg.get("requestor") == "user":  # dual control: the user's own tool call or its result
            parts.append(" <span class=note>requestor user (on the user's device, not shown to the agent)</span>")
        if role == "tool":
            rec = records.get(str(msg.get("tool_call_id")))
            parts.append(f" &middot; result of <span class=fn>{_e(msg.get('name'))}</span> "
                         f"<span class=note>{_e(msg.get('tool_call_id'))}</span> "
                         f"{_status_badge(rec.get('status') if rec else None)}")
        parts.append("</div>")
        content = msg.get("content")
        if content and role == "tool":
            parts.append(_tool_result(str(content)))
        elif content:
            parts.append(f"<div class=txt>{_long(content)}</div>")
        for call in msg.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            rec = records.get(str(call.get("id")))
            args = call.get("arguments")
            args_text = _json_text(args) if args is not None else str(call.get("raw_arguments") or "")
            parts.append(f'<div class=call><span class=fn>{_e(call.get("name"))}</span> '
                         f'<span class=note>{_e(call.get("id"))}</span> '
                         f'{_status_badge(rec.get("status") if rec else None)}<pre>{_long(args_text)}</pre>')
            if rec and rec.get("bug"):
                parts.append(f"<pre>{_long(rec['bug'])}</pre>")
            parts.append("</div>")
        parts.append("</div>")
        out.append("".join(parts))
    return "".join(out) or "<p class=note>no messages</p>"


def _grade_details(trial: Mapping[str, Any]) -> str:
    grade = trial.get("grade")
    if not isinstance(grade, Mapping):
        return "<p class=note>not graded</p>"
    parts = []
    state = grade.get("state") or {}
    diffs = state.get("differences") or []
    parts.append(f"<h4>State differences ({len(diffs)})</h4>")
    if diffs:
        parts.append(_table(("table", "key", "field", "expected", "actual"), [
            (d.get("table"), json.dumps(d.get("key"), default=str), d.get("field"),
             json.dumps(d.get("expected"), default=str), json.dumps(d.get("actual"), default=str))
            for d in diffs if isinstance(d, Mapping)
        ]))
    for kind, label in (("added", "Rows added (not in the goal state)"), ("removed", "Rows missing (in the goal "
                                                                                      "state)")):
        rows = state.get(kind) or []
        if rows:
            parts.append(f"<h4>{label} ({len(rows)})</h4>")
            parts.append(_table(("table", "key", "row"), [
                (r.get("table"), json.dumps(r.get("key"), default=str), json.dumps(r.get("row"), default=str))
                for r in rows if isinstance(r, Mapping)
            ]))
    outputs = grade.get("outputs") or {}
    missing = outputs.get("missing") or []
    parts.append(f"<h4>Missing outputs ({len(missing)})</h4>")
    if missing:
        parts.append("<ul>" + "".join(f"<li><code>{_e(o)}</code></li>" for o in missing) + "</ul>")
    violations = (grade.get("process") or {}).get("violations") or []
    parts.append(f"<h4>Process violations ({len(violations)})</h4>")
    if violations:
        parts.append("<ul>" + "".join(f"<li>{_e(v)}</li>" for v in violations) + "</ul>")
    loops = grade.get("loops") or {}
    repeats = [r for r in loops.get("repeats") or [] if isinstance(r, Mapping)]
    if repeats:
        parts.append(f"<h4>Loops ({len(repeats)}; {_e(loops.get('threshold'))} repeats allowed)</h4>")
        parts.append(_table(("tool", "arguments", "calls"), [
            (r.get("tool"), json.dumps(r.get("arguments"), default=str), r.get("count")) for r in repeats]))
    exceeded = (grade.get("budget") or {}).get("exceeded") or []
    if exceeded:
        parts.append(f"<h4>Budget exceeded ({len(exceeded)})</h4>")
        parts.append("<ul>" + "".join(f"<li>{_e(v)}</li>" for v in exceeded) + "</ul>")
    parts.append(_assertion_details(grade.get("assertions")))
    return "".join(parts)


def _assertion_details(part: Any) -> str:
    """Render a trial's assertions: verdict, expected, actual, and every row or event involved in a failed one."""
    if not isinstance(part, Mapping):
        return ""
    results = [r for r in part.get("results") or [] if isinstance(r, Mapping)]
    failed = sum(1 for r in results if not r.get("passed"))
    rows = []
    for r in results:
        ok = bool(r.get("passed"))
        verdict = "skipped" if r.get("skipped") else "passed" if ok else "FAILED"
        note = f" <span class=note>({_e(r['note'])})</span>" if r.get("note") else ""
        involved = "" if ok else "<ul class=involved>" + "".join(
            f"<li><code>{_e(involved_text(i, limit=2000))}</code></li>" for i in r.get("involved") or []
            if isinstance(i, Mapping)) + "</ul>"
        rows.append(f"<tr class={'a-ok' if ok else 'a-fail'}><td class=n>{_e(r.get('index'))}</td>"
                    f"<td>{_e(r.get('type'))}</td><td>{verdict}</td><td>{_e(r.get('summary'))}{note}{involved}</td>"
                    f"<td><code>{_e(json.dumps(r.get('expected'), default=str))}</code></td>"
                    f"<td><code>{_e(json.dumps(r.get('actual'), default=str))}</code></td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("#", "type", "result", "assertion", "expected", "actual"))
    return (f"<h4>Assertions ({len(results) - failed} of {len(results)} passed)</h4>"
            f"<table class=t><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _usage_cost(trial: Mapping[str, Any], who: str) -> str:
    usage = (trial.get("trajectory") or {}).get(f"{who}_usage") or {}
    cost = usage.get("cost_usd") if isinstance(usage, Mapping) else None
    tokens = ""
    if isinstance(usage, Mapping) and (usage.get("prompt_tokens") or usage.get("completion_tokens")):
        tokens = f", {usage.get('prompt_tokens', 0)} in / {usage.get('completion_tokens', 0)} out tokens"
    return ("unknown" if cost is None else f"${float(cost):.4f}") + tokens


def _trial_article(index: int, cell: TrialCell) -> str:
    trial = cell.record or {}
    traj = trial.get("trajectory") or {}
    failed = "0" if cell.outcome == "passed" else "1"
    kv = [
        ("outcome", _OUTCOME_LABELS[cell.outcome] + (f" ({', '.join(cell.failures)})" if cell.failures else "")),
        ("termination", trial.get("termination_reason")),
        ("persona", trial.get("persona") if not isinstance(trial.get("persona"), Mapping)
         else trial["persona"].get("name")),
        ("seed", trial.get("seed")),
        ("duration", format_seconds(trial.get("duration_s") if isinstance(trial.get("duration_s"), int | float)
                                    else None)),
        ("agent time", format_seconds(traj.get("agent_seconds"))),
        ("turns / steps", f"{traj.get('turns', '-')} / {traj.get('steps', '-')}"),
        ("tool calls", len(traj.get("tool_calls") or [])),
        ("agent cost", _usage_cost(trial, "agent")),
        ("user cost", _usage_cost(trial, "user")),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in kv if v is not None)
    error = trial.get("error") or traj.get("error")
    err_html = f"<h4>Error</h4><pre>{_long(error)}</pre>" if error else ""
    notes = [n for n in traj.get("notes") or [] if isinstance(n, str)]
    if notes:  # what the trial's boundary changed in the agent's or user's values (simulator.types.sanitize)
        err_html += "<h4>Notes</h4><ul>" + "".join(f"<li>{_long(n)}</li>" for n in notes) + "</ul>"
    return (f'<article class=trial data-index="{index}" data-task="{_e(cell.task_id)}" data-trial="{cell.trial}" '
            f'data-failed="{failed}"><h3>{_e(cell.task_id)} &middot; trial {cell.trial}'
            f'<span class="badge o-{cell.outcome}">{_e(_OUTCOME_LABELS[cell.outcome])}</span></h3>'
            f"<dl class=kv>{dl}</dl>{err_html}{_grade_details(trial)}"
            f"<h4>Transcript</h4>{_transcript(trial)}</article>")


def _cards(report: RunReport) -> str:
    m = report.metrics
    n = report.trials_per_task
    cards = []
    if report.task_ids:
        lo, hi = m["ci95"]["pass^1"]
        cards.append(("pass^1", f"{m['pass^1']:.3f}", f"95% CI {lo:.3f} to {hi:.3f}"))
        if n > 1:
            lo, hi = m["ci95"][f"pass^{n}"]
            cards.append((f"pass^{n}", f"{m[f'pass^{n}']:.3f}", f"95% CI {lo:.3f} to {hi:.3f}"))
            cards.append((f"pass@{n}", f"{m[f'pass@{n}']:.3f}", ""))
    cards.append(("recorded / planned", f"{report.recorded} / {report.planned}",
                  f"{report.duplicates} duplicates, {m['missing_trials']} missing"))
    cards.append(("errored trials", str(m["errored_trials"]), "counted as failures"))
    cards.append(("total cost", format_cost(m["cost_usd"]["total"]), "agent + user"))
    lat = m["latency_s"]["trial"]
    cards.append(("trial latency p50", format_seconds(lat["p50"]), f"p95 {format_seconds(lat['p95'])}"))
    return "<div class=cards>" + "".join(
        f"<div class=card><div class=l>{_e(label)}</div><div class=v>{_e(value)}</div><div class=s>{_e(sub)}</div>"
        "</div>" for label, value, sub in cards) + "</div>"


def _stats_rows(report: RunReport) -> list[tuple[str, ...]]:
    m = report.metrics
    rows = []
    for who in ("agent", "user", "total"):
        s = m["cost_usd"][who]
        rows.append((f"cost {who}", *(format_cost(s, k, show_missing=False) for k in ("total", "mean", "p50", "p95")),
                     str(s["missing"])))
    for who, label in (("trial", "trial duration"), ("agent", "agent time"), ("user", "user time"),
                       ("tool", "tool time")):
        s = m["latency_s"][who]
        rows.append((label, *(format_seconds(s[k]) for k in ("total", "mean", "p50", "p95")), str(s["missing"])))
    for key, label in (("tool_calls", "tool calls"), ("turns", "turns")):
        s = m[key]["per_trial"] if key == "tool_calls" else m[key]
        rows.append((label, "-" if s["total"] is None else f"{s['total']:.0f}",
                     "-" if s["mean"] is None else f"{s['mean']:.2f}", "-" if s["p50"] is None else f"{s['p50']:.1f}",
                     "-" if s["p95"] is None else f"{s['p95']:.1f}", str(s["missing"])))
    return rows


def _safety(m: Mapping[str, Any]) -> str:
    v = m.get("violations") or {}
    if not v.get("total"):
        return "<p class=note>No safety violation.</p>"
    head = (f"<p><b>{v['total']} violation(s) in {v['trials_with_violation']} of {v['trials']} trials "
            f"(violation rate {_fmt_rate(v['rate'])})</b>, counted apart from pass: never averaged away.</p>")
    return head + _table(("kind", "violations", "trials", "rate"), [
        (kind, k["count"], k["trials"], _fmt_rate(k["rate"])) for kind, k in v["by_kind"].items()],
        numeric=(1, 2, 3))


_TRAJ_COLS = (("exact", "exact_match"), ("in order", "in_order_match"), ("set", "set_match"),
              ("prefix", "prefix_match"), ("decision", "tool_decision_accuracy"),
              ("selection", "tool_selection_accuracy"), ("parameters", "parameter_accuracy"),
              ("utilisation", "utilisation_accuracy"), ("abstention", "abstention_rate"),
              ("redundant", "redundant_call_rate"), ("recovery", "recovery_rate"))


def _trajectory(m: Mapping[str, Any]) -> str:
    suite = m.get("trajectory")
    if not suite:
        return "<p class=note>No trial has a reference trajectory.</p>"
    rows = [("suite", suite["trials"], *(_fmt_rate(suite[k]) for _, k in _TRAJ_COLS))]
    rows += [(task, t["trials"], *(_fmt_rate(t[k]) for _, k in _TRAJ_COLS))
             for task, t in (m.get("trajectory_per_task") or {}).items() if t]
    steps = m.get("mean_steps")
    note = (f"<p class=note>Against each task's reference trajectory (gold actions unless the task gives one); "
            f"reported apart from pass. Mean steps {'-' if steps is None else f'{steps:.1f}'}, timeout rate "
            f"{_fmt_rate(m.get('timeout_rate'))}.</p>")
    return _table(("task", "trials", *(c for c, _ in _TRAJ_COLS)), rows,
                  numeric=tuple(range(1, 2 + len(_TRAJ_COLS)))) + note


def _by_tag(m: Mapping[str, Any], n: int, personas: bool) -> str:
    """pass^k per tag: its distinct tasks, with personas its task cells (the mean is over them), its trials."""
    if not m.get("by_tag"):
        return ""
    ks = [f"pass^{k}" for k in range(1, n + 1)]
    counts = ("tasks", "cells", "trials") if personas else ("tasks", "trials")
    return "<section id=\"by-tag\"><h2>pass^k by tag</h2>" + _table(("tag", *counts, *ks), [
        (tag, *("-" if t.get(c) is None else t[c] for c in counts), *(_fmt_rate(t.get(k)) for k in ks))
        for tag, t in m["by_tag"].items()], numeric=tuple(range(1, 1 + len(counts) + n))) + "</section>"


def render_html(report: RunReport, title: str | None = None) -> str:
    """Render the report page.

    Args:
        report: the analysed run.
        title: page title (default: from the run id and configuration).

    Returns:
        One self-contained HTML document (no external URL: inline CSS, JavaScript and SVG).
    """
    m = report.metrics
    cfg = report.config
    doc = report.document
    title = title or (f"tausim report {report.run_id or ''} {cfg.get('domain', '')} "
                      f"{component_label(cfg.get('agent', ''))}").strip()
    meta = " &middot; ".join(_e(f"{k}: {v}") for k, v in (
        ("run", report.run_id or "-"), ("domain", cfg.get("domain")), ("agent", component_label(cfg.get("agent"))),
        ("user", component_label(cfg.get("user"))),
        *((("personas", ", ".join(cfg["personas"])), ("task cells", len(report.task_ids)),
           ("trials/cell", report.trials_per_task)) if cfg.get("personas")
          else (("tasks", len(report.task_ids)), ("trials/task", report.trials_per_task))),
        ("seed", cfg.get("seed")), *((("vary", m["vary"]),) if m.get("vary_note") else ()),
        ("git", str(doc.get("git_revision") or "-")[:12]),
        *((("split", f"{doc['split']}" + (" (holdout: never tune on it)" if doc["split"] == "holdout" else "")),)
          if doc.get("split") else ()),
    ))
    comps = _table(("component", "passed", "graded", "rate"), [
        (name, c["passed"], c["graded"], _fmt_rate(c["rate"])) for name, c in m["components"].items()
    ], numeric=(1, 2, 3))
    assertion_rows = m.get("assertions") or []
    assertions = "" if not assertion_rows else (
        "<section id=\"assertions\"><h2>Assertions: passed / trials per task</h2>" + _table(
            ("task", "#", "type", "assertion", "passed", "trials", "rate"),
            [(r["task_id"], r["index"], r["type"], r["label"], r["passed"], r["trials"], _fmt_rate(r["rate"]))
             for r in assertion_rows], numeric=(1, 4, 5, 6))
        + "<p class=note>A skipped assertion (its later event never happened) counts as passed.</p></section>")
    reasons = _table(("termination reason", "trials"), list(m["termination_reasons"].items()), numeric=(1,))
    kinds = _table(("failure kind", "trials"), list(m["failure_kinds"].items()), numeric=(1,))
    statuses = _table(("tool call status", "calls"), list(m["tool_calls"]["statuses"].items()), numeric=(1,))
    if m["personas"]:
        pks = [f"pass^{k}" for k in range(1, report.trials_per_task + 1)]
        personas = _table(("persona", "trials", "passed", "success", *pks, "abandoned", "mean turns",
                           "turns to abandon", "user flags"), [
            (name, p["trials"], p["passed"], _fmt_rate(p["success_rate"]), *(_fmt_rate(p.get(k)) for k in pks),
             f"{p['abandoned']} ({_fmt_rate(p['abandonment_rate'])})",
             "-" if p["mean_turns"] is None else f"{p['mean_turns']:.1f}",
             "-" if p.get("mean_turns_to_abandon") is None else f"{p['mean_turns_to_abandon']:.1f}",
             ", ".join(f"{k} {v}" for k, v in (p.get("user_flags") or {}).items()) or "-")
            for name, p in m["personas"].items()
        ], numeric=tuple(range(1, 7 + len(pks))))
    else:
        personas = "<p class=note>The trials of this run carry no persona.</p>"
    ks = _table(("k", "pass^k", "95% CI", "pass@k", "95% CI"), [
        (k, f"{m[f'pass^{k}']:.3f}", "{:.3f} to {:.3f}".format(*m["ci95"][f"pass^{k}"]), f"{m[f'pass@{k}']:.3f}",
         "{:.3f} to {:.3f}".format(*m["ci95"][f"pass@{k}"])) for k in range(1, report.trials_per_task + 1)
    ] if report.task_ids else [], numeric=(0, 1, 2, 3, 4))
    cost_table = _table(("per trial", "total", "mean", "p50", "p95", "unknown"), _stats_rows(report),
                        numeric=(1, 2, 3, 4, 5))
    per_task, per_success = m["cost_usd"]["per_task"], m["cost_usd"]["per_success"]
    cost_note = (f"<p class=note>cost per task: {'unknown' if per_task is None else f'${per_task:.4f}'}; per "
                 f"success: {'unknown' if per_success is None else f'${per_success:.4f}'}. An unpriced model's "
                 "cost is unknown, never $0.</p>")
    failed = report.failed_cells()
    fails = "".join(f'<li><a href="#{_e(trial_anchor(c.task_id, c.trial))}">{_e(c.task_id)} / {c.trial}</a> '
                    f'<span class=note>{_e(", ".join(c.failures))}</span></li>' for c in failed)
    articles = "".join(_trial_article(i, c) for i, c in enumerate(report.cells) if c.record is not None)
    notes = [m["vary_note"]] if m.get("vary_note") else []
    notes += data_notes(report.document)
    if m["missing_trials"]:
        notes.append(f"{m['missing_trials']} planned trials are missing; they count as failures in pass^k.")
    if report.duplicates:
        notes.append(f"{report.duplicates} duplicate records ignored (the first record of each trial is used).")
    if report.unplanned:
        notes.append(f"{report.unplanned} recorded trials are outside the plan and ignored.")
    notes_html = "".join(f"<p class=note>{_e(n)}</p>" for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head>
<body>
<header><h1>{_e(title)}</h1><div class=meta>{meta}</div></header>
<main>
{_cards(report)}
{notes_html}
<div class=row>
<section id="passk"><h2>Reliability: pass^k for k = 1..{report.trials_per_task}</h2>{_svg_curve(report)}</section>
<section><h2>pass^k and pass@k</h2>{ks}<p class=note>Mean over tasks; the denominator is the planned number of
trials. Percentile bootstrap over tasks ({m['bootstrap']['resamples']} resamples, seed {m['bootstrap']['seed']}).</p>
<p class=note id="noise-floor">{_e(noise_floor_text(m, cfg.get("personas")) or "")}</p>
{"".join(f"<p class=note>{_e(line)}</p>" for line in user_review_lines(m.get("user_review") or {}))}
</section>
</div>
<section id="matrix"><h2>Tasks &times; trials</h2>{_matrix(report)}
<p class=note>Click a cell to open its transcript below.</p></section>
<section id="detail-panel"><h2>Trial</h2><div id="detail"><p class=empty>Click a cell of the matrix or a failed trial
to see its transcript.</p></div></section>
<div class=row>
<section><h2>Grading components</h2>{comps}</section>
<section><h2>Termination reasons</h2>{reasons}</section>
<section><h2>Failure kinds</h2>{kinds}</section>
</div>
{assertions}
<div class=row>
<section><h2>Personas</h2>{personas}</section>
<section class=wide><h2>Cost and latency</h2>{cost_table}{cost_note}</section>
<section><h2>Tool calls</h2>{statuses}<p class=note>{m['tool_calls']['errors']} calls did not return ok.</p></section>
</div>
<section id="safety"><h2>Safety violations</h2>{_safety(m)}</section>
{_by_tag(m, report.trials_per_task, bool(report.config.get("personas")))}
<section id="trajectory" class=wide><h2>Trajectory metrics</h2>{_trajectory(m)}</section>
{recovery_section(m.get("recovery"))}
{clusters_section(*run_clusters(report)) if failed else ""}
<section id="failed"><h2>Failed trials ({len(failed)})</h2><ul class=fails>{fails or '<li>none</li>'}</ul></section>
<div id="trials" hidden>{articles}</div>
</main>
<script>{_JS}</script>
</body></html>
"""


def recovery_section(recovery: Mapping[str, Any] | None) -> str:
    """Return the "Environment faults" section (recovery rate overall and per kind), or "" without faults.

    Args:
        recovery: :func:`simulator.stats.faults.recovery_rates` of the run (``metrics["recovery"]``), or None.
    """
    if not recovery:
        return ""
    rows = [("all kinds", recovery.get("faulted", 0), recovery.get("recovered", 0), share_text(recovery.get("rate")),
             sum((recovery.get("faults") or {}).values()))]
    rows += [(kind, v["trials"], v["recovered"], share_text(v["rate"]), (recovery.get("faults") or {}).get(kind, 0))
             for kind, v in (recovery.get("by_kind") or {}).items()]
    return ("<section id=\"recovery\"><h2>Environment faults: recovery rate</h2>"
            + _table(("fault kind", "trials with it", "passed", "recovery rate", "faulted calls"), rows,
                     numeric=(1, 2, 3, 4))
            + f"<p class=note>Of the {recovery.get('trials', 0)} trials, {recovery.get('faulted', 0)} met at least one "
              "injected fault (--faults); the recovery rate is the share of those that still passed.</p></section>")


def _cluster_article(i: int, row: ClusterRow) -> str:
    lines = "".join(f"<li class=\"{_e(role)}\"><b>{_e(role)}</b>: {_e(text)}</li>" for role, text in row.transcript)
    kind = "shrunk example" if row.shrunk else "example"
    return (f"<details class=cluster id=\"cluster-{i}\"><summary>cluster {i}: {_e(' / '.join(row.signature))} "
            f"&middot; {row.count} trials &middot; {kind}: {_e(row.example)} ({len(row.transcript)} lines)</summary>"
            f"<ol class=transcript>{lines}</ol></details>")


def clusters_section(rows: Sequence[ClusterRow], unsigned: int = 0, title: str = "Failure clusters") -> str:
    """Return the "Failure clusters" section: a table of clusters and each one's example, collapsible.

    The table gives each cluster's signature, count, shares of trials and agent turns and regression case id.

    Args:
        rows: the clusters (:func:`~simulator.report._clusters.run_clusters` or ``hunt_clusters``).
        unsigned: failed trials recorded without a signature (named in a note).
        title: the section's heading.
    """
    table = _table(("#", *SIGNATURE_FIELDS, "count", "share of trials", "share of agent turns", "regression case"), [
        (i, *r.signature, r.count, share_text(r.trial_share), share_text(r.turn_share), r.case_id or "-")
        for i, r in enumerate(rows, start=1)], numeric=(0, 7, 8, 9))
    note = (f"<p class=note>{unsigned} failed trials have no recorded signature and are left out.</p>"
            if unsigned else "")
    examples = "".join(_cluster_article(i, r) for i, r in enumerate(rows, start=1))
    return (f"<section id=\"clusters\" class=wide><h2>{_e(title)} ({len(rows)} signatures)</h2>{table}{note}"
            f"{examples}</section>")


def render_hunt_html(summary: Mapping[str, Any], title: str = "tausim hunt") -> str:
    """Render a hunt's page: its budget and the "Failure clusters" section.

    Args:
        summary: the hunt's summary (:func:`simulator.cli.hunt.summary`); its ``interrupted`` (where a Ctrl-C
            stopped the hunt), when set, is said first.
        title: page title.

    Returns:
        One self-contained HTML document.
    """
    facts = " &middot; ".join([*([_e(f"interrupted {summary['interrupted']}: what was found until then")]
                                  if summary.get("interrupted") else []),
                               *(_e(f"{k}: {summary.get(k)}") for k in (
                                   "agent_turns", "saved_turns", "trials", "forks", "signatures"))])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head>
<body>
<header><h1>{_e(title)}</h1><div class=meta>{facts}</div></header>
<main>
{recovery_section(summary.get("recovery"))}
{clusters_section(hunt_clusters(summary))}
</main>
</body></html>
"""

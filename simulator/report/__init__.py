"""Reports of a run: terminal summary, JSON summary, one self-contained HTML page, tau-bench and τ³ exports.

A report reads a run document: the ``--out`` JSON file of ``tausim run`` (:func:`load_run_document`) or a run
of the results store (:func:`load_run_from_store`), analyses it (:func:`analyze_run`: planned, recorded and
duplicated trials, pass^k and pass@k with bootstrap intervals over tasks, component rates, termination reasons,
failure kinds, personas, cost and latency) and renders it (:func:`print_summary`, :func:`render_html`,
:func:`to_tau_bench`, :func:`to_tau2`, :func:`to_tau2_submission`). :func:`print_summary` is also the summary
``tausim run`` prints of the run it just made.
"""

from typing import TYPE_CHECKING

from simulator.types.lazy import lazy_exports

_HOMES: dict[str, str] = {
    "ClusterRow": "simulator.report._clusters",
    "EXPORT_FORMATS": "simulator.report._export",
    "OUTCOMES": "simulator.report._analysis",
    "RUN_FORMAT": "simulator.report._load",
    "RunDocumentError": "simulator.report._load",
    "RunReport": "simulator.report._analysis",
    "SUBMISSION_DOMAINS": "simulator.report._export_tau2",
    "TrialCell": "simulator.report._analysis",
    "analyze_run": "simulator.report._analysis",
    "assertion_label": "simulator.report._analysis",
    "assertion_lines": "simulator.report._terminal",
    "assertion_rates": "simulator.report._analysis",
    "component_label": "simulator.report._terminal",
    "failure_lines": "simulator.report._terminal",
    "hunt_clusters": "simulator.report._clusters",
    "involved_text": "simulator.report._terminal",
    "load_run_document": "simulator.report._load",
    "load_run_from_store": "simulator.report._load",
    "noise_floor_text": "simulator.report._terminal",
    "print_clusters": "simulator.report._terminal",
    "print_failure": "simulator.report._terminal",
    "print_recovery": "simulator.report._terminal",
    "print_summary": "simulator.report._terminal",
    "render_html": "simulator.report._html",
    "render_hunt_html": "simulator.report._html",
    "run_clusters": "simulator.report._clusters",
    "safe_console": "simulator.report._console",
    "to_tau2": "simulator.report._export_tau2",
    "to_tau2_submission": "simulator.report._export_tau2",
    "to_tau_bench": "simulator.report._export",
    "transcript_lines": "simulator.report._clusters",
    "trial_anchor": "simulator.report._html",
    "trial_outcome": "simulator.report._analysis",
    "user_review_lines": "simulator.report._terminal",
}
"""Public name -> its home module, imported on first use (PEP 562): ``tausim run`` needs only the summary
(``_analysis``, ``_terminal``), not the HTML page or the exports."""

__all__ = [
    "EXPORT_FORMATS",
    "ClusterRow",
    "OUTCOMES",
    "RUN_FORMAT",
    "RunDocumentError",
    "RunReport",
    "SUBMISSION_DOMAINS",
    "TrialCell",
    "analyze_run",
    "assertion_label",
    "assertion_lines",
    "component_label",
    "assertion_rates",
    "failure_lines",
    "hunt_clusters",
    "involved_text",
    "load_run_document",
    "load_run_from_store",
    "noise_floor_text",
    "print_clusters",
    "print_failure",
    "print_recovery",
    "print_summary",
    "render_html",
    "render_hunt_html",
    "run_clusters",
    "safe_console",
    "to_tau2",
    "to_tau2_submission",
    "to_tau_bench",
    "transcript_lines",
    "trial_anchor",
    "trial_outcome",
    "user_review_lines",
]


if TYPE_CHECKING:  # for type checkers and IDEs only; at run time the names load lazily
    from ._analysis import OUTCOMES, RunReport, TrialCell, analyze_run, assertion_label, assertion_rates, trial_outcome
    from ._clusters import ClusterRow, hunt_clusters, run_clusters, transcript_lines
    from ._console import safe_console
    from ._export import EXPORT_FORMATS, to_tau_bench
    from ._export_tau2 import SUBMISSION_DOMAINS, to_tau2, to_tau2_submission
    from ._html import render_html, render_hunt_html, trial_anchor
    from ._load import RUN_FORMAT, RunDocumentError, load_run_document, load_run_from_store
    from ._terminal import (
        assertion_lines,
        component_label,
        failure_lines,
        involved_text,
        noise_floor_text,
        print_clusters,
        print_failure,
        print_recovery,
        print_summary,
        user_review_lines,
    )


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)

"""Reports of a run: terminal summary, JSON summary, one self-contained HTML page, tau-bench and τ³ exports.

A report reads a run document: the ``--out`` JSON file of ``tausim run`` (:func:`load_run_document`) or a run
of the results store (:func:`load_run_from_store`), analyses it (:func:`analyze_run`: planned, recorded and
duplicated trials, pass^k and pass@k with bootstrap intervals over tasks, component rates, termination reasons,
failure kinds, personas, cost and latency) and renders it (:func:`print_summary`, :func:`render_html`,
:func:`to_tau_bench`, :func:`to_tau2`, :func:`to_tau2_submission`). :func:`print_summary` is also the summary
``tausim run`` prints of the run it just made.
"""

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

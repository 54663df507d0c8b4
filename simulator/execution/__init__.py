"""Floor 5: running trials.

Prepare tasks, the runner (one trial, many trials), ``build_runner``, executors (threads, Dask), pre-flight
checks, regrade, tracing and the gold-replay parity harness.
"""

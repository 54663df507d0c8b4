"""Floor 5: running trials: prepare tasks, the runner (one trial, many trials), ``build_runner``, executors
(threads, Dask), pre-flight checks, regrade, tracing and the gold-replay parity harness.
"""

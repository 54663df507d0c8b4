"""Floor 5: running trials.

Prepare tasks, the runner (one trial, many trials), ``build_runner``, executors (threads, Dask), pre-flight
checks, regrade, tracing, the gold-replay parity harness, and the run itself (:func:`simulator.execution.session.run`:
store lease, resume, partial file, provenance, final write).
"""

"""Floor 1, base: pure statistics over recorded trials (no engine imports beyond :mod:`simulator.types`).

:mod:`~simulator.stats.estimators` (pass^k, pass@k, reliability, bootstrap intervals),
:mod:`~simulator.stats.summaries` (run, persona and violation summaries over trial records),
:mod:`~simulator.stats.trajectory` (tool-call accuracy and reference-trajectory metrics of one trial) and
:mod:`~simulator.stats.faults` (fault counts and recovery rates), :mod:`~simulator.stats.power` (the noise floor) and
:mod:`~simulator.stats.variance` (the trial-to-trial spread split between the simulated user and the agent).
"""

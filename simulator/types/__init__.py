"""Floor 1, base: records and interfaces only.

Messages, the task model and task files, the assertions' models, persona, the run spec, the trajectory and its
termination reasons, the grade and its components, trial and run results, the prepared task, the state-comparison
records and the protocols (agent, simulated user, trial context). Every floor reads these; this package imports
only :mod:`simulator.errors` (and pydantic, numpy).
"""

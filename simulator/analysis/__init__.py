"""Floor 6, tools: what is done with finished runs: the CI gate, budgets, calibration, user checks, variance apart."""

"""Floor 6, tools: other suites' results: import of tau-bench and tau2 runs."""

"""Floor 6, tools: other suites' results, MCP tool serving, the pytest plugin, the loopback server, Gymnasium envs."""

"""The loopback OpenAI-compatible test server; it lives in :mod:`simulator.interop.loopback` (examples use it too)."""

from simulator.interop.loopback import ScriptedOpenAIServer, openai_server, oracle_script

__all__ = ["ScriptedOpenAIServer", "openai_server", "oracle_script"]

"""tausim: multi-turn simulation of conversational, tool-using agents (the engine)."""

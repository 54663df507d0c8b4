"""Floor 3: the conversation.

Dialogue cues, text helpers, the conversation loop, progress signals and trajectory prefixes.
"""

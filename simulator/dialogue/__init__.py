"""Floor 3: the conversation: dialogue cues, text helpers, the conversation loop, progress signals and
trajectory prefixes.
"""

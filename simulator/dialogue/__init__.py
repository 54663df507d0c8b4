"""Floor 3: the conversation.

Dialogue cues and text helpers; the conversation loop (:class:`~simulator.dialogue.conversation.Conversation`) with
the caps (:mod:`~simulator.dialogue.caps`) and observers (:mod:`~simulator.dialogue.observers`) that compose around
it, its state (:mod:`~simulator.dialogue.state`) and progress signals (:mod:`~simulator.dialogue.signals`); run
progress; trajectory prefixes.
"""

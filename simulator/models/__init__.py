"""Floor 2, services: model calls.

:mod:`~simulator.models.llm` (the only module that imports litellm), the response cache and rate limits.
"""

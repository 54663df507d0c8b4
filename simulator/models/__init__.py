"""Floor 2, services: model calls, the response cache and rate limits.

:mod:`~simulator.models.llm` is the only module that imports litellm.
"""

"""Personas: how simulated users behave (the shipped data files and their loader).

The shipped personas live in ``personas/data/NAME.json``; :func:`load_personas` loads them by name (or any
persona file by path) as :class:`simulator.Persona`, their schema (in the engine). ``tausim personas`` lists them.
"""

from .loader import PersonaError, available_personas, load_persona, load_personas, parse_persona

__all__ = ["PersonaError", "available_personas", "load_persona", "load_personas", "parse_persona"]

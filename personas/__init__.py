"""Personas: how simulated users behave (data files and their schema).

The shipped personas live in ``personas/data/NAME.json``; :func:`load_personas` loads them by name (or any
persona file by path) and :class:`Persona` is their schema. ``tausim personas`` lists them.
"""

from .loader import PersonaError, available_personas, load_persona, load_personas, parse_persona
from .schema import Persona

__all__ = ["Persona", "PersonaError", "available_personas", "load_persona", "load_personas", "parse_persona"]

"""Personas: how simulated users behave (data files and their schema)."""

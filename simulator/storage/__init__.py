"""Floor 2, services: where results live.

The results store (SQLite or PostgreSQL), run documents and partial files, and the run log.
"""

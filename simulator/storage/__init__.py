"""Floor 2, services: where results live.

The results store (SQLite or PostgreSQL: :mod:`~simulator.storage.schema`, :mod:`~simulator.storage.codec`,
:mod:`~simulator.storage.lease`, :mod:`~simulator.storage.store`), run documents and partial files, and the run
log.
"""

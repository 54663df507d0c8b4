"""Floor 2, services: the world a trial acts on.

Tools and toolboxes, the template and trial databases, the event log and sinks (outbox, ledger, clock),
environment faults, dual control, the :class:`~simulator.world.domain.Domain` base, task fixtures, gold replay and
tau2 task files. Domain authors use the public kit :mod:`simulator.world.kit`.
"""

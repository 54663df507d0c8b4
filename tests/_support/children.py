"""Child processes that take Ctrl-C however the test suite was started.

A non-interactive shell starts a background job (``pytest &``, ``scripts/test &``) with SIGINT ignored, and an
ignored signal stays ignored across ``exec``: Python then installs no ``KeyboardInterrupt`` handler in the child, so
a ``tausim`` process that a test sends Ctrl-C to (or that sends it to itself) never sees it, and the test times out.
Tests that start such a child pass ``preexec_fn=restore_sigint`` (``Popen``/``run``): the child gets SIGINT's default
action back before ``exec``, and Python installs its handler as it does under a terminal.
"""

from __future__ import annotations

import signal


def restore_sigint() -> None:
    """Give SIGINT its default action in this process (a ``preexec_fn``: runs in the child, before ``exec``).

    Only a system call (``sigaction``): nothing here takes a lock that another thread of the parent could have held at
    ``fork``, the hazard the ``subprocess`` documentation warns of for ``preexec_fn``.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)

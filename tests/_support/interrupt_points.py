"""A ``tausim`` child process that interrupts itself at a chosen point: ``python -m tests._support.interrupt_points``.

The arguments are ``tausim``'s. ``TAUSIM_TEST_POINT`` names where the signal ``TAUSIM_TEST_SIGNAL`` (a number, default
SIGINT) is sent to the process itself:

- ``finish``: after the trials, as the run completes its document (before it is written);
- ``written``: right after the run document was written (and the partial file removed);
- ``dropped``: after the first trial is recorded, inside a weakref callback: Python drops the ``KeyboardInterrupt``
  raised there (``Exception ignored in``), as it did in SQLAlchemy's ``_collection_gced`` during ``tausim hunt``.
"""

from __future__ import annotations

import os
import signal
import sys
import weakref
from typing import Any


def send() -> None:
    """Send ``TAUSIM_TEST_SIGNAL`` (default SIGINT) to this process; its handler runs before this returns."""
    os.kill(os.getpid(), int(os.environ.get("TAUSIM_TEST_SIGNAL", signal.SIGINT)))


def dropped() -> None:
    """Send the signal inside a weakref callback, where the ``KeyboardInterrupt`` its handler raises is dropped."""

    class Thing:
        pass

    thing = Thing()
    ref = weakref.ref(thing, lambda _: send())
    del thing  # the callback runs now, in this thread
    assert ref() is None


def _patch(point: str) -> None:
    from simulator.execution import session

    if point == "finish":
        finish = session._Session.finish

        def interrupted_finish(self: Any, result: Any) -> Any:
            send()
            return finish(self, result)

        session._Session.finish = interrupted_finish  # type: ignore[method-assign]
    elif point == "written":
        write = session._Session._write

        def interrupted_write(self: Any, outcome: Any) -> None:
            write(self, outcome)
            send()

        session._Session._write = interrupted_write  # type: ignore[method-assign]
    elif point == "dropped":
        append, calls = session.append_line, []

        def dropping_append(*a: Any) -> None:
            append(*a)
            calls.append(1)
            if len(calls) == 1:  # the first trial recorded
                dropped()

        session.append_line = dropping_append  # type: ignore[assignment]
    else:
        raise SystemExit(f"unknown TAUSIM_TEST_POINT {point!r}")


if __name__ == "__main__":
    _patch(os.environ["TAUSIM_TEST_POINT"])
    from simulator.cli import main

    sys.argv = ["tausim", *sys.argv[1:]]
    main()

"""Make a domain's modules unable to read the wall clock, for the duration of a check.

Tools take "now" only from the domain's clock. :func:`no_wall_clock` rebinds, in every module of the domain's
top-level package, the names that reach the wall clock (the ``time`` and ``datetime`` modules,
``datetime.datetime``, ``datetime.date`` and the ``time`` functions imported by name) to stand-ins that raise
:class:`~simulator.errors.WallClockRead`; engine modules are untouched. The previous bindings are restored on
exit. Not for use while other threads run the domain's code.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time as _time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from simulator.errors import WallClockRead

__all__ = ["no_wall_clock"]

_TIME_READERS = ("time", "time_ns", "localtime", "gmtime", "ctime", "asctime", "strftime")


def _refuse(what: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise WallClockRead(f"tool read the wall clock ({what}); take 'now' from the domain's Clock")

    return refused


class _Datetime(_dt.datetime):
    """``datetime.datetime`` whose ``now``, ``utcnow`` and ``today`` raise."""

    now = classmethod(lambda cls, tz=None: _refuse("datetime.now")())  # type: ignore[assignment]
    utcnow = classmethod(lambda cls: _refuse("datetime.utcnow")())  # type: ignore[assignment]
    today = classmethod(lambda cls: _refuse("datetime.today")())  # type: ignore[assignment]


class _Date(_dt.date):
    """``datetime.date`` whose ``today`` raises."""

    today = classmethod(lambda cls: _refuse("date.today")())  # type: ignore[assignment]


def _proxy(module: types.ModuleType, overrides: dict[str, Any]) -> types.ModuleType:
    proxy = types.ModuleType(module.__name__)
    proxy.__dict__.update(module.__dict__)
    proxy.__dict__.update(overrides)
    return proxy


def _stand_ins() -> dict[int, Any]:
    time_over = {name: _refuse(f"time.{name}") for name in _TIME_READERS}
    out: dict[int, Any] = {
        id(_time): _proxy(_time, time_over),
        id(_dt): _proxy(_dt, {"datetime": _Datetime, "date": _Date}),
        id(_dt.datetime): _Datetime,
        id(_dt.date): _Date,
    }
    for name in _TIME_READERS:
        out[id(getattr(_time, name))] = time_over[name]
    return out


@contextmanager
def no_wall_clock(package: str) -> Iterator[None]:
    """Within the block, code of ``package`` (and its submodules) raises WallClockRead on reading the clock.

    Args:
        package: a top-level package name (e.g. ``"domains"``, ``"kiosk"``).
    """
    stand_ins = _stand_ins()
    saved: list[tuple[dict[str, Any], str, Any]] = []
    modules = [m for name, m in list(sys.modules.items())
               if m is not None and (name == package or name.startswith(package + "."))]
    try:
        for module in modules:
            namespace = module.__dict__
            for name, value in list(namespace.items()):
                stand_in = stand_ins.get(id(value))
                if stand_in is not None and not name.startswith("__"):
                    saved.append((namespace, name, value))
                    namespace[name] = stand_in
        yield
    finally:
        for namespace, name, value in reversed(saved):
            namespace[name] = value

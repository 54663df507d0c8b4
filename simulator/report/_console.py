r"""Terminal consoles that never pass a control sequence from data to the terminal.

Every ``tausim`` command prints through a console made by :func:`safe_console`: a rich
:class:`~rich.console.Console` with emoji codes off (``local:100`` stays text, not a 💯) and a render hook that
escapes, in the text of everything printed, each control character (ESC, BEL, NUL, C1...), each bidirectional
override and each lone surrogate (:func:`simulator.types.sanitize.shown`): the styles rich itself draws are kept,
but a window-title, clear-screen or clipboard (OSC 52) sequence in a message, a task id or an error is shown as
``\\x1b]0;...``, never obeyed. Rich markup in data must still be escaped where it is printed with ``markup=True``
(:func:`rich.markup.escape`); the summary printers print data with ``markup=False``.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment

from simulator.types.sanitize import shown

__all__ = ["safe_console"]


class _Escaped:
    """A renderable drawn like the one it wraps, with the text of its segments passed through :func:`shown`."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control:  # rich's own cursor moves (live displays), never data
                yield segment
            else:
                yield Segment(shown(segment.text), segment.style)


class _EscapeHook(RenderHook):
    """Wraps every printed renderable in :class:`_Escaped`."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


def safe_console(*, stderr: bool = False, **options: Any) -> Console:
    """Return a console for a command's output that escapes control sequences in what it prints.

    Args:
        stderr: print on stderr (else stdout).
        **options: more :class:`~rich.console.Console` options. By default, off a terminal (pipes, CI logs) lines
            are kept whole (``soft_wrap``, width 160) rather than wrapped at 80 columns.

    Returns:
        The console (emoji codes off, the escaping render hook installed).
    """
    tty = (sys.stderr if stderr else sys.stdout).isatty()
    options.setdefault("width", None if tty else 160)
    options.setdefault("soft_wrap", not tty)
    console = Console(stderr=stderr, emoji=False, **options)
    console.push_render_hook(_EscapeHook())
    return console


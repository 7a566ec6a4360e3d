"""SIGINT and SIGTERM → KeyboardInterrupt in the main thread, counted.

pytest turns a KeyboardInterrupt into its "interrupted" exit code and still tears fixtures down,
so the compensations of the running scenario get to run. SIGTERM (a CI job cancelled, `kill`)
would otherwise end the process without any of that, so it is treated as Ctrl-C. Counting lets
the cleanup tell a first interrupt (clean up, then stop) from a second one during the cleanup
(stop now and say what is left).

A signal the process was started with ignored stays ignored: a shell starts a background job so
that Ctrl-C at the terminal leaves it running.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

_HANDLED = (signal.SIGINT, signal.SIGTERM)
_count = 0
_previous: dict[int, Any] = {}


def _raise(signum: int, frame: FrameType | None) -> None:
    global _count
    _count += 1
    raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def handle_unless_ignored(signum: int, handler: Any) -> Any:
    """Set `handler` for `signum` unless the process ignores that signal; the handler it
    replaced, or None when it left the ignore in place."""
    if signal.getsignal(signum) is signal.SIG_IGN:
        return None
    return signal.signal(signum, handler)


def install() -> None:
    """Handle SIGINT and SIGTERM from here on, unless ignored (main thread only; elsewhere a no-op)."""
    global _count
    if threading.current_thread() is not threading.main_thread() or _previous:
        return
    _count = 0
    for signum in _HANDLED:
        if (previous := handle_unless_ignored(signum, _raise)) is not None:
            _previous[signum] = previous


def uninstall() -> None:
    """Put back the handlers `install` replaced (a run inside a longer-lived process)."""
    global _count
    for signum, handler in _previous.items():
        signal.signal(signum, handler)
    _previous.clear()
    _count = 0


def count() -> int:
    """How many SIGINT/SIGTERM arrived since `install`."""
    return _count


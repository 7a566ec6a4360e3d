"""SIGINT and SIGTERM → KeyboardInterrupt in the main thread, counted, and never lost.

pytest turns a KeyboardInterrupt into its "interrupted" exit code and still tears fixtures down,
so the compensations of the running scenario get to run. SIGTERM (a CI job cancelled, `kill`)
would otherwise end the process without any of that, so it is treated as Ctrl-C. Counting lets
the cleanup tell a first interrupt (clean up, then stop) from a second one during the cleanup
(stop now and say what is left).

A signal the process was started with ignored stays ignored: a shell starts a background job so
that Ctrl-C at the terminal leaves it running.

Python runs a signal handler between any two bytecodes of the main thread, finalizers included:
a weakref callback or a `__del__` that happens to be running when Ctrl-C comes gets the
KeyboardInterrupt, and Python only reports an exception escaping a finalizer (an "unraisable"
one) and carries on — the run would go on as if no Ctrl-C had come. `catch_lost` hooks that
report: a KeyboardInterrupt reaching it is raised again, by the same signal sent once more
from a helper thread, as soon as the main thread is out of the hook.
That second delivery is not counted as another interrupt.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeGuard

_HANDLED = (signal.SIGINT, signal.SIGTERM)


@dataclass
class _Level:
    """One `install` not yet undone: a run, maybe nested in a process that handles interrupts."""

    count_outside: int  # the count of the level it is inside, as it was when this one began
    wrapped_hook: bool = False  # its `catch_lost` wrapped sys.unraisablehook: its `uninstall` unwraps it


_count = 0
_previous: dict[int, Any] = {}
#: The `install`s not yet undone, the innermost last.
_levels: list[_Level] = []
#: Deliveries of an interrupt that a finalizer swallowed, asked for and not yet made.
_owed = 0
_last_signum: int = signal.SIGINT
_deliverer: _Deliverer | None = None

UnraisableHook = Callable[[Any], object]


def _raise(signum: int, frame: FrameType | None) -> None:
    global _count, _owed, _last_signum
    if _owed:
        _owed -= 1  # the delivery of one that was lost, not a new interrupt
    else:
        _count += 1
        _last_signum = signum
    if _inside_the_hook(frame):
        _owe_a_delivery()  # raised here it would be reported as unraisable and lost again
        return
    raise KeyboardInterrupt(f"{signal.Signals(_last_signum).name} received")


def _inside_the_hook(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code is _on_unraisable.__code__:
            return True
        frame = frame.f_back
    return False


def _on_unraisable(unraisable: Any, *, before: UnraisableHook) -> None:
    """sys.unraisablehook while a run is on: an interrupt raised inside a finalizer is delivered
    again, outside it; anything else goes to the hook that was there before."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _levels:
        _owe_a_delivery()
        return
    before(unraisable)


class _Deliverer(threading.Thread):
    """Sends the main thread the last interrupt once more each time one is owed. It waits to be
    asked, sends one at a time, and the main thread asks again while it is still in the hook, so
    the delivery lands as soon as the hook has returned."""

    def __init__(self) -> None:
        super().__init__(name="stepgraph-interrupt-deliverer", daemon=True)
        self.asked = threading.Event()

    def run(self) -> None:
        while True:
            self.asked.wait()
            self.asked.clear()
            # A signal, not _thread.interrupt_main: that only marks the handler due, and a main
            # thread blocked in a wait would run it when the wait ends; a signal cuts it short.
            signal.pthread_kill(threading.main_thread().ident or 0, _last_signum)


def _owe_a_delivery() -> None:
    global _owed, _deliverer
    _owed += 1
    if _deliverer is None:
        # Set before starting: a signal handled while the thread starts finds it there.
        _deliverer = _Deliverer()
        _deliverer.start()
    _deliverer.asked.set()


def _forget_the_deliverer() -> None:
    global _deliverer, _owed
    _deliverer, _owed = None, 0  # a forked child has no such thread, and owes nothing


os.register_at_fork(after_in_child=_forget_the_deliverer)


def handle_unless_ignored(signum: int, handler: Any) -> Any:
    """Set `handler` for `signum` unless the process ignores that signal; the handler it
    replaced, or None when it left the ignore in place."""
    if signal.getsignal(signum) is signal.SIG_IGN:
        return None
    return signal.signal(signum, handler)


def install() -> None:
    """Handle SIGINT and SIGTERM from here on, unless ignored (main thread only; elsewhere a no-op).

    Installs nest: a run inside a process that handles them already (the `stepgraph` command, a
    test suite running pytest in-process) keeps that handling, and only the outermost `uninstall`
    puts back what was there before. Each counts its own interrupts, from zero, and the outer
    count is back when the nested run ends."""
    global _count, _owed
    if threading.current_thread() is not threading.main_thread():
        return
    _levels.append(_Level(count_outside=_count))
    _count = 0
    if len(_levels) > 1:
        return
    _owed = 0
    for signum in _HANDLED:
        if (previous := handle_unless_ignored(signum, _raise)) is not None:
            _previous[signum] = previous


def catch_lost() -> None:
    """Hook the report of exceptions escaping finalizers, so an interrupt raised in one is raised
    again outside it. Call it once whoever else sets sys.unraisablehook (pytest does, as it is
    configured) has set it; `uninstall` puts back the hook it wraps."""
    if _levels and not _is_ours(sys.unraisablehook):
        sys.unraisablehook = functools.partial(_on_unraisable, before=sys.unraisablehook)
        _levels[-1].wrapped_hook = True


def _is_ours(hook: object) -> TypeGuard[functools.partial[None]]:
    return isinstance(hook, functools.partial) and hook.func is _on_unraisable


def uninstall() -> None:
    """Undo one `install` (a run inside a longer-lived process): the hook its run wrapped is put
    back, and with the outermost, the handlers it replaced."""
    global _count
    if threading.current_thread() is not threading.main_thread() or not _levels:
        return
    level = _levels.pop()
    if level.wrapped_hook and _is_ours(hook := sys.unraisablehook):
        sys.unraisablehook = hook.keywords["before"]
    _count = level.count_outside  # the outer run's own count: a nested run handles its interrupts
    if _levels:
        return
    for signum, handler in _previous.items():
        signal.signal(signum, handler)
    _previous.clear()
    _count = 0


def count() -> int:
    """How many SIGINT/SIGTERM arrived since the innermost `install`."""
    return _count

"""The `stepgraph` console script: the command's process from its first line.

Kept apart from `stepgraph.dsl` so that importing it costs nothing: the language takes a few tenths
of a second to import, and a Ctrl-C in that time (or during a lint or a compile, which handle no
interrupt of their own) would end the process with Python's KeyboardInterrupt traceback. Here it
ends it with one line and the exit code of an interrupted run, 2. `stepgraph run` cleans up and
reports an interrupt itself before returning; this only catches what is left.

An interrupt does not always arrive as a KeyboardInterrupt: code it lands in may turn it into an
error of its own (a compiled extension whose import it cuts short fails with an ImportError or a
panic). So the command notes every Ctrl-C it receives, and whatever ends it after one is reported
as the interrupt.
"""

from __future__ import annotations

import sys

# One identity, as for every package of ours: this folder is stepgraph.command, never `command`.
if __name__ != "stepgraph.command":
    raise ImportError(f"command/ is the package stepgraph.command; import it by that name, not as {__name__!r}")

EXIT_INTERRUPTED = 2
_received: list[int] = []


def _note_and_raise(signum: int, frame: object) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def main() -> int:
    try:
        # Everything, `signal` too (its import takes a few milliseconds), is imported inside the
        # try: before it only the interpreter's start-up and this file's own loading remain.
        import atexit
        import gc
        import signal

        # The command's process ends when it returns: the interpreter's last collections of
        # garbage would walk all it imported (a tenth of a lint's time) to run finalizers Python
        # does not promise at exit. Registered first, this runs after every other exit handler.
        atexit.register(gc.freeze)

        # Only Python's own handling is replaced: a process started with SIGINT ignored (a shell's
        # background job) keeps ignoring it, and the run's own handlers take over from this one.
        # SIGTERM (a CI job cancelled, `kill`) interrupts the command as Ctrl-C does.
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _note_and_raise)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _note_and_raise)
        # pydantic-core imports `datetime` as it initialises, and a Ctrl-C cutting that import short
        # makes it panic, printing Rust's panic message: imported here first, it has nothing to cut.
        import datetime  # noqa: F401

        from stepgraph.dsl.cli import main as stepgraph

        return stepgraph()
    except BaseException as ended:
        if not isinstance(ended, KeyboardInterrupt) and not _received:
            raise
        print("stepgraph: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

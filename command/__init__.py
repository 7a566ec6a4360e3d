"""The `stepgraph` console script: the command's process from its first line.

Kept apart from `stepgraph.dsl` so that importing it costs nothing: the language takes a few tenths
of a second to import, and a Ctrl-C in that time (or during a lint or a compile, which handle no
interrupt of their own) would end the process with Python's KeyboardInterrupt traceback. Here it
ends it with one line and the exit code of an interrupted run, 2. `stepgraph run` cleans up and
reports an interrupt itself before returning; this only catches what is left.

An interrupt does not always arrive as a KeyboardInterrupt: code it lands in may turn it into an
error of its own (a compiled extension whose import it cuts short fails with an ImportError or a
panic). So the command counts every Ctrl-C it receives, and whatever ends it after one is reported
as the interrupt. And one that lands in a finalizer (the import machinery runs weakref callbacks),
which Python only reports before going on, is raised again (`stepgraph.dsl.interrupts`).
"""

from __future__ import annotations

import sys

# One identity, as for every package of ours: this folder is stepgraph.command, never `command`.
if __name__ != "stepgraph.command":
    raise ImportError(f"command/ is the package stepgraph.command; import it by that name, not as {__name__!r}")

EXIT_INTERRUPTED = 2
_noted: list[int] = []


def _note(signum: int, frame: object) -> None:
    _noted.append(signum)


def main() -> int:
    try:
        # Everything, `signal` too (its import takes a few milliseconds), is imported inside the
        # try: before it only the interpreter's start-up and this file's own loading remain.
        import signal

        # Until the handling below is in place (its import takes a few tens of milliseconds) an
        # interrupt is only noted: raised, it could land in a finalizer of the import machinery,
        # which Python would report and go on. A process started with SIGINT ignored (a shell's
        # background job) keeps ignoring it.
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _note)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _note)

        # The command's process ends when it returns: its heap is frozen at exit, after every
        # other exit handler (this is registered first), the runs it starts included.
        from stepgraph.dsl.exit_heap import freeze_heap_at_exit

        freeze_heap_at_exit()

        # From here on SIGINT and SIGTERM (a CI job cancelled, `kill`) raise KeyboardInterrupt,
        # and one that lands in a finalizer is raised again outside it. The runs the command
        # starts nest their handling in this one.
        from stepgraph.dsl import interrupts

        interrupts.install()
        interrupts.catch_lost()
        if _noted:
            raise KeyboardInterrupt
        # pydantic-core imports `datetime` as it initialises, and a Ctrl-C cutting that import short
        # makes it panic, printing Rust's panic message: imported here first, it has nothing to cut.
        import datetime  # noqa: F401

        from stepgraph.dsl.cli import main as stepgraph

        return stepgraph()
    except BaseException as ended:
        if not isinstance(ended, KeyboardInterrupt) and not _interrupted():
            raise
        print("stepgraph: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _interrupted() -> bool:
    """Whether an interrupt came: one landing in an import may surface as another error."""
    interrupts = sys.modules.get("stepgraph.dsl.interrupts")
    return bool(_noted) or (interrupts is not None and interrupts.count() > 0)  # type: ignore[attr-defined]

"""The `stepgraph` console script: the command's process from its first line.

Kept apart from `stepgraph.dsl` so that importing it costs nothing: the language takes a few tenths
of a second to import, and a Ctrl-C in that time (or during a lint or a compile, which handle no
interrupt of their own) would end the process with Python's KeyboardInterrupt traceback. Here it
ends it with one line and the exit code of an interrupted run, 2. `stepgraph run` cleans up and
reports an interrupt itself before returning; this only catches what is left.
"""

from __future__ import annotations

import sys

# One identity, as for every package of ours: this folder is stepgraph.command, never `command`.
if __name__ != "stepgraph.command":
    raise ImportError(f"command/ is the package stepgraph.command; import it by that name, not as {__name__!r}")

EXIT_INTERRUPTED = 2


def main() -> int:
    try:
        from stepgraph.dsl.cli import main as stepgraph

        return stepgraph()
    except KeyboardInterrupt:
        print("stepgraph: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

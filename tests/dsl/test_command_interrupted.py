"""The `stepgraph` command interrupted before it has anything to clean up: while the language is
still being imported, or during a lint. One line and exit 2, never Python's traceback.

Each script sends the process a real SIGINT from inside the import of a module the command needs
at that moment (a finder on sys.meta_path asked for it first), so the Ctrl-C lands in the window
every time rather than by chance. The scripts start the command as its console script does.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CTRL_C_DURING_IMPORT_OF = """
import signal, sys, weakref

module, turned_into, signum = sys.argv[1], sys.argv[2], getattr(signal, sys.argv[3])
signal.signal(signal.SIGINT, signal.default_int_handler)  # not ignored, however the tests were started
signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Thing:
    pass


class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == module and turned_into == "nothing: it lands in a finalizer":
            sys.meta_path.remove(self)
            thing = Thing()
            ref = weakref.ref(thing, lambda _: signal.raise_signal(signum))
            del thing  # the handler runs in the callback: Python reports its KeyboardInterrupt, goes on
        elif name == module:
            sys.meta_path.remove(self)
            try:
                signal.raise_signal(signum)
            except KeyboardInterrupt:
                if turned_into == "KeyboardInterrupt":
                    raise
                raise ImportError(f"the import of {name} was cut short") from None
        return None


sys.meta_path.insert(0, CtrlC())
sys.argv = ["stepgraph", *sys.argv[4:]]
from stepgraph.command import main
sys.exit(main())
"""


def test_the_console_script_is_the_interrupt_safe_entry() -> None:
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="stepgraph")
    assert script.value == "stepgraph.command:main"


@pytest.mark.parametrize(("module", "turned_into", "signal_name"), [
    ("stepgraph.dsl.registry", "KeyboardInterrupt", "SIGINT"),  # the language, imported before the command line is read
    ("stepgraph.steps.k8s", "KeyboardInterrupt", "SIGINT"),  # a step library, which lint loads to check the steps
    # What pydantic-core imports as it initialises: cut short there, the interrupt would come out
    # as a pyo3 panic, its Rust message printed, had the command not imported it first.
    ("datetime", "KeyboardInterrupt", "SIGINT"),
    ("stepgraph.dsl.registry", "ImportError", "SIGINT"),  # code that turns the interrupt into an error of its own
    ("stepgraph.steps.k8s", "KeyboardInterrupt", "SIGTERM"),  # a cancelled CI job: taken as a Ctrl-C
    # Lost by Python, raised again: as when it lands in the import machinery's own weakref callback.
    ("stepgraph.steps.k8s", "nothing: it lands in a finalizer", "SIGINT"),
    # Before the command's handling is imported: noted, and raised once it is in place.
    ("stepgraph.dsl.interrupts", "KeyboardInterrupt", "SIGINT"),
])
def test_a_ctrl_c_before_anything_runs_ends_the_command_with_one_line(module: str, turned_into: str, signal_name: str) -> None:
    done = subprocess.run([sys.executable, "-c", _CTRL_C_DURING_IMPORT_OF, module, turned_into, signal_name, "lint", "scenarios/demo"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "stepgraph: interrupted\n")

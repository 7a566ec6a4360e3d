"""A Ctrl-C that lands in a finalizer (a weakref callback, a `__del__`) is not lost.

Python reports an exception escaping a finalizer as "unraisable" and carries on; with the
KeyboardInterrupt of a Ctrl-C that would mean a run that goes on as if none had come. Each script
here sends the signal from inside a finalizer, so the handler runs there every time rather than
by chance, and then waits for an interrupt that without the fix never comes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_SETUP = """
import signal, sys, time, weakref
from stepgraph.dsl import interrupts

signal.signal(signal.SIGINT, signal.default_int_handler)  # not ignored, however the tests were started
interrupts.install()
interrupts.catch_lost()


class Thing:
    pass


def ctrl_c_in_a_finalizer():
    thing = Thing()
    ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
    del thing  # the callback runs here and the handler in it: its KeyboardInterrupt goes nowhere


def wait_for_the_interrupt():
    try:
        time.sleep(10)
    except KeyboardInterrupt as interrupt:
        print(f"interrupted: {interrupt}; interrupts counted: {interrupts.count()}")
    else:
        print("never interrupted")
"""


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _SETUP + script], capture_output=True, text=True, timeout=60)


def test_a_ctrl_c_swallowed_by_a_weakref_callback_is_raised_again_and_counted_once() -> None:
    done = _run("ctrl_c_in_a_finalizer()\nwait_for_the_interrupt()\n")
    assert done.stdout == "interrupted: SIGINT received; interrupts counted: 1\n"
    assert done.stderr == ""  # not reported as an exception ignored in the callback


def test_a_ctrl_c_landing_in_the_hook_that_reports_a_finalizer_error_is_not_lost() -> None:
    # The hook before ours (pytest's, here a stand-in) is running when the Ctrl-C comes: raised
    # there, the KeyboardInterrupt would escape the hook itself and be lost with it.
    done = _run("""
reported = []
def report(unraisable):
    signal.raise_signal(signal.SIGINT)
    reported.append(unraisable.exc_type.__name__)
sys.unraisablehook = report
interrupts.catch_lost()

def broken(_):
    raise ValueError("a finalizer's own error")

thing = Thing()
ref = weakref.ref(thing, broken)
del thing
wait_for_the_interrupt()
print("reported:", reported)
""")
    assert done.stdout == "interrupted: SIGINT received; interrupts counted: 1\nreported: ['ValueError']\n"
    assert done.stderr == ""


def test_uninstall_puts_back_the_hook_it_wrapped() -> None:
    done = _run("""
ours = sys.unraisablehook
interrupts.catch_lost()  # a second call does not wrap twice
assert sys.unraisablehook is ours and ours.keywords["before"] is sys.__unraisablehook__
interrupts.uninstall()
print(sys.unraisablehook is sys.__unraisablehook__)
""")
    assert (done.stdout, done.stderr) == ("True\n", "")


def test_a_run_nested_in_a_process_that_handles_interrupts_leaves_that_handling_in_place() -> None:
    # The `stepgraph` command installs first; the pytest run it starts installs and uninstalls inside.
    done = _run("""
outer_hook = sys.unraisablehook
sys.unraisablehook = lambda unraisable: None  # the run's pytest sets a hook of its own
interrupts.install()
interrupts.catch_lost()
interrupts.uninstall()  # the run is over
sys.unraisablehook = outer_hook  # pytest puts back the one it found
print(signal.getsignal(signal.SIGINT).__name__, sys.unraisablehook is outer_hook)
ctrl_c_in_a_finalizer()
wait_for_the_interrupt()
interrupts.uninstall()  # the command's
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, sys.unraisablehook is sys.__unraisablehook__)
""")
    assert done.stdout == "_raise True\ninterrupted: SIGINT received; interrupts counted: 1\nTrue True\n", done.stderr
    assert done.stderr == ""


def test_a_pytest_run_whose_ctrl_c_lands_in_a_finalizer_ends_interrupted(pytester: pytest.Pytester) -> None:
    # Imported before the run is configured: SIGINT not ignored, however the tests were started.
    pytester.makeconftest("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n")
    pytester.makepyfile(test_waits="""
import signal, time, weakref

class Thing:
    pass

def test_ctrl_c_comes_during_a_finalizer():
    thing = Thing()
    ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
    del thing
    time.sleep(10)

def test_never_reached():
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output and "SIGINT received" in output
    assert "test_never_reached" not in output and "Unraisable" not in output and "ignored" not in output

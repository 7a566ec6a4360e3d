"""Cleanup semantics of the runtime: a compensation is registered before its step acts, `last`
finalizers (GPU restores) run after all others whatever failed, a second Ctrl-C during cleanup
stops it and names what is left, so does the cleanup's time bound, and the ledger behind every
run's last line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from stepgraph.dsl import Bindings, FinalizerError, FinalizerStack, ManualClock, Params, Registry, Session, StepContext, interrupts
from stepgraph.dsl.cleanup import CleanupLedger
from stepgraph.dsl.execute import execute_call
from stepgraph.dsl.finalizers import CleanupInterrupted, CleanupTimedOut
from stepgraph.dsl.runinfo import RunInfo
from stepgraph.dsl.targeting import _cleanup


class Count(Params):
    n: int


def _ctx() -> StepContext:
    return StepContext(session=Session(clock=ManualClock()), bindings=Bindings(), finalizers=FinalizerStack())


def _creating_step(undone: list[object]):
    reg = Registry()

    @reg.when("demo.create", "{n:int} things are created", effects=("creates-objects",),
              compensation=lambda ctx, p, created: undone.append(list(created)))
    def create(ctx: StepContext, p: Count) -> list[int]:
        created = ctx.intend([])
        for i in range(p.n):
            created.append(i)  # announced before the effect
            if i == 1:
                raise RuntimeError("the API went away half-way")
        return created

    return reg.steps["demo.create"]


def test_a_step_that_fails_half_way_is_compensated_for_what_it_announced() -> None:
    undone: list[object] = []
    ctx = _ctx()
    with pytest.raises(RuntimeError):
        execute_call(_creating_step(undone), Count(n=3), ctx)
    ctx.finalizers.run()
    assert undone == [[0, 1]]


def test_a_step_that_fails_before_announcing_anything_has_nothing_to_undo() -> None:
    undone: list[object] = []
    reg = Registry()

    @reg.when("demo.early", "it fails early", effects=("creates-objects",), compensation=lambda ctx, p, r: undone.append(r))
    def early(ctx: StepContext, p: Params) -> None:
        raise RuntimeError("no manifest")

    ctx = _ctx()
    with pytest.raises(RuntimeError):
        execute_call(reg.steps["demo.early"], Params(), ctx)
    ctx.finalizers.run()
    assert undone == []


def test_last_finalizers_run_after_all_others_even_when_those_fail() -> None:
    stack, order = FinalizerStack(), []
    stack.push(lambda: order.append("restore GPUs"), "restore GPUs", last=True)
    stack.push(lambda: order.append("delete topology"), "delete topology")
    stack.push(lambda: 1 / 0, "delete bystander")
    with pytest.raises(FinalizerError, match="delete bystander"):
        stack.run()
    assert order == ["delete topology", "restore GPUs"]
    assert stack.ran == ["delete topology", "restore GPUs"] and stack.failed == ["delete bystander"]


def test_a_second_ctrl_c_during_cleanup_stops_it_and_names_what_is_left() -> None:
    interrupts.install()
    try:
        stack, order = FinalizerStack(), []
        stack.push(lambda: order.append("restore GPUs"), "restore GPUs", last=True)
        stack.push(lambda: order.append("delete topology"), "delete topology")
        stack.push(lambda: os.kill(os.getpid(), signal.SIGINT), "delete bystander")  # the second Ctrl-C lands here
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # the first one: the run stops and cleans up
        with pytest.raises(CleanupInterrupted) as stopped:
            stack.run()
        assert order == [] and stopped.value.left == ["delete bystander", "delete topology", "restore GPUs"]
        assert "not undone: delete bystander; delete topology; restore GPUs" in str(stopped.value)
    finally:
        interrupts.uninstall()


def test_a_compensation_cut_short_by_a_first_ctrl_c_runs_again_and_the_rest_follow() -> None:
    interrupts.install()
    try:
        stack, order = FinalizerStack(), []

        def delete_topology() -> None:
            if "delete topology: cut short" not in order:
                order.append("delete topology: cut short")
                os.kill(os.getpid(), signal.SIGINT)  # the operator's first Ctrl-C lands mid-delete
            order.append("delete topology")

        stack.push(lambda: order.append("restore GPUs"), "restore GPUs", last=True)
        stack.push(delete_topology, "delete topology")
        with pytest.raises(KeyboardInterrupt):
            stack.run()
        assert order == ["delete topology: cut short", "delete topology", "restore GPUs"]
        assert stack.ran == ["delete topology", "restore GPUs"] and stack.failed == []
    finally:
        interrupts.uninstall()


def test_sigterm_is_a_ctrl_c() -> None:
    before = signal.getsignal(signal.SIGTERM)  # this test session's handling (a run nests in it)
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
        assert interrupts.count() == 1
    finally:
        interrupts.uninstall()
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_the_process_ignores_stays_ignored() -> None:
    # As in a shell's background job, started with SIGINT ignored so Ctrl-C leaves it running. In
    # a process of its own: this one's handlers are the plugin's, installed for the session.
    script = """
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
from stepgraph.dsl import interrupts
interrupts.install()
os.kill(os.getpid(), signal.SIGINT)
try:
    os.kill(os.getpid(), signal.SIGTERM)
except KeyboardInterrupt as exc:
    print(exc, interrupts.count())
interrupts.uninstall()
print("ignored" if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else "handled")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "SIGTERM received 1\nignored\n", "")


def test_the_last_line_says_what_was_undone_and_names_every_leftover() -> None:
    ledger = CleanupLedger()
    stack = FinalizerStack()
    stack.ran = ["compensate topology.running (x.feature:3:5)", "restore every GPU to its default limit"]
    ledger.record(stack)
    ledger.verified_by.append("the twin target")
    assert ledger.summary() == (
        "stepgraph cleanup: undone: restore every GPU to its default limit ×1, topology.running ×1;"
        " checked by the twin target: nothing left behind"
    )
    ledger.leftover("pods power-conflict-bystander was created by the run and is still there")
    ledger.leftover("GPU 3 is at 300 W, not its default 400 W")
    assert ledger.summary().startswith(
        "stepgraph cleanup: LEFT BEHIND: pods power-conflict-bystander was created by the run and is still there;"
        " GPU 3 is at 300 W, not its default 400 W — remove these by hand"
    )


def test_a_cleanup_stuck_in_a_read_that_never_answers_stops_at_its_bound_and_names_what_is_left() -> None:
    stack, order = FinalizerStack(), []
    stuck, server = socket.socketpair()  # a request sent, its answer never coming
    stuck.settimeout(30)  # only so that a broken bound fails this test instead of hanging it
    stack.push(lambda: order.append("restore GPUs"), "restore GPUs", last=True)
    stack.push(lambda: order.append("delete topology"), "delete topology")
    stack.push(lambda: stuck.recv(1), "delete bystander")
    started = time.monotonic()
    try:
        with pytest.raises(CleanupTimedOut) as stopped:
            stack.run(budget_s=0.3)
    finally:
        stuck.close()
        server.close()
    assert time.monotonic() - started < 10
    assert order == [] and stopped.value.left == ["delete bystander", "delete topology", "restore GPUs"]
    assert "cleanup took longer than 0.3 s; not undone: delete bystander; delete topology; restore GPUs" in str(stopped.value)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_cleanup_within_its_bound_runs_everything() -> None:
    stack, order = FinalizerStack(), []
    stack.push(lambda: order.append("restore GPUs"), "restore GPUs", last=True)
    stack.push(lambda: order.append("delete topology"), "delete topology")
    stack.run(budget_s=30)
    assert order == ["delete topology", "restore GPUs"] and stack.left == []
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("value", ["0", "nan", "1e9", "soon"])
def test_a_cleanup_timeout_that_is_no_bound_is_refused_with_one_line(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest_inprocess(f"--cleanup-timeout={value}")
    assert result.ret == 2
    said = result.stdout.str() + result.stderr.str()
    assert f"stepgraph: --cleanup-timeout {value!r} — give seconds, more than 0 and at most 86400" in said


def test_leftovers_found_by_checks_run_as_finalizers_are_each_their_own_item() -> None:
    # Run-end checks run as finalizers fail together in one FinalizerError; the last line must
    # list what they found, not the heading of the check glued to its first item.
    info = RunInfo()

    def checks() -> None:
        found = AssertionError("run r1 did not clean up after itself:\n  - Pod a/b\n  - GPU 3 is at 300 W")
        raise FinalizerError([("check the run's objects are gone", found), ("check GPUs", AssertionError("GPU 4 capped"))])

    with pytest.raises(FinalizerError):
        _cleanup(info, checks, stack=None, what="the run-end check")
    assert info.cleanup.left == ["Pod a/b", "GPU 3 is at 300 W", "GPU 4 capped"]

"""`agent: {program: PATH}`, `--target-option agent=PATH`, `stepgraph twin up --agent PATH`: a bad
path is one line with exit 2; Ctrl-C on `twin up` ends every program it started."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from process_rig import eventually, pid_alive

from stepgraph.dsl import TargetConfigError
from stepgraph.targets.twin import resolve_world
from stepgraph.twin.world import WorldError, load_world

STEPGRAPH = [sys.executable, "-m", "stepgraph.dsl.cli"]


def test_a_world_file_naming_a_missing_agent_folder_is_one_positioned_line(tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text("name: mine\nagent:\n  program: ./no-such-agent\n")
    with pytest.raises(WorldError) as err:
        load_world(world)
    assert str(err.value) == (f"{world}:3:3: `agent.program`: agent program './no-such-agent': no such folder — give the "
                              "folder holding power_agent.py (a checkout's deploy/power-agent), or `reference`")


def test_a_world_file_agent_folder_is_relative_to_the_file(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "power_agent.py").write_text("print('hi')\n")
    (tmp_path / "w.yaml").write_text("agent:\n  program: agent\n")
    assert load_world(tmp_path / "w.yaml").agent.program == str((tmp_path / "agent").resolve())


def test_the_target_option_names_a_folder_without_power_agent_py(tmp_path):
    with pytest.raises(TargetConfigError) as err:
        resolve_world({"agent": str(tmp_path)}, {})
    assert str(err.value) == (f"twin: agent={tmp_path}: agent program {str(tmp_path)!r}: {tmp_path} has no power_agent.py "
                              "— give the folder that holds it (a checkout's deploy/power-agent)")


def test_twin_up_with_a_missing_agent_exits_2_with_one_line(tmp_path):
    done = subprocess.run([*STEPGRAPH, "twin", "up", "--agent", str(tmp_path / "absent")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"stepgraph twin: --agent {tmp_path / 'absent'}: ")


def children_of(pid: int, running: str) -> list[int]:
    """`pid`'s children whose command line holds `running` (`twin up` also runs short-lived
    helpers, `gcc --version` among them, which may be gone by the time they are looked at)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                if running in Path(f"/proc/{child}/cmdline").read_text():
                    found.append(int(child))
            except OSError:
                pass  # ended between the two reads
    return found


def _to_the_process(pid: int) -> None:
    os.kill(pid, signal.SIGINT)  # the kernel picks the thread (mostly, not always, the main one)


def _to_another_thread(pid: int) -> None:
    # What a terminal's Ctrl-C sometimes does to a threaded program: the signal lands on a thread
    # other than the main one, which Python's handlers run on.
    others = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if int(t.name) != pid]
    assert others, "twin up runs its API server on a thread of its own"
    assert ctypes.CDLL(None, use_errno=True).tgkill(pid, others[0], signal.SIGINT) == 0, os.strerror(ctypes.get_errno())


@pytest.mark.parametrize("ctrl_c", [_to_the_process, _to_another_thread], ids=["to-the-process", "to-another-thread"])
def test_ctrl_c_on_twin_up_ends_the_agent_program(tmp_path, ctrl_c):
    # an agent that only sleeps: nothing but the twin's own clean-up can end it
    (tmp_path / "power_agent.py").write_text("import time\ntime.sleep(3600)\n")
    up = subprocess.Popen([*STEPGRAPH, "twin", "up", "--agent", str(tmp_path), "--clock", "scaled"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([up.stdout], [], [], 60)
        assert ready and up.stdout.readline().strip().endswith("kubeconfig")
        programs = eventually(lambda: children_of(up.pid, "power_agent.py"), timeout=30, what="the agent program's start")
        assert all(pid_alive(p) for p in programs)
        ctrl_c(up.pid)
        assert up.wait(timeout=30) == 0
        eventually(lambda: not [p for p in programs if pid_alive(p)], timeout=10, what="the programs' end")
    finally:
        up.kill()
        up.wait()


@pytest.mark.parametrize("clock,message", [
    ("scaled:fast", "twin: clock='scaled:fast' — use virtual, real or scaled[:RATE], e.g. scaled:25"),
    ("virtual", "twin: clock=virtual cannot run a real agent program — use scaled[:RATE] or real"),
])
def test_the_target_refuses_a_clock_a_program_cannot_run_on(clock, message):
    from stepgraph.targets.twin import TwinTarget
    with pytest.raises(TargetConfigError) as err:
        TwinTarget(env={}).configure({"agent": "reference", "clock": clock})
    assert str(err.value) == message


def test_the_run_accepts_the_agent_clock_and_leftovers_options_the_target_reads():
    from stepgraph.dsl.target import check_options
    from stepgraph.targets.twin import TwinTarget
    check_options(TwinTarget(env={}), {"agent": "reference", "clock": "scaled:25", "leftovers": "adopt"})

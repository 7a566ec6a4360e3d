"""The twin's libnvidia-ml.so.1, loaded by the real nvidia-ml-py in a child process, answers from
the twin's GPU board for the container's GPUs, with NVML's own return codes."""

from __future__ import annotations

import json

import pynvml
import pytest
from view_rig import pod

READ_ALL = """
import json, pynvml
pynvml.nvmlInit()
out = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    out.append({"index": pynvml.nvmlDeviceGetIndex(h), "uuid": pynvml.nvmlDeviceGetUUID(h),
                "name": pynvml.nvmlDeviceGetName(h), "limit": pynvml.nvmlDeviceGetPowerManagementLimit(h),
                "default": pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h),
                "enforced": pynvml.nvmlDeviceGetEnforcedPowerLimit(h),
                "constraints": pynvml.nvmlDeviceGetPowerManagementLimitConstraints(h),
                "pids": sorted(p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)),
                "by_uuid": pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(pynvml.nvmlDeviceGetUUID(h)))})
print(json.dumps({"driver": pynvml.nvmlSystemGetDriverVersion(), "gpus": out}))
pynvml.nvmlShutdown()
"""

ERRORS = """
import pynvml, sys
def outcome(fn, *args):
    try:
        fn(*args)
        return "ok"
    except Exception as e:
        return type(e).__name__
try:
    pynvml.nvmlDeviceGetCount()
except pynvml.NVMLError as e:
    print("before-init", type(e).__name__)
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
print("float", outcome(pynvml.nvmlDeviceSetPowerManagementLimit, h, 250000.5))
print("below-min", outcome(pynvml.nvmlDeviceSetPowerManagementLimit, h, 1000))
print("absent", outcome(pynvml.nvmlDeviceGetPowerUsage, h))
print("bad-index", outcome(pynvml.nvmlDeviceGetHandleByIndex, 99))
print("bad-uuid", outcome(pynvml.nvmlDeviceGetHandleByUUID, "GPU-00000000-0000-0000-0000-000000000000"))
print("set", outcome(pynvml.nvmlDeviceSetPowerManagementLimit, h, 250000))
"""


def test_the_real_binding_reads_the_board_of_the_containers_gpus(rig):
    worker = rig.host.spawn("pod-uid-1", ["python", "worker"], gpus=[rig.board.gpus[2].uuid])
    result = rig.run(rig.open(gpus=(rig.board.gpus[1].uuid, rig.board.gpus[2].uuid)), READ_ALL)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["driver"] == "590.48.01"
    expected = [(0, rig.board.gpus[1]), (1, rig.board.gpus[2])]  # re-indexed from 0 inside the container
    assert [(g["index"], g["uuid"], g["by_uuid"]) for g in seen["gpus"]] == [(i, gpu.uuid, i) for i, gpu in expected]
    assert {(g["limit"], g["default"], g["enforced"], tuple(g["constraints"])) for g in seen["gpus"]} == {
        (400_000, 400_000, 400_000, (100_000, 400_000))}
    assert [g["pids"] for g in seen["gpus"]] == [[], [worker.pid]]
    assert {g["name"] for g in seen["gpus"]} == {"NVIDIA A100-SXM4-80GB"}


def test_a_limit_written_by_the_child_is_the_boards_limit(rig):
    script = "import pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(3); " \
             "pynvml.nvmlDeviceSetPowerManagementLimit(h, 275000); print(pynvml.nvmlDeviceGetPowerManagementLimit(h))"
    result = rig.run(rig.open(), script)
    assert (result.returncode, result.stdout.strip()) == (0, "275000"), result.stderr
    assert rig.board.caps_w() == {0: 400, 1: 400, 2: 400, 3: 275}


def test_the_binding_raises_its_own_errors_for_nvmls_return_codes(rig):
    result = rig.run(rig.open(), ERRORS)
    assert result.returncode == 0, result.stderr
    assert dict(line.split(" ", 1) for line in result.stdout.splitlines()) == {
        "before-init": "NVMLError_Uninitialized",
        "float": "TypeError",
        "below-min": "NVMLError_InvalidArgument",
        "absent": "NVMLError_FunctionNotFound",
        "bad-index": "NVMLError_InvalidArgument",
        "bad-uuid": "NVMLError_NotFound",
        "set": "ok",
    }


def test_a_non_root_container_may_read_but_not_write_limits(rig):
    result = rig.run(rig.open(pod(run_as_user=1000)), ERRORS)
    assert result.returncode == 0, result.stderr
    assert "set NVMLError_NoPermission" in result.stdout.splitlines()
    assert rig.board.caps_w() == {0: 400, 1: 400, 2: 400, 3: 400}


def test_the_nvml_no_permission_switch_reaches_the_child(rig):
    rig.faults.set("nvml_no_permission", True)
    result = rig.run(rig.open(), ERRORS)
    assert "set NVMLError_NoPermission" in result.stdout.splitlines(), result.stderr


def test_without_a_compiler_the_view_says_so_in_one_line_and_nvml_is_absent(rig, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CC", raising=False)
    view = rig.open()
    assert len(view.notes) == 1 and "C compiler" in view.notes[0] and "\n" not in view.notes[0]
    assert rig.view.native_problem == view.notes[0]
    assert "LD_LIBRARY_PATH" not in view.env
    monkeypatch.undo()
    result = rig.run(view, "import pynvml\ntry:\n    pynvml.nvmlInit()\nexcept pynvml.NVMLError as e:\n"
                           "    print(type(e).__name__)")
    assert result.stdout.strip() == "NVMLError_LibraryNotFound", result.stderr


def test_a_process_outliving_its_container_loses_the_node(rig):
    view = rig.open()
    script = "import pynvml, sys\npynvml.nvmlInit()\nprint(pynvml.nvmlDeviceGetCount(), flush=True)\nsys.stdin.readline()\n" \
             "try:\n    pynvml.nvmlDeviceGetCount()\nexcept pynvml.NVMLError as e:\n    print(e.value)"
    child = rig.popen(view, script)
    try:
        assert child.stdout.readline().strip() == "4"
        view.close()
        out, err = child.communicate("go\n", timeout=30)
    finally:
        child.kill()
        child.wait()
    assert out.strip() == str(pynvml.NVML_ERROR_UNKNOWN), err


def test_a_closed_view_cannot_start_a_program(rig):
    view = rig.open()
    view.close()
    result = rig.run(view, "print('ran')")
    assert result.returncode == 70 and result.stdout == ""
    assert result.stderr.startswith("stepgraph twin: cannot give this program the node's view:")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("name", ["nvml_caps", "nvml_limits", "nvml_pids", "nvml_uuids", "restore_defaults"])
def test_the_shipped_probe_scripts_run_on_the_real_binding(rig, name):
    from stepgraph.steps import probes

    rig.board.gpus[1].set_limit_mw(300_000)
    worker = rig.host.spawn("pod-uid-1", ["python", "worker"], gpus=[rig.board.gpus[0].uuid])
    uuids = [g.uuid for g in rig.board.gpus]
    expected = {
        "nvml_caps": ["0=400", "1=300", "2=400", "3=400"],
        "nvml_limits": [f"{i}=400,100,400" for i in range(4)],
        "nvml_pids": [f"0={worker.pid}", "1=", "2=", "3="],
        "nvml_uuids": [f"{i}={u}" for i, u in enumerate(uuids)],
        "restore_defaults": ["0=400,400,400,ok", "1=300,400,400,ok", "2=400,400,400,ok", "3=400,400,400,ok"],
    }[name]
    result = rig.run(rig.open(), probes.source(name))
    assert (result.returncode, result.stdout.splitlines()) == (0, expected), result.stderr


def test_two_twins_on_one_machine_keep_their_own_gpus(rig, tmp_path):
    from view_rig import ViewRig

    (tmp_path / "other").mkdir()
    other = ViewRig(tmp_path / "other", seed=8)
    try:
        other.board.gpus[0].set_limit_mw(123_000)
        script = "import pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); " \
                 "print(pynvml.nvmlDeviceGetUUID(h), pynvml.nvmlDeviceGetPowerManagementLimit(h))"
        mine, theirs = rig.run(rig.open(), script), other.run(other.open(), script)
        assert mine.stdout.split() == [rig.board.gpus[0].uuid, "400000"], mine.stderr
        assert theirs.stdout.split() == [other.board.gpus[0].uuid, "123000"], theirs.stderr
        assert rig.view.folder != other.view.folder
    finally:
        other.close()

"""The twin's DCGM bindings (pydcgm, dcgm_structs, dcgmvalue) in a real child program: the calls of
a Power Agent's DCGM actuator reach the twin's hostengine through its Service name and port 5555,
and survive a hostengine restart by reconnecting, as the agents do."""

from __future__ import annotations

import json

from view_rig import pod

# The actuator's calls in order (SOURCES: DCGM, steps 1–7), as a small program of our own.
ACTUATOR = """
import json, sys
import dcgm_structs, dcgmvalue, pydcgm

def connect():
    handle = pydcgm.DcgmHandle(ipAddress=sys.argv[1], opMode=dcgm_structs.DCGM_OPERATION_MODE_AUTO,
                               persistAfterDisconnect=False, timeoutMs=5000)
    return handle, handle.GetSystem()

def cap(handle, gpu_id, watts):
    grp = pydcgm.DcgmGroup(handle, groupName=f"dynamo-power-agent-gpu-{gpu_id}", groupType=dcgm_structs.DCGM_GROUP_EMPTY)
    grp.AddGpu(gpu_id)
    cfg = dcgm_structs.c_dcgmDeviceConfig_v2()
    cfg.version = dcgm_structs.dcgmDeviceConfig_version2
    cfg.mEccMode = cfg.mComputeMode = cfg.mPerfState.syncBoost = dcgmvalue.DCGM_INT32_BLANK
    cfg.mPerfState.targetClocks.memClock = cfg.mPerfState.targetClocks.smClock = dcgmvalue.DCGM_INT32_BLANK
    for i in range(dcgm_structs.DCGM_WORKLOAD_POWER_PROFILE_ARRAY_SIZE):
        cfg.mWorkloadPowerProfiles[i] = dcgmvalue.DCGM_INT32_BLANK
    cfg.mPowerLimit.type = dcgm_structs.DCGM_CONFIG_POWER_CAP_INDIVIDUAL
    cfg.mPowerLimit.val = watts
    grp.config.Set(cfg)
    grp.config.Enforce()
    return grp

handle, system = connect()
ids = system.discovery.GetAllGpuIds()
attrs = {i: system.discovery.GetGpuAttributes(i) for i in ids}
out = {"ids": ids, "uuids": {i: a.identifiers.uuid.decode() for i, a in attrs.items()},
       "limits": {i: [a.powerLimits.curPowerLimit, a.powerLimits.defaultPowerLimit, a.powerLimits.minPowerLimit,
                      a.powerLimits.maxPowerLimit] for i, a in attrs.items()}}
groups = [cap(handle, 0, 250)]
try:
    cap(handle, 1, 50)
except dcgm_structs.DCGMError as e:
    out["out_of_range"] = [type(e).__name__, e.value]
print(json.dumps(out), flush=True)
sys.stdin.readline()  # the twin restarts the hostengine now
try:
    cap(handle, 2, 260)
except dcgm_structs.DCGMError as e:
    out = {"after_restart": [type(e).__name__, e.value == dcgm_structs.DCGM_ST_CONNECTION_NOT_VALID]}
    handle.Shutdown()
    handle, system = connect()  # the actuator's reconnect: a new handle, then retry once
    groups = [cap(handle, 2, 260)]
for grp in groups:
    grp.Delete()
handle.Shutdown()
print(json.dumps(out))
"""

SERVICE = {"metadata": {"name": "nvidia-dcgm"}, "spec": {"clusterIP": "None", "selector": {"app": "nvidia-dcgm-standalone"},
                                                          "ports": [{"name": "hostengine", "port": 5555}]}}


def _actuator(rig, address):
    child = rig.popen(rig.open(pod()), ACTUATOR, address)
    first = child.stdout.readline()
    return child, first


def test_the_actuators_calls_cap_gpus_and_reconnect_after_a_restart(rig):
    rig.store.create("namespaces", None, {"metadata": {"name": "gpu-operator"}})
    rig.store.create("services", "gpu-operator", SERVICE)
    engine = rig.devices.start_hostengine()
    child, first = _actuator(rig, "nvidia-dcgm.gpu-operator.svc.cluster.local:5555")
    try:
        assert first, child.stderr.read()
        seen = json.loads(first)
        order = [3, 2, 1, 0]  # the default `reversed` gpuId → NVML index order
        assert seen["ids"] == [0, 1, 2, 3]
        assert seen["uuids"] == {str(k): rig.board.gpus[order[k]].uuid for k in range(4)}
        assert seen["limits"]["0"] == [400, 400, 100, 400]
        assert seen["out_of_range"] == ["DCGMError_Badparam", -1]
        assert rig.board.caps_w() == {0: 400, 1: 400, 2: 400, 3: 250}  # gpuId 0 is NVML index 3
        assert [g.name for g in engine.groups.values()] == ["dynamo-power-agent-gpu-0", "dynamo-power-agent-gpu-1"]
        engine.restart()
        out, err = child.communicate("go\n", timeout=30)
    finally:
        child.kill()
        child.wait()
    assert json.loads(out) == {"after_restart": ["DCGMError_ConnectionNotValid", True]}, err
    assert rig.board.caps_w() == {0: 400, 1: 260, 2: 400, 3: 250}
    assert engine.groups == {}  # Delete() removed the group the reconnected handle made


def test_an_address_that_names_no_service_cannot_connect(rig):
    rig.devices.start_hostengine()
    result = rig.run(rig.open(pod()), "import pydcgm, dcgm_structs\ntry:\n    pydcgm.DcgmHandle(ipAddress='nvidia-dcgm."
                                      "gpu-operator.svc.cluster.local:5555')\nexcept dcgm_structs.DCGMError as e:\n"
                                      "    print(type(e).__name__, e.value)")
    assert result.stdout.strip() == "DCGMError_ConnectionNotValid -21", result.stderr


def test_without_a_running_hostengine_loopback_cannot_connect_either(rig):
    result = rig.run(rig.open(pod()), "import pydcgm, dcgm_structs\ntry:\n    pydcgm.DcgmHandle(ipAddress='127.0.0.1')\n"
                                      "except dcgm_structs.DCGMError as e:\n    print(type(e).__name__, e.value)")
    assert result.stdout.strip() == "DCGMError_ConnectionNotValid -21", result.stderr


def test_a_config_the_model_cannot_apply_is_refused_not_ignored(rig):
    rig.devices.start_hostengine()
    script = """
import pydcgm, dcgm_structs, dcgmvalue
h = pydcgm.DcgmHandle(ipAddress="localhost:5555")
g = pydcgm.DcgmGroup(h, groupName="x"); g.AddGpu(0)
cfg = dcgm_structs.c_dcgmDeviceConfig_v2(); cfg.version = dcgm_structs.dcgmDeviceConfig_version2
cfg.mEccMode = 1
try:
    g.config.Set(cfg)
except dcgm_structs.DCGMError as e:
    print(type(e).__name__, e)
"""
    result = rig.run(rig.open(pod()), script)
    assert result.stdout.strip().startswith("DCGMError_NotSupported Feature not supported: 'the twin's hostengine sets only"), \
        result.stderr

"""The twin's `pydcgm`: DcgmHandle, DcgmSystem (discovery), DcgmGroup (AddGpu, config Set/Enforce,
Delete) — the calls a Power Agent's DCGM actuator makes — over the twin's hostengine model.

`DcgmHandle(ipAddress="<host>:<port>")` reaches the hostengine the way a pod does, by the
hostengine Service's name (or loopback) and port 5555; the twin resolves the name, so no DNS is
needed.  A hostengine restart invalidates every handle: calls then raise
`DCGMError_ConnectionNotValid` (`.value == DCGM_ST_CONNECTION_NOT_VALID`) until the program
builds a new handle, exactly the reconnect path a real agent takes.
"""

from __future__ import annotations

import json

import dcgm_structs
import dcgmvalue
from _stepgraph_bridge import BRIDGE, BridgeGone

DEFAULT_PORT = 5555


class DcgmException(Exception):
    """What the bindings raise for a misuse that has no DCGM status code."""


def _call(op: str, **fields):
    try:
        code, rest = BRIDGE.call_json("dcgm", {"op": op, **fields})
    except BridgeGone as gone:
        error = dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_CONNECTION_NOT_VALID)
        error.SetAdditionalInfo(str(gone))
        raise error from None
    if code != dcgm_structs.DCGM_ST_OK:
        error = dcgm_structs.DCGMError(code)
        if rest:
            error.SetAdditionalInfo(rest[0])
        raise error
    return json.loads(rest[0])


class DcgmHandle:
    def __init__(self, handle=None, ipAddress=None, opMode=dcgm_structs.DCGM_OPERATION_MODE_AUTO,
                 persistAfterDisconnect=False, unixSocketPath=None, timeoutMs=0):
        self.handle = None
        self._ipAddress = ipAddress
        if handle is not None:
            self.handle = handle
            return
        if ipAddress is not None and unixSocketPath is not None:
            raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_BADPARAM)
        if ipAddress is None:
            error = dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_NOT_SUPPORTED)
            error.SetAdditionalInfo("the twin has no embedded hostengine or unix-socket hostengine: pass ipAddress")
            raise error
        host, _, port = str(ipAddress).rpartition(":") if ":" in str(ipAddress) else (str(ipAddress), "", "")
        self.handle = _call("connect", host=host, port=int(port or DEFAULT_PORT))

    def GetSystem(self):
        return DcgmSystem(self)

    def GetIpAddress(self):
        return self._ipAddress

    def Shutdown(self):
        if self.handle is None:
            return
        try:
            _call("disconnect", handle=self.handle)
        except dcgm_structs.DCGMError:
            pass  # already gone with the hostengine: nothing left to close
        self.handle = None

    def _live(self) -> int:
        if self.handle is None:
            raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_UNINITIALIZED)
        return self.handle


class DcgmSystemDiscovery:
    def __init__(self, dcgmHandle):
        self._dcgmHandle = dcgmHandle

    def GetAllGpuIds(self):
        return _call("gpu_ids", handle=self._dcgmHandle._live())

    GetAllSupportedGpuIds = GetAllGpuIds

    def GetGpuAttributes(self, gpuId):
        found = _call("gpu_attributes", handle=self._dcgmHandle._live(), gpu=int(gpuId))
        attrs = dcgm_structs.c_dcgmDeviceAttributes_v3()
        attrs.version = dcgm_structs.dcgmDeviceAttributes_version3
        attrs.identifiers.uuid = found["uuid"].encode()
        attrs.identifiers.deviceName = found["deviceName"].encode()
        attrs.identifiers.brandName = b"NVIDIA"
        for name in ("curPowerLimit", "defaultPowerLimit", "enforcedPowerLimit", "minPowerLimit", "maxPowerLimit"):
            setattr(attrs.powerLimits, name, int(found[name]))
        return attrs


class DcgmSystem:
    def __init__(self, dcgmHandle):
        self._dcgmHandle = dcgmHandle
        self.discovery = DcgmSystemDiscovery(dcgmHandle)


class DcgmGroupConfig:
    def __init__(self, dcgmHandle, groupId, dcgmGroup):
        self._dcgmHandle = dcgmHandle
        self._groupId = groupId

    def Set(self, config, checkStatusErrors=True):
        if not isinstance(config, dcgm_structs.c_dcgmDeviceConfig_v2) or \
                config.version != dcgm_structs.dcgmDeviceConfig_version2:
            raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_VER_MISMATCH)
        blank = dcgmvalue.DCGM_INT32_BLANK
        others = [config.mEccMode, config.mComputeMode, config.mPerfState.syncBoost,
                  config.mPerfState.targetClocks.memClock, config.mPerfState.targetClocks.smClock,
                  *config.mWorkloadPowerProfiles]
        if any(value != blank for value in others):
            error = dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_NOT_SUPPORTED)
            error.SetAdditionalInfo("the twin's hostengine sets only power limits; leave the other fields blank")
            raise error
        if config.mPowerLimit.val == blank:
            return
        if config.mPowerLimit.type != dcgm_structs.DCGM_CONFIG_POWER_CAP_INDIVIDUAL:
            error = dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_NOT_SUPPORTED)
            error.SetAdditionalInfo("only DCGM_CONFIG_POWER_CAP_INDIVIDUAL power limits are modelled")
            raise error
        _call("config_set_power", handle=self._dcgmHandle._live(), group=self._groupId, watts=int(config.mPowerLimit.val))

    def Enforce(self):
        _call("config_enforce", handle=self._dcgmHandle._live(), group=self._groupId)


class DcgmGroup:
    def __init__(self, dcgmHandle, groupId=None, groupName=None, groupType=dcgm_structs.DCGM_GROUP_EMPTY):
        self._dcgmHandle = dcgmHandle
        if groupId is None and groupName is None:
            raise DcgmException("Either groupId or groupName is required")
        if groupId is not None:
            self._groupId = groupId
        else:
            if groupType not in (dcgm_structs.DCGM_GROUP_EMPTY, dcgm_structs.DCGM_GROUP_DEFAULT):
                raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_NOT_SUPPORTED)
            self._groupId = _call("group_create", handle=dcgmHandle._live(), name=str(groupName))
            if groupType == dcgm_structs.DCGM_GROUP_DEFAULT:
                for gpu_id in dcgmHandle.GetSystem().discovery.GetAllGpuIds():
                    self.AddGpu(gpu_id)
        self.name = groupName
        self.config = DcgmGroupConfig(dcgmHandle, self._groupId, self)

    def AddGpu(self, gpuId):
        _call("group_add_gpu", handle=self._dcgmHandle._live(), group=self._groupId, gpu=int(gpuId))

    def GetId(self):
        return self._groupId

    def Delete(self):
        self.config = None
        if self._groupId is not None:
            _call("group_destroy", handle=self._dcgmHandle._live(), group=self._groupId)
            self._groupId = None

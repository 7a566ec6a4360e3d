"""The twin's `dcgm_structs`: DCGM status codes, the DCGMError family, group and config constants,
and the ctypes structures a Power Agent fills (`c_dcgmDeviceConfig_v2`) or reads
(`c_dcgmDeviceAttributes_v3`: identifiers and power limits only — the rest is not modelled)."""

from __future__ import annotations

import sys
from ctypes import Structure, c_char, c_uint, sizeof
from typing import ClassVar

DCGM_MAX_STR_LENGTH = 256
DCGM_WORKLOAD_POWER_PROFILE_ARRAY_SIZE = 8

DCGM_OPERATION_MODE_AUTO = 1
DCGM_OPERATION_MODE_MANUAL = 2

DCGM_GROUP_DEFAULT = 0  # every GPU of the node
DCGM_GROUP_EMPTY = 1
DCGM_GROUP_ALL_GPUS = 0x7FFFFFFF

DCGM_CONFIG_POWER_CAP_INDIVIDUAL = 0
DCGM_CONFIG_POWER_BUDGET_GROUP = 1
DCGM_CONFIG_TARGET_STATE = 0
DCGM_CONFIG_CURRENT_STATE = 1

# dcgm_errors.h / dcgm_structs.h status codes and the text DCGM gives each
DCGM_ST_OK = 0
DCGM_ST_BADPARAM = -1
DCGM_ST_GENERIC_ERROR = -3
DCGM_ST_MEMORY = -4
DCGM_ST_NOT_CONFIGURED = -5
DCGM_ST_NOT_SUPPORTED = -6
DCGM_ST_INIT_ERROR = -7
DCGM_ST_NVML_ERROR = -8
DCGM_ST_PENDING = -9
DCGM_ST_UNINITIALIZED = -10
DCGM_ST_TIMEOUT = -11
DCGM_ST_VER_MISMATCH = -12
DCGM_ST_UNKNOWN_FIELD = -13
DCGM_ST_NO_DATA = -14
DCGM_ST_STALE_DATA = -15
DCGM_ST_NOT_WATCHED = -16
DCGM_ST_NO_PERMISSION = -17
DCGM_ST_GPU_IS_LOST = -18
DCGM_ST_RESET_REQUIRED = -19
DCGM_ST_FUNCTION_NOT_FOUND = -20
DCGM_ST_CONNECTION_NOT_VALID = -21
DCGM_ST_GPU_NOT_SUPPORTED = -22
DCGM_ST_GROUP_INCOMPATIBLE = -23

_TEXT = {
    DCGM_ST_OK: "Success",
    DCGM_ST_BADPARAM: "Bad parameter passed to function",
    DCGM_ST_GENERIC_ERROR: "Generic unspecified error",
    DCGM_ST_MEMORY: "Out of memory error",
    DCGM_ST_NOT_CONFIGURED: "Setting not configured",
    DCGM_ST_NOT_SUPPORTED: "Feature not supported",
    DCGM_ST_INIT_ERROR: "DCGM initialization error",
    DCGM_ST_NVML_ERROR: "NVML error",
    DCGM_ST_PENDING: "Object is in a pending state",
    DCGM_ST_UNINITIALIZED: "Object is in an undefined state",
    DCGM_ST_TIMEOUT: "Timeout",
    DCGM_ST_VER_MISMATCH: "API version mismatch",
    DCGM_ST_UNKNOWN_FIELD: "Unknown field",
    DCGM_ST_NO_DATA: "No data is available",
    DCGM_ST_STALE_DATA: "Data is considered stale",
    DCGM_ST_NOT_WATCHED: "Field is not being updated",
    DCGM_ST_NO_PERMISSION: "Not permissioned",
    DCGM_ST_GPU_IS_LOST: "GPU is unreachable",
    DCGM_ST_RESET_REQUIRED: "GPU requires a reset",
    DCGM_ST_FUNCTION_NOT_FOUND: "Unable to find function",
    DCGM_ST_CONNECTION_NOT_VALID: "The connection to the host engine is not valid any longer",
    DCGM_ST_GPU_NOT_SUPPORTED: "This GPU is not supported by DCGM",
    DCGM_ST_GROUP_INCOMPATIBLE: "GPUs are incompatible with each other for the requested operation",
}


class DCGMError(Exception):
    """A DCGM status code as an exception; `DCGMError(code)` is the code's own subclass
    (`DCGMError_ConnectionNotValid` for -21), and `.value` is the code."""

    _by_value: ClassVar[dict[int, type[DCGMError]]] = {}

    def __new__(cls, value, *args):
        if cls is DCGMError:
            cls = DCGMError._by_value.get(value, cls)
        error = Exception.__new__(cls)
        error.value = value
        error.info = None
        return error

    def __init__(self, value, *args):
        super().__init__(value)

    def SetAdditionalInfo(self, msg):
        self.info = msg

    def __str__(self):
        text = _TEXT.get(self.value, f"DCGM Error with code {self.value}")
        return text if self.info is None else f"{text.rstrip('.')}: '{self.info}'"

    def __eq__(self, other):
        return isinstance(other, DCGMError) and self.value == other.value

    def __hash__(self):
        return hash(self.value)


def _error_classes() -> None:
    module = sys.modules[__name__]
    for name in [n for n in dir(module) if n.startswith("DCGM_ST_")]:
        value = getattr(module, name)
        class_name = "DCGMError_" + "".join(part.capitalize() for part in name[len("DCGM_ST_"):].split("_"))

        def fixed(cls, *args, _value=value):
            return DCGMError.__new__(cls, _value)

        def init(self, *args):
            Exception.__init__(self, self.value)

        cls = type(class_name, (DCGMError,), {"__new__": fixed, "__init__": init, "__module__": __name__})
        setattr(module, class_name, cls)
        DCGMError._by_value[value] = cls


_error_classes()


def dcgmExceptionClass(error_code):
    return DCGMError._by_value.get(error_code)


def _dcgmCheckReturn(ret):
    if ret != DCGM_ST_OK:
        raise DCGMError(ret)
    return ret


def make_dcgm_version(struct, ver):
    return sizeof(struct) | (ver << 24)


class c_dcgmClockSet_v1(Structure):
    _fields_ = [("version", c_uint), ("memClock", c_uint), ("smClock", c_uint)]


class c_dcgmConfigPerfStateSettings_t(Structure):
    _fields_ = [("syncBoost", c_uint), ("targetClocks", c_dcgmClockSet_v1)]


class c_dcgmConfigPowerLimit(Structure):
    _fields_ = [("type", c_uint), ("val", c_uint)]


class c_dcgmDeviceConfig_v2(Structure):
    _fields_ = [
        ("version", c_uint),
        ("gpuId", c_uint),
        ("mEccMode", c_uint),
        ("mComputeMode", c_uint),
        ("mPerfState", c_dcgmConfigPerfStateSettings_t),
        ("mPowerLimit", c_dcgmConfigPowerLimit),
        ("mWorkloadPowerProfiles", c_uint * DCGM_WORKLOAD_POWER_PROFILE_ARRAY_SIZE),
    ]


dcgmDeviceConfig_version2 = make_dcgm_version(c_dcgmDeviceConfig_v2, 2)


class c_dcgmDevicePowerLimits_v1(Structure):
    _fields_ = [("version", c_uint), ("curPowerLimit", c_uint), ("defaultPowerLimit", c_uint),
                ("enforcedPowerLimit", c_uint), ("minPowerLimit", c_uint), ("maxPowerLimit", c_uint)]


class c_dcgmDeviceIdentifiers_v1(Structure):
    _fields_ = [("version", c_uint), ("brandName", c_char * DCGM_MAX_STR_LENGTH),
                ("deviceName", c_char * DCGM_MAX_STR_LENGTH), ("pciBusId", c_char * DCGM_MAX_STR_LENGTH),
                ("serial", c_char * DCGM_MAX_STR_LENGTH), ("uuid", c_char * DCGM_MAX_STR_LENGTH),
                ("vbios", c_char * DCGM_MAX_STR_LENGTH), ("inforomImageVersion", c_char * DCGM_MAX_STR_LENGTH),
                ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint), ("driverVersion", c_char * DCGM_MAX_STR_LENGTH),
                ("virtualizationMode", c_uint)]


class c_dcgmDeviceAttributes_v3(Structure):
    _fields_ = [("version", c_uint), ("powerLimits", c_dcgmDevicePowerLimits_v1),
                ("identifiers", c_dcgmDeviceIdentifiers_v1)]


dcgmDeviceAttributes_version3 = make_dcgm_version(c_dcgmDeviceAttributes_v3, 3)

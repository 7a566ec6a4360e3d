"""The twin's NVML behaves like pynvml: same names, units, shapes and error classes."""

from __future__ import annotations

import pynvml
import pytest
from stepgraph.twin.gpus import GpuBoard, UnknownSku, load_sku, make_uuids
from stepgraph.twin.nvml import NvmlLibrary


class Procs:
    def __init__(self, table):
        self.table = table

    def pids_on_gpu(self, uuid):
        return self.table.get(uuid, [])


@pytest.fixture
def board():
    uuids = make_uuids(7, "node-a", 8)
    return GpuBoard.build("node-a", "A100-SXM4-80GB", uuids, Procs({uuids[2]: [4242, 17]}))


@pytest.fixture
def nvml(board):
    lib = NvmlLibrary(board).as_module()
    lib.nvmlInit()
    return lib


def test_calls_before_init_raise_uninitialized(board):
    lib = NvmlLibrary(board).as_module()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        lib.nvmlDeviceGetCount()


def test_a100_profile_reads_back_like_the_live_node(nvml):
    assert nvml.nvmlDeviceGetCount() == 8
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetName(h) == "NVIDIA A100-SXM4-80GB"
    assert nvml.nvmlDeviceGetPowerManagementLimit(h) == 400_000
    assert nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) == 400_000
    assert nvml.nvmlDeviceGetPowerManagementLimitConstraints(h) == [100_000, 400_000]
    assert nvml.nvmlDeviceGetUUID(h).startswith("GPU-")


def test_set_limit_in_milliwatts_is_read_back_and_enforced(nvml):
    h = nvml.nvmlDeviceGetHandleByIndex(3)
    nvml.nvmlDeviceSetPowerManagementLimit(h, 325_000)
    assert nvml.nvmlDeviceGetPowerManagementLimit(h) == 325_000
    assert nvml.nvmlDeviceGetEnforcedPowerLimit(h) == 325_000
    assert round(nvml.nvmlDeviceGetPowerManagementLimit(nvml.nvmlDeviceGetHandleByIndex(4)) / 1000) == 400


@pytest.mark.parametrize("milliwatts", [99_000, 401_000])
def test_out_of_constraints_is_invalid_argument(nvml, milliwatts):
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument) as err:
        nvml.nvmlDeviceSetPowerManagementLimit(h, milliwatts)
    assert err.value.value == pynvml.NVML_ERROR_INVALID_ARGUMENT
    assert nvml.nvmlDeviceGetPowerManagementLimit(h) == 400_000


def test_unprivileged_caller_gets_no_permission(board):
    lib = NvmlLibrary(board, privileged=False).as_module()
    lib.nvmlInit()
    with pytest.raises(pynvml.NVMLError_NoPermission):
        lib.nvmlDeviceSetPowerManagementLimit(lib.nvmlDeviceGetHandleByIndex(0), 300_000)


def test_bad_index_is_invalid_argument_and_unknown_uuid_not_found(nvml):
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetHandleByIndex(8)
    with pytest.raises(pynvml.NVMLError_NotFound):
        nvml.nvmlDeviceGetHandleByUUID("GPU-nope")


def test_compute_processes_come_from_the_host_table(nvml, board):
    procs = nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(2))
    assert [p.pid for p in procs] == [17, 4242]
    assert nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(0)) == []


def test_container_sees_only_its_gpus_reindexed_from_zero(board):
    lib = NvmlLibrary(board, visible_uuids=[board.gpus[5].uuid, board.gpus[6].uuid]).as_module()
    lib.nvmlInit()
    assert lib.nvmlDeviceGetCount() == 2
    assert lib.nvmlDeviceGetUUID(lib.nvmlDeviceGetHandleByIndex(0)) == board.gpus[5].uuid


def test_module_carries_pynvmls_own_error_classes(nvml):
    assert nvml.NVMLError is pynvml.NVMLError
    assert nvml.NVMLError_NoPermission is pynvml.NVMLError_NoPermission


def test_unknown_figures_are_marked_not_invented():
    a100 = load_sku("A100-SXM4-80GB")
    assert a100.power_limit_watts.default.known and not a100.power_limit_watts.min.known
    b200 = load_sku("B200-SXM-180GB")
    assert not any(f.known for f in (b200.power_limit_watts.default, b200.power_limit_watts.max))
    assert all(f.note for f in (b200.power_limit_watts.default, b200.power_limit_watts.max))
    with pytest.raises(UnknownSku, match="unknown SKU 'V100'"):
        load_sku("V100")

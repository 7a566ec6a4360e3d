"""The DCGM hostengine model: its own gpuId order, groups 2.., Set/Enforce, fields, dcgmi shapes."""

from __future__ import annotations

import json

import pytest
from stepgraph.twin.dcgm import (
    DCGM_FI_DEV_POWER_MGMT_LIMIT,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX,
    DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN,
    DCGM_ST_CONNECTION_NOT_VALID,
    DcgmError,
    Hostengine,
)
from stepgraph.twin.gpus import GpuBoard, make_uuids


@pytest.fixture
def board():
    return GpuBoard.build("node-a", "A100-SXM4-80GB", make_uuids(1, "node-a", 8))


def agent_groups(engine, caps_by_dcgm_index):
    conn = engine.connect()
    for idx, watts in caps_by_dcgm_index.items():
        gid = conn.create_group(f"dynamo-power-agent-gpu-{idx}")
        conn.add_gpu(gid, idx)
        conn.config_set_power_limit(gid, watts)
    return conn


def test_gpu_ids_enumerate_in_a_different_order_than_nvml(board):
    engine = Hostengine(board)
    conn = engine.connect()
    dcgm_uuids = [conn.gpu_uuid(g) for g in conn.get_all_gpu_ids()]
    assert sorted(dcgm_uuids) == sorted(g.uuid for g in board.gpus)
    assert dcgm_uuids != [g.uuid for g in board.gpus]


def test_fresh_hostengine_gives_group_ids_2_to_9(board):
    engine = Hostengine(board)
    agent_groups(engine, {i: 300 for i in range(8)})
    assert sorted(engine.groups) == list(range(2, 10))


def test_config_set_writes_the_limit_nvml_reads(board):
    engine = Hostengine(board, order="reversed")
    agent_groups(engine, {0: 325})
    assert board.gpus[7].limit_w == 325  # DCGM gpuId 0 is NVML index 7 when reversed
    assert engine.latest_values(0, [160, 161, 162, 163]) == {
        DCGM_FI_DEV_POWER_MGMT_LIMIT: 325.0,
        DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN: 100.0,
        DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX: 400.0,
        DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF: 400.0,
    }


def test_enforce_reapplies_the_target_after_an_outside_write(board):
    engine = Hostengine(board, order="same")
    conn = agent_groups(engine, {2: 350})
    board.gpus[2].set_limit_mw(400_000)
    conn.config_enforce(2)
    assert board.gpus[2].limit_w == 350


def list_then_get(engine, version):
    out, err, rc = engine.dcgmi(["group", "--list", "-j"])
    assert rc == 0, err
    groups = json.loads(out)["body"]
    result = {}
    for entry in groups:
        out, err, rc = engine.dcgmi(["config", "--get", "-g", entry["Group ID"], "-j"])
        assert rc == 0, err
        result[entry["Group Name"]] = json.loads(out)["body"]
    return result


def test_dcgmi_45_prints_dict_shape(board):
    engine = Hostengine(board, version=lambda: "4.5")
    agent_groups(engine, {0: 375})
    body = list_then_get(engine, "4.5")["dynamo-power-agent-gpu-0"]
    assert isinstance(body, dict)
    assert body["Power Limit"]["children"]["Current"]["value"] == "375"
    assert body["Power Limit"]["children"]["Target"]["value"] == "375"


def test_dcgmi_44_prints_list_shape(board):
    engine = Hostengine(board, version=lambda: "4.4")
    agent_groups(engine, {0: 300})
    body = list_then_get(engine, "4.4")["dynamo-power-agent-gpu-0"]
    assert isinstance(body, list)
    (field,) = [f["Power Limit (W)"] for f in body if "Power Limit (W)" in f]
    assert field == {"Current": "300", "Target": "300"}


@pytest.mark.parametrize("argv", [["config", "--get", "-g", "all", "-j"], ["config", "--get-target", "-g", "2"]])
def test_removed_or_invalid_forms_fail_with_usage(board, argv):
    out, err, rc = Hostengine(board).dcgmi(argv)
    assert rc == 1 and out == "" and "Usage: dcgmi config" in err


def test_restart_invalidates_connections_and_forgets_groups(board):
    engine = Hostengine(board)
    conn = agent_groups(engine, {0: 300})
    engine.restart()
    with pytest.raises(DcgmError) as err:
        conn.create_group("x")
    assert err.value.value == DCGM_ST_CONNECTION_NOT_VALID
    assert engine.groups == {}
    assert engine.connect().create_group("x") == 2

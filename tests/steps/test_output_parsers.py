"""Probe and tool output parsing: Prometheus text, k=v lines, and both dcgmi JSON shapes."""

from __future__ import annotations

import json

import pytest

from stepgraph.steps._parsers import (
    OutputFormatError,
    metric_by_label,
    metric_sum,
    parse_dcgmi_agent_groups,
    parse_dcgmi_power_limit,
    parse_index_ints,
    parse_index_lists,
    parse_kv_lines,
    parse_metrics,
)

METRICS = """\
# HELP dynamo_power_agent_applied_limit_watts cap last written
# TYPE dynamo_power_agent_applied_limit_watts gauge
dynamo_power_agent_applied_limit_watts{gpu="0"} 350.0
dynamo_power_agent_applied_limit_watts{gpu="1"} 325.0
# HELP dynamo_power_agent_multi_pod_gpu_total multi-pod detections
# TYPE dynamo_power_agent_multi_pod_gpu_total counter
dynamo_power_agent_multi_pod_gpu_total{disposition="conflict"} 3.0
dynamo_power_agent_multi_pod_gpu_created{disposition="conflict"} 1.7e9
dynamo_power_agent_multi_pod_gpu_total{disposition="agree"} 1.0
# HELP dynamo_power_agent_safe_default_applied_total safe default used
# TYPE dynamo_power_agent_safe_default_applied_total counter
dynamo_power_agent_safe_default_applied_total 2.0
"""


def test_counter_sum_filters_by_label_and_ignores_created_samples() -> None:
    samples = parse_metrics(METRICS)
    name = "dynamo_power_agent_multi_pod_gpu_total"
    assert metric_sum(samples, name, {"disposition": "conflict"}) == 3
    assert metric_sum(samples, name) == 4
    assert metric_sum(samples, "dynamo_power_agent_multi_pod_gpu", {"disposition": "agree"}) == 1


def test_absent_counter_family_sums_to_zero() -> None:
    assert metric_sum(parse_metrics(METRICS), "dynamo_power_agent_cap_clamped_total") == 0


def test_gauge_by_label_maps_gpu_to_watts() -> None:
    watts = metric_by_label(parse_metrics(METRICS), "dynamo_power_agent_applied_limit_watts", "gpu")
    assert watts == {"0": 350.0, "1": 325.0}


def test_non_prometheus_text_is_a_format_error() -> None:
    with pytest.raises(OutputFormatError, match="not Prometheus text"):
        parse_metrics("{'body': 'this is a python dict repr'}\n")


def test_kv_lines_map_gpu_indices() -> None:
    assert parse_index_ints("0=350\n1=325\n\n") == {0: 350, 1: 325}
    assert parse_index_lists("0=11,12\n1=\n") == {0: [11, 12], 1: []}
    assert parse_kv_lines("a = b\n") == {"a": "b"}


@pytest.mark.parametrize("text", ["0=350\ngarbage\n", "=1\n"])
def test_kv_line_without_key_is_an_error_naming_the_line(text: str) -> None:
    with pytest.raises(OutputFormatError, match=r"line [12]"):
        parse_kv_lines(text)


def test_index_ints_reject_non_numbers() -> None:
    with pytest.raises(OutputFormatError, match="index=integer"):
        parse_index_ints("0=three hundred\n")


GROUPS = {
    "body": [
        {"Group ID": "0", "Group Name": "DCGM_ALL_SUPPORTED_GPUS", "Entities": ["GPU 0"]},
        {"Group ID": "2", "Group Name": "dynamo-power-agent-gpu-0", "Entities": ["GPU 0"]},
        {"Group ID": "9", "Group Name": "dynamo-power-agent-gpu-7", "Entities": ["GPU 7"]},
        {"Group ID": "10", "Group Name": "dynamo-power-agent-gpu-x", "Entities": []},
    ]
}


def test_agent_groups_keyed_by_dcgm_index_suffix() -> None:
    assert parse_dcgmi_agent_groups(json.dumps(GROUPS)) == {0: "2", 7: "9"}


def test_dcgm_4_4_list_shape_reads_current_and_target() -> None:
    body = {"body": [{"Sync Boost": {"Current": "Disabled"}}, {"Power Limit (W)": {"Current": "350", "Target": "325"}}]}
    assert parse_dcgmi_power_limit(json.dumps(body)) == (350, 325)


def test_dcgm_4_5_dict_shape_reads_children_values() -> None:
    body = {"body": {"Power Limit": {"children": {"Current": {"value": "375"}, "Target": {"value": "375"}}}}}
    assert parse_dcgmi_power_limit(json.dumps(body)) == (375, 375)


def test_unset_target_and_missing_field_read_as_none() -> None:
    unset = {"body": [{"Power Limit (W)": {"Current": "400", "Target": "****"}}]}
    assert parse_dcgmi_power_limit(json.dumps(unset)) == (400, None)
    assert parse_dcgmi_power_limit(json.dumps({"body": {"ECC Mode": {}}})) == (None, None)


def test_mangled_exec_output_is_a_format_error_not_a_crash() -> None:
    # Finding #11: the preloaded exec path hands back str(dict) — single quotes, not JSON.
    with pytest.raises(OutputFormatError, match="not dcgmi JSON"):
        parse_dcgmi_power_limit(str(GROUPS))


def test_watts_list_expands_repeats_and_units() -> None:
    from stepgraph.steps._parsers import parse_watts_list

    assert parse_watts_list("350, 325 W, 375×2, 300x2") == [350, 325, 375, 375, 300, 300]
    with pytest.raises(ValueError, match="not a power in watts"):
        parse_watts_list("350, lots")

"""World files: the shipped profiles load; bad ones fail with file:line:col naming the key."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from in_process_run import stepgraph_here

from stepgraph.twin.world import PROFILES_DIR, WorldError, load_world, parse_world


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_profile_loads(path):
    load_world(path)


def test_defaults_reproduce_path_b():
    world = parse_world("")
    assert world.agent.install and world.agent.actuator == "nvml" and world.agent.safe_default_watts == 280
    assert world.nodes[0].gpus == 8 and world.nodes[0].sku == "A100-SXM4-80GB"
    assert world.dgds == [] and not world.operator.install
    assert world.namespace == "dynamo-power-test"


def test_path_a_has_three_dgds_on_eight_gpus():
    world = load_world(PROFILES_DIR / "path-a.yaml")
    gpus = sum((d.prefill.gpus if d.prefill and d.mode == "disagg" else 0) + d.decode.gpus for d in world.dgds)
    assert [d.name for d in world.dgds] == ["vllm-dgd-a", "vllm-dgd-b", "vllm-dgd-c"] and gpus == 8


def errors_of(text):
    with pytest.raises(WorldError) as err:
        parse_world(text, "w.yaml")
    return str(err.value)


def test_unknown_key_is_named_with_its_line_and_column():
    assert errors_of("seed: 1\nagent:\n  generashun: PA-9790\n") == (
        "w.yaml:3:3: unknown key `agent.generashun` — remove it or check the spelling")


def test_negative_tick_is_rejected():
    msg = errors_of("timing:\n  agent_tick_seconds: -15\n")
    assert msg.startswith("w.yaml:2:3: `timing.agent_tick_seconds`: Input should be greater than 0")


def test_unknown_sku_is_rejected_naming_the_known_ones():
    msg = errors_of("nodes:\n  - name: n1\n    sku: V100\n")
    assert msg.startswith("w.yaml:3:5: `nodes.0.sku`: unknown SKU 'V100'") and "A100-SXM4-80GB" in msg


def test_unknown_fault_switch_is_rejected():
    assert "unknown key `faults.agent_is_evil`" in errors_of("faults:\n  agent_is_evil: true\n")


def test_yaml_syntax_error_has_a_position():
    assert errors_of("nodes: [\n").startswith("w.yaml:2:1: not valid YAML")


def test_nine_gpu_claims_on_eight_gpus_is_a_valid_world():
    text = (
        "operator: {install: true}\n"
        "dgds:\n"
        "  - {name: big, mode: agg, decode: {gpus: 8, limit_watts: 300}, total_gpu_power_limit: 4000}\n"
        "  - {name: extra, mode: agg, decode: {gpus: 1, limit_watts: 300}, total_gpu_power_limit: 400}\n"
    )
    assert len(parse_world(text).dgds) == 2


def test_dcgm_actuator_without_a_hostengine_is_inconsistent():
    assert "needs `hostengine: {install: true}`" in errors_of("agent: {actuator: dcgm}\n")


def test_cli_exits_2_with_the_error_line(tmp_path, capsys):
    from stepgraph.twin.world import main

    bad = tmp_path / "w.yaml"
    bad.write_text("timing:\n  agent_tick_seconds: -1\n")
    assert main([str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"{bad}:2:3: `timing.agent_tick_seconds`")
    assert main([str(PROFILES_DIR / "path-a.yaml")]) == 0
    assert main([str(tmp_path / "missing.yaml")]) == 2


HOSTILE_WORLDS = {
    "binary.yaml": (b"\x00\x01\x02\xff\xfe", "binary.yaml:1:4: byte 0xff is not UTF-8 — save the world file as UTF-8"),
    "latin1.yaml": ("seed: 1\nname: caf\xe9\n".encode("latin-1"),
                    "latin1.yaml:2:10: byte 0xe9 is not UTF-8 — save the world file as UTF-8"),
    "control.yaml": (b"seed: 1\nname: a\x01b\n", "control.yaml:2:8: control character U+0001 in the world file — remove it"),
    "lone_cr.yaml": (b"seed: 1\rname: x\r", "lone_cr.yaml:1:8: a lone CR line end in the world file — remove it"),
    "deep.yaml": (b"nodes: " + b"[" * 10_000 + b"]" * 10_000 + b"\n",
                  "deep.yaml:1:72: the world file nests deeper than 64 levels — flatten it"),
    "long_int.yaml": (b"seed: " + b"9" * 5001 + b"\n",
                      "long_int.yaml:1:7: a number of more than 4300 digits — check the numbers in the world file"),
    "node_name.yaml": (b"nodes:\n  - name: ../../x\n",
                       "node_name.yaml:2:5: `nodes.0.name`: '../../x' is not a Kubernetes node name: lowercase letters, digits, '-'"
                       " and '.', starting and ending with a letter or digit, at most 240 characters (e.g. gpu-node-1) — see"
                       " docs/design/twin-gpu.md (worlds)"),
}


def test_hostile_world_files_are_one_line_each_and_exit_2(tmp_path):
    """Through the world validator's command line, all files in one run: one line each, no traceback."""
    for name, (data, _) in HOSTILE_WORLDS.items():
        (tmp_path / name).write_bytes(data)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "stepgraph.twin.world", *HOSTILE_WORLDS], cwd=tmp_path,
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [line for _, line in HOSTILE_WORLDS.values()]
    assert time.perf_counter() - started < 60  # the 10,000-deep file is refused before the parser sees it


def test_a_bad_node_name_stops_a_run_with_exit_2(tmp_path, capsys, monkeypatch):
    (tmp_path / "w.yaml").write_bytes(HOSTILE_WORLDS["node_name.yaml"][0])
    (tmp_path / "s.feature").write_text("Feature: F\n  Scenario: S\n    When we wait 1 s\n")
    # The command in this process: with one world it runs pytest in its own process too, and the
    # run ends when the twin target reads the world, before any scenario.
    monkeypatch.chdir(tmp_path)
    code = stepgraph_here(["run", "s.feature", "--world", "w.yaml", "--", "-p", "no:cacheprovider", "-q"])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.out + out.err
    assert "w.yaml:2:5: `nodes.0.name`: '../../x' is not a Kubernetes node name" in out.out + out.err


def test_a_world_read_again_is_as_written_even_after_the_first_was_changed(tmp_path):
    """A process reads each world text once; every read still gets a world of its own."""
    path = tmp_path / "w.yaml"
    path.write_text("seed: 3\nnodes:\n  - name: n1\n    gpus: 4\n")
    first = load_world(path)
    first.seed = 99
    first.nodes[0].gpus = 2
    again = load_world(path)
    assert (again.seed, again.nodes[0].gpus) == (3, 4)
    path.write_text("seed: 4\nnodes:\n  - name: n1\n    gpus: 4\n")
    assert load_world(path).seed == 4
    path.write_text("seed: 4\nnodes:\n  - name: n1\n    gpus: four\n")
    for _ in range(2):  # a world with a problem is an error every time it is read
        with pytest.raises(WorldError, match=r"w.yaml:4:\d+: `nodes.0.gpus`"):
            load_world(path)

"""The catalog's PASS/SKIP counts per §1.1 combination (Path A/B × NVML/DCGM) on the twin."""

from __future__ import annotations

import pytest
from catalog_runs import WORLD_ARGS, CatalogRun, world_runs

PATH_A_ONLY = {"A3", "A2-strict", "A4", "B3", "D2", "E1"}
PATH_B_ONLY = {"C1", "E2", "B7"}
DCGM_ONLY = {"DCGM-CURRENT", "B8", "B7", "E3"}
NVML_ACTUATOR_ONLY = {"C3-a", "C4"}  # they count cap writes: one per cap through NVML, two through DCGM
EVERY = {"A1-A2", "A3", "A2-strict", "B2", "B4-D3", "NVML-CAPS", "B5", "DCGM-CURRENT", "B8", "C1", "E2", "A4",
         "B1", "B3", "B7", "C2", "C3-a", "C3-b", "C3-c", "C4", "D2", "E1", "E3"}

# world → (scenarios skipped, (passed, skipped)) — the table in scenarios/multi_dgd/README.md
WORLDS = {
    "path-b-nvml": (PATH_A_ONLY | DCGM_ONLY, (13, 10)),
    "path-b-dcgm": (PATH_A_ONLY | NVML_ACTUATOR_ONLY, (15, 8)),
    "path-a-nvml": (PATH_B_ONLY | DCGM_ONLY, (17, 6)),
    "path-a-dcgm": (PATH_B_ONLY | NVML_ACTUATOR_ONLY, (18, 5)),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, CatalogRun]:
    assert set(WORLDS) == set(WORLD_ARGS)
    return world_runs()


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_catalog_yields_the_documented_pass_and_skip_counts(runs: dict[str, CatalogRun], world: str) -> None:
    skipped, (n_passed, n_skipped) = WORLDS[world]
    run = runs[world]
    assert run.returncode == 0, run.output[-3000:]
    assert run.ids("skipped") == skipped
    assert run.ids("passed") == EVERY - skipped
    assert (len(run.ids("passed")), len(run.ids("skipped"))) == (n_passed, n_skipped)


def test_skips_name_the_missing_capability(runs: dict[str, CatalogRun]) -> None:
    run = runs["path-b-nvml"]
    assert "lacks dcgm" in run.outcomes["B8"]["text"]
    assert "lacks path-a" in run.outcomes["A4"]["text"]


def test_the_kaim_variant_runs_the_same_catalog_from_its_own_manifests() -> None:
    from catalog_runs import run_catalog

    from stepgraph.targets.twin import TwinTarget

    target = TwinTarget(env={})
    target.configure({"variant": "kaim"})
    assert target.world.namespace == "kaim-dynamo-system" and "variant-kaim" in target.capabilities
    run = run_catalog("--target-option", "world=path-b", "--target-option", "variant=kaim",
                      files=("nvml_caps.feature", "conflict.feature"))
    assert run.returncode == 0, run.output[-3000:]
    assert run.ids("passed") == {"NVML-CAPS", "B5"}


def test_world_option_and_ini_name_the_twin_world(runs: dict[str, CatalogRun]) -> None:
    from catalog_runs import run_catalog

    # The Path A world runs name the world by the flag and by the ini option alone.
    assert WORLD_ARGS["path-a-nvml"] == ["--world", "path-a"]
    assert WORLD_ARGS["path-a-dcgm"][:2] == ["-o", "stepgraph_world=path-a"] and "--world" not in WORLD_ARGS["path-a-dcgm"]
    by_flag, by_ini = runs["path-a-nvml"], runs["path-a-dcgm"]
    annotations = {"A1-A2", "A3", "A2-strict"}  # annotations.feature: A3 and A2-strict need Path A
    assert annotations <= by_flag.ids("passed") and annotations <= by_ini.ids("passed")
    explicit = run_catalog("--world", "path-a", "--target-option", "world=path-b", files=("annotations.feature",))
    assert explicit.ids("skipped") == {"A3", "A2-strict"}  # an explicit --target-option wins


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"world": "no-such-world"}, r"no-such-world\.yaml:1:1: cannot read the world file"),
        ({"faults": "{no_such_switch: true}"}, r"no_such_switch"),
        ({"faults": "[not, a, mapping]"}, r"write a YAML mapping"),
        ({"seed": "seven"}, r"seed='seven' is not an integer"),
        ({"actuator": "smi"}, r"actuator='smi' — use nvml or dcgm"),
    ],
)
def test_bad_twin_options_are_one_line_config_errors(options: dict[str, str], message: str) -> None:
    from stepgraph.dsl import TargetConfigError
    from stepgraph.targets.twin import TwinTarget

    with pytest.raises(TargetConfigError, match=message):
        TwinTarget(env={}).configure(options)
    from catalog_runs import run_catalog

    assert run_catalog(*[f"--target-option={k}={v}" for k, v in options.items()], files=("nvml_caps.feature",)).returncode == 2

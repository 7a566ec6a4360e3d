"""DCGM steps: the Power Agent's DCGM groups and their current and target power limits, read with
`dcgmi` inside the hostengine pod in both JSON shapes (4.0–4.4 and 4.5+).

The agent names its groups `dynamo-power-agent-gpu-<idx>` with `<idx>` in DCGM's own order, which
differs from NVML's; the multisets compare regardless. `dcgmi config --get -g all -j` is not used:
DCGM 4.x rejects it (contract Finding #9), so each agent group is read by id.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from stepgraph.dsl import AGENT_TICK, CheckFailed, Params, StepContext, then

from ._caps import require_caps_multiset
from ._cluster import HOSTENGINE_SELECTOR, Cluster, cluster
from ._parsers import parse_dcgmi_agent_groups, parse_dcgmi_power_limit, watts_list

WattsList = Annotated[str, AfterValidator(watts_list)]


def power_limits(c: Cluster) -> dict[int, tuple[int | None, int | None]]:
    """{agent group GPU index: (current W, target W)} for every agent-created group."""
    engine = c.the_pod(HOSTENGINE_SELECTOR, "DCGM hostengine")
    groups = parse_dcgmi_agent_groups(c.exec(engine, ["dcgmi", "group", "--list", "-j"]).check("dcgmi group --list").stdout)
    if not groups:
        raise CheckFailed("the Power Agent's DCGM groups", expected="dynamo-power-agent-gpu-<idx> groups", observed="none")
    return {
        idx: parse_dcgmi_power_limit(
            c.exec(engine, ["dcgmi", "config", "--get", "-g", gid, "-j"]).check(f"dcgmi config --get -g {gid}").stdout
        )
        for idx, gid in sorted(groups.items())
    }


class CapsParams(Params):
    caps: WattsList


def _check(ctx: StepContext, caps: str, which: int, label: str) -> None:
    readings = power_limits(cluster(ctx))
    observed = {idx: pair[which] for idx, pair in readings.items()}
    require_caps_multiset(f"DCGM {label} power limits of the agent groups", caps, observed)


@then(
    "dcgm.current_caps",
    "the DCGM current power limits are {caps} in any GPU order",
    key="dcgm_current",
    needs=("dcgm",),
    min_within=AGENT_TICK,
)
def current_caps(ctx: StepContext, params: CapsParams) -> None:
    """§8.6.2: what DCGM reports as each agent group's current power limit."""
    _check(ctx, params.caps, 0, "current")


@then(
    "dcgm.target_caps",
    "the DCGM target power limits are {caps} in any GPU order",
    key="dcgm_target",
    needs=("dcgm",),
    min_within=AGENT_TICK,
)
def target_caps(ctx: StepContext, params: CapsParams) -> None:
    """§8.6.3: the registered target configuration (what DCGM re-applies after a reset)."""
    _check(ctx, params.caps, 1, "target")

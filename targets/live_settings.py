"""Environment → the live target's settings: opt-in, node, namespace, variant, capabilities.

The rules (brief §4, contract §6): without the opt-in (`STEPGRAPH_LIVE=1`, or the seed's
`RUN_MULTI_DGD_LIVE=1`) live scenarios skip silently; opted in but misconfigured (no `TEST_NODE`,
an unknown variant or generation) is a configuration error the run reports in one line and exits
2 on. What the node offers (DCGM hostengine, Path A planners, agent and planner generation)
becomes capabilities, so a scenario that cannot run skips with a reason instead of erroring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

OPT_IN_VARS = ("STEPGRAPH_LIVE", "RUN_MULTI_DGD_LIVE")
VARIANT_NAMESPACES = {"target": "dynamo-power-test", "kaim": "kaim-dynamo-system"}
AGENT_GENERATIONS = ("pa-9790", "pa-optin", "pa-late")
PLANNER_GENERATIONS = ("pod-patching", "dgd-owned")


class LiveConfigError(ValueError):
    """Opted in to live runs, but the environment is incomplete; the message says what to set."""


def _choice(env: Mapping[str, str], name: str, default: str, allowed: Iterable[str], meaning: str) -> str:
    """The value of `name` (or its default), which must be one of `allowed`."""
    value = env.get(name, default)
    if value not in allowed:
        raise LiveConfigError(f"{name}={value!r} is not {meaning} — use one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class LiveSettings:
    """Everything the live target reads from the environment, validated."""

    opted_in: bool
    node: str = ""
    variant: str = "target"
    namespace: str = VARIANT_NAMESPACES["target"]
    kubeconfig: str | None = None
    dcgm: bool = False
    agent_generation: str = "pa-9790"
    planner_generation: str = "pod-patching"
    metrics_via: str = "exec"
    nvml_via: str = "exec"
    pin_node: bool = False  # STEPGRAPH_PIN_NODE=1: pods the run creates are held to TEST_NODE by hostname
    #: STEPGRAPH_RUN_NAMESPACE: a namespace of the run's own for everything it creates (a fleet's
    #: runners, side by side on one cluster); the agent and hostengine stay in `namespace`.
    run_namespace: str = ""

    @property
    def work_namespace(self) -> str:
        """Where the run creates its objects (and looks for Path A's planners)."""
        return self.run_namespace or self.namespace

    @property
    def node_label(self) -> str:
        return f"power-test/node={self.variant}"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LiveSettings:
        """Read and check the environment; raises LiveConfigError only when opted in."""
        flags = [name for name in OPT_IN_VARS if env.get(name) == "1"]
        if not flags:
            return cls(opted_in=False)
        node = env.get("TEST_NODE", "").strip()
        if not node and not env.get("STEPGRAPH_NODES"):  # a per-node run binds each scenario to its node
            raise LiveConfigError(
                f"{flags[0]}=1 but TEST_NODE is empty — set TEST_NODE to the name of the 8-GPU node "
                "under test (kubectl get nodes -l power-test/node)"
            )
        variant = _choice(env, "STEPGRAPH_VARIANT", "target", VARIANT_NAMESPACES, "a known environment variant")
        agent = _choice(env, "STEPGRAPH_AGENT_GENERATION", "pa-9790", AGENT_GENERATIONS, "a known agent generation")
        planner = _choice(env, "STEPGRAPH_PLANNER_GENERATION", "pod-patching", PLANNER_GENERATIONS, "a known planner generation")
        metrics_via = _choice(env, "STEPGRAPH_METRICS_VIA", "exec", ("exec", "proxy"), "a way to read the agent's metrics")
        nvml_via = _choice(env, "STEPGRAPH_NVML_VIA", "exec", ("exec", "local"),
                           "a way to read NVML (exec: into the agent pod; local: this node's pynvml)")
        return cls(
            opted_in=True,
            metrics_via=metrics_via,
            nvml_via=nvml_via,
            pin_node=env.get("STEPGRAPH_PIN_NODE") == "1",
            run_namespace=env.get("STEPGRAPH_RUN_NAMESPACE", "").strip(),
            node=node,
            variant=variant,
            namespace=env.get("POD_NAMESPACE") or VARIANT_NAMESPACES[variant],
            kubeconfig=env.get("KUBECONFIG") or None,
            dcgm=env.get("DCGM_HOSTENGINE_AVAILABLE") == "1",
            agent_generation=agent,
            planner_generation=planner,
        )

    def capabilities(self, *, path_a: bool) -> set[str]:
        """What a run against this node may use; `path_a` comes from probing for planner pods."""
        if not self.opted_in:
            return set()
        caps = {"k8s", "k8s-write", "nvml", "agent", "live", f"variant-{self.variant}",
                f"agent-{self.agent_generation}", f"planner-{self.planner_generation}"}
        caps.add("path-a" if path_a else "path-b")
        if path_a and self.planner_generation == "pod-patching":
            caps.add("planner")
        if self.dcgm:
            caps.add("dcgm")
        return caps


"""A `World` → the Kubernetes objects it installs: namespace, agent DaemonSet, hostengine, DGDs.

Pure functions (same world → same objects), written from the facts of contract §2.5–§2.6 and the
DGD shape of §2.2 — not copies of the live test's files. The agent DaemonSet carries the chart's
labels, its real command line (`$(VAR)` references resolved by the agent workload from env and
the downward API), hostPID, the state hostPath of the world's variant, and the memory limit.
"""

from __future__ import annotations

import json

from .world import AgentSpec, DgdSpec, World

AGENT_IMAGE = {"nvml": "ttl.sh/dynamo-pa-4c3c606:24h", "dcgm": "ttl.sh/dynamo-pa-dcgm45-v2:24h"}
HOSTENGINE_NAME = "nvidia-dcgm-standalone"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
DGD_API_VERSION = "nvidia.com/v1alpha1"
RUNTIME_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1"
PURPOSE = {"purpose": "power-aware-multi-dgd-test"}


def namespace(world: World) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": world.namespace, "labels": {"purpose": "power-aware-planner-test"}}}


def _node_selector(world: World) -> dict:
    return {"nvidia.com/gpu.present": "true", "power-test/node": world.node_label}


def agent_command(agent: AgentSpec, world: World) -> list[str]:
    argv = ["python", "/app/power_agent.py", "--safe-default-watts=$(SAFE_DEFAULT_WATTS)",
            "--node-name=$(NODE_NAME)"]
    if agent.namespace_restricted:
        argv.append("--namespace=$(POD_NAMESPACE)")
    argv += [f"--prometheus-port={agent.prometheus_port}", f"--actuator={agent.actuator}"]
    if agent.actuator == "dcgm":
        argv += [f"--dcgm-host={HOSTENGINE_NAME}.{world.namespace}.svc.cluster.local", "--dcgm-port=5555",
                 f"--dcgm-enforce={str(agent.dcgm_enforce).lower()}"]
    return argv


def agent_pod_template(world: World) -> dict:
    agent = world.agent
    env = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "SAFE_DEFAULT_WATTS", "value": str(agent.safe_default_watts)},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    if agent.namespace_restricted:
        env.append({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}})
    labels = {"app.kubernetes.io/name": "power-agent", "app.kubernetes.io/instance": "power-agent",
              "app.kubernetes.io/component": "power-agent"}
    return {
        "metadata": {"labels": labels, "annotations": {"twin.stepgraph.dev/agent-generation": agent.generation}},
        "spec": {
            "serviceAccountName": "power-agent",
            "hostPID": True,
            "terminationGracePeriodSeconds": 30,
            "runtimeClassName": "nvidia",
            "nodeSelector": _node_selector(world),
            "tolerations": [GPU_TOLERATION],
            "containers": [{
                "name": "power-agent",
                "image": AGENT_IMAGE[agent.actuator],
                "command": agent_command(agent, world),
                "env": env,
                "ports": [{"name": "metrics", "containerPort": agent.prometheus_port}],
                "securityContext": {"privileged": True, "runAsUser": 0, "readOnlyRootFilesystem": False},
                "resources": {"requests": {"cpu": "50m", "memory": "96Mi"},
                              "limits": {"cpu": "500m", "memory": agent.memory_limit}},
                "volumeMounts": [{"name": "host-proc", "mountPath": "/host/proc", "readOnly": True},
                                 {"name": "state", "mountPath": "/var/lib/dynamo-power-agent"}],
            }],
            "volumes": [{"name": "host-proc", "hostPath": {"path": "/proc"}},
                        {"name": "state", "hostPath": {"path": world.state_host_path, "type": "DirectoryOrCreate"}}],
        },
    }


def agent_daemonset(world: World) -> dict:
    template = agent_pod_template(world)
    selector = {k: v for k, v in template["metadata"]["labels"].items() if k != "app.kubernetes.io/component"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "power-agent", "namespace": world.namespace, "labels": dict(template["metadata"]["labels"])},
            "spec": {"selector": {"matchLabels": selector}, "template": template,
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}}


def hostengine_daemonset(world: World) -> dict:
    labels = {"app": HOSTENGINE_NAME}
    container = {
        "name": "nv-hostengine", "image": "ttl.sh/dynamo-dcgm45:24h",
        "command": ["/usr/bin/nv-hostengine", "-n", "-b", "0.0.0.0", "-p", "5555", "--log-level", "INFO"],
        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
        "securityContext": {"privileged": True, "runAsUser": 0},
        "ports": [{"name": "hostengine", "containerPort": 5555}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
    }
    template = {"metadata": {"labels": labels},
                "spec": {"nodeSelector": _node_selector(world), "tolerations": [GPU_TOLERATION],
                         "runtimeClassName": "nvidia", "containers": [container]}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": HOSTENGINE_NAME, "namespace": world.namespace, "labels": labels},
            "spec": {"selector": {"matchLabels": labels}, "template": template}}


def hostengine_service(world: World) -> dict:
    """The headless Service that gives the hostengine its DNS name (`<name>.<ns>.svc…:5555`)."""
    labels = {"app": HOSTENGINE_NAME}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": HOSTENGINE_NAME, "namespace": world.namespace, "labels": labels},
            "spec": {"clusterIP": "None", "selector": labels,
                     "ports": [{"name": "hostengine", "port": 5555, "targetPort": 5555, "protocol": "TCP"}]}}


def dgd(spec: DgdSpec, world: World) -> dict:
    """A DGD in the v1alpha1 shape the live test's DGDs use (`spec.services.<Name>`)."""
    config = {
        "environment": "kubernetes", "backend": "vllm", "mode": spec.mode,
        "throughput_adjustment_interval_seconds": spec.planner_interval_seconds,
        "profile_results_dir": "/workspace/profiling_results",
        "enable_power_awareness": spec.enable_power_awareness,
        "prefill_engine_gpu_power_limit": spec.prefill.limit_watts if spec.prefill else None,
        "decode_engine_gpu_power_limit": spec.decode.limit_watts,
        "total_gpu_power_limit": spec.total_gpu_power_limit,
        "power_agent_safe_default_watts": world.agent.safe_default_watts,
    }
    config = {k: v for k, v in config.items() if v is not None}
    services: dict[str, dict] = {
        "Frontend": {"componentType": "frontend", "replicas": 1,
                     "extraPodSpec": {"mainContainer": {"image": RUNTIME_IMAGE}}},
        "Planner": {"componentType": "planner", "replicas": 1, "extraPodSpec": {"mainContainer": {
            "image": "nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.1.1",
            "command": ["python3", "-m", "dynamo.planner"], "args": ["--config", json.dumps(config)]}}},
    }
    roles = [("VllmPrefillWorker", "prefill", spec.prefill)] if spec.mode == "disagg" else []
    roles.append(("VllmDecodeWorker", "decode", spec.decode))
    for key, sub, svc in roles:
        assert svc is not None
        args = ["-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B"]
        if spec.mode == "disagg":
            args += ["--disaggregation-mode", sub]
        if svc.gpus > 1:
            args += ["--tensor-parallel-size", str(svc.gpus)]
        services[key] = {
            "componentType": "worker", "subComponentType": sub, "replicas": svc.replicas,
            "resources": {"limits": {"gpu": str(svc.gpus)}, "requests": {"gpu": str(svc.gpus)}},
            "extraPodSpec": {"nodeSelector": {"power-test/node": world.node_label}, "tolerations": [GPU_TOLERATION],
                             "mainContainer": {"image": RUNTIME_IMAGE, "command": ["python3"], "args": args}},
        }
        if world.operator.planner_generation == "dgd-owned":
            services[key]["annotations"] = {"dynamo.nvidia.com/gpu-power-limit": str(svc.limit_watts)}
    return {"apiVersion": DGD_API_VERSION, "kind": "DynamoGraphDeployment",
            "metadata": {"name": spec.name, "namespace": world.namespace, "labels": dict(PURPOSE)},
            "spec": {"services": services}}


def agent_rbac(world: World, namespaced: bool) -> list[tuple[str, str | None, dict]]:
    """The chart's ServiceAccount and pod-read role for the agent, as (resource, namespace, object):
    a ClusterRole, or a Role in the agent's namespace when `namespaced` (role.yaml)."""
    ns, name = world.namespace, "power-agent"
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    objects: list[tuple[str, str | None, dict]] = [("serviceaccounts", ns, {"metadata": {"name": name, "namespace": ns}})]
    if namespaced:
        kind, scope = "Role", ns
    else:
        kind, scope = "ClusterRole", None
    group = "rbac.authorization.k8s.io"
    objects.append((f"{kind.lower()}s.{group}", scope, {"metadata": {"name": name}, "rules": rules}))
    objects.append((f"{kind.lower()}bindings.{group}", scope, {
        "metadata": {"name": name}, "subjects": subject, "roleRef": {"apiGroup": group, "kind": kind, "name": name}}))
    return objects

"""End-to-end helpers: a world-built twin, the official kubernetes client, exec and scrape readers.

The readers do what the live test does: exec `python -c` / `dcgmi` into pods over the websocket
exec channel (raw streaming, `_preload_content=False`, as TEST-v2/v3 do) and parse the output.
Stub workers are built here from the contract's facts (§2.3), not copied from the manifests.
"""

from __future__ import annotations

import json
from collections import Counter

from kubernetes import client
from kubernetes.stream import stream
from prometheus_client.parser import text_string_to_metric_families
from stepgraph.twin.world import World, load_world, parse_world, profile
from stepgraph.twin.world_install import build_twin

ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"
STUBS = [("vllm-dgd-a-prefill", "vllm-dgd-a", "prefill", 350, 1), ("vllm-dgd-a-decode", "vllm-dgd-a", "decode", 325, 1),
         ("vllm-dgd-b-prefill", "vllm-dgd-b", "prefill", 375, 2), ("vllm-dgd-b-decode", "vllm-dgd-b", "decode", 325, 2),
         ("vllm-dgd-c-decode", "vllm-dgd-c", "decode", 300, 1 + 1)]
TOPOLOGY = Counter({350: 1, 325: 3, 375: 2, 300: 2})
TORCH_LOOP = ("import torch, time\ntorch.cuda.init()\nn = torch.cuda.device_count()\n"
              "ts = [torch.zeros(8, device=f'cuda:{i}') for i in range(n)]\nwhile True:\n    time.sleep(0.05)\n")
NVML_CAPS = ("import pynvml\npynvml.nvmlInit()\nfor i in range(pynvml.nvmlDeviceGetCount()):\n"
             "    h = pynvml.nvmlDeviceGetHandleByIndex(i)\n"
             "    print(f'{i}={round(pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000)}')\n")
NVML_PIDS = ("import pynvml\npynvml.nvmlInit()\nfor i in range(pynvml.nvmlDeviceGetCount()):\n"
             "    h = pynvml.nvmlDeviceGetHandleByIndex(i)\n"
             "    print(f'{i}=' + ','.join(str(p.pid) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)))\n")
METRICS = "import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:9100/metrics', timeout=5).read().decode())"


class Cluster:
    def __init__(self, world: World | str = "path-b", **world_overrides):
        if isinstance(world, str):
            world = load_world(profile(world))
        if world_overrides:
            world = parse_world(json.dumps(_merge(world.model_dump(), world_overrides)))
        self.world = world
        self.ns = world.namespace
        self.twin = build_twin(world).start()
        self.api = client.CoreV1Api(self.twin.api_client())

    def close(self):
        self.twin.stop()

    def sleep(self, seconds):
        self.twin.clock.sleep(seconds)

    @property
    def faults(self):
        return self.twin.gpu.faults

    def board_caps(self):
        return self.twin.gpu.devices.board.caps_w()

    # --- pods --------------------------------------------------------------------------
    def apply_stubs(self):
        for name, dgd, sub, cap, gpus in STUBS:
            self.create_pod(name, {"purpose": "power-aware-multi-dgd-test", "nvidia.com/dynamo-graph-deployment-name": dgd,
                                   "nvidia.com/dynamo-component-type": "worker",
                                   "nvidia.com/dynamo-sub-component-type": sub}, {ANNOTATION: str(cap)}, gpus=gpus)

    def create_pod(self, name, labels=None, annotations=None, gpus=0, env=None, script=TORCH_LOOP):
        container = {"name": "w", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1",
                     "command": ["python3", "-u", "-c", script],
                     "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}
        if gpus:
            container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
                "spec": {"restartPolicy": "Never", "nodeSelector": {"power-test/node": self.world.node_label},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                         "containers": [container]}}
        return self.api.create_namespaced_pod(self.ns, body)

    def pod(self, label_selector):
        pods = self.api.list_namespaced_pod(self.ns, label_selector=label_selector).items
        assert len(pods) == 1, [p.metadata.name for p in pods]
        return pods[0]

    def agent_pod(self):
        return self.pod("app.kubernetes.io/component=power-agent").metadata.name

    def hostengine_pod(self):
        return self.pod("app=nvidia-dcgm-standalone").metadata.name

    # --- readers (raw streaming exec, as the fixed live test) ------------------------------
    def exec(self, pod, argv, preload=False):
        if preload:
            return stream(self.api.connect_get_namespaced_pod_exec, pod, self.ns, command=argv,
                          stderr=True, stdin=False, stdout=True, tty=False), None
        resp = stream(self.api.connect_get_namespaced_pod_exec, pod, self.ns, command=argv, stderr=True,
                      stdin=False, stdout=True, tty=False, _preload_content=False)
        out, err = [], []
        while resp.is_open():
            resp.update(timeout=1)
            if resp.peek_stdout():
                out.append(resp.read_stdout())
            if resp.peek_stderr():
                err.append(resp.read_stderr())
        resp.close()
        return "".join(out) + "".join(err), resp.returncode

    def nvml_caps(self):
        out, code = self.exec(self.agent_pod(), ["python", "-c", NVML_CAPS])
        assert code == 0, out
        return {int(k): int(v) for k, v in (line.split("=") for line in out.split())}

    def nvml_pids(self):
        out, _ = self.exec(self.agent_pod(), ["python", "-c", NVML_PIDS])
        return {int(k): set(filter(None, v.split(","))) for k, v in (line.split("=", 1) for line in out.split())}

    def scrape(self, via="exec"):
        if via == "exec":
            text, code = self.exec(self.agent_pod(), ["python", "-c", METRICS])
            assert code == 0, text
        else:
            text = self.api.connect_get_namespaced_pod_proxy_with_path(f"{self.agent_pod()}:9100", self.ns, "metrics")
        samples = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return samples

    def applied(self, samples):
        prefix = "dynamo_power_agent_applied_limit_watts{gpu="
        return {int(k[len(prefix) + 1:-2]): int(v) for k, v in samples.items() if k.startswith(prefix)}

    def dcgmi_caps(self, field="Current"):
        pod = self.hostengine_pod()
        out, code = self.exec(pod, ["dcgmi", "group", "--list", "-j"])
        assert code == 0, out
        caps = {}
        for entry in json.loads(out)["body"]:
            if entry["Group Name"].startswith("dynamo-power-agent-gpu-"):
                body = json.loads(self.exec(pod, ["dcgmi", "config", "--get", "-g", entry["Group ID"], "-j"])[0])["body"]
                caps[int(entry["Group ID"])] = power_limit(body, field)
        return caps


def power_limit(body, field):
    """Both dcgmi shapes (4.0–4.4 list, 4.5+ dict), as the fixed live test reads them."""
    if isinstance(body, dict):
        return int(body["Power Limit"]["children"][field]["value"])
    return next(int(f["Power Limit (W)"][field]) for f in body if "Power Limit (W)" in f)


def family_sum(samples, family):
    return sum(v for k, v in samples.items() if k.startswith("dynamo_power_agent_" + family))


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out

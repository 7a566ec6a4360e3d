"""The CUDA-context convention: which containers open compute contexts, on which GPUs, with how
many PIDs (one spanning all, pinned `cuda:0`, tensor-parallel helpers, explicit annotations)."""

from __future__ import annotations

import pytest

from stepgraph.twin.cuda_contexts import plan_contexts

GPUS = ("GPU-a", "GPU-b", "GPU-c", "GPU-d")


def plan(command=None, args=None, annotations=None, visible=GPUS):
    pod = {"metadata": {"annotations": annotations or {}}}
    return [(p.gpus, p.cmdline[0]) for p in plan_contexts(pod, {"command": command or [], "args": args or []}, visible)]


@pytest.mark.parametrize("command,args", [
    (["python3", "-c", "import torch\ntorch.cuda.init()"], None),
    (["python3", "-c"], ["x = torch.zeros(4, device='cuda')"]),
    (["python3", "-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B"], None),
    (["python3", "-m", "dynamo.sglang"], None),
])
def test_cuda_code_opens_one_context_spanning_all_visible_gpus(command, args):
    assert plan(command, args) == [(GPUS, command[0])]


@pytest.mark.parametrize("command", [["sleep", "infinity"], ["python3", "-m", "dynamo.planner"], []])
def test_other_commands_open_none(command):
    assert plan(command) == []


def test_literal_cuda_0_pins_to_the_first_visible_gpu_and_device_count_loops_do_not():
    assert plan(["python3", "-c"], ["x = torch.zeros(1024, device='cuda:0')"]) == [(("GPU-a",), "python3")]
    loop = 'n = torch.cuda.device_count(); [torch.zeros(1, device=f"cuda:{i}") for i in range(n)]; "cuda:0"'
    assert plan(["python3", "-c", loop]) == [(GPUS, "python3")]


def test_tensor_parallel_vllm_has_a_helper_pid_per_gpu():
    got = plan(["python3", "-m", "dynamo.vllm", "--tensor-parallel-size", "2"], visible=GPUS[:2])
    assert got == [(("GPU-a",), "python3"), (("GPU-a",), "VLLM::Worker_TP0"), (("GPU-b",), "VLLM::Worker_TP1")]


def test_annotations_override_the_command():
    assert plan(["sleep", "1"], annotations={"twin.stepgraph.dev/cuda-context": "true"}) == [(GPUS, "sleep")]
    assert plan(["python3", "-c", "torch.cuda.init()"], annotations={"twin.stepgraph.dev/cuda-context": "false"}) == []
    assert plan(["sleep", "1"], annotations={"twin.stepgraph.dev/cuda-context": "true",
                                             "twin.stepgraph.dev/cuda-devices": "1,3"}) == [(("GPU-b", "GPU-d"), "sleep")]


def test_no_visible_gpu_means_no_context():
    assert plan(["python3", "-c", "torch.cuda.init()"], visible=()) == []


def test_tp_pod_through_the_api_gets_helper_pids_and_pids_end_with_the_pod(twin, core, make_pod):
    core.create_namespaced_pod("default", make_pod("tp", gpus=2, command=[
        "python3", "-m", "dynamo.vllm", "--tensor-parallel-size", "2"]))
    twin.clock.sleep(3)
    uid = core.read_namespaced_pod("tp", "default").metadata.uid
    claimed = twin.node.allocator.claimed(uid)
    procs = [twin.host.process(pid) for pid in twin.host.pids_of_pod(uid)]
    assert len(procs) == 3 and {u for p in procs for u in p.gpus} == set(claimed)
    core.delete_namespaced_pod("tp", "default")
    twin.clock.run_due()  # the kubelet stops the containers on its next sync
    assert twin.host.pids_of_pod(uid) == []

"""The workload registry (first match wins, explicit order) and the default workload's exec."""

from __future__ import annotations

import random

import pytest
from stepgraph.twin.clock import VirtualClock
from stepgraph.twin.host import Host
from stepgraph.twin.workloads import (
    DefaultWorkload,
    Workload,
    WorkloadContext,
    WorkloadRegistry,
)

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": {}},
       "spec": {"containers": [{"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]}}


class Named(Workload):
    def __init__(self, name):
        self.name = name


def ctx(host=None, pod=POD, exits=None):
    return WorkloadContext(pod=pod, container=pod["spec"]["containers"][0], node=None,
                           host=host or Host(random.Random(0)), gpus=(), clock=VirtualClock(),
                           store=None, log=lambda line: None,
                           exit=(exits.append if exits is not None else lambda code: None))


def test_first_matching_registration_wins_and_default_otherwise():
    reg = WorkloadRegistry()
    reg.register("busybox", lambda p, c: c["image"] == "busybox", lambda p, c: Named("busybox"))
    reg.register("any", lambda p, c: True, lambda p, c: Named("any"))
    reg.register("early", lambda p, c: True, lambda p, c: Named("early"), before="busybox")
    assert reg.names() == ["early", "busybox", "any"]
    assert reg.create(POD, POD["spec"]["containers"][0]).name == "early"
    assert isinstance(WorkloadRegistry().create(POD, POD["spec"]["containers"][0]), DefaultWorkload)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("any", lambda p, c: True, lambda p, c: Named("x"))
    with pytest.raises(KeyError):
        reg.register("y", lambda p, c: True, lambda p, c: Named("y"), before="nope")


def test_unknown_command_is_127_with_the_runtime_message():
    res = DefaultWorkload().exec(ctx(), ["nvidia-smi", "-q"], None)
    assert res.exit_code == 127
    assert res.stderr == b'exec: "nvidia-smi": executable file not found in $PATH\n'


def test_builtins_echo_env_cat_cgroup_and_sh_c():
    host = Host(random.Random(0))
    proc = host.spawn("u", ["python3"])
    other = host.spawn("someone-else", ["python3"])
    w, c = DefaultWorkload(), ctx(host)
    assert w.exec(c, ["cat", f"/proc/{other.pid}/cgroup"], None).exit_code == 1  # not without hostPID
    host_pid_pod = {**POD, "spec": {**POD["spec"], "hostPID": True}}
    assert w.exec(ctx(host, pod=host_pid_pod), ["cat", f"/proc/{other.pid}/cgroup"], None).stdout == \
        host.cgroup(other.pid).encode()
    assert w.exec(c, ["echo", "hi", "there"], None).stdout == b"hi there\n"
    assert b"A=1\n" in w.exec(c, ["env"], None).stdout
    assert w.exec(c, ["cat", f"/proc/{proc.pid}/cgroup"], None).stdout == host.cgroup(proc.pid).encode()
    missing = w.exec(c, ["cat", "/proc/1/cgroup"], None)
    assert missing.exit_code == 1 and b"No such file" in missing.stderr
    assert w.exec(c, ["sh", "-c", "echo 'a b'"], None).stdout == b"a b\n"
    assert w.exec(c, ["cat"], b"piped").stdout == b"piped"
    assert w.exec(c, ["false"], None).exit_code == 1


def test_exit_after_annotation_ends_the_container_on_the_clock():
    pod = {**POD, "metadata": {**POD["metadata"], "annotations": {
        "twin.stepgraph.dev/exit-after": "5", "twin.stepgraph.dev/exit-code": "3"}}}
    exits: list[int] = []
    c = ctx(pod=pod, exits=exits)
    DefaultWorkload().start(c)
    c.clock.sleep(4.9)
    assert exits == []
    c.clock.sleep(0.1)
    assert exits == [3]

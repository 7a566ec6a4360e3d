"""`stepgraph twin up` (the `stepgraph.commands` entry point): prints a kubeconfig the official
client can use, stops cleanly on SIGTERM, and rejects bad usage with exit 2."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from importlib.metadata import entry_points

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from stepgraph.twin import cli


def test_entry_point_is_registered():
    assert any(ep.value == "stepgraph.twin.cli:main" for ep in entry_points(group="stepgraph.commands", name="twin"))


def test_twin_up_serves_until_sigterm(tmp_path):
    kubeconfig = tmp_path / "kc.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "stepgraph.twin.cli", "up", "--seed", "4",
                             "--kubeconfig", str(kubeconfig), "--startup-delay", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line == str(kubeconfig)
        api = client.CoreV1Api(config.new_client_from_config(config_file=line))
        assert api.list_node().items[0].status.capacity["nvidia.com/gpu"] == "8"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert not kubeconfig.exists()  # nothing left behind


def test_bad_usage_exits_2_with_one_line(capsys):
    assert _exit_code(["up", "--port", "70000"]) == 2
    assert _exit_code(["up", "--clock", "sundial"]) == 2
    assert _exit_code(["sideways"]) == 2
    err = capsys.readouterr().err
    assert all(line.startswith("stepgraph twin:") for line in err.strip().splitlines())


def _exit_code(argv):
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


def test_a_bad_world_file_is_one_line_with_its_position_and_exit_2(tmp_path, capsys):
    world = tmp_path / "world.yaml"
    world.write_text("nodes: 5\n")
    assert _exit_code(["up", "--world", str(world)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{world}:1:1:" in err


def test_host_image_runs_a_busybox_pod_as_the_machines_shell(tmp_path):
    twin = cli.build(cli.parser().parse_args(["up", "--startup-delay", "0", "--host-image", "busybox"]))
    with twin:
        api = client.CoreV1Api(twin.api_client())
        api.create_namespaced_pod("default", {"metadata": {"name": "box"}, "spec": {"containers": [
            {"name": "main", "image": "busybox:1.36", "command": ["/bin/sh", "-c", "echo started; sleep 300"]}]}})
        deadline = time.monotonic() + 20
        while "started" not in _log(api, "box") and time.monotonic() < deadline:
            time.sleep(0.02)
        out = stream(api.connect_get_namespaced_pod_exec, "box", "default", stdout=True, stderr=True, stdin=False,
                     tty=False, command=["/bin/sh", "-c", "for i in $(seq 1 3); do echo -n x | gzip | gzip -d; done; pwd"])
        assert out == "xxx/\n"  # a loop, command substitution, pipes and coreutils: the machine's own shell


def _log(api, name):
    try:
        return api.read_namespaced_pod_log(name, "default")
    except ApiException:
        return ""  # the container is still being created

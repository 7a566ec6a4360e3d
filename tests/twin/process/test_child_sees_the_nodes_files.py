"""A child program sees the node's files where a pod would: the twin's cgroup text for host PIDs,
hostPath volumes (state that outlives the container), the service-account folder — and its
writes elsewhere stay in its own layer, never on the machine."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import certifi
import pytest
from view_rig import pod

from stepgraph.twin.host import Host

# The two patterns the v3–v7 agents apply line by line to /proc/<pid>/cgroup (systemd, cgroupfs).
SYSTEMD = re.compile(r"kubepods-(?:burstable-|besteffort-)?pod([a-fA-F0-9_]+)\.slice")
CGROUPFS = re.compile(r"/kubepods(?:/burstable|/besteffort)?/pod([a-fA-F0-9-]+)(?:/|$)")

READ_CGROUP = """
import json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            out[path] = f.read()
    except OSError as e:
        out[path] = type(e).__name__
out["exists /host/proc"] = os.path.exists("/host/proc")
print(json.dumps(out))
"""

STATE_MOUNT = {"name": "state", "mountPath": "/var/lib/dynamo-power-agent"}
STATE_VOLUME = {"name": "state", "hostPath": {"path": "/var/lib/dynamo-power-agent-kaim", "type": "DirectoryOrCreate"}}
PROC_MOUNT = {"name": "proc", "mountPath": "/host/proc", "readOnly": True}
PROC_VOLUME = {"name": "proc", "hostPath": {"path": "/proc"}}

WRITE_STATE = """
import json, os
d = "/var/lib/dynamo-power-agent"
os.makedirs(d, exist_ok=True)
with open(d + "/managed_gpus.json.tmp", "w") as f:
    json.dump({"managed_uuids": ["GPU-a"]}, f)
os.replace(d + "/managed_gpus.json.tmp", d + "/managed_gpus.json")
"""
READ_STATE = "print(open('/var/lib/dynamo-power-agent/managed_gpus.json').read())"


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
def test_proc_cgroup_of_a_twin_pid_is_the_twins_text_in_both_cgroup_styles(rig, driver):
    rig.host = Host(random.Random(1), cgroup_driver=driver)
    burstable = rig.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["python", "w"])
    guaranteed = rig.host.spawn("7f3e8d2a-1b4c-4e6f-8a9b-0c1d2e3f4a5b", ["python", "w"], qos_class="Guaranteed")
    view = rig.open(pod(volumes=[PROC_VOLUME], mounts=[PROC_MOUNT]))
    paths = [f"/proc/{burstable.pid}/cgroup", f"/host/proc/{guaranteed.pid}/cgroup"]
    result = rig.run(view, READ_CGROUP, *paths)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["exists /host/proc"] is True
    for path, proc in zip(paths, (burstable, guaranteed), strict=True):
        assert seen[path] == rig.host.cgroup(proc.pid)
        pattern = SYSTEMD if driver == "systemd" else CGROUPFS
        found = [m.group(1).replace("_", "-") for line in seen[path].splitlines() if (m := pattern.search(line))]
        assert found and set(found) == {proc.pod_uid}


def test_without_host_pid_another_pods_pid_does_not_exist(rig):
    other = rig.host.spawn("0d6c5f0e-52a4-4a5c-9d69-1f9d0a3b7c11", ["python", "w"])
    result = rig.run(rig.open(pod(host_pid=False)), READ_CGROUP, f"/proc/{other.pid}/cgroup")
    assert json.loads(result.stdout)[f"/proc/{other.pid}/cgroup"] == "FileNotFoundError", result.stderr


def test_the_programs_own_proc_entries_are_the_machines(rig):
    result = rig.run(rig.open(), "import os; print(open(f'/proc/{os.getpid()}/status').readline().split()[0])")
    assert result.stdout.strip() == "Name:", result.stderr


def test_a_hostpath_state_file_outlives_the_container_and_is_the_nodes_file(rig):
    spec = pod(volumes=[STATE_VOLUME], mounts=[STATE_MOUNT])
    first = rig.open(spec)
    assert rig.run(first, WRITE_STATE).returncode == 0
    first.close()  # the agent's container ends; the node keeps the file
    assert json.loads(rig.devices.files.read("/var/lib/dynamo-power-agent-kaim/managed_gpus.json")) == {
        "managed_uuids": ["GPU-a"]}
    assert not os.path.exists("/var/lib/dynamo-power-agent-kaim")  # on the twin node, not on this machine
    again = rig.run(rig.open(spec), READ_STATE)
    assert json.loads(again.stdout) == {"managed_uuids": ["GPU-a"]}, again.stderr


def test_without_a_hostpath_the_state_dies_with_the_container_and_never_touches_the_machine(rig):
    first = rig.open(pod())
    result = rig.run(first, WRITE_STATE + "\nprint(os.path.exists(d + '/managed_gpus.json'))")
    assert (result.returncode, result.stdout.strip()) == (0, "True"), result.stderr
    assert not os.path.exists("/var/lib/dynamo-power-agent/managed_gpus.json")
    again = rig.run(rig.open(pod()), READ_STATE)
    assert "FileNotFoundError" in again.stderr


def test_a_read_only_mount_refuses_writes(rig):
    spec = pod(volumes=[STATE_VOLUME], mounts=[{**STATE_MOUNT, "readOnly": True}])
    result = rig.run(rig.open(spec), WRITE_STATE)
    assert "OSError: [Errno 30] Read-only file system" in result.stderr


def test_in_cluster_config_reads_the_service_account_files(rig):
    view = rig.open()
    ca = Path(certifi.where()).read_text(encoding="utf-8")
    view.write_service_account("twin-token-123", ca)
    script = """
import ssl
from kubernetes import client, config
config.load_incluster_config()
c = client.Configuration.get_default_copy()
print(c.host, c.api_key["BearerToken"], open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read())
ssl.create_default_context(cafile=c.ssl_ca_cert)  # OpenSSL itself opens the CA file
print("ca ok")
"""
    env_view = view.environ({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"})
    view.env.update({k: env_view[k] for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")})
    result = rig.run(view, script)
    assert result.stdout.splitlines() == ["https://127.0.0.1:6443 bearer twin-token-123 dynamo-system", "ca ok"], \
        result.stderr


def test_a_pod_that_opts_out_has_no_service_account_folder(rig):
    view = rig.open(pod(automount=False))
    result = rig.run(view, "import os; print(os.path.exists('/var/run/secrets/kubernetes.io/serviceaccount/token'))")
    assert result.stdout.strip() == "False", result.stderr


def test_the_program_folder_is_mounted_and_its_script_path_rewritten(rig, tmp_path):
    from stepgraph.twin.process.view import Mount

    program = tmp_path / "agent"
    program.mkdir()
    (program / "helper.py").write_text("VALUE = 42\n")
    (program / "power_agent.py").write_text("import helper, sys\nprint(helper.VALUE, open('/app/helper.py').read().strip())\n")
    view = rig.open(mounts=[Mount("/app", str(program), read_only=True)])
    argv = view.argv(["python", "/app/power_agent.py", "--node-name=n"])
    assert argv == ["python", str(program / "power_agent.py"), "--node-name=n"]
    assert view.argv(["python", "-c", "pass", "/app/helper.py"]) == ["python", "-c", "pass", "/app/helper.py"]
    import subprocess
    import sys
    done = subprocess.run([sys.executable, *argv[1:]], env=view.environ(dict(os.environ)), capture_output=True, text=True,
                          check=False)
    assert done.stdout.strip() == "42 VALUE = 42", done.stderr


def test_unsupported_volumes_are_noted_not_silently_dropped(rig):
    spec = pod(volumes=[{"name": "info", "downwardAPI": {"items": []}}], mounts=[{"name": "info", "mountPath": "/etc/info"}])
    view = rig.open(spec)
    assert view.notes == ["volume 'info' (downwardAPI) is not mounted in process containers — only hostPath, "
                          "emptyDir, configMap, secret and projected are"]


def test_hostpath_types_are_checked_or_created_as_the_kubelet_does(rig):
    from stepgraph.twin.process.view import ViewError

    def volume(kind):
        return pod(volumes=[{"name": "v", "hostPath": {"path": "/etc/thing", "type": kind}}],
                   mounts=[{"name": "v", "mountPath": "/thing"}])

    with pytest.raises(ViewError, match="hostPath volume 'v': directory 'thing' does not exist on the node"):
        rig.open(volume("Directory"))
    view = rig.open(volume("FileOrCreate"))
    assert Path(view.host_path("/thing")).is_file()
    rig.open(volume("File"))  # it exists now
    with pytest.raises(ViewError, match="type Socket is not modelled"):
        rig.open(volume("Socket"))
    assert len(list((rig.view.folder / "c").iterdir())) == 2  # a refused pod leaves no folder behind


@pytest.mark.parametrize("flag", ["-I", "-E", "-S", "-uS", "-Es"])
def test_python_flags_that_skip_the_hook_are_refused_not_run_against_the_machine(rig, flag):
    from stepgraph.twin.process.view import ViewError

    with pytest.raises(ViewError, match=f"'{flag}' makes Python skip the twin's start-up hook"):
        rig.open().argv(["python3", flag, "/app/power_agent.py"])


def test_other_python_options_pass(rig):
    assert rig.open().argv(["python3", "-u", "-W", "ignore", "-X", "dev", "-c", "pass"]) == [
        "python3", "-u", "-W", "ignore", "-X", "dev", "-c", "pass"]

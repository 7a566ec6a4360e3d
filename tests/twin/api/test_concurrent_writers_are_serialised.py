"""Many clients at once: optimistic concurrency holds (no lost updates), one creator wins a name,
and the server keeps answering."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from kubernetes import client
from kubernetes.client.rest import ApiException


def test_read_modify_write_with_retries_loses_no_update(twin, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "counter"}, "data": {"n": "0"}})

    def bump(_):
        api = client.CoreV1Api(twin.api_client())
        while True:
            cm = api.read_namespaced_config_map("counter", "default")
            cm.data["n"] = str(int(cm.data["n"]) + 1)
            try:
                api.replace_namespaced_config_map("counter", "default", cm)
                return
            except ApiException as exc:
                assert exc.status == 409

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(bump, range(80)))  # how many 409s each saw depends on scheduling; the total does not
    assert core.read_namespaced_config_map("counter", "default").data["n"] == "80"


def test_exactly_one_concurrent_create_of_a_name_succeeds(twin):
    def create(_):
        api = client.CoreV1Api(twin.api_client())
        try:
            api.create_namespaced_config_map("default", {"metadata": {"name": "race"}})
            return 201
        except ApiException as exc:
            return exc.status

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(create, range(16)))
    assert codes == [201] + [409] * 15

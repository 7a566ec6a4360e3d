"""N scenario-shaped cycles on one twin → the process's peak RSS is what the twin keeps.

    .venv/bin/python bench/twin_churn.py CYCLES

What a catalog scenario leaves on the twin's store, without pytest around it: in the one test
namespace every scenario shares, two GPU pods are created (scheduled and started: Events), their
annotations are patched as a power agent does, a minute of the twin's clock passes, and they are
deleted (stopped within their grace period: more Events). Whatever a cycle leaves behind and is
never let go grows the peak with the number of cycles.
"""

from __future__ import annotations

import sys

from stepgraph.twin import Twin

NAMESPACE = "dynamo-power-test"


def pod(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"app": "churn"}},
            "spec": {"terminationGracePeriodSeconds": 5,
                     "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}


def main(cycles: int) -> None:
    with Twin(seed=0) as twin:
        store = twin.store
        store.create("namespaces", None, {"metadata": {"name": NAMESPACE}})
        for i in range(cycles):
            names = [f"churn-{i}-{k}" for k in range(2)]
            for name in names:
                store.create("pods", NAMESPACE, pod(name))
            twin.clock.sleep(5)
            for step in range(5):
                for name in names:
                    store.patch("pods", NAMESPACE, name, {"metadata": {"annotations": {"power": str(200 + step)}}})
                twin.clock.sleep(10)
            for name in names:
                store.delete("pods", NAMESPACE, name)
            twin.clock.sleep(10)
        left = len(store.list("events", NAMESPACE))
    print(f"{cycles} cycles, {left} events left")


if __name__ == "__main__":
    main(int(sys.argv[1]))

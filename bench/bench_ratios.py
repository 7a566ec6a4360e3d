"""Every performance figure as a ratio against a baseline measured in the same run → one table.

    .venv/bin/python bench/bench_ratios.py [--repeat 5] [--scenarios 1000] [--only dsl|twin] [--figures lint,startup] [--clock cpu]

The baselines: plain pytest-bdd doing the same work (the same step texts, one step definition
each, no stepgraph plugin loaded), `python -c pass`, and a minimal aiohttp server doing the same
JSON work as the twin. Step texts are distinct in every scenario (a counter name and a number),
so no cache can hit on repeated text. Whole-process figures are the wall time and peak RSS of a
child process (`wait4`); every figure alternates which side runs first, `--repeat` times, and
reports medians with their spread.

Child processes run as Python runs by default, writing bytecode caches (a PYTHONDONTWRITEBYTECODE
in the caller's environment is not passed on: with it, every run of either side compiles and
assertion-rewrites each pytest plugin again), and each side runs once unrecorded first, so every
sample reads the caches a user's second run reads.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness import Figure, interleave, machine_speed, run_process, table

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
CLOCK = "wall"  # what a process's seconds are: `--clock wall` (default) or `cpu`
NO_STEPGRAPH = ["-p", "no:stepgraph", "-p", "no:stepgraph-reports", "-p", "no:stepgraph-world"]

PLAIN_CONFTEST = '''
from pytest_bdd import given, parsers, then, when

COUNTERS = {}


@given(parsers.parse('a counter "{name}" starting at {n:d}'))
def start(name, n):
    COUNTERS[name] = n


@when(parsers.parse('we add {n:d} to the counter "{name}"'))
def add(name, n):
    COUNTERS[name] += n


@then(parsers.parse('the counter "{name}" is at least {n:d}'))
def at_least(name, n):
    assert COUNTERS[name] >= n
'''

STEPGRAPH_CONFTEST = '''
from stepgraph.dsl import REGISTRY, Params

COUNTERS = {}


class Counter(Params):
    name: str
    n: int


@REGISTRY.given("bench.start", "a counter {name} starting at {n:int}", key="bench_start", params=Counter)
def start(ctx, p):
    COUNTERS[p.name] = p.n


@REGISTRY.when("bench.add", "we add {n:int} to the counter {name}", key="bench_add", params=Counter)
def add(ctx, p):
    COUNTERS[p.name] += p.n


@REGISTRY.then("bench.at_least", "the counter {name} is at least {n:int}", key="bench_at_least", params=Counter)
def at_least(ctx, p):
    assert COUNTERS[p.name] >= p.n
'''


def feature_text(first: int, count: int, steps: int) -> str:
    """`count` scenarios of `steps` steps, every step text distinct across the whole project."""
    lines = [f"Feature: Generated {first}"]
    for s in range(first, first + count):
        name = f"c{s}"
        lines += ["", f"  Scenario: generated {s}", f'    Given a counter "{name}" starting at {s}']
        lines += [f'    When we add {k} to the counter "{name}"' for k in range(1, steps - 1)]
        lines.append(f'    Then the counter "{name}" is at least {s}')
    return "\n".join(lines) + "\n"


def project(root: Path, kind: str, scenarios: int, steps: int, per_file: int = 10) -> Path:
    """A project of either kind with the same feature files."""
    folder = root / f"{kind}-{scenarios}x{steps}"
    features = folder / "features"
    features.mkdir(parents=True)
    for first in range(0, scenarios, per_file):
        (features / f"gen_{first:05d}.feature").write_text(feature_text(first, min(per_file, scenarios - first), steps))
    if kind == "plain":
        (folder / "pytest.ini").write_text("[pytest]\n")
        (folder / "conftest.py").write_text(PLAIN_CONFTEST)
        (folder / "test_features.py").write_text('from pytest_bdd import scenarios\n\nscenarios("features")\n')
    else:
        (folder / "pytest.ini").write_text("[pytest]\nstepgraph_paths = features\ntestpaths = features\n")
        (folder / "conftest.py").write_text(STEPGRAPH_CONFTEST)
    return folder


#: The children's environment: ours, but with Python's default of writing bytecode caches.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], cwd: Path) -> float:
    """One child process's seconds, on the clock `--clock` chose."""
    return run_process(argv, cwd, CHILD_ENV).seconds(CLOCK)


def pytest_argv(kind: str, *extra: str) -> list[str]:
    ours = ["--target", "local"] if kind == "stepgraph" else NO_STEPGRAPH
    return [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ours, *extra]


#: The figures of the language side, by the name `--figures` takes, in the table's order.
DSL_FIGURES = ("whole", "step", "collect", "startup", "lint", "catalog", "rss")


def dsl_figures(work: Path, scenarios: int, repeat: int, wanted: Sequence[str] = DSL_FIGURES) -> list[Figure]:
    big, small = 10, 2
    projects = {(kind, n): project(work, kind, scenarios, n) for kind in ("plain", "stepgraph") for n in (big, small)}
    tiny = {kind: project(work, kind, 1, 1) for kind in ("plain", "stepgraph")}

    def wall(kind: str, steps: int, *extra: str) -> Callable[[], float]:
        return lambda: timed(pytest_argv(kind, *extra), projects[kind, steps])

    def whole() -> Figure:
        return interleave(Figure(f"whole run, {scenarios:,} scenarios × {big} steps", "plain pytest-bdd", "s", target=1.3),
                          wall("stepgraph", big), wall("plain", big), repeat, warmup=1)

    def rss() -> Figure:
        return interleave(Figure(f"peak RSS, {scenarios:,} × {big} run", "plain pytest-bdd", "MiB"),
                          lambda: run_process(pytest_argv("stepgraph"), projects["stepgraph", big], CHILD_ENV).peak_rss_mib,
                          lambda: run_process(pytest_argv("plain"), projects["plain", big], CHILD_ENV).peak_rss_mib,
                          max(1, repeat // 2), warmup=1)

    def per_step(kind: str, *extra: str) -> Callable[[], float]:
        def measure() -> float:
            large = timed(pytest_argv(kind, *extra), projects[kind, big])
            little = timed(pytest_argv(kind, *extra), projects[kind, small])
            return (large - little) / (scenarios * (big - small))
        return measure

    def step() -> Figure:
        return interleave(Figure("per extra step (run)", "plain pytest-bdd", "µs", target=1.2),
                          per_step("stepgraph"), per_step("plain"), repeat, warmup=1)

    def collect() -> Figure:
        return interleave(Figure("per extra step (collection only)", "plain pytest-bdd", "µs", target=1.5),
                          per_step("stepgraph", "--collect-only"), per_step("plain", "--collect-only"), repeat, warmup=1)

    def startup() -> Figure:
        return interleave(Figure("start-up, 1 scenario × 1 step", "plain pytest-bdd", "s", target=1.3),
                          lambda: timed(pytest_argv("stepgraph"), tiny["stepgraph"]),
                          lambda: timed(pytest_argv("plain"), tiny["plain"]), repeat, warmup=1)

    def lint() -> Figure:
        one_file = REPO / "scenarios" / "demo" / "bindings.feature"  # a catalog file: lint loads only installed libraries
        return interleave(Figure("`stepgraph lint` of one small file", "`python -c pass`", "s", limit=0.3),
                          lambda: timed([str(Path(PY).parent / "stepgraph"), "lint", str(one_file)], REPO),
                          lambda: timed([PY, "-c", "pass"], work), repeat, warmup=1)

    def catalog() -> Figure:
        catalog_plain = work / "catalog-plain"
        for feature in (REPO / "scenarios").rglob("*.feature"):
            target = catalog_plain / "features" / feature.relative_to(REPO / "scenarios")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(feature, target)
        (catalog_plain / "pytest.ini").write_text("[pytest]\n")
        (catalog_plain / "test_features.py").write_text('from pytest_bdd import scenarios\n\nscenarios("features")\n')
        return interleave(
            Figure("`pytest scenarios --collect-only` (the catalog)", "plain pytest-bdd, same .feature files", "s", target=1.5),
            lambda: timed([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "scenarios"], REPO),
            lambda: timed([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NO_STEPGRAPH, "--collect-only"],
                                catalog_plain),
            repeat, warmup=1)

    build = {"whole": whole, "step": step, "collect": collect, "startup": startup, "lint": lint, "catalog": catalog, "rss": rss}
    return [build[name]() for name in DSL_FIGURES if name in wanted]


# -- the twin against an aiohttp floor -------------------------------------------------------------

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "bench", "namespace": "default", "labels": {"bench": "yes"}},
       "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}


class Floor:
    """The least an HTTP server must do for GET and a merge-PATCH of a pod (route, parse, merge, copy,
    encode) and for a watch of it (each PATCH encoded once and written to every open watch). It
    serves `pod`, the very object the twin serves (defaulted spec, a running pod's status), so
    both encode the same document."""

    def __init__(self, pod: dict) -> None:
        self.watchers: set[asyncio.Queue[bytes | None]] = set()
        self.pod = copy.deepcopy(pod)
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def _serve(self) -> None:
        from aiohttp import web

        async def get(request: web.Request) -> web.Response:
            return web.json_response(copy.deepcopy(self.pod))

        async def patch(request: web.Request) -> web.Response:
            body = await request.json()
            self.pod["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
            self.pod["metadata"]["resourceVersion"] = str(int(self.pod["metadata"]["resourceVersion"]) + 1)
            if self.watchers:
                event = (json.dumps({"type": "MODIFIED", "object": self.pod}) + "\n").encode()
                for queue in self.watchers:
                    queue.put_nowait(event)
            return web.json_response(copy.deepcopy(self.pod))

        async def watch(request: web.Request) -> web.StreamResponse:
            queue: asyncio.Queue[bytes | None] = asyncio.Queue()
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            self.watchers.add(queue)
            try:
                while (event := await queue.get()) is not None:  # None: the floor is stopping
                    await response.write(event)
            except (ConnectionResetError, asyncio.CancelledError):
                pass
            finally:
                self.watchers.discard(queue)
            return response

        app = web.Application()
        app.router.add_get("/api/v1/namespaces/{ns}/pods/{name}", get)
        app.router.add_patch("/api/v1/namespaces/{ns}/pods/{name}", patch)
        app.router.add_get("/api/v1/namespaces/{ns}/pods", watch)
        runner = web.AppRunner(app, access_log=None)
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> Floor:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        def end_watches() -> None:
            for queue in self.watchers:
                queue.put_nowait(None)

        self.loop.call_soon_threadsafe(end_watches)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def _per_call(host: str, port: int, headers: dict[str, str], method: str, calls: int,
              server_thread: int | None = None) -> Callable[[], float]:
    """Seconds per raw HTTP call over one keep-alive connection: wall time, or with `server_thread`
    the CPU time that server thread spent. A loaded machine stretches wall time with waits for a
    core (each call wakes two threads); a thread's CPU time is what its own work cost."""
    path = "/api/v1/namespaces/default/pods/bench"

    def now() -> float:
        if server_thread is None:
            return time.perf_counter()
        return time.clock_gettime(time.pthread_getcpuclockid(server_thread))

    def measure() -> float:
        conn = http.client.HTTPConnection(host, port)
        started = now()
        for i in range(calls):
            if method == "GET":
                conn.request("GET", path, headers=headers)
            else:
                body = json.dumps({"metadata": {"annotations": {"bench/i": str(i)}}})
                conn.request("PATCH", path, body=body, headers={**headers, "Content-Type": "application/merge-patch+json"})
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
        elapsed = now() - started
        conn.close()
        return elapsed / calls

    return measure


def _patch_to_watch(host: str, port: int, headers: dict[str, str], calls: int,
                    server_thread: int | None = None) -> Callable[[], float]:
    """Seconds from sending a PATCH to reading its event from a watch open on the pod (wall time,
    or with `server_thread` that thread's CPU time): the answer to the PATCH is read after the
    event, so each round is one write seen by one watcher."""
    pod_path = "/api/v1/namespaces/default/pods/bench"

    def now() -> float:
        if server_thread is None:
            return time.perf_counter()
        return time.clock_gettime(time.pthread_getcpuclockid(server_thread))

    def measure() -> float:
        patcher = http.client.HTTPConnection(host, port)
        patcher.request("GET", pod_path, headers=headers)
        current = json.loads(patcher.getresponse().read())
        rv = current["metadata"]["resourceVersion"]
        watching = http.client.HTTPConnection(host, port)
        watching.request("GET", f"/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dbench"
                                f"&resourceVersion={rv}", headers=headers)
        stream = watching.getresponse()
        assert stream.status == 200, stream.status
        elapsed = 0.0
        for i in range(calls):
            body = json.dumps({"metadata": {"annotations": {"bench/w": f"{id(stream)}-{i}"}}})
            started = now()
            patcher.request("PATCH", pod_path, body=body,
                            headers={**headers, "Content-Type": "application/merge-patch+json"})
            while True:  # the twin's own writes to the pod (none here) would come first
                event = json.loads(stream.readline())
                if (event["object"]["metadata"].get("annotations") or {}).get("bench/w") == f"{id(stream)}-{i}":
                    break
            elapsed += now() - started
            answer = patcher.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
        watching.close()
        patcher.close()
        return elapsed / calls

    return measure


def twin_figures(repeat: int, calls: int = 300) -> list[Figure]:
    from kubernetes import client

    from stepgraph.twin import Twin

    with Twin(seed=0) as twin:
        api_client = twin.api_client()
        client.CoreV1Api(api_client).create_namespaced_pod("default", copy.deepcopy(POD))
        twin.clock.sleep(5)  # scheduled and running: the pod as an agent reads it
        served = twin.store.get("pods", "default", "bench")
        with Floor(served) as floor:
            cfg = api_client.configuration
            headers = {"Accept": "application/json"}
            for auth in cfg.auth_settings().values():
                headers[auth["key"]] = auth["value"]
            twin_host = cfg.host.split("//", 1)[1]
            host, port = twin_host.rsplit(":", 1)
            figures = []
            server = next(t.ident for t in threading.enumerate() if t.name == "twin-apiserver")
            threads = {"wall": (None, None), "server CPU": (server, floor.thread.ident)}
            for method, target in (("PATCH", 1.5), ("GET", 1.2)):
                for what, (ours, theirs) in threads.items():
                    figures.append(interleave(
                        Figure(f"twin {method} of a pod (raw HTTP, keep-alive), {what}",
                               "minimal aiohttp handler, same JSON work", "ms", target=target),
                        _per_call(host, int(port), headers, method, calls, ours),
                        _per_call("127.0.0.1", floor.port, {"Accept": "application/json"}, method, calls, theirs),
                        repeat))
            for what, (ours, theirs) in threads.items():
                figures.append(interleave(
                    Figure(f"twin PATCH → its watch event (raw HTTP), {what}",
                           "minimal aiohttp handler, same JSON work, one watch", "ms", target=1.5),
                    _patch_to_watch(host, int(port), headers, calls, ours),
                    _patch_to_watch("127.0.0.1", floor.port, {"Accept": "application/json"}, calls, theirs),
                    repeat))
        api_client.close()
    return figures


def node_list_figure(repeat: int, pods: int = 3000, calls: int = 200) -> Figure:
    """One node's pods listed in-process (as every kubelet and agent does each tick): the node
    holds 10 pods in a cluster of `pods`, against the same node in a cluster of 30. Flat is 1.0."""
    import random

    from stepgraph.twin.apiserver.resources import ResourceTypes
    from stepgraph.twin.apiserver.store import Store
    from stepgraph.twin.clock import VirtualClock

    def cluster(size: int) -> Store:
        store = Store(ResourceTypes(), VirtualClock(), random.Random(0))
        store.create("namespaces", None, {"metadata": {"name": "bench"}})
        for i in range(size):
            node = "node-0" if i < 10 else f"node-{1 + i % 99}"
            store.create("pods", "bench", {"metadata": {"name": f"p{i:05d}"}, "spec": {
                "nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}})
        return store

    def per_list(store: Store) -> Callable[[], float]:
        def measure() -> float:
            started = time.perf_counter()
            for _ in range(calls):
                assert len(store.list("pods", field_selector="spec.nodeName=node-0")) == 10
            return (time.perf_counter() - started) / calls
        return measure

    large, small = cluster(pods), cluster(30)
    return interleave(Figure(f"one node's 10 pods listed in-process, {pods:,} pods in the cluster", "30 pods in the cluster",
                             "ms", target=1.5), per_list(large), per_list(small), repeat)


START_TWIN = """
import json, sys, time
sys.path.insert(0, {bench!r})
from bench_fleet import one
import stepgraph.twin.world, stepgraph.twin.world_install  # imported before the clocks start
cpu = time.process_time()
result = one({nodes})
print(json.dumps({{"wall": result["agents_running_s"], "cpu": time.process_time() - cpu}}))
"""


def start_figure(repeat: int, small: int = 16, large: int = 128) -> Figure:
    """A multi-node twin's start until every node's agent pod runs (`bench_fleet.one`, in a child
    process each, imports excluded; seconds on `--clock`), `large` nodes against `small`: a start
    linear in the nodes is large / small."""
    def start(nodes: int) -> Callable[[], float]:
        code = START_TWIN.format(bench=str(Path(__file__).resolve().parent), nodes=nodes)

        def measure() -> float:
            done = subprocess.run([PY, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
            return float(json.loads(done.stdout.strip().splitlines()[-1])[CLOCK])
        return measure

    return interleave(Figure(f"twin start until every agent runs, {large} nodes", f"{small} nodes (linear: "
                             f"{large / small:g}×)", "s", target=large / small), start(large), start(small), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="samples per side of each figure (median of these)")
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--only", choices=["dsl", "twin"])
    parser.add_argument("--figures", default=",".join(DSL_FIGURES),
                        help=f"with the language side, only these figures (comma-separated of {', '.join(DSL_FIGURES)})")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="whole-process seconds as wall time (default) or CPU time (user + system): "
                             "on a loaded machine CPU time is the steadier measure of our own work")
    args = parser.parse_args()
    global CLOCK
    CLOCK = args.clock
    wanted = [name.strip() for name in args.figures.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(DSL_FIGURES))
    if unknown:
        parser.error(f"--figures: no figure {', '.join(unknown)} — choose from {', '.join(DSL_FIGURES)}")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="stepgraph-bench-") as tmp:
        if args.only in (None, "dsl"):
            figures += dsl_figures(Path(tmp), args.scenarios, args.repeat, wanted)
        if args.only in (None, "twin"):
            figures += [*twin_figures(args.repeat), node_list_figure(args.repeat), start_figure(max(1, args.repeat // 2))]
    print(f"whole-process seconds: {args.clock} time; load average at the end {os.getloadavg()[0]:.1f}; "
          f"machine: ten million additions in {machine_speed():.2f} CPU-s")
    print(table(figures))


if __name__ == "__main__":
    main()

"""Planner steps (Path A): expected annotation per DGD and role, one planner per DGD, and which
pods each planner patched — attributed from the planner's own log lines
(`Annotated pod <pod> with dynamo.nvidia.com/gpu-power-limit=<W>`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BeforeValidator, field_validator

from stepgraph.dsl import PLANNER_TICK, POD_START, CheckFailed, NoParams, Params, StepContext, Watts, then, when
from stepgraph.dsl.units import whole_watts

from ._clients import translated
from ._cluster import DGD_LABEL, PLANNER_SELECTOR, POWER_ANNOTATION, ROLE_LABEL, WORKER_SELECTOR, Cluster, cluster
from ._parsers import Sample, metric_sum, parse_metrics

if TYPE_CHECKING:
    from kubernetes import client

PATCH_LINE = re.compile(r"Annotated pod (\S+) with dynamo\.nvidia\.com/gpu-power-limit=(\d+)")
LOG_TAIL_LINES = 5000  # as the seed's T3


def parse_role_table(text: str) -> dict[tuple[str, str], int]:
    """`"vllm-dgd-a/prefill=350, vllm-dgd-c/decode=300"` → {(dgd, role): watts}."""
    table: dict[tuple[str, str], int] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        key, eq, watts = item.partition("=")
        dgd, slash, role = key.strip().partition("/")
        if not eq or not slash or not watts.strip().removesuffix("W").strip().isdigit():
            raise ValueError(f"{item!r}: write <dgd>/<role>=<watts>, e.g. vllm-dgd-a/prefill=350")
        table[(dgd.strip(), role.strip())] = int(watts.strip().removesuffix("W").strip())
    if not table:
        raise ValueError("an empty table — write e.g. \"vllm-dgd-a/prefill=350, vllm-dgd-a/decode=325\"")
    return table


def _role_table(text: str) -> str:
    parse_role_table(text)
    return text


RoleTable = Annotated[str, AfterValidator(_role_table)]


def _names(text: str) -> list[str]:
    return sorted(filter(None, (n.strip() for n in text.split(","))))


def planner_patches(c: Cluster) -> dict[str, list[tuple[str, int]]]:
    """{DGD: [(patched pod, watts), ...]} read from each planner pod's log."""
    found: dict[str, list[tuple[str, int]]] = {}
    for pod in c.pods(PLANNER_SELECTOR, on_node=False):
        dgd = (pod.metadata.labels or {}).get(DGD_LABEL, "?")
        with translated(f"read log of planner {pod.metadata.name}"):
            log = c.core.read_namespaced_pod_log(pod.metadata.name, c.namespace, tail_lines=LOG_TAIL_LINES)
        found.setdefault(dgd, []).extend((m.group(1), int(m.group(2))) for m in PATCH_LINE.finditer(log or ""))
    return found


class TableParams(Params):
    table: RoleTable


@then("planner.worker_annotations", "the worker pods carry the power limits {table}", needs=("k8s",), min_within=PLANNER_TICK)
def worker_annotations(ctx: StepContext, params: TableParams) -> None:
    """A1/A2: one worker pod per (DGD, role) of the table, each annotated with its watts."""
    _check_worker_annotations(ctx, parse_role_table(params.table))


def _cell_watts(value: object) -> int:
    """A table cell in whole watts: `350` (the column says watts) or `350 W` / `350000 mW`."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return whole_watts(value)


class WorkerLimit(Params):
    dgd: str
    role: str
    watts: Annotated[int, BeforeValidator(_cell_watts)]


class WorkerLimits(Params):
    rows: list[WorkerLimit]

    @field_validator("rows")
    @classmethod
    def _one_row_per_worker(cls, rows: list[WorkerLimit]) -> list[WorkerLimit]:
        if not rows:
            raise ValueError("the table has no rows — write one row per worker pod: | dgd | role | watts |")
        keys = [(r.dgd, r.role) for r in rows]
        if twice := sorted({f"{d}/{r}" for d, r in keys if keys.count((d, r)) > 1}):
            raise ValueError(f"{', '.join(twice)} has more than one row — write one row per DGD and role")
        return rows


@then(
    "planner.worker_annotations_table", "the worker pods carry the power limits: {rows:table}", key="worker_limits", needs=("k8s",),
    min_within=PLANNER_TICK,
)
def worker_annotations_table(ctx: StepContext, params: WorkerLimits) -> None:
    """A1/A2 with a data table below the step (columns dgd, role, watts; whole watts, `350` or
    `350 W`): one worker pod per row's DGD and role, each annotated with its watts."""
    _check_worker_annotations(ctx, {(r.dgd, r.role): r.watts for r in params.rows})


def _check_worker_annotations(ctx: StepContext, want: dict[tuple[str, str], int]) -> None:
    seen: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for pod in cluster(ctx).pod_summaries(WORKER_SELECTOR):
        key = (pod.labels.get(DGD_LABEL, "?"), pod.labels.get(ROLE_LABEL, "?"))
        seen.setdefault(key, []).append((pod.name, pod.annotations.get(POWER_ANNOTATION)))
    observed = {f"{d}/{r}": [f"{n}={v}" for n, v in pods] for (d, r), pods in sorted(seen.items())}
    ok = set(seen) == set(want) and all(
        len(pods) == 1 and pods[0][1] == str(want[key]) for key, pods in seen.items()
    )
    if not ok:
        raise CheckFailed(
            "worker pods and their power-limit annotations",
            expected={f"{d}/{r}": w for (d, r), w in sorted(want.items())},
            observed=observed or "no worker pods",
        )


class DgdsParams(Params):
    dgds: str


@then(
    "planner.one_per_dgd", "there is one planner pod for each DGD of {dgds}", key="planner_per_dgd", needs=("planner",),
    min_within=POD_START,
)
def one_per_dgd(ctx: StepContext, params: DgdsParams) -> None:
    """Exactly one planner pod per named DGD."""
    pods = cluster(ctx).pods(PLANNER_SELECTOR, on_node=False)
    observed = sorted((p.metadata.labels or {}).get(DGD_LABEL, "?") for p in pods)
    if observed != _names(params.dgds):
        raise CheckFailed("planner pods per DGD", expected=_names(params.dgds), observed=observed or "none")


@then(
    "planner.patches_own_dgd_only", "every planner patched worker pods of its own DGD only", key="planner_own_dgd_only", needs=("planner",)
)
def patches_own_dgd_only(ctx: StepContext, params: NoParams) -> None:
    """A2 strict: each planner logged ≥ 1 patch, and none of a pod outside its own DGD."""
    c = cluster(ctx)
    owner = {p.metadata.name: (p.metadata.labels or {}).get(DGD_LABEL) for p in c.pods(WORKER_SELECTOR, on_node=False)}
    violations = []
    patches = planner_patches(c)
    if not patches:
        violations.append("no planner pods found")
    for dgd, patched in sorted(patches.items()):
        if not patched:
            violations.append(f"planner of {dgd} logged no patch")
        for pod, watts in patched:
            if pod not in owner:
                violations.append(f"planner of {dgd} patched unknown pod {pod} ({watts} W)")
            elif owner[pod] != dgd:
                violations.append(f"CROSS-DGD: planner of {dgd} patched {pod} of {owner[pod]} ({watts} W)")
    if violations:
        raise CheckFailed("planner patches stay within their DGD", expected="no violations", observed=violations)


class NoPatchParams(Params):
    dgd: str
    watts: Watts


@then(
    "planner.never_patched_with",
    "the planner of {dgd} never patched a pod with {watts:watts}",
    key="planner_never_patched",
    needs=("planner",),
)
def never_patched_with(ctx: StepContext, params: NoPatchParams) -> None:
    """A3: an agg planner runs only its decode branch, so its prefill limit never appears in a patch."""
    patched = planner_patches(cluster(ctx)).get(params.dgd)
    if patched is None:
        raise CheckFailed(f"planner of {params.dgd}", expected="a planner pod", observed="none")
    bad = [f"{pod}={w}" for pod, w in patched if w == params.watts]
    if bad:
        raise CheckFailed(f"patches by the planner of {params.dgd}", expected=f"none with {params.watts} W", observed=bad)


class OnlyWorkerParams(Params):
    dgd: str
    role: str
    watts: Watts


@then(
    "planner.only_worker",
    "the DGD {dgd} has exactly one worker pod, of role {role}, annotated {watts:watts}",
    needs=("k8s",), min_within=PLANNER_TICK)
def only_worker(ctx: StepContext, params: OnlyWorkerParams) -> None:
    """A3: the aggregated DGD's single worker is its decode worker, carrying the decode limit."""
    pods = [p for p in cluster(ctx).pods(WORKER_SELECTOR) if (p.metadata.labels or {}).get(DGD_LABEL) == params.dgd]
    observed = [
        (p.metadata.name, (p.metadata.labels or {}).get(ROLE_LABEL), (p.metadata.annotations or {}).get(POWER_ANNOTATION))
        for p in pods
    ]
    if len(observed) != 1 or observed[0][1:] != (params.role, str(params.watts)):
        raise CheckFailed(
            f"worker pods of {params.dgd}",
            expected=f"one {params.role} worker annotated {params.watts}",
            observed=observed or "none",
        )


# -- a planner's failure and its own metrics -------------------------------------------------------

PLANNER_METRICS_PORT = 9085
PROJECTED = "dynamo_planner_power_projected_watts"
BUDGET = "dynamo_planner_power_budget_total_watts"
CRASH_DEADLINE_S = 120.0


def planner_of(c: Cluster, dgd: str) -> client.V1Pod:
    """The one planner pod of a DGD."""
    pods = [p for p in c.pods(PLANNER_SELECTOR, on_node=False)
            if (p.metadata.labels or {}).get(DGD_LABEL) == dgd and not p.metadata.deletion_timestamp]
    if len(pods) != 1:
        raise CheckFailed(f"the planner pod of {dgd}", expected="exactly one", observed=[p.metadata.name for p in pods] or "none")
    return pods[0]


def planner_metrics(c: Cluster, dgd: str) -> list[Sample]:
    """A planner's Prometheus page, through the API server's pod proxy (each planner serves its own)."""
    pod = planner_of(c, dgd).metadata.name
    with translated(f"proxy to {c.namespace}/{pod}:{PLANNER_METRICS_PORT}/metrics"):
        text = c.core.connect_get_namespaced_pod_proxy_with_path(f"{pod}:{PLANNER_METRICS_PORT}", c.namespace, "metrics")
    return parse_metrics(text)


class PlannerParams(Params):
    dgd: str


def _planner_gone(c: Cluster, dgd: str, uid: str) -> None:
    left = [p.metadata.name for p in c.pods(PLANNER_SELECTOR, on_node=False) if p.metadata.uid == uid]
    if left:
        raise CheckFailed(f"the crashed planner pod of {dgd} gone", expected="gone", observed=left)


def _planner_back(ctx: StepContext, params: PlannerParams, uid: str) -> None:
    """Compensation: leave the DGD with a running planner again (its operator re-creates the pod)."""
    c = cluster(ctx)

    def running() -> None:
        pod = planner_of(c, params.dgd)
        if pod.metadata.uid == uid or not pod.status or pod.status.phase != "Running":
            raise CheckFailed(f"a new planner of {params.dgd} running", expected="Running", observed=pod.metadata.name)

    ctx.eventually(running, CRASH_DEADLINE_S, description=f"a planner of {params.dgd} running")


@when(
    "planner.crash",
    "the planner of {dgd} crashes",
    key="planner_crash",
    needs=("planner", "k8s-write"),
    effects=("deletes-objects",),
    compensation=_planner_back,
)
def crash(ctx: StepContext, params: PlannerParams) -> str:
    """E1: kill a DGD's planner pod at once (no grace period) and wait until it is gone; its DGD's
    workers keep the annotations it wrote. The DGD's operator starts a new planner."""
    c = cluster(ctx)
    pod = planner_of(c, params.dgd)
    with translated(f"delete pod {pod.metadata.name}"):
        c.core.delete_namespaced_pod(pod.metadata.name, c.namespace, grace_period_seconds=0)
    ctx.eventually(lambda: _planner_gone(c, params.dgd, str(pod.metadata.uid)), CRASH_DEADLINE_S,
                   description=f"the planner pod of {params.dgd} gone")
    return str(pod.metadata.uid)


class ProjectionParams(Params):
    dgd: str
    projected: int
    budget: int


@then(
    "planner.projects",
    "the planner of {dgd} projects {projected:int} W against a budget of {budget:int} W",
    key="planner_projects",
    needs=("planner",),
)
def projects(ctx: StepContext, params: ProjectionParams) -> None:
    """D2: a planner's own `power_projected_watts` and `power_budget_total_watts` gauges."""
    samples = planner_metrics(cluster(ctx), params.dgd)
    observed = {"projected": metric_sum(samples, PROJECTED, {}), "budget": metric_sum(samples, BUDGET, {})}
    if observed != {"projected": params.projected, "budget": params.budget}:
        raise CheckFailed(f"power gauges of the planner of {params.dgd}",
                          expected={"projected": params.projected, "budget": params.budget},
                          observed={k: f"{v:g}" for k, v in observed.items()})


def _gpus_of(pod: client.V1Pod) -> int:
    return sum(int(((ctr.resources.limits if ctr.resources else None) or {}).get("nvidia.com/gpu", 0))
               for ctr in pod.spec.containers)


@then(
    "planner.projects_own_dgd",
    "every planner projects its own DGD's power: its workers' limits × their GPUs",
    key="planner_projects_own_dgd",
    needs=("planner",),
)
def projects_own_dgd(ctx: StepContext, params: NoParams) -> None:
    """D2: each planner's projected power equals Σ over its own DGD's worker pods of the pod's
    power-limit annotation × the GPUs it claims — computed from the pods, read from each planner."""
    c = cluster(ctx)
    want: dict[str, int] = {}
    for pod in c.pods(WORKER_SELECTOR):
        dgd = (pod.metadata.labels or {}).get(DGD_LABEL, "?")
        watts = (pod.metadata.annotations or {}).get(POWER_ANNOTATION)
        want[dgd] = want.get(dgd, 0) + (int(watts) if watts and watts.isdigit() else 0) * _gpus_of(pod)
    seen = {dgd: metric_sum(planner_metrics(c, dgd), PROJECTED, {}) for dgd in sorted(want)}
    if not want or any(seen[d] != w for d, w in want.items()):
        raise CheckFailed("each planner's projected power (W) against its own DGD's workers",
                          expected=dict(sorted(want.items())) or "worker pods", observed={d: f"{v:g}" for d, v in seen.items()})

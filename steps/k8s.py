"""Kubernetes steps: apply and delete manifests (with compensation), wait for pods, read and patch
annotations, restart a pod under the same name.

Objects are created through the dynamic client (discovery → any kind, custom resources such as
DynamoGraphDeployment included). An object that already exists is adopted, not owned: only what a
step created is deleted by its compensation, so a live node's pre-deployed topology is never torn
down by a scenario.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from stepgraph.dsl import POD_START, CheckFailed, NamesFile, Params, Reads, Ref, StepContext, Watts, then, when
from stepgraph.dsl.cache_dir import cache_root, keep, parser_release, read_kept_json

from ._clients import ClusterError, NotFound, translated
from ._cluster import (
    DGD_LABEL,
    POWER_ANNOTATION,
    ROLE_LABEL,
    RUN_LABEL,
    WORKER_SELECTOR,
    Cluster,
    RunStamp,
    cluster,
    shipped_manifests,
)
from ._parsers import parse_kv_lines

if TYPE_CHECKING:
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError

DELETE_DEADLINE_S = 120.0  # the seed's teardown waits this long for pods to go (99-teardown.sh)


@dataclass(frozen=True)
class ObjectRef:
    """One object a step applied; `created` is False when it already existed (adopted)."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    created: bool

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


# The dynamic client is imported on first use, as the rest of the kubernetes client (see _clients).
def _dynamic_api_error() -> type[DynamicApiError]:
    from kubernetes.dynamic.exceptions import DynamicApiError

    return DynamicApiError


@functools.cache
def _in_memory_discoverer() -> type:
    from kubernetes.dynamic.discovery import LazyDiscoverer

    class _InMemoryDiscoverer(LazyDiscoverer):
        """API discovery kept in memory for the session: nothing written to disk, nothing left behind
        (the client's default caches every cluster it meets in a file under the temp directory)."""

        def __init__(self, client: Any, cache_file: str | None) -> None:
            super().__init__(client, "/nonexistent/stepgraph-discovery.json")

        def _write_cache(self) -> None:
            return None

    return _InMemoryDiscoverer


def _dynamic(ctx: StepContext) -> DynamicClient:
    dyn = ctx.cache.get("dynamic")
    if dyn is None:
        from kubernetes.dynamic import DynamicClient

        with translated("API discovery"):
            dyn = DynamicClient(cluster(ctx).api, discoverer=_in_memory_discoverer())
        ctx.cache["dynamic"] = dyn
    return dyn


def _resource(ctx: StepContext, api_version: str, kind: str) -> Any:
    try:
        return _dynamic(ctx).resources.get(api_version=api_version, kind=kind)
    except Exception as exc:  # ResourceNotFoundError and friends carry no common base
        raise ClusterError(f"the cluster serves no {kind} in {api_version}: {exc}") from exc


class ManifestError(ValueError):
    """A manifest that is not a stream of Kubernetes objects; the message names file and place."""


MAX_MANIFEST_BYTES = 3 * 1024 * 1024  # the API server refuses larger requests anyway


@functools.lru_cache(maxsize=64)
def _parsed_yaml(text: str) -> list[Any]:
    """The documents of a YAML stream, parsed once per process for each distinct text: a run
    applies the same few manifests in scenario after scenario, and parsing one takes 15-20 ms
    where copying its documents takes a hundredth of that. Keyed by the text itself, so an edited
    file is parsed afresh; a stream that does not parse raises each time (errors are not cached).
    Across processes, what a text parses into is kept on disk as JSON (see _keep_documents), named
    by the text, the interpreter and ruamel.yaml's release (nothing is kept if that is not found)."""
    key = _documents_key(text)
    kept = read_kept_json(_documents_file(key)) if key is not None else None
    if isinstance(kept, list):
        return kept
    from ruamel.yaml import YAML  # the YAML parser: only a step that applies a manifest needs it

    docs = list(YAML(typ="safe", pure=True).load_all(text))
    if key is not None:
        _keep_documents(key, docs)
    return docs


def _documents_key(text: str) -> str | None:
    release = parser_release("ruamel.yaml", ("ruamel.yaml-", "ruamel_yaml-"))
    return hashlib.sha256(release + text.encode()).hexdigest()[:32] if release is not None else None


def _documents_file(key: str) -> Path:
    return cache_root() / "manifest-documents" / f"{key}.json"


def _keep_documents(key: str, docs: list[Any]) -> None:
    """Keep `docs` only where JSON gives them back exactly: a manifest is JSON's data in YAML's
    syntax, but YAML also has timestamps, binary, sets and keys that are not strings (1: a), which
    would come back as something else; those streams are parsed again in each process."""
    try:
        text = json.dumps(docs)
    except (TypeError, ValueError):
        return
    if json.loads(text) == docs:
        keep(_documents_file(key), text.encode())


def load_manifest(path: Path, namespace: str) -> list[dict[str, Any]]:
    """The documents of a manifest file; namespaced objects default to the session namespace.

    Each document must be a mapping with apiVersion, kind and metadata.name; anything else (a
    list, broken YAML, a binary or non-UTF-8 file, a huge one) is a ManifestError naming where."""
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{path}: larger than {MAX_MANIFEST_BYTES // 1024 // 1024} MiB — not a manifest")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}) — give a YAML manifest") from None
    from ruamel.yaml.error import YAMLError

    try:
        loaded = copy.deepcopy(_parsed_yaml(text))  # a copy: the documents are edited below and by callers
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"{where}: YAML syntax: {problem} — fix the manifest") from None
    docs = []
    for number, doc in enumerate(loaded, start=1):
        if doc is None:
            continue
        missing = [key for key in ("apiVersion", "kind") if not isinstance(doc, dict) or not isinstance(doc.get(key), str)]
        name = (doc.get("metadata") or {}).get("name") if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) else None
        if not isinstance(doc, dict) or missing or not isinstance(name, str):
            what = "is not a mapping" if not isinstance(doc, dict) else f"has no {', '.join(missing) or 'metadata.name'}"
            raise ManifestError(f"{path}: document {number} {what} — every document is one Kubernetes object")
        docs.append(doc)
    for doc in docs:
        if doc.get("kind") not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            doc.setdefault("metadata", {}).setdefault("namespace", namespace)
    return docs


def manifest_documents(c: Cluster, name: str) -> list[dict[str, Any]]:
    """A manifest's objects as this run creates them: those written for the test namespace go into
    the run's own namespace (the same one, unless the run has a namespace of its own, as each
    runner of a fleet does, so that runners side by side never share an object's name)."""
    docs = load_manifest(c.manifest(name), c.namespace)
    for doc in docs:
        if doc["metadata"].get("namespace") == c.system_namespace:
            doc["metadata"]["namespace"] = c.namespace
    return docs


HOSTNAME_LABEL = "kubernetes.io/hostname"


def pin_to_node(doc: dict[str, Any], node: str) -> dict[str, Any]:
    """The document with the pods it makes held to `node` by its hostname label: a Pod's
    nodeSelector, and a DGD's services that already select nodes (the GPU workers)."""
    if doc.get("kind") == "Pod":
        doc.setdefault("spec", {}).setdefault("nodeSelector", {})[HOSTNAME_LABEL] = node
    elif doc.get("kind") == "DynamoGraphDeployment":
        for service in ((doc.get("spec") or {}).get("services") or {}).values():
            selector = (service.get("extraPodSpec") or {}).get("nodeSelector")
            if selector is not None:
                selector[HOSTNAME_LABEL] = node
    return doc


def leftover_policy(ctx: StepContext) -> str:
    """What to do with objects another run left: `remove` (default) or `adopt` (session fact)."""
    return str(ctx.session.facts.get("leftovers", "remove"))


def _as_json(_client: Any, data: Any) -> Any:
    """The dynamic client's answer as the JSON it is (its `serializer`): these steps read a few
    fields of it, and the default wraps every field in a ResourceInstance that `.to_dict()` then
    unwraps again."""
    return data


def _owner(resource: Any, ref: ObjectRef) -> str | None:
    """The run that created the object `ref` names ("" for none), or None when it does not exist."""
    try:
        found = resource.get(name=ref.name, namespace=ref.namespace, serializer=_as_json)
    except _dynamic_api_error() as exc:
        if exc.status == 404:
            return None
        raise ClusterError(f"read {ref}: {exc.status} {exc.summary()}") from exc
    return RunStamp.of(found.get("metadata") or {})


def _present(ctx: StepContext, refs: list[ObjectRef], *, label_selector: str | None = None) -> set[ObjectRef]:
    """Those of `refs` the API has (with `label_selector`: those it has with that label), one
    list request per kind and namespace rather than one read per object."""
    present: set[ObjectRef] = set()
    for api_version, kind, ns in dict.fromkeys((r.api_version, r.kind, r.namespace) for r in refs):
        try:
            items = _resource(ctx, api_version, kind).get(
                namespace=ns, label_selector=label_selector, serializer=_as_json).get("items") or []
        except _dynamic_api_error() as exc:
            raise ClusterError(f"list {kind}: {exc.status} {exc.summary()}") from exc
        names = {item["metadata"]["name"] for item in items}
        present |= {r for r in refs if (r.api_version, r.kind, r.namespace) == (api_version, kind, ns) and r.name in names}
    return present


def apply_documents(
    ctx: StepContext, docs: list[dict[str, Any]], *, into: list[ObjectRef] | None = None, owned: bool = True
) -> list[ObjectRef]:
    """Create every document; return (and append to `into`) one ObjectRef per document.

    Intent before effect: each ref is appended *before* its create is sent, so a compensation
    registered with `into` covers a create whose answer never came (Ctrl-C, a lost connection).
    With `owned`, each object carries the run's label first; an object that already exists is
    ours when it carries our label (a retried create), another run's leftover when it carries
    another's (removed and created again, or adopted with the `leftovers=adopt` option), and a
    hand-prepared object otherwise (adopted: `created=False`, left as found). A run bound to
    one node of many (session fact `pin_node`) pins what it creates to that node.
    """
    c = cluster(ctx)
    refs = into if into is not None else []
    node = str(ctx.session.facts.get("node") or "")
    if ctx.session.facts.get("pin_node") and node:
        docs = [pin_to_node(doc, node) for doc in docs]
    for doc in docs:
        meta = doc.setdefault("metadata", {})
        if owned:
            c.run.mark(meta)
        ns = meta.get("namespace")
        ref = ObjectRef(doc["apiVersion"], doc["kind"], ns, meta["name"], created=True)
        refs.append(ref)
        resource = _resource(ctx, ref.api_version, ref.kind)
        if owned:
            _created_kinds(ctx).add((ref.api_version, ref.kind, ns))
            _check_at_run_end(ctx)
        _create(ctx, resource, doc, ref, refs, owned=owned)
    return refs


def _create(ctx: StepContext, resource: Any, doc: dict[str, Any], ref: ObjectRef, refs: list[ObjectRef], *, owned: bool) -> None:
    c = cluster(ctx)
    try:
        resource.create(body=doc, namespace=ref.namespace, serializer=_as_json)
        return
    except _dynamic_api_error() as exc:
        if exc.status != 409:
            raise ClusterError(f"create {ref}: {exc.status} {exc.summary()}") from exc
    owner = _owner(resource, ref)
    if owned and owner == c.run.id:
        return  # our own create landed before its answer was lost, and was retried
    if owned and owner and leftover_policy(ctx) == "remove":
        ctx.cleanup_notes.append(f"removed {ref} left by run {owner}")
        delete_objects(ctx, [ref], only_created=False)
        _create(ctx, resource, doc, ref, refs, owned=owned)
        return
    refs[refs.index(ref)] = replace(ref, created=False)  # prepared by hand (or adopted): left as found


def _created_kinds(ctx: StepContext) -> set[tuple[str, str, str | None]]:
    """(apiVersion, kind, namespace) of everything this run created, for the run-end check."""
    return ctx.cache.setdefault("created_kinds", set())


def delete_objects(ctx: StepContext, refs: list[ObjectRef], *, only_created: bool) -> None:
    """Delete (newest first) and wait until every object is gone from the API.

    Idempotent: an object already gone is fine. With `only_created`, only refs a step created are
    deleted, and only while the object still carries this run's label — a create that never
    landed must not take down an object someone else made under that name."""
    run = cluster(ctx).run.id
    doomed = [ref for ref in reversed(refs) if ref.created or not only_created]
    if only_created and doomed:
        ours = _present(ctx, doomed, label_selector=f"{RUN_LABEL}={run}")
        doomed = [ref for ref in doomed if ref in ours]  # the others are gone already, or not ours
    for ref in doomed:
        try:
            _resource(ctx, ref.api_version, ref.kind).delete(name=ref.name, namespace=ref.namespace, serializer=_as_json)
        except _dynamic_api_error() as exc:
            if exc.status != 404:
                raise ClusterError(f"delete {ref}: {exc.status} {exc.summary()}") from exc

    def all_gone() -> None:
        present = _present(ctx, doomed)
        left = [str(ref) for ref in doomed if ref in present]
        if left:
            raise CheckFailed("objects still present after delete", expected="gone", observed=left)

    if doomed:
        ctx.eventually(all_gone, DELETE_DEADLINE_S, description="deleted objects disappear")


def sweep_leftovers(ctx: StepContext, kinds: set[tuple[str, str, str | None]]) -> list[str]:
    """Remove every object of these kinds that another run left (its label names another run);
    with `leftovers=adopt`, leave them. Returns what was found, one name each."""
    c = cluster(ctx)
    found: list[ObjectRef] = []
    owners: set[str] = set()
    for api_version, kind, ns in sorted(kinds, key=str):
        resource = _resource(ctx, api_version, kind)
        try:
            items = resource.get(namespace=ns, label_selector=RUN_LABEL, serializer=_as_json).get("items") or []
        except _dynamic_api_error() as exc:
            raise ClusterError(f"list {kind} with label {RUN_LABEL}: {exc.status} {exc.summary()}") from exc
        for item in items:
            owner = RunStamp.of(item.get("metadata") or {})
            if owner and owner != c.run.id:
                owners.add(owner)
                found.append(ObjectRef(api_version, kind, ns, item["metadata"]["name"], created=True))
    if not found:
        return []
    names = ", ".join(map(str, found))
    if leftover_policy(ctx) == "adopt":
        ctx.cleanup_notes.append(f"adopted what run(s) {', '.join(sorted(owners))} left: {names}")
    else:
        ctx.cleanup_notes.append(f"removed what run(s) {', '.join(sorted(owners))} left: {names}")
        delete_objects(ctx, found, only_created=False)
    return [str(ref) for ref in found]


class LeftBehind(AssertionError):
    """The run-end check found objects of this run, or GPUs off their default; one line each."""


#: Session-cache flag: the run created GPU workloads, so it owns the caps they led to.
OWNS_GPU_CAPS = "owns_gpu_caps"


def _check_at_run_end(ctx: StepContext) -> None:
    if not ctx.cache.get("run_end_check"):
        ctx.cache["run_end_check"] = True
        ctx.defer_to_run_end(lambda: verify_run_left_nothing(ctx), f"the run-end check of run {cluster(ctx).run.id}")


def verify_run_left_nothing(ctx: StepContext) -> None:
    """Run-end check, on any target: no object labelled with this run is left and — once the run
    created GPU workloads — every GPU reads back at its default limit."""
    c = cluster(ctx)
    left = objects_of_this_run(ctx)
    if ctx.cache.get(OWNS_GPU_CAPS):
        caps, limits = c.nvml_caps(), parse_kv_lines(c.probe("nvml_limits"))
        defaults = {int(i): int(v.split(",")[0]) for i, v in limits.items()}
        left += [f"GPU {i} at {caps.get(i)} W, not its default {d} W" for i, d in sorted(defaults.items()) if caps.get(i) != d]
    if left:
        raise LeftBehind(f"run {c.run.id} did not clean up after itself:\n  - " + "\n  - ".join(left))


def objects_of_this_run(ctx: StepContext) -> list[str]:
    """Every object this run created that the API still has (the run-end check)."""
    c = cluster(ctx)
    left = []
    for api_version, kind, ns in sorted(_created_kinds(ctx), key=str):
        resource = _resource(ctx, api_version, kind)
        try:
            items = resource.get(namespace=ns, label_selector=f"{RUN_LABEL}={c.run.id}", serializer=_as_json).get("items") or []
        except _dynamic_api_error() as exc:
            raise ClusterError(f"list {kind} of run {c.run.id}: {exc.status} {exc.summary()}") from exc
        left += [f"{kind} {item['metadata'].get('namespace') or ''}/{item['metadata']['name']}".replace(" /", " ") for item in items]
    return left


# -- apply / delete ------------------------------------------------------------------------------


#: The namespace/label variants whose manifests ship with the package (examples/manifests/<variant>/)
MANIFEST_VARIANTS = ("target", "kaim")


def _variant_folders() -> list[Path]:
    return [shipped_manifests(variant) for variant in MANIFEST_VARIANTS]


class ApplyParams(Params):
    # found as Cluster.manifest finds it: in a variant's folder (with or without .yaml), or as a path
    manifest: Annotated[str, NamesFile("manifest", _variant_folders, (".yaml",), "examples/manifests/<variant>/")]


def delete_created(ctx: StepContext, params: Params, refs: list[ObjectRef]) -> None:
    """Compensation of a step that created objects: delete what it created (adopted objects stay) and wait until gone."""
    delete_objects(ctx, refs, only_created=True)


@when(
    "k8s.apply",
    "the manifest {manifest} is applied as {as}",
    produces="objects",
    needs=("k8s", "k8s-write"),
    effects=("creates-objects",),
    compensation=delete_created,
)
def apply(ctx: StepContext, params: ApplyParams) -> list[ObjectRef]:
    """Create every object of a manifest (existing ones are adopted, not owned)."""
    c = cluster(ctx)
    docs = manifest_documents(c, params.manifest)
    return apply_documents(ctx, docs, into=ctx.intend([]))


class DeleteParams(Params):
    objects: Annotated[Ref, Reads("objects")]


def _deleted_stay_gone(ctx: StepContext, params: DeleteParams, result: None) -> None:
    delete_objects(ctx, ctx.bindings[params.objects.name], only_created=True)  # idempotent: verifies they are gone


@when(
    "k8s.delete",
    "the objects {objects:ref} are deleted",
    needs=("k8s", "k8s-write"),
    effects=("deletes-objects",),
    compensation=_deleted_stay_gone,
)
def delete(ctx: StepContext, params: DeleteParams) -> None:
    """Delete the objects an earlier step of this run created (adopted ones are left as found) and
    wait until the API no longer has them."""
    delete_objects(ctx, ctx.bindings[params.objects.name], only_created=True)


# -- pods ----------------------------------------------------------------------------------------


class PodsRunningParams(Params):
    selector: str
    count: int


@then("k8s.pods_running", "{count:int} pods matching {selector} are running on the test node", needs=("k8s",), min_within=POD_START)
def pods_running(ctx: StepContext, params: PodsRunningParams) -> list[str]:
    """Exactly `count` pods with this label selector are Running on the test node."""
    pods = cluster(ctx).pods(params.selector)
    running = sorted(p.metadata.name for p in pods if p.status and p.status.phase == "Running")
    if len(running) != params.count:
        raise CheckFailed(
            f"pods matching {params.selector} on the test node",
            expected=f"{params.count} running",
            observed={p.metadata.name: (p.status.phase if p.status else None) for p in pods} or "none",
        )
    return running


class RestartParams(Params):
    pod: str
    watts: Watts


def _put_original_back(ctx: StepContext, params: RestartParams, result: dict[str, Any]) -> None:
    """Leave a pod under this name with its original annotation (it may belong to a prepared node)."""
    c = cluster(ctx)
    original = copy.deepcopy(result["original"])
    try:
        current = (c.pod(params.pod).metadata.annotations or {}).get(POWER_ANNOTATION)
    except NotFound:
        current = None
    else:
        if current == original["metadata"].get("annotations", {}).get(POWER_ANNOTATION):
            return
        delete_objects(ctx, [ObjectRef("v1", "Pod", c.namespace, params.pod, created=True)], only_created=False)
    apply_documents(ctx, [original], owned=False)


@when(
    "k8s.restart_pod",
    "the pod {pod} is deleted and created again under the same name, annotated {watts:watts}, as {as}",
    key="restart_pod",
    produces="restart record (old and new UID)",
    needs=("k8s", "k8s-write"),
    effects=("deletes-objects", "creates-objects"),
    compensation=_put_original_back,
)
def restart_pod(ctx: StepContext, params: RestartParams) -> dict[str, Any]:
    """Replace a bare pod by one with the same name and spec (so a new UID) and a new power limit.

    A new limit makes the restart observable: the GPU of the old pod keeps the old cap when the
    pod goes (the agent never restores an idle GPU), so only a write for the new UID changes it.
    """
    c = cluster(ctx)
    old = c.api.sanitize_for_serialization(c.pod(params.pod))
    original: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: old["metadata"][k] for k in ("name", "namespace", "labels", "annotations") if k in old["metadata"]},
        "spec": {k: v for k, v in old["spec"].items() if k != "nodeName"},
    }
    annotations = {**original["metadata"].get("annotations", {}), POWER_ANNOTATION: str(params.watts)}
    manifest = {**original, "metadata": {**original["metadata"], "annotations": annotations}}
    ctx.intend({"original": original})  # from here on the compensation can put the original back
    delete_objects(ctx, [ObjectRef("v1", "Pod", c.namespace, params.pod, created=True)], only_created=False)
    apply_documents(ctx, [manifest], owned=False)  # the same pod again: its labels say whose it is

    def running() -> str:
        pod = c.pod(params.pod)
        if pod.status is None or pod.status.phase != "Running":
            raise CheckFailed(f"pod {params.pod} restarted", expected="Running", observed=pod.status.phase if pod.status else None)
        return str(pod.metadata.uid)

    new_uid = ctx.eventually(running, 300.0, interval=2.0, description=f"pod {params.pod} running again")
    return {"old_uid": old["metadata"]["uid"], "new_uid": new_uid, "original": original}


class PodNewUidParams(Params):
    pod: str
    restarted: Annotated[Ref, Reads("restart record (old and new UID)")]


@then("k8s.new_uid", "the pod {pod} has a new UID since {restarted:ref}", needs=("k8s",), min_within=POD_START)
def has_new_uid(ctx: StepContext, params: PodNewUidParams) -> None:
    """The pod under this name is not the one that was there before the restart."""
    before = ctx.bindings[params.restarted.name]["old_uid"]
    now = cluster(ctx).pod(params.pod).metadata.uid
    if now == before:
        raise CheckFailed(f"pod {params.pod} was replaced", expected=f"a UID other than {before}", observed=now)


# -- annotations ---------------------------------------------------------------------------------


class AnnotateParams(Params):
    pod: str
    watts: Watts


def _restore_annotation(ctx: StepContext, params: AnnotateParams, previous: str | None) -> None:
    _patch_power(cluster(ctx), params.pod, previous)


def _patch_power(c: Cluster, pod: str, value: str | None) -> None:
    with translated(f"annotate pod {c.namespace}/{pod}"):
        c.core.patch_namespaced_pod(pod, c.namespace, {"metadata": {"annotations": {POWER_ANNOTATION: value}}})


@when(
    "k8s.set_power_annotation",
    "the power-limit annotation of pod {pod} is set to {watts:watts}", key="annotate",
    needs=("k8s", "k8s-write"),
    effects=("modifies-objects",),
    compensation=_restore_annotation,
)
def set_power_annotation(ctx: StepContext, params: AnnotateParams) -> str | None:
    """Patch the pod's `dynamo.nvidia.com/gpu-power-limit` (as a planner, or a foreign writer, would)."""
    c = cluster(ctx)
    previous = ctx.intend((c.pod(params.pod).metadata.annotations or {}).get(POWER_ANNOTATION))
    _patch_power(c, params.pod, str(params.watts))
    return previous


class RoleAnnotateParams(Params):
    role: str
    dgd: str
    watts: Watts


def worker_of(c: Cluster, dgd: str, role: str) -> str:
    """The name of the one worker pod of a DGD with this sub-component role."""
    pods = [p.metadata.name for p in c.pods(f"{WORKER_SELECTOR},{DGD_LABEL}={dgd},{ROLE_LABEL}={role}")]
    if len(pods) != 1:
        raise CheckFailed(f"the {role} worker of {dgd}", expected="exactly one pod", observed=pods or "none")
    return pods[0]


def _restore_role_annotation(ctx: StepContext, params: RoleAnnotateParams, previous: tuple[str, str | None]) -> None:
    _patch_power(cluster(ctx), previous[0], previous[1])


@when(
    "k8s.set_worker_annotation",
    "the power-limit annotation of the {role:word} worker of {dgd} is set to {watts:watts}",
    key="annotate_worker",
    needs=("k8s", "k8s-write"),
    effects=("modifies-objects",),
    compensation=_restore_role_annotation,
)
def set_worker_annotation(ctx: StepContext, params: RoleAnnotateParams) -> tuple[str, str | None]:
    """Overwrite a DGD worker's power-limit annotation, as a foreign writer would (A4)."""
    c = cluster(ctx)
    name = worker_of(c, params.dgd, params.role)
    previous = ctx.intend((name, (c.pod(name).metadata.annotations or {}).get(POWER_ANNOTATION)))
    _patch_power(c, name, str(params.watts))
    return previous


class AnnotationIsParams(Params):
    pod: str
    watts: Watts


@then("k8s.power_annotation_is", "the power-limit annotation of pod {pod} is {watts:watts}", key="annotation", needs=("k8s",))
def power_annotation_is(ctx: StepContext, params: AnnotationIsParams) -> None:
    """The pod's power-limit annotation reads exactly this many watts."""
    value = (cluster(ctx).pod(params.pod).metadata.annotations or {}).get(POWER_ANNOTATION)
    if value != str(params.watts):
        raise CheckFailed(f"power-limit annotation of pod {params.pod}", expected=str(params.watts), observed=value)


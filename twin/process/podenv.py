"""A pod's container spec → the environment and command line a real kubelet would give it.

The rules are the kubelet's (`makeEnvironmentVariables` and the `expansion` package):
- variables are built in spec order: `envFrom` sources first, then `env`; a `value` may name
  earlier variables with `$(NAME)`;
- `valueFrom.fieldRef` reads the downward-API fields (`metadata.name|namespace|uid`,
  `metadata.labels['k']`, `metadata.annotations['k']`, `spec.nodeName`,
  `spec.serviceAccountName`, `status.hostIP|podIP|podIPs`); `configMapKeyRef` / `secretKeyRef`
  read the objects; a missing object or key fails container start unless `optional: true`;
- `$(NAME)` in `command` and `args` expands from the finished environment; `$$` is a literal `$`;
  an undefined or unclosed reference stays as written;
- the image supplies the command when the manifest gives none (`ENTRYPOINT` + `CMD`), and the
  manifest's `args` replace the image's `CMD`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any


class ContainerConfigError(ValueError):
    """The kubelet cannot build the container's environment (`CreateContainerConfigError`)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion, character for character as the kubelet's `expansion.Expand`."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":  # `$$` → `$`
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end < 0:  # unclosed: keep `$(` and go on after it
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """One downward-API `fieldRef.fieldPath` of the pod (its current object)."""
    md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": md.get("name"), "metadata.namespace": md.get("namespace"), "metadata.uid": md.get("uid"),
        "spec.nodeName": spec.get("nodeName"), "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.hostIP": status.get("hostIP"), "status.podIP": status.get("podIP"),
        "status.hostIPs": status.get("hostIP"), "status.podIPs": status.get("podIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    if m := _SUBSCRIPT.match(path):
        return str((md.get(m.group(1)) or {}).get(m.group(2), ""))
    raise ContainerConfigError(f"unsupported fieldPath {path!r}")


def resource_value(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """`resourceFieldRef` (`limits.cpu`, `requests.memory`, …) as the kubelet renders it, in the divisor's units."""
    kind, _, name = str(ref.get("resource", "")).partition(".")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is None:
        raise ContainerConfigError(f"resourceFieldRef {ref.get('resource')!r}: the container sets no such value")
    divisor = _quantity(str(ref.get("divisor", "1")))
    value = _quantity(str(raw)) / (divisor or 1)
    return str(int(-(-value // 1)))  # the kubelet rounds up


_SUFFIX = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _quantity(text: str) -> float:
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIX[suffix]
    return float(text)


ObjectReader = Callable[[str, str, str], dict | None]  # (resource, namespace, name) → object or None


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any], read: ObjectReader,
                  base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The container's variables (after `base`, the ones the runtime sets itself), in spec order."""
    namespace = (pod.get("metadata") or {}).get("namespace", "default")
    env: dict[str, str] = dict(base or {})
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, resource in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            if kind in source:
                ref = source[kind]
                obj = read(resource, namespace, ref.get("name", ""))
                if obj is None:
                    if ref.get("optional"):
                        continue
                    raise ContainerConfigError(f'{resource[:-1]} "{ref.get("name")}" not found')
                for key, value in _data(obj, resource).items():
                    env[prefix + key] = value
    for item in container.get("env") or []:
        name = item["name"]
        if "valueFrom" not in item:
            env[name] = expand(str(item.get("value", "")), env)
            continue
        source = item["valueFrom"] or {}
        if "fieldRef" in source:
            env[name] = field_value(pod, source["fieldRef"].get("fieldPath", ""))
        elif "resourceFieldRef" in source:
            env[name] = resource_value(container, source["resourceFieldRef"])
        else:
            found = _key_ref(source, namespace, read)
            if found is not None:
                env[name] = found
    return env


def _key_ref(source: Mapping[str, Any], namespace: str, read: ObjectReader) -> str | None:
    for kind, resource in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        if kind not in source:
            continue
        ref = source[kind]
        obj = read(resource, namespace, ref.get("name", ""))
        data = _data(obj, resource) if obj is not None else None
        if data is None or ref.get("key") not in data:
            if ref.get("optional"):
                return None
            what = f'{resource[:-1]} "{ref.get("name")}" not found' if data is None else \
                f'couldn\'t find key {ref.get("key")} in {resource[:-1].capitalize()} {namespace}/{ref.get("name")}'
            raise ContainerConfigError(what)
        return data[ref["key"]]
    raise ContainerConfigError("valueFrom names no source the kubelet knows")


def _data(obj: Mapping[str, Any], resource: str) -> dict[str, str]:
    if resource == "secrets":
        decoded = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return {**decoded, **(obj.get("stringData") or {})}
    return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}


def command_line(container: Mapping[str, Any], env: Mapping[str, str],
                 image_entrypoint: tuple[str, ...] = (), image_cmd: tuple[str, ...] = ()) -> list[str]:
    """argv as the runtime execs it: the manifest's `command` (else the image's ENTRYPOINT), then
    its `args` (else, only without a manifest command, the image's CMD); `$(VAR)` expanded."""
    command = container.get("command")
    args = container.get("args")
    argv = list(command) + list(args or []) if command else list(image_entrypoint) + list(
        args if args is not None else image_cmd)
    return [expand(str(a), env) for a in argv]

"""Probe and tool output → typed readings: Prometheus text, `k=v` lines, and both dcgmi JSON shapes.

Parsing lives apart from transport so it is tested on text alone and reads the same for the twin
and a live node.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class OutputFormatError(ValueError):
    """A probe or tool printed something we cannot read; the message quotes the offending text."""


# -- Prometheus metrics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One metric sample: its full name (with `_total` etc.), its labels, its value."""

    name: str
    labels: Mapping[str, str]
    value: float


class Scrape(list[Sample]):
    """The samples of one scrape, and the names of every family it declared (`families`): a
    labelled counter declares its family before its first sample, so a family missing from
    `families` is absent, not zero."""

    families: frozenset[str] = frozenset()


def parse_metrics(text: str) -> Scrape:
    """Every sample of a Prometheus text exposition (the agent's :9100/metrics page)."""
    from prometheus_client.parser import text_string_to_metric_families  # on first use, as the cluster client

    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise OutputFormatError(f"not Prometheus text ({exc}): {text[:200]!r}") from exc
    scrape = Scrape(Sample(s.name, dict(s.labels), float(s.value)) for family in families for s in family.samples)
    # prometheus_client names a counter family without its `_total`; keep both spellings
    scrape.families = frozenset(name for f in families for name in (f.name, f"{f.name}_total" if f.type == "counter" else f.name))
    return scrape


def has_family(samples: Iterable[Sample], name: str) -> bool:
    """Whether a scrape declared the family `name` (with or without `_total`)."""
    families = getattr(samples, "families", None)
    if families is None:  # a plain list of samples (a value bound before scrapes kept their families)
        return any(_matches(s, name, None) for s in samples)
    return name in families or f"{name}_total" in families


def _matches(sample: Sample, name: str, labels: Mapping[str, str] | None) -> bool:
    # A counter family `x_total` exposes samples `x_total` and `x_created`; match the exact name,
    # also accepting the family name without `_total` as written by people.
    wanted = {name, name if name.endswith("_total") else f"{name}_total"}
    if sample.name not in wanted:
        return False
    return all(sample.labels.get(k) == v for k, v in (labels or {}).items())


def metric_sum(samples: Iterable[Sample], name: str, labels: Mapping[str, str] | None = None) -> float:
    """Sum of the samples of `name` whose labels include `labels`; an absent family sums to 0.

    Labelled counters have no sample until first incremented (contract §3.5), so absence is zero.
    """
    return sum(s.value for s in samples if _matches(s, name, labels))


def metric_by_label(samples: Iterable[Sample], name: str, label: str) -> dict[str, float]:
    """{label value: sample value} for one gauge family, e.g. applied_limit_watts by `gpu`."""
    return {s.labels[label]: s.value for s in samples if s.name == name and label in s.labels}


# -- k=v probe lines ----------------------------------------------------------------------------


def parse_kv_lines(text: str) -> dict[str, str]:
    """`key=value` lines → dict; blank lines ignored; anything else is a format error.

    Probes print `k=v` lines rather than JSON so no client-side JSON mangling can touch them
    (contract Finding #11).
    """
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise OutputFormatError(f"line {number} is not key=value: {line[:120]!r}")
        result[key.strip()] = value.strip()
    return result


def parse_index_ints(text: str) -> dict[int, int]:
    """`i=W` lines (GPU index → integer) → {int: int}."""
    try:
        return {int(k): int(v) for k, v in parse_kv_lines(text).items()}
    except ValueError as exc:
        raise OutputFormatError(f"expected index=integer lines: {text[:200]!r}") from exc


def parse_index_lists(text: str) -> dict[int, list[int]]:
    """`i=a,b,c` lines (GPU index → PIDs, possibly empty) → {int: [int]}."""
    try:
        return {
            int(k): [int(p) for p in v.split(",") if p]
            for k, v in parse_kv_lines(text).items()
        }
    except ValueError as exc:
        raise OutputFormatError(f"expected index=pid,pid lines: {text[:200]!r}") from exc


# -- dcgmi --------------------------------------------------------------------------------------

AGENT_GROUP_PREFIX = "dynamo-power-agent-gpu-"


def _json_body(text: str, what: str) -> object:
    try:
        return json.loads(text)["body"]
    except (ValueError, KeyError, TypeError) as exc:
        raise OutputFormatError(f"{what} is not dcgmi JSON with a body: {text[:200]!r}") from exc


def parse_dcgmi_agent_groups(text: str) -> dict[int, str]:
    """`dcgmi group --list -j` → {agent GPU index: group id} for the agent's own groups.

    The index is the suffix of `dynamo-power-agent-gpu-<idx>`, which is DCGM's order, not NVML's.
    """
    body = _json_body(text, "dcgmi group --list -j")
    entries = body if isinstance(body, list) else list(body.values()) if isinstance(body, dict) else []
    groups: dict[int, str] = {}
    for entry in entries:
        name = str(entry.get("Group Name", "")) if isinstance(entry, dict) else ""
        if name.startswith(AGENT_GROUP_PREFIX):
            suffix = name.rsplit("-", 1)[-1]
            if suffix.isdigit():
                groups[int(suffix)] = str(entry.get("Group ID", "")).strip()
    return groups


def _watts(value: object) -> int | None:
    try:
        return round(float(str(value).strip()))
    except ValueError:
        return None


_POWER_LIMIT_KEYS = ("Power Limit (W)", "Power Limit")


def _read_power_field(field: object) -> tuple[int | None, int | None]:
    if not isinstance(field, dict):
        return None, None
    children = field.get("children")
    if isinstance(children, dict):  # 4.5+: {"children": {"Current": {"value": "375"}, ...}}
        leaf = {k: (v or {}).get("value") if isinstance(v, dict) else None for k, v in children.items()}
    else:  # 4.0–4.4: {"Current": "350", "Target": "350"}
        leaf = field
    return _watts(leaf.get("Current")), _watts(leaf.get("Target"))


def parse_dcgmi_power_limit(text: str) -> tuple[int | None, int | None]:
    """`dcgmi config --get -g <id> -j` → (current W, target W), in either shape.

    DCGM 4.0–4.4: body is a list of field objects; `"Power Limit (W)"` with flat Current/Target.
    DCGM 4.5+: body is a dict; `"Power Limit"` → `children.Current.value` / `children.Target.value`.
    Either key is accepted in either shape; a missing or non-numeric value (e.g. "****" for an
    unset target) reads as None, and a body with no power field reads as (None, None).
    """
    body = _json_body(text, "dcgmi config --get -j")
    fields: list[object] = body if isinstance(body, list) else [body]
    for entry in fields:
        if isinstance(entry, dict):
            for key in _POWER_LIMIT_KEYS:
                if key in entry:
                    return _read_power_field(entry[key])
    return None, None


# -- scenario data ------------------------------------------------------------------------------


MAX_GPUS = 1024  # a caps list names one value per GPU of a node (8 today); more is a typo
MAX_WATTS = 100_000  # no GPU draws 100 kW


def parse_watts_list(text: str) -> list[int]:
    """`"350, 325, 375×2"` → [350, 325, 375, 375]: a multiset of whole watts as scenarios write it.

    Items are separated by commas; `W` units are optional; `×n` (or `xn`) repeats an item. At most
    MAX_GPUS values of at most MAX_WATTS each, checked before any list is built.
    """
    values: list[int] = []
    for item in text.split(","):
        word = item.strip().replace("×", "x")
        if not word:
            continue
        base, _, times = word.partition("x")
        base = base.strip().removesuffix("W").strip()
        if not base.isdigit() or (times and not times.strip().isdigit()):
            raise ValueError(f"{item.strip()!r} is not a power in watts — write e.g. \"350, 325, 375×2\"")
        if len(base) > 6 or int(base) > MAX_WATTS:
            raise ValueError(f"{item.strip()!r}: {base} W is more than any GPU draws — at most {MAX_WATTS} W")
        repeat = int(times) if times else 1
        if len(times.strip()) > 5 or len(values) + repeat > MAX_GPUS:
            raise ValueError(f"{item.strip()!r}: the list names more than {MAX_GPUS} GPUs — one value per GPU of the node")
        values += [int(base)] * repeat
    if not values:
        raise ValueError("an empty list of watts — write e.g. \"350, 325, 375×2\"")
    return values


def watts_list(text: str) -> str:
    """Pydantic validator: accept the text only if it parses as a list of watts (kept as text)."""
    parse_watts_list(text)
    return text

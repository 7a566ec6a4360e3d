"""The facts a target hands to the reports: target, world, seed, environment fingerprint.

Targets (and anything else that knows where a run happens) call these; the records plugin copies
the facts into every scenario record when the scenario finishes, so they survive pytest-xdist
(each worker has its own config, and the controller only sees the records).

    from stepgraph.dsl.reports.environment import record_environment, record_scenario_facts

    record_environment(request.config, target="twin", world="stub-workers", seed=7,
                       fingerprint={"twin": "0.1.0"})          # whole run (this process)
    record_scenario_facts(request.node, world="conflict")     # one scenario, overrides the run

A fingerprint is a flat mapping of names to strings: on the twin its version and world; on a live
cluster the Kubernetes, driver and NVML versions and the GPU SKU. Calling these while the plugin is
inert (no report option given) is harmless.

Without any call, the facts of the DSL's target session are used (`run_info(config)`): the
target's name, `world` and `seed` facts if it has them, and its other scalar facts (or its
`fingerprint` mapping) as the fingerprint. Explicit calls override them.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepgraph.dsl.runinfo import run_info

FACT_NAMES = ("target", "world", "seed", "fingerprint")
RUN_FACTS = pytest.StashKey[dict[str, Any]]()
SCENARIO_FACTS = pytest.StashKey[dict[str, Any]]()


def _merge(store: dict[str, Any], target: str | None, world: str | None, seed: int | str | None,
           fingerprint: dict[str, object] | None) -> None:
    for name, value in (("target", target), ("world", world), ("seed", seed)):
        if value is not None:
            store[name] = value
    if fingerprint:
        merged = dict(store.get("fingerprint", {}))
        merged.update({str(k): str(v) for k, v in fingerprint.items()})
        store["fingerprint"] = merged


def record_environment(config: pytest.Config, *, target: str | None = None, world: str | None = None,
                       seed: int | str | None = None, fingerprint: dict[str, object] | None = None) -> None:
    """Record facts that hold for every scenario this process runs from now on."""
    _merge(config.stash.setdefault(RUN_FACTS, {}), target, world, seed, fingerprint)


def record_scenario_facts(item: pytest.Item, *, target: str | None = None, world: str | None = None,
                          seed: int | str | None = None, fingerprint: dict[str, object] | None = None) -> None:
    """Record facts for one scenario (e.g. the world it chose); they override the run's facts."""
    _merge(item.stash.setdefault(SCENARIO_FACTS, {}), target, world, seed, fingerprint)


def session_facts(config: pytest.Config) -> dict[str, Any]:
    """What the DSL's target session says about itself, in our four fact names."""
    info = run_info(config)
    facts = info.facts
    fingerprint = facts.get("fingerprint")
    if not isinstance(fingerprint, dict):
        fingerprint = {k: v for k, v in facts.items()
                       if k not in FACT_NAMES and isinstance(v, str | int | float | bool)}
    return {"target": info.target_name or facts.get("target"), "world": facts.get("world"),
            "seed": facts.get("seed"), "fingerprint": {str(k): str(v) for k, v in fingerprint.items()}}


def facts_for(item: pytest.Item) -> dict[str, Any]:
    """The target session's facts, overlaid with the run's recorded facts, then the scenario's own."""
    facts: dict[str, Any] = {"target": None, "world": None, "seed": None, "fingerprint": {}}
    sources = (session_facts(item.config), item.config.stash.get(RUN_FACTS, {}), item.stash.get(SCENARIO_FACTS, {}))
    for source in sources:
        for name in FACT_NAMES:
            if name == "fingerprint":
                facts["fingerprint"] = {**facts["fingerprint"], **source.get("fingerprint", {})}
            elif source.get(name) is not None:
                facts[name] = source[name]
    return facts

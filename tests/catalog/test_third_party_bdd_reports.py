"""Tools that read pytest-bdd's own view of a run work on ours, YAML scenarios included.

allure-pytest-bdd and pytest-bdd's --cucumberjson name each scenario by its feature file relative
to the rootdir; a YAML scenario runs from the `.feature` stepgraph generates for it, so that file
must live inside the rootdir and still exist when the run is over. The same run is strict about
ResourceWarning: an exec websocket or client left open would show up here.

The run is the catalog's on the default world (path-b), which the world runs make once for every
test reading it, with those tools' reports and `-W error::ResourceWarning`.
"""

from __future__ import annotations

import json

from catalog_runs import ROOT, world_runs


def test_allure_pytest_bdd_and_pytest_bdds_cucumber_json_read_the_catalog() -> None:
    run = world_runs()["path-b-nvml"]
    assert run.returncode == 0 and run.reports is not None, run.output[-3000:]
    assert [w for w in run.warnings if "ResourceWarning" in w] == [], run.warnings
    allure, bdd_json = run.reports / "allure", run.reports / "bdd.json"
    results = [json.loads(p.read_text()) for p in allure.glob("*-result.json")]
    statuses = {r["fullName"]: r["status"] for r in results}
    assert len(statuses) == run.passed and set(statuses.values()) == {"passed"}, statuses
    assert sum("/.stepgraph/features/" in name for name in statuses) >= 3  # the catalog's YAML scenarios
    uris = [feature["uri"] for feature in json.loads(bdd_json.read_text())]
    assert sum(".stepgraph/features/" in uri for uri in uris) >= 3
    assert [uri for uri in uris if not (ROOT / uri).is_file()] == []

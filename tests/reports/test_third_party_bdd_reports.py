"""Tools that read pytest-bdd's own view of a run work on ours, YAML scenarios included.

allure-pytest-bdd and pytest-bdd's --cucumberjson name each scenario by its feature file relative
to the rootdir; a YAML scenario runs from the `.feature` stepgraph generates for it, so that file
must live inside the rootdir and still exist when the run is over. The same run is strict about
ResourceWarning: an exec websocket or client left open would show up here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_allure_pytest_bdd_and_pytest_bdds_cucumber_json_read_the_catalog(tmp_path: Path) -> None:
    allure, bdd_json = tmp_path / "allure", tmp_path / "bdd.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "scenarios", "-q", "-p", "no:cacheprovider",
                           f"--alluredir={allure}", f"--cucumberjson={bdd_json}", "-W", "error::ResourceWarning"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ResourceWarning" not in done.stdout + done.stderr, done.stdout[-3000:]
    passed = int(re.search(r"(\d+) passed", done.stdout).group(1))
    results = [json.loads(p.read_text()) for p in allure.glob("*-result.json")]
    statuses = {r["fullName"]: r["status"] for r in results}
    assert len(statuses) == passed and set(statuses.values()) == {"passed"}, statuses
    assert sum("/.stepgraph/features/" in name for name in statuses) >= 3  # the catalog's YAML scenarios
    uris = [feature["uri"] for feature in json.loads(bdd_json.read_text())]
    assert sum(".stepgraph/features/" in uri for uri in uris) >= 3
    assert [uri for uri in uris if not (REPO / uri).is_file()] == []

"""Loading the step libraries imports no cluster client and no YAML parser, `stepgraph lint` of a
Gherkin file imports neither pytest nor a YAML parser or schema validator, the pytest plugins
import no YAML parser or Markdown parser, and collecting the catalog starts no twin: the
kubernetes client, urllib3, pytest, ruamel, jsonschema, markdown-it and the twin's API server
(aiohttp) each cost a good part of what such a lint or collection takes in all, so they come on
first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOAD_STEP_LIBRARIES = """
import sys
from stepgraph.dsl import REGISTRY
REGISTRY.load_entry_points()
assert len(REGISTRY.steps) > 50, len(REGISTRY.steps)
print(sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'urllib3', 'ruamel'}))
"""

IMPORT_THE_PLUGINS = """
import sys
import stepgraph.dsl.plugin, stepgraph.dsl.reports.plugin, stepgraph.targets.pytest_options
print(sorted({m.split('.')[0] for m in sys.modules} & {'ruamel', 'markdown_it', 'jsonschema', 'kubernetes'}))
"""

LINT_ONE_FILE = """
import sys
from stepgraph.dsl.cli import main
assert main(['lint', sys.argv[1]]) == 0
heavy = {'kubernetes', 'urllib3', 'pytest', '_pytest', 'pytest_bdd', 'jsonschema', 'prometheus_client', 'ruamel'}
print(sorted({m.split('.')[0] for m in sys.modules} & heavy))
"""

COLLECT_THE_CATALOG = """
import sys
import pytest
assert pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'scenarios']) == 0
heavy = {'kubernetes', 'urllib3', 'aiohttp', 'stepgraph.twin.cluster', 'stepgraph.twin.apiserver'}
print(sorted(heavy & ({m.split('.')[0] for m in sys.modules} | set(sys.modules))))
"""


def _imported(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_loading_every_step_library_imports_no_cluster_client() -> None:
    assert _imported(LOAD_STEP_LIBRARIES) == "[]"


def test_importing_the_pytest_plugins_imports_no_yaml_or_markdown_parser() -> None:
    assert _imported(IMPORT_THE_PLUGINS) == "[]"


def test_linting_a_gherkin_file_imports_no_test_runner_client_or_schema_validator() -> None:
    assert _imported(LINT_ONE_FILE, str(ROOT / "scenarios" / "demo" / "bindings.feature")) == "[]"


def test_collecting_the_catalog_starts_no_twin_and_imports_no_cluster_client() -> None:
    assert _imported(COLLECT_THE_CATALOG) == "[]"

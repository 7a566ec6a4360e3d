"""examples/step-library: a step library outside our package, on the public API only, runs on the twin."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "step-library"


def test_the_example_library_imports_only_public_modules() -> None:
    for path in (LIBRARY / "acme_steps").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("stepgraph"):
                assert node.module in ("stepgraph.dsl", "stepgraph.steps"), f"{path.name} imports {node.module}"


def test_importing_stepgraph_steps_does_not_import_kubernetes() -> None:
    code = "import sys, stepgraph.steps; print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_the_example_library_runs_its_scenario_on_the_twin(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # In the test's process, from a fresh process's state (tests/conftest.py): the library and its
    # steps are imported for this run and forgotten after it, as a process of its own would.
    shutil.copytree(LIBRARY / "scenarios", pytester.path / "scenarios")
    (pytester.path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nstepgraph_paths = ["scenarios"]\n')
    (pytester.path / "conftest.py").write_text("import acme_steps.pods  # the library's steps (installed, its entry point does this)\n")
    monkeypatch.syspath_prepend(str(LIBRARY))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "scenarios")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)

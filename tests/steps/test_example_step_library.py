"""examples/step-library: a step library outside our package, on the public API only, runs on the twin."""

from __future__ import annotations

import ast
import os
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


def test_the_example_library_runs_its_scenario_on_the_twin(tmp_path: Path) -> None:
    shutil.copytree(LIBRARY / "scenarios", tmp_path / "scenarios")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nstepgraph_paths = ["scenarios"]\n')
    (tmp_path / "conftest.py").write_text("import acme_steps.pods  # the library's steps (installed, its entry point does this)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(LIBRARY), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "scenarios"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "1 passed" in done.stdout

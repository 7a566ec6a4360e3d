"""Probe scripts ship as package data and are the exact bytes run on the twin and live."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stepgraph.steps import probes

PROBE_DIR = Path(probes.__file__).parent
STDLIB_AND_PYNVML = {"pynvml", "sys", "urllib", "urllib.request"}


@pytest.mark.parametrize("name", probes.PROBES)
def test_probe_source_is_the_shipped_file_byte_for_byte(name: str) -> None:
    assert probes.source(name).encode() == (PROBE_DIR / f"{name}.py").read_bytes()
    assert probes.argv(name)[:2] == ["python3", "-c"]


@pytest.mark.parametrize("name", probes.PROBES)
def test_probe_imports_only_stdlib_and_pynvml(name: str) -> None:
    tree = ast.parse(probes.source(name))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= STDLIB_AND_PYNVML


def test_unknown_probe_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="nvml_caps"):
        probes.source("nvidia_smi")

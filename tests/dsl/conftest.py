"""Fixtures for the DSL tests: the test vocabulary's registry, and a helper that compiles scenario
text from a temporary file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dsl_vocabulary import make_registry

from stepgraph.dsl import Registry
from stepgraph.dsl.compiler import CompiledFile, compile_file


@pytest.fixture
def registry() -> Registry:
    return make_registry()


@pytest.fixture
def compile_source(tmp_path: Path, registry: Registry) -> Callable[..., CompiledFile]:
    def compile_source(text: str | bytes, name: str = "s.feature", **kwargs: object) -> CompiledFile:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return compile_file(path, registry, display=name, **kwargs)  # type: ignore[arg-type]

    return compile_source

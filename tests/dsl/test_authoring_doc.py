"""The example in docs/design/authoring-steps.md declares working steps, usable from both syntaxes."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepgraph.dsl import REGISTRY, Bindings, CheckFailed, FinalizerStack, ManualClock, Power, Session, StepContext
from stepgraph.dsl.compiler import compile_file
from stepgraph.dsl.execute import execute_call

DOC = Path(__file__).resolve().parents[2] / "docs" / "design" / "authoring-steps.md"


def _block(language: str, index: int = 0) -> str:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)[index]


@pytest.fixture
def doc_steps() -> Iterator[dict[str, object]]:
    REGISTRY.load_entry_points()
    module = types.ModuleType("doc_example")
    sys.modules[module.__name__] = module  # so pydantic resolves the postponed annotations
    exec(_block("python"), module.__dict__)
    yield module.__dict__
    del sys.modules[module.__name__]
    for sid in ("demo_caps.set", "demo_caps.is"):
        REGISTRY.remove(sid)


@pytest.mark.usefixtures("doc_steps")
def test_documented_example_compiles_the_same_from_both_syntaxes(tmp_path: Path) -> None:
    prelude_g = 'Feature: F\n  Scenario: S\n    Given the value "0" is bound as "gpu"\n'
    gherkin = prelude_g + "".join(f"    {line}\n" for line in _block("gherkin").splitlines())
    yaml = "title: S\nsteps:\n  - bind: {value: '0', as: gpu}\n" + "".join(f"  {line}\n" for line in _block("yaml").splitlines())
    (tmp_path / "s.feature").write_text(gherkin)
    (tmp_path / "s.yaml").write_text(yaml)
    g, y = compile_file(tmp_path / "s.feature", REGISTRY), compile_file(tmp_path / "s.yaml", REGISTRY)
    assert g.ok and y.ok, [str(d) for d in g.diagnostics + y.diagnostics]
    assert g.feature.background == y.feature.background and g.feature.scenarios[0].steps == y.feature.scenarios[0].steps
    assert g.feature.needs(g.feature.scenarios[0]) == {"nvml"}


@pytest.mark.usefixtures("doc_steps")
def test_documented_example_runs_and_its_compensation_restores() -> None:
    ctx = StepContext(session=Session(clock=ManualClock()), bindings=Bindings(), finalizers=FinalizerStack())
    ctx.bindings.bind("gpu", 0)
    set_cap, cap_is = REGISTRY.steps["demo_caps.set"], REGISTRY.steps["demo_caps.is"]
    execute_call(set_cap, set_cap.params.model_validate({"gpu": "$gpu", "limit": "300 W"}), ctx, bind_as="old")
    execute_call(cap_is, cap_is.params.model_validate({"gpu": "$gpu", "limit": "300000 mW"}), ctx)
    with pytest.raises(CheckFailed):
        execute_call(cap_is, cap_is.params.model_validate({"gpu": "$gpu", "limit": "250 W"}), ctx)
    ctx.finalizers.run()
    assert ctx.cache["caps"] == {0: Power.parse("400 W")} and ctx.bindings["old"] == Power.parse("400 W")

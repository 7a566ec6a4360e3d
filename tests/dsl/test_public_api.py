"""The public step-authoring API: what stepgraph.dsl exports, and declarations that are refused."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import stepgraph.dsl as dsl
from stepgraph.dsl import NoParams, Params, Power, Ref, Registry, StepDeclarationError


def test_all_lists_exactly_the_public_names() -> None:
    assert sorted(dsl.__all__) == sorted(set(dsl.__all__))
    for name in dsl.__all__:
        assert hasattr(dsl, name), name
    for needed in (
        "step",
        "given",
        "when",
        "then",
        "Params",
        "StepContext",
        "Target",
        "TargetConfigError",
        "Power",
        "Duration",
        "Ref",
        "eventually",
        "FinalizerStack",
        "multiset_equal",
    ):
        assert needed in dsl.__all__


LAZY = """
import sys
import stepgraph.dsl as dsl
print("pydantic" in sys.modules)
import stepgraph.dsl.eventually  # the module of the same name as the function
print(dsl.eventually is sys.modules["stepgraph.dsl.eventually"].eventually, dsl.Params.__module__)
"""


def test_the_package_loads_a_name_when_it_is_first_used() -> None:
    # The console script's interrupt handling imports one module of the package: the package itself
    # must not bring the API, and pydantic behind it, along.
    done = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["False", "True", "stepgraph.dsl.registry"]


class Cap(Params):
    gpu: Ref
    limit: Power


def _declare(**overrides: object) -> None:
    options: dict[str, object] = {
        "id": "gpu.set_cap",
        "keyword": "when",
        "phrase": "the cap of GPU {gpu:ref} is set to {limit:power}",
        "effects": {"writes-gpu-caps"},
        "compensation": lambda ctx, p, r: None,
    }
    options.update(overrides)
    reg = Registry()
    reg.step(options.pop("id"), options.pop("keyword"), options.pop("phrase"), **options)(lambda ctx, p: None)  # type: ignore[arg-type]


def test_a_valid_declaration_registers_with_its_key_and_model() -> None:
    reg = Registry()

    @reg.when("gpu.set_cap", "the cap of GPU {gpu:ref} is set to {limit:power}", effects={"writes-gpu-caps"})
    def set_cap(ctx: object, p: Cap) -> None:
        """Set one GPU's power cap."""

    decl = reg.steps["gpu.set_cap"]
    assert decl.key == "set_cap" and decl.params is Cap and decl.doc == "Set one GPU's power cap."
    assert reg.by_key["set_cap"] is decl
    assert decl.mutating_effects == {"writes-gpu-caps"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id": "NoDots"}, "ids are dotted lower-case names"),
        ({"keyword": "and"}, "keyword must be one of"),
        ({"phrase": "the cap of GPU {gpu:ref} is {nope}", "params": Cap}, "does not have"),
        ({"phrase": "the cap of GPU {gpu:ref}", "params": Cap}, "fields ['limit'] do not appear in the phrase — every parameter must"),
        ({"phrase": "x {gpu:colour} {limit:power}", "params": Cap}, "unknown placeholder type 'colour'"),
        ({"phrase": "x {gpu:ref} {gpu:ref} {limit:power}", "params": Cap}, "appears twice"),
        ({"phrase": "x {gpu:ref} {limit:power} as {as}", "params": Cap}, "produces a value names it with {as}"),
        ({"produces": "caps", "params": Cap}, "produces a value names it with {as}"),
        ({"keyword": "then", "params": Cap}, "cannot have effects"),
        ({"key": "expect", "params": Cap}, "YAML key 'expect'"),
        ({"min_within": "1 tick", "params": Cap}, "min_within applies to checks"),
        ({"absolute": {"agent-counters"}, "params": Cap}, "absolute= names what a check asserts"),
        ({"keyword": "then", "effects": (), "compensation": None, "min_within": "soon", "params": Cap}, "min_within: 'soon' is not"),
    ],
)
def test_bad_declarations_are_refused_with_a_reason(overrides: dict[str, object], message: str) -> None:
    overrides.setdefault("params", Cap)
    with pytest.raises(StepDeclarationError, match=re.escape(message)):
        _declare(**overrides)


def test_ids_keys_and_phrases_are_unique_per_registry() -> None:
    reg = Registry()
    reg.given("demo.one", "one thing")(lambda ctx, p: None)
    with pytest.raises(StepDeclarationError, match="declared twice"):
        reg.given("demo.one", "another thing")(lambda ctx, p: None)
    with pytest.raises(StepDeclarationError, match="already used"):
        reg.given("other.one", "a third thing")(lambda ctx, p: None)
    with pytest.raises(StepDeclarationError, match="same phrase"):
        reg.given("demo.two", "one thing")(lambda ctx, p: None)


def test_model_is_taken_from_the_second_parameters_annotation() -> None:
    reg = Registry()

    @reg.given("demo.nothing", "nothing at all")
    def nothing(ctx: object, p: NoParams) -> None: ...

    @reg.when("demo.cap", "cap {gpu:ref} at {limit:power}")
    def cap(ctx: object, p: Cap) -> None: ...

    assert reg.steps["demo.nothing"].params is NoParams
    assert reg.steps["demo.cap"].params is Cap


def test_an_unresolvable_model_annotation_asks_for_params() -> None:
    class Local(Params):
        n: int

    def local(ctx: object, p: Local) -> None: ...

    reg = Registry()
    with pytest.raises(StepDeclarationError, match="cannot resolve the annotation of 'p' — pass params=YourModel"):
        reg.then("demo.local", "n is {n:int}")(local)
    reg.then("demo.local", "n is {n:int}", params=Local)(local)
    assert reg.steps["demo.local"].params is Local

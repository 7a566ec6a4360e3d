"""What the step libraries of an entry-point group declare is kept (dsl/step_index.py): a second
process loading the group imports no library until one of its steps is needed, and binds,
suggests and reports ambiguity as a process that imported them all. An edited library is
imported whole again; a library's declaration error, a clash with a step declared before, and a
library that registers a placeholder type behave as without anything kept.

The libraries here are a distribution of the test's own (a .dist-info folder on the search path),
under a group of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GROUP = "stepgraph.kept_test_steps"

LIBRARY_A = """
from stepgraph.dsl import Params, given, then


class N(Params):
    n: int


@given("kept_a.start", "a starts at {n:int}")
def start(ctx, p: N) -> None: ...


@then("kept_a.odd", "x {n:int} y", key="odd_a")
def odd(ctx, p: N) -> None: ...
"""

LIBRARY_B = """
from stepgraph.dsl import NoParams, Params, then, when


class M(Params):
    n: float


@then("kept_b.odd", "x {n:number} y", key="odd_b")
def odd(ctx, p: M) -> None: ...


@when("kept_b.go", "b goes", needs={"b-things"})
def go(ctx, p: NoParams) -> None: ...
"""

LOAD_AND_BIND = """
import json, sys
from stepgraph.dsl import REGISTRY, StepDeclarationError, given
from stepgraph.dsl.binder import bind_text
from stepgraph.dsl.checks import known_capabilities
from stepgraph.dsl.diagnostics import Location

if sys.argv[1] == "declare-first":
    given("mine.walk", "b goes")(lambda ctx, p: None)
try:
    REGISTRY.load_entry_points(sys.argv[2])
except StepDeclarationError as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(0)
libraries = lambda: sorted(m for m in sys.modules if m.startswith("kept_lib_"))
out = {"imported": libraries(), "capabilities": sorted(known_capabilities(REGISTRY)), "bound": {}}
for text in sys.argv[3:]:
    call, diags = bind_text(REGISTRY, text, Location("s.feature"))
    out["bound"][text] = [call.step_id if call else None, [str(d) for d in diags]]
out["imported_after"] = libraries()
out["matched"] = [m.decl.id for m in REGISTRY.match("x 1 y")]
out["steps"] = [d.id for d in REGISTRY]
print(json.dumps(out))
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "site"
    info = folder / "kept_libs-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kept-libs\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\na = kept_lib_a\nb = kept_lib_b\n\n[{GROUP}_types]\nc = kept_lib_c\n")
    (folder / "kept_lib_a.py").write_text(LIBRARY_A)
    (folder / "kept_lib_b.py").write_text(LIBRARY_B)
    return folder


def _load(site: Path, *texts: str, mode: str = "plain", group: str = GROUP) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD_AND_BIND, mode, group, *texts], capture_output=True, text=True,
                          check=True, timeout=120, env={**_env(), "PYTHONPATH": str(site)})
    return json.loads(done.stdout)


def _env() -> dict[str, str]:
    return dict(os.environ)


def _kept(site: Path) -> list[Path]:
    return list((site.parent / "cache" / "stepgraph" / "step-declarations").glob("*.json"))


TEXTS = ("a starts at 3", "x 1 y", "b gos", "a starts at three")


def test_a_second_process_imports_only_the_library_whose_step_it_binds(site: Path) -> None:
    first = _load(site, *TEXTS)
    second = _load(site, *TEXTS)
    assert first["imported"] == ["kept_lib_a", "kept_lib_b"]
    assert second["imported"] == []
    assert second["bound"] == first["bound"]
    assert second["bound"]["a starts at 3"] == ["kept_a.start", []]
    assert "ambiguous step: 'x 1 y' matches kept_a.odd, kept_b.odd" in second["bound"]["x 1 y"][1][0]
    assert "closest step: kept_b.go — 'b goes'" in second["bound"]["b gos"][1][0]
    assert "closest step: kept_a.start — 'a starts at {n:int}'" in second["bound"]["a starts at three"][1][0]
    assert second["matched"] == first["matched"] == ["kept_a.odd", "kept_b.odd"]  # the order they were declared in
    assert second["capabilities"] == first["capabilities"] and "b-things" in second["capabilities"]
    assert second["steps"] == first["steps"] == ["kept_a.odd", "kept_a.start", "kept_b.go", "kept_b.odd"]


def test_binding_one_library_s_step_leaves_the_other_unimported(site: Path) -> None:
    _load(site)
    second = _load(site, "a starts at 3", "b gos")
    assert second["bound"]["a starts at 3"] == ["kept_a.start", []]
    assert second["imported"] == [] and second["imported_after"] == ["kept_lib_a"]
    assert "closest step: kept_b.go — 'b goes'" in second["bound"]["b gos"][1][0]


def test_an_edited_library_is_imported_again_and_its_new_phrase_read(site: Path) -> None:
    _load(site)
    (site / "kept_lib_b.py").write_text(LIBRARY_B.replace('"b goes"', '"b walks"'))
    edited = _load(site, "b walks", "b goes")
    assert edited["imported"] == ["kept_lib_a", "kept_lib_b"]
    assert edited["bound"]["b walks"] == ["kept_b.go", []]
    assert edited["bound"]["b goes"][0] is None
    again = _load(site, "b walks")
    assert again["imported"] == [] and again["bound"]["b walks"] == ["kept_b.go", []]


def test_a_library_declaration_error_is_reported_as_without_a_kept_index(site: Path) -> None:
    _load(site)
    assert _kept(site)
    (site / "kept_lib_a.py").write_text(LIBRARY_A.replace('"kept_a.start"', '"Kept A"'))
    broken = _load(site)
    for kept in _kept(site):
        kept.unlink()
    assert broken == _load(site)
    assert broken["error"].startswith("step library 'kept_lib_a': step 'Kept A': ids are dotted lower-case names")


def test_a_clash_with_a_step_declared_before_is_reported_as_without_a_kept_index(site: Path) -> None:
    _load(site)
    assert _kept(site)
    clash = _load(site, mode="declare-first")
    for kept in _kept(site):
        kept.unlink()
    assert clash == _load(site, mode="declare-first")
    assert "step 'kept_b.go': same phrase as 'mine.walk'" in clash["error"]


def test_nothing_is_kept_of_libraries_that_register_a_placeholder_type(site: Path) -> None:
    (site / "kept_lib_c.py").write_text(
        "from stepgraph.dsl import Params, given, register_placeholder_type\n"
        "register_placeholder_type('colour', r'red|green', str, str)\n"
        "class C(Params):\n    c: str\n"
        "@given('kept_c.paint', 'paint it {c:colour}')\ndef paint(ctx, p: C) -> None: ...\n")
    assert _load(site, "paint it red", group=f"{GROUP}_types")["bound"]["paint it red"] == ["kept_c.paint", []]
    assert not _kept(site)
    assert _load(site, group=f"{GROUP}_types")["imported"] == ["kept_lib_c"]


PRELOAD = """
import sys
from stepgraph.dsl import REGISTRY
if sys.argv[1] == "keep":
    REGISTRY.load_entry_points()
else:
    from stepgraph.dsl.run_worlds import _preload
    _preload(["--target", "local"])
    # and what each world's pytest would otherwise import as it configures its run
    assert {"_pytest.junitxml", "_pytest.unittest", "pdb", "stepgraph.dsl.load_yaml",
            "stepgraph.dsl.reports.design"} <= set(sys.modules), "not preloaded"
print("stepgraph.steps.k8s" in sys.modules)
"""


def test_the_parent_of_several_world_runs_imports_every_library_before_it_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))

    def run(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", PRELOAD, mode], capture_output=True, text=True, check=True, timeout=120)
        return done.stdout.strip()

    assert run("keep") == "True"
    assert _kept_in(tmp_path / "cache")
    assert run("preload") == "True"  # with the declarations kept, loading the group alone imports none


def _kept_in(cache: Path) -> list[Path]:
    return list((cache / "stepgraph" / "step-declarations").glob("*.json"))


def test_a_step_librarys_parameter_models_are_built_when_first_used_not_on_import() -> None:
    probe = """
import pydantic
from stepgraph.dsl import Params
import stepgraph.steps.k8s as k8s
models = [m for m in Params.__subclasses__() if m.__module__ == k8s.__name__]
print(len(models), sum(m.__pydantic_complete__ for m in models), sorted(models[0].model_fields) != [])
try:
    models[0].model_validate({})
except pydantic.ValidationError:
    pass
print(models[0].__pydantic_complete__)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    models, built_on_import, fields_known, built_on_use = done.stdout.split() or [""] * 4
    assert (models.isdigit() and int(models) > 3, built_on_import, fields_known, built_on_use) == (True, "0", "True", "True"), \
        done.stdout + done.stderr

"""The twin target gates scenarios on the capabilities of a world it validated before, kept on
disk (targets/world_facts.py): a second process configuring the same world with the same options
knows them without importing the world's model or the YAML parser. An edited world file, another
option, or a changed module the validating process had loaded means validating again; a world
that does not validate is refused every time and never kept."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepgraph.dsl import TargetConfigError
from stepgraph.dsl.cache_dir import keep_derived, read_kept_derived
from stepgraph.targets.twin import TwinTarget

PROFILE = Path(__file__).resolve().parents[2] / "examples" / "profiles" / "path-b.yaml"

CONFIGURE = """
import sys
from stepgraph.targets.twin import TwinTarget
target = TwinTarget(env={})
target.configure(dict(arg.split("=", 1) for arg in sys.argv[1:]))
print(sorted(target.capabilities))
print("stepgraph.twin.world" in sys.modules, "ruamel.yaml" in sys.modules)
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "stepgraph" / "twin-world-facts"


def _configure_in_a_process(*options: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", CONFIGURE, *options], capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip().splitlines()


def test_a_second_process_knows_the_world_by_its_kept_facts(tmp_path: Path) -> None:
    first = _configure_in_a_process("variant=kaim")
    second = _configure_in_a_process("variant=kaim")
    assert first[1] == "True True"  # validated: the world's model and the YAML parser were imported
    assert second[1] == "False False"
    assert second[0] == first[0] and "'variant-kaim'" in second[0]
    other = _configure_in_a_process("variant=target")  # another option: validated again
    assert other[1] == "True True" and "'variant-target'" in other[0]


def test_an_edited_world_file_is_validated_again(tmp_path: Path) -> None:
    world = tmp_path / "w.yaml"
    world.write_text(PROFILE.read_text())
    assert "path-b" in _configure_in_a_process(f"world={world}")[0]
    assert _configure_in_a_process(f"world={world}")[1] == "False False"
    world.write_text(PROFILE.read_text().replace("variant: target", "variant: kaim"))
    edited = _configure_in_a_process(f"world={world}")
    assert edited[1] == "True True" and "'variant-kaim'" in edited[0]


def test_a_world_that_does_not_validate_is_refused_every_time_and_never_kept(tmp_path: Path, own_cache: Path) -> None:
    world = tmp_path / "w.yaml"
    world.write_text(PROFILE.read_text().replace("seed: 20260521", "seed: many"))
    for _ in range(2):
        with pytest.raises(TargetConfigError, match=r"w\.yaml"):
            TwinTarget(env={}).configure({"world": str(world)})
    assert not list(own_cache.glob("*.json"))
    TwinTarget(env={}).configure({"world": str(PROFILE)})
    assert len(list(own_cache.glob("*.json"))) == 1


def test_a_kept_world_with_a_bad_option_is_still_refused() -> None:
    target = TwinTarget(env={})
    target.configure({})
    with pytest.raises(TargetConfigError, match=r"metrics_via='ssh' — use exec or proxy"):
        TwinTarget(env={}).configure({"metrics_via": "ssh"})
    with pytest.raises(TargetConfigError, match=r"seed='seven' is not an integer"):
        TwinTarget(env={}).configure({"seed": "seven"})


def test_the_world_itself_is_validated_when_a_run_needs_it() -> None:
    TwinTarget(env={}).configure({"variant": "kaim"})
    target = TwinTarget(env={})
    target.configure({"variant": "kaim"})
    assert target.world is not None and target.world.namespace == "kaim-dynamo-system"


@contextlib.contextmanager
def _loaded_module(folder: Path, name: str) -> Iterator[Path]:
    """A module of `folder`, imported (so a value kept now is stamped with its file), and forgotten after."""
    module = folder / f"{name}.py"
    module.write_text("VALUE = 1\n")
    sys.path.insert(0, str(folder))
    try:
        importlib.import_module(name)
        yield module
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


def test_a_kept_value_is_dropped_once_a_module_loaded_when_it_was_derived_changes(tmp_path: Path) -> None:
    with _loaded_module(tmp_path, "derives_it") as module:
        kept = tmp_path / "kept.json"
        keep_derived(kept, {"derived": 1})
        assert read_kept_derived(kept) == {"derived": 1}
        module.write_text("VALUE = 22\n")
        assert read_kept_derived(kept) is None


def test_a_kept_value_is_dropped_when_a_module_is_rewritten_at_the_same_size(tmp_path: Path) -> None:
    with _loaded_module(tmp_path, "derives_too") as module:
        kept = tmp_path / "kept.json"
        keep_derived(kept, "v")
        stat = module.stat()
        module.write_text("VALUE = 2\n")  # same size
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # one nanosecond later
        assert read_kept_derived(kept) is None

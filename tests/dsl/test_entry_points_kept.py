"""A process reads the entry points the last one read on the same search path from the disk, not
from every distribution's metadata, while the distributions are the same: one installed into a
folder of the path, one removed, and one whose entry_points.txt is rewritten in place are each
seen by the next process. Every reading is a process of its own (the test process has read its
entry points already)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GROUPS = """
import importlib.metadata
import json
read = []
original = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda **kw: read.append(1) or original(**kw)  # the metadata of every distribution
from stepgraph.dsl import entry_points  # (its import asks for a group already)
in_group = entry_points.in_group
eps = {group: [[ep.name, ep.value] for ep in in_group(group)] for group in ("kept_test.a", "kept_test.b")}
print(json.dumps({"read": bool(read), "eps": eps}))
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    _install(folder, "one", "[kept_test.a]\nfirst = mod_one:main\n")
    return folder


def _install(folder: Path, name: str, entry_points: str) -> Path:
    info = folder / f"kept_{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: kept-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return info


def _groups(site: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(site), "STEPGRAPH_CACHE_DIR": str(site.parent / "cache")}
    done = subprocess.run([sys.executable, "-c", GROUPS], capture_output=True, text=True, check=True, timeout=60, env=env)
    return json.loads(done.stdout)


def test_a_second_process_takes_the_kept_entry_points(site: Path) -> None:
    first = _groups(site)
    assert first == {"read": True, "eps": {"kept_test.a": [["first", "mod_one:main"]], "kept_test.b": []}}
    assert _groups(site) == {**first, "read": False}


def test_a_distribution_installed_or_removed_is_seen_by_the_next_process(site: Path) -> None:
    _groups(site)
    two = _install(site, "two", "[kept_test.b]\nsecond = mod_two:main\n")
    assert _groups(site) == {"read": True, "eps": {"kept_test.a": [["first", "mod_one:main"]], "kept_test.b": [["second", "mod_two:main"]]}}
    shutil.rmtree(two)
    assert _groups(site) == {"read": True, "eps": {"kept_test.a": [["first", "mod_one:main"]], "kept_test.b": []}}


def test_entry_points_rewritten_in_place_are_seen_by_the_next_process(site: Path) -> None:
    _groups(site)
    listed = site / "kept_one-1.0.dist-info" / "entry_points.txt"
    before = listed.stat()
    listed.write_text("[kept_test.a]\nfirst = mod_one:niam\n")  # as long as before: only the time tells
    os.utime(listed, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert listed.stat().st_size == before.st_size
    assert _groups(site) == {"read": True, "eps": {"kept_test.a": [["first", "mod_one:niam"]], "kept_test.b": []}}


def test_nothing_is_kept_with_a_finder_of_distributions_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepgraph.dsl import entry_points

    class Finder:  # finds distributions the folders of the path do not show
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []

    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    monkeypatch.setattr(entry_points, "_read", {})
    assert entry_points.in_group("stepgraph.steps")
    assert not (tmp_path / "stepgraph" / "entry-points").exists()
    monkeypatch.setattr(sys, "meta_path", sys.meta_path[1:])
    monkeypatch.setattr(entry_points, "_read", {})
    assert entry_points.in_group("stepgraph.steps")
    assert list((tmp_path / "stepgraph" / "entry-points").glob("*.json"))  # kept without it


def test_a_process_whose_working_folder_is_gone_reads_them_as_ever(site: Path) -> None:
    gone = site.parent / "gone"
    gone.mkdir()
    script = f"import os; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n" + GROUPS
    env = {**os.environ, "PYTHONPATH": str(site), "STEPGRAPH_CACHE_DIR": str(site.parent / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"read": True, "eps": {"kept_test.a": [["first", "mod_one:main"]], "kept_test.b": []}}


PYDANTIC_LOOKUPS = """
from pydantic.plugin import _loader
looked = []
original = _loader.entry_points
_loader.entry_points = lambda **kw: looked.append(kw) or original(**kw)  # pydantic's own look-up
from stepgraph.dsl import Params  # as a step library begins
from pydantic import BaseModel


class Model(BaseModel):
    n: int


print(f"pydantic looked for its plugins {len(looked)} time(s)")
"""

PLUGIN = """
class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        print(f"the plugin saw {schema_type.__name__}")
        return None, None, None


plugin = Plugin()
"""


def _pydantic_lookups(site: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(site), "STEPGRAPH_CACHE_DIR": str(site.parent / "cache")}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", PYDANTIC_LOOKUPS], capture_output=True, text=True, check=True, timeout=60, env=env)
    return done.stdout


def test_pydantic_does_not_look_for_plugins_the_kept_entry_points_say_are_not_there(site: Path) -> None:
    for _ in range(2):  # the entry points read, then kept
        assert "pydantic looked for its plugins 0 time(s)" in _pydantic_lookups(site)


def test_a_pydantic_plugin_installed_is_still_found(site: Path) -> None:
    _groups(site)  # the entry points without the plugin are kept
    (site / "kept_plugin.py").write_text(PLUGIN)
    _install(site, "plugin", "[pydantic]\nrecorder = kept_plugin:plugin\n")
    for _ in range(2):
        out = _pydantic_lookups(site)
        assert "pydantic looked for its plugins 1 time(s)" in out and "the plugin saw Model" in out, out

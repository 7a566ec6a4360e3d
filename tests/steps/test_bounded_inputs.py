"""Hostile inputs the cleanup guarantees depend on are refused in one line: a caps list of a
million GPUs, an ad-hoc target that is not a class, a manifest from outside the project or one
that is not a stream of objects; and temp folders a killed run left are removed by the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepgraph.dsl import TargetConfigError, tempdirs
from stepgraph.dsl.cli import main
from stepgraph.dsl.target import load_target
from stepgraph.steps import k8s
from stepgraph.steps._cluster import MANIFEST_DIRS_ENV, CallCounter, Cluster
from stepgraph.steps._parsers import parse_watts_list
from stepgraph.steps.k8s import ManifestError, load_manifest


def test_a_caps_list_of_a_million_gpus_is_a_lint_error_not_a_memory_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "caps.yaml"
    scenario.write_text('id: X\ntitle: caps\nsteps:\n  - expect:\n      all:\n        - applied_limits: {caps: "350x1000000000000"}\n')
    assert main(["lint", str(scenario)]) == 2
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert f"{scenario}:6:34:" in out and "more than 1024 GPUs" in out, out


@pytest.mark.parametrize(("text", "problem"), [("350x1025", "more than 1024 GPUs"), ("100001", "more than any GPU draws"),
                                                ("350x8, 300x1017", "more than 1024 GPUs")])
def test_caps_lists_are_bounded(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_watts_list(text)
    assert parse_watts_list("350x1024") == [350] * 1024


@pytest.mark.parametrize("spec", ["os:system", "os:getcwd", "shutil:rmtree", "os:path"])
def test_an_ad_hoc_target_must_be_a_class(spec: str) -> None:
    with pytest.raises(TargetConfigError, match=r"write package\.module:TargetClass"):
        load_target(spec)


def test_target_os_system_ends_the_run_with_one_line_and_exit_2(pytester: pytest.Pytester) -> None:
    # In the test's process, from a fresh process's state (tests/conftest.py).
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "multi_dgd" / "nvml_caps.feature"
    done = pytester.runpytest_inprocess(str(scenario), "--target", "os:system", "-q", "-p", "no:cacheprovider")
    output = done.stdout.str() + done.stderr.str()
    assert done.ret == 2, output
    assert "target 'os:system' is not a class" in output and "INTERNALERROR" not in output


def _cluster(manifest_dir: Path) -> Cluster:
    return Cluster(api=None, namespace="ns", node="n", manifest_dir=manifest_dir, calls=CallCounter())  # type: ignore[arg-type]


def test_a_manifest_outside_the_project_is_refused_unless_its_folder_is_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "manifests").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    monkeypatch.chdir(project)
    monkeypatch.delenv(MANIFEST_DIRS_ENV, raising=False)
    c = _cluster(project / "manifests")
    with pytest.raises(PermissionError, match=rf"outside the project .* allow its folder with {MANIFEST_DIRS_ENV}="):
        c.manifest("../elsewhere/x.yaml")
    with pytest.raises(PermissionError, match="outside the project"):
        c.manifest(str(elsewhere / "x.yaml"))
    monkeypatch.setenv(MANIFEST_DIRS_ENV, str(elsewhere))
    assert c.manifest(str(elsewhere / "x.yaml")) == (elsewhere / "x.yaml").resolve()


@pytest.mark.parametrize(("content", "problem"), [
    (b"kind: Pod\nmetadata: {name: a}\n", "document 1 has no apiVersion"),
    (b"- a\n- b\n", "document 1 is not a mapping"),
    (b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\n", "document 2 has no metadata.name"),
    (b"apiVersion: v1\nkind: [\n", ":3:1: YAML syntax"),
    (b"\xff\xfe\x00binary", "not UTF-8 text"),
])
def test_a_manifest_that_is_not_a_stream_of_objects_is_one_error_naming_where(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(ManifestError, match=problem) as failure:
        load_manifest(path, "ns")
    assert str(failure.value).startswith(str(path))


def test_a_manifest_read_again_is_as_written_even_after_its_documents_were_edited_or_the_file_changed(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
    first = load_manifest(path, "ns")
    first[0]["data"]["k"] = "edited by a step"
    first[0]["metadata"]["labels"] = {"run": "x"}
    assert load_manifest(path, "other") == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "other"}, "data": {"k": "v"}}]
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    assert [d["metadata"]["name"] for d in load_manifest(path, "ns")] == ["b"]
    path.write_text("apiVersion: v1\nkind: [\n")
    for _ in range(2):  # a stream that does not parse is an error every time it is read
        with pytest.raises(ManifestError, match="YAML syntax"):
            load_manifest(path, "ns")


def test_temp_folders_of_a_killed_run_are_removed_by_the_next_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    left = [tmp_path / f"stepgraph-twin-{dead_pid}-abc", tmp_path / f"stepgraph-features-{dead_pid}-def"]
    alive = [tmp_path / f"stepgraph-twin-{os.getppid()}-ghi", tmp_path / f"stepgraph-twin-{os.getpid()}-jkl", tmp_path / "stepgraph-other"]
    for folder in left + alive:
        folder.mkdir()
        (folder / "kubeconfig").write_text("x")
    assert sorted(tempdirs.sweep_stale(str(tmp_path))) == sorted(left)
    assert all(not f.exists() for f in left) and all(f.exists() for f in alive)


def test_what_a_manifest_parses_into_is_kept_across_processes_unless_json_would_change_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    kept = tmp_path / "cache" / "stepgraph" / "manifest-documents"
    plain = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {k: v, n: '1'}\n"
    k8s._parsed_yaml.cache_clear()  # as in a new process
    docs = k8s._parsed_yaml(plain)
    assert [json.loads(p.read_text()) for p in kept.iterdir()] == [docs]
    k8s._parsed_yaml.cache_clear()
    (only,) = kept.iterdir()
    only.write_text('[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-disk"}}]')
    assert k8s._parsed_yaml(plain)[0]["metadata"]["name"] == "from-disk"  # read from disk, not parsed again
    k8s._parsed_yaml.cache_clear()
    only.write_text("not json")  # a kept file someone else wrote: the text is parsed instead
    assert k8s._parsed_yaml(plain) == docs
    # YAML that JSON would give back changed (a timestamp, a key that is not a string) is never kept
    for text in ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, created: 2026-01-01}\n",
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: i}\ndata: {1: one}\n"):
        before = set(kept.iterdir())
        k8s._parsed_yaml.cache_clear()
        first = k8s._parsed_yaml(text)
        assert set(kept.iterdir()) == before
        k8s._parsed_yaml.cache_clear()
        assert k8s._parsed_yaml(text) == first

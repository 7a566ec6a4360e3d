"""A kind's compiled validator is built once per schema and then loaded from the cache folder.

Building a pod's validator costs ~0.3 s and ~17 MiB; every twin process would pay it again on its
first write. The compiled code is kept under `$STEPGRAPH_CACHE_DIR`, named by what made it, and a
file that cannot be loaded is rebuilt rather than trusted.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stepgraph.twin.apiserver import schemas

POD = schemas.definition_name("", "v1", "Pod")
CONFIG_MAP = schemas.definition_name("", "v1", "ConfigMap")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STEPGRAPH_CACHE_DIR", str(tmp_path))
    return tmp_path / "stepgraph" / "validators"


def _validator(code):
    namespace: dict = {}
    exec(code, namespace)
    return namespace["validate"]


def test_the_first_build_is_kept_and_the_next_one_loads_it(cache, monkeypatch):
    schemas._validator_code(CONFIG_MAP)
    kept = list(cache.iterdir())
    assert len(kept) == 1

    def no_build(name):
        raise AssertionError(f"rebuilt {name} although its compiled code was kept")

    monkeypatch.setattr(schemas, "_validator_source", no_build)
    validate = _validator(schemas._validator_code(CONFIG_MAP))
    validate({"metadata": {"name": "c"}, "data": {"k": "v"}})
    with pytest.raises(schemas.fastjsonschema.JsonSchemaValueException):
        validate({"metadata": {"name": "c"}, "data": {"k": 1}})


def test_an_unreadable_cache_file_is_rebuilt(cache):
    schemas._validator_code(CONFIG_MAP)
    (kept,) = cache.iterdir()
    kept.write_bytes(b"not marshal data")
    validate = _validator(schemas._validator_code(CONFIG_MAP))
    with pytest.raises(schemas.fastjsonschema.JsonSchemaValueException):
        validate({"metadata": {"name": "c"}, "data": {"k": 1}})
    assert kept.read_bytes() != b"not marshal data"


def test_each_kind_has_its_own_file(cache):
    schemas._validator_code(CONFIG_MAP)
    schemas._validator_code(POD)
    assert len(list(cache.iterdir())) == 2


def test_two_processes_building_at_once_both_get_a_working_validator(cache):
    script = ("from stepgraph.twin.apiserver import schemas; "
              f"schemas._compiled({POD!r})({{'metadata': {{'name': 'p'}}}}); print('ok')")
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["ok", "ok"]
    assert [p.name for p in cache.iterdir()] and not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_the_rewritten_code_names_list_items_as_the_generated_code_did():
    source = schemas._validator_source(POD)
    assert "locals()" not in source
    validate = _validator(compile(source, "<pod>", "exec"))
    with pytest.raises(schemas.fastjsonschema.JsonSchemaValueException, match=r"data\.spec\.containers\[1\]"):
        validate({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": 3}]}})

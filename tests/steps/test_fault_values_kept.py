"""A fault value the YAML parser accepted once is not parsed again by the next process (the step
library keeps the texts it accepted on disk), so a lint or collection of a scenario that sets a
fault does not import ruamel.yaml. What is kept is named by the text, the checking module's
source and the parser's release: a change to either parses the text again. A text that is not
YAML is refused in every process, with the parser's message. Each check runs in a process of its
own: the test process has ruamel imported already."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK_VALUE = """
import sys
from pydantic import ValidationError
import stepgraph.steps.faults as faults
if len(sys.argv) > 2 and sys.argv[2]:
    faults.__file__ = sys.argv[2]  # the check as another source of the module would make it
if len(sys.argv) > 3:
    faults.parser_release = lambda package, prefixes: b"another release"
try:
    faults.FaultValueParams.model_validate({"name": "dcgm_set_connection_lost_gpus", "value": sys.argv[1]})
    verdict = "accepted"
except ValidationError as exc:
    verdict = "refused: " + exc.errors()[0]["msg"]
print(" ".join(verdict.split()), "parsed" if "ruamel.yaml" in sys.modules else "not parsed")  # on one line
"""


def _check(cache: Path, value: str, *, source: str = "", release: bool = False) -> str:
    argv = [sys.executable, "-c", CHECK_VALUE, value, source, *(["other"] if release else [])]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60, cwd=ROOT,
                          env={**os.environ, "STEPGRAPH_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_a_value_accepted_once_is_not_parsed_again(tmp_path: Path) -> None:
    assert _check(tmp_path, "[0, 1, 2, 3]") == "accepted parsed"
    assert _check(tmp_path, "[0, 1, 2, 3]") == "accepted not parsed"
    assert _check(tmp_path, "[0, 1, 2]") == "accepted parsed"  # another text


def test_a_value_that_is_not_yaml_is_refused_by_every_process(tmp_path: Path) -> None:
    for _ in range(2):
        verdict = _check(tmp_path, "[0, 1")
        assert verdict.startswith("refused: Value error, '[0, 1' is not a YAML value (")
        assert verdict.endswith(") — e.g. \"[0, 1]\" or \"'4.4'\" parsed")


def test_a_kept_value_is_parsed_again_when_the_check_or_the_parser_changes(tmp_path: Path) -> None:
    # One cache for both changes: each is a key of its own, so the first change's run keeps
    # nothing the second could read, and the unchanged run after both still reads the first kept.
    edited = tmp_path / "faults.py"
    shutil.copy(ROOT / "steps" / "faults.py", edited)
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")
    cache = tmp_path / "cache"
    assert _check(cache, "[4, 5]") == "accepted parsed"
    assert _check(cache, "[4, 5]", source=str(edited)) == "accepted parsed"  # the check changed
    assert _check(cache, "[4, 5]", release=True) == "accepted parsed"  # the parser's release changed
    assert _check(cache, "[4, 5]") == "accepted not parsed"

"""`stepgraph run --world A --world B --reports DIR` (what `make run` does): one pytest run per world,
one merged results file, one trace with a column per world, and a failure in any world fails the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from catalog_runs import ROOT
from ruamel.yaml import YAML

from stepgraph.dsl.cli import main


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the run reads the trace settings of ./pyproject.toml


def _broken_world(tmp_path: Path) -> Path:
    """Path B with every NVML limit write refused: the NVML readback scenario must fail there."""
    yaml = YAML(typ="safe", pure=True)
    world = yaml.load((ROOT / "examples" / "profiles" / "path-b.yaml").read_text())
    world |= {"name": "path-b-no-permission", "faults": {"nvml_no_permission": True}}
    path = tmp_path / "path-b-no-permission.yaml"
    with path.open("w") as out:
        yaml.dump(world, out)
    return path


def test_each_world_is_one_column_of_one_trace(in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    code = main(["run", "scenarios/demo", "--reports", str(out), "--world", "path-b", "--world", "path-a", "--", "-q"])
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert sorted({(r["id"], r["world"]) for r in results["scenarios"]}) == sorted(
        (f"DEMO-{i}", w) for i in (1, 2, 3) for w in ("path-a", "path-b"))
    trace = json.loads((out / "trace.json").read_text())
    assert trace["columns"] == ["twin / path-a", "twin / path-b"]
    assert "world path-b: exit 0" in printed and "world path-a: exit 0" in printed
    assert (out / "junit.xml").is_file() and (out / "cucumber.json").is_file()


def test_a_failure_in_one_world_fails_the_run_and_shows_in_its_column(
        in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    broken = _broken_world(tmp_path)
    code = main(["run", "scenarios/multi_dgd/nvml_caps.feature", "--reports", str(out), "--jobs", "1",
                 "--world", "path-b", "--world", str(broken), "--", "-q"])
    printed = capsys.readouterr().out
    assert code == 1, printed[-3000:]
    outcomes = {r["world"]: r["outcome"] for r in json.loads((out / "results.json").read_text())["scenarios"]}
    assert outcomes == {"path-b": "passed", "path-b-no-permission": "failed"}
    assert "path-b-no-permission.yaml: exit 1" in printed and "expected: [300, 300, 325" in printed


def test_several_worlds_need_a_reports_folder(in_repo: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "scenarios/demo", "--world", "path-b", "--world", "path-a"]) == 2
    assert "several --world need --reports DIR" in capsys.readouterr().err


def _wait_until_the_first_world_collects(run: subprocess.Popen[str], out: Path) -> None:
    """Until path-b's output says it collected: the server and that world have their handlers."""
    first = out / "worlds" / "path-b" / "output.txt"
    deadline = time.monotonic() + 120
    while not (first.is_file() and "collected" in first.read_text()):
        assert run.poll() is None and time.monotonic() < deadline, "the first world never began collecting"
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_ends_the_world_running_and_starts_no_other(tmp_path: Path, signum: int) -> None:
    # SIGTERM is what a cancelled CI job sends: the run takes it as a Ctrl-C, in every process.
    out = tmp_path / "reports"
    stepgraph = Path(sys.executable).with_name("stepgraph")
    # On the real clock path-b's scenarios wait a 15 s agent tick: it is still running at the Ctrl-C.
    run = subprocess.Popen([str(stepgraph), "run", "scenarios/demo", "--reports", str(out), "--jobs", "1",
                            "--world", "path-b", "--world", "path-a", "--", "-q", "--target-option", "clock=real"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_until_the_first_world_collects(run, out)
    # The command forks the process serving the worlds (it starts with the language imported)
    # rather than starting another interpreter.
    (server,) = Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()
    assert Path(f"/proc/{server}/cmdline").read_bytes() == Path(f"/proc/{run.pid}/cmdline").read_bytes()
    os.killpg(run.pid, signum)  # as Ctrl-C does: every process of the run gets it
    printed, errors = run.communicate(timeout=120)
    assert run.returncode == 2, printed[-3000:] + errors[-3000:]
    assert "world path-a: not started" in printed and "Traceback" not in printed + errors
    assert "world path-b: exit 2" in printed and "stepgraph cleanup: undone: " in printed  # what it undid, printed
    assert "stepgraph run: interrupted — no merged results or trace written" in errors
    assert not (out / "worlds" / "path-a" / "output.txt").exists() and not (out / "results.json").exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)  # no process of the run is left


def test_a_run_started_with_sigint_ignored_ignores_it_in_every_process(tmp_path: Path) -> None:
    # As a shell starts a background job: Ctrl-C at the terminal must not end it, in any process.
    out = tmp_path / "reports"
    stepgraph = Path(sys.executable).with_name("stepgraph")
    ignoring = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"
    run = subprocess.Popen([sys.executable, "-c", ignoring, str(stepgraph), "run", "scenarios/demo", "--reports", str(out),
                            "--jobs", "1", "--world", "path-b", "--world", "path-a", "--", "-q"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_until_the_first_world_collects(run, out)
    os.killpg(run.pid, signal.SIGINT)
    printed, errors = run.communicate(timeout=120)
    assert run.returncode == 0, printed[-3000:] + errors[-3000:]
    assert "world path-a: exit 0" in printed and "interrupted" not in printed + errors
    assert {r["world"] for r in json.loads((out / "results.json").read_text())["scenarios"]} == {"path-a", "path-b"}


# A Ctrl-C (or SIGTERM) held back across a fork (blocked, pending) arrives the moment the process
# unblocks it. Each script below starts in that state, so the window is hit every time rather than
# by chance.
_PENDING = """
import os, signal, sys
signum = getattr(signal, sys.argv[2])
signal.pthread_sigmask(signal.SIG_BLOCK, {signum})
os.kill(os.getpid(), signum)
"""
SIGNALS = pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])


def _python(script: str, tmp_path: Path, signal_name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PENDING + script, str(tmp_path), signal_name], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@SIGNALS
def test_a_ctrl_c_as_a_world_is_forked_ends_that_world_saying_so(tmp_path: Path, signal_name: str) -> None:
    done = _python("""
from pathlib import Path
from stepgraph.dsl.run_worlds import WorldRun, _world_process
_world_process(WorldRun("path-b", Path(sys.argv[1]) / "path-b"), ["scenarios/demo"], ["-q"])
""", tmp_path, signal_name)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == "stepgraph run: world path-b: interrupted before its run began\n"
    assert (tmp_path / "path-b" / "exit-code").read_text() == "2"  # reported as "exit 2", not "not started"


@SIGNALS
def test_a_ctrl_c_as_the_server_is_forked_is_an_interrupt_of_the_run(tmp_path: Path, signal_name: str) -> None:
    done = _python("""
from pathlib import Path
from stepgraph.dsl.run_worlds import TraceSettings, run_worlds
sys.exit(run_worlds(["path-b"], ["scenarios/demo"], ["-q"], Path(sys.argv[1]), TraceSettings(design=[])))
""", tmp_path, signal_name)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "stepgraph run: interrupted — no merged results or trace written" in done.stderr
    assert not (tmp_path / "results.json").exists()


def test_worlds_start_longest_first_by_the_last_run_and_as_given_without_one(tmp_path: Path) -> None:
    from stepgraph.dsl.run_worlds import WorldRun, start_order

    runs = [WorldRun(w, tmp_path / w) for w in ("path-b", "path-b-dcgm", "path-a", "new.yaml")]
    last = tmp_path / "results.json"
    assert [r.world for r in start_order(runs, last)] == ["path-b", "path-b-dcgm", "path-a", "new.yaml"]
    last.write_text("{not json")
    assert [r.world for r in start_order(runs, last)] == ["path-b", "path-b-dcgm", "path-a", "new.yaml"]
    records = [{"world": "path-b", "duration_s": 3.0}, {"world": "path-a", "duration_s": 2.5},
               {"world": "path-a", "duration_s": 2.5}, {"world": "path-b-dcgm", "duration_s": 4.0},
               {"world": "gone", "duration_s": 9.0}, {"world": "path-b", "duration_s": None}]
    last.write_text(json.dumps({"scenarios": records}))
    # a world the last run did not have may be the longest: it starts first
    assert [r.world for r in start_order(runs, last)] == ["new.yaml", "path-a", "path-b-dcgm", "path-b"]

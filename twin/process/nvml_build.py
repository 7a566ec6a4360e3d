"""The twin's `libnvidia-ml.so.1`: compiled from `native/libnvidia_ml.c` with the machine's C
compiler at first use, into a cache keyed by the source and the compiler, so later runs (and
parallel test workers) reuse one build.

No compiler → `NoCompiler`, whose message is the one line a process world prints; everything
else in the twin keeps working without it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib.resources import files
from pathlib import Path

LIBRARY_NAME = "libnvidia-ml.so.1"
SOURCE_NAME = "libnvidia_ml.c"
CACHE_ENV = "STEPGRAPH_CACHE_DIR"


class NoCompiler(RuntimeError):
    """No C compiler to build the twin's NVML library with."""


class BuildFailed(RuntimeError):
    """The compiler rejected the library's source (a defect of ours, reported with its output)."""


def source_text() -> str:
    return (files(__package__) / "native" / SOURCE_NAME).read_text(encoding="utf-8")


def compiler() -> str:
    """`$CC`, else gcc, else cc, as found on PATH."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and (path := shutil.which(name)):
            return path
    raise NoCompiler("process containers need a C compiler to build the twin's libnvidia-ml.so.1: none found "
                     "(looked for $CC, gcc, cc) — install gcc; worlds without process containers run as before")


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepgraph"


def nvml_library_dir() -> Path:
    """The folder holding a built `libnvidia-ml.so.1` (put it first on LD_LIBRARY_PATH)."""
    cc = compiler()
    source = source_text()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    key = hashlib.sha256(f"{source}\0{cc}\0{version}".encode()).hexdigest()[:16]
    folder = cache_root() / "nvml" / key
    library = folder / LIBRARY_NAME
    if library.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as build:
        src = Path(build) / SOURCE_NAME
        src.write_text(source, encoding="utf-8")
        out = Path(build) / LIBRARY_NAME
        done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(out), str(src), "-lpthread"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BuildFailed(f"{cc} could not build {LIBRARY_NAME} (exit {done.returncode}): {done.stderr.strip()}")
        os.replace(out, library)  # atomic: a parallel builder sees the whole file or none
    return folder

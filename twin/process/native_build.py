"""The twin's native libraries for process containers, compiled from `native/` with the machine's
C compiler at first use, into a cache keyed by the sources and the compiler, so later runs (and
parallel test workers) reuse one build:

- `libnvidia-ml.so.1` — NVML for the container's GPUs (found through LD_LIBRARY_PATH);
- `libstepgraph-view.so` — the node's files for every dynamically linked program (LD_PRELOAD).

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

from ..cache_dir import cache_root

NVML_LIBRARY = "libnvidia-ml.so.1"
VIEW_LIBRARY = "libstepgraph-view.so"
# library → its source; every build also sees the shared bridge header
SOURCES = {NVML_LIBRARY: "libnvidia_ml.c", VIEW_LIBRARY: "view_files.c"}
HEADERS = ("twin_bridge.h",)


class NoCompiler(RuntimeError):
    """No C compiler to build the twin's native libraries with."""


class BuildFailed(RuntimeError):
    """The compiler rejected a library's source (a defect of ours, reported with its output)."""


def source_text(name: str) -> str:
    return (files(__package__) / "native" / name).read_text(encoding="utf-8")


def compiler() -> str:
    """`$CC`, else gcc, else cc, as found on PATH."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and (path := shutil.which(name)):
            return path
    raise NoCompiler("process containers need a C compiler to build the twin's libnvidia-ml.so.1 and its file view "
                     "for non-Python programs: none found (looked for $CC, gcc, cc) — install gcc; worlds without "
                     "process containers run as before")


def native_library_dir() -> Path:
    """The folder holding both built libraries (`NVML_LIBRARY`, `VIEW_LIBRARY`)."""
    cc = compiler()
    texts = {name: source_text(name) for name in (*SOURCES.values(), *HEADERS)}
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    key = hashlib.sha256("\0".join([*(f"{n}\0{t}" for n, t in sorted(texts.items())), cc, version]).encode())
    folder = cache_root() / "native" / key.hexdigest()[:16]
    if all((folder / library).exists() for library in SOURCES):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as build:
        for name, text in texts.items():
            Path(build, name).write_text(text, encoding="utf-8")
        for library, source in SOURCES.items():
            out = Path(build) / library
            done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(out), str(Path(build) / source),
                                   "-ldl", "-lpthread"], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise BuildFailed(f"{cc} could not build {library} (exit {done.returncode}): {done.stderr.strip()}")
            os.replace(out, folder / library)  # atomic: a parallel builder sees the whole file or none
    return folder

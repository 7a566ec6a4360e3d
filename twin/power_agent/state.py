"""Managed-GPU state → `managed_gpus.json` on the node's host path (contract §3.6).

The agent remembers which GPUs it capped twice over: in memory (indices this process wrote) and
on disk (UUIDs ever capped, `{"managed_uuids": [...]}`), so a restarted agent can restore GPUs
orphaned by a crash. The file lives on the node (a hostPath volume), modelled by `HostFiles`;
without a hostPath mount it lives in the container and dies with it, as on a real node.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
from pathlib import Path

STATE_DIR = "/var/lib/dynamo-power-agent"
STATE_FILE = "managed_gpus.json"


class HostFiles:
    """A node's files that outlive containers (hostPath volumes): path → text.

    In memory by default; `attach(root)` keeps them on disk under `root` from then on, so real
    programs in process containers (whose hostPath mounts are folders under `root`) and the
    in-process components read and write the same files.
    """

    def __init__(self) -> None:
        self._files: dict[str, str] = {}
        self._root: Path | None = None
        self._lock = threading.Lock()

    @property
    def root(self) -> Path | None:
        return self._root

    def attach(self, root: Path) -> None:
        """Move the files to disk under `root` and keep them there."""
        with self._lock:
            root.mkdir(parents=True, exist_ok=True)
            self._root = root
            for path, text in self._files.items():
                self._write_disk(path, text)
            self._files.clear()

    def detach(self) -> None:
        """Read the files back into memory (the folder is about to go away)."""
        with self._lock:
            if self._root is None:
                return
            self._files = {path: self._disk_path(path).read_text(encoding="utf-8") for path in self._disk_paths()}
            self._root = None

    def read(self, path: str) -> str | None:
        with self._lock:
            if self._root is None:
                return self._files.get(path)
            try:
                return self._disk_path(path).read_text(encoding="utf-8")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None

    def write(self, path: str, text: str) -> None:
        with self._lock:  # tmp + rename on a real node: readers never see half a file
            if self._root is None:
                self._files[path] = text
            else:
                self._write_disk(path, text)

    def paths(self) -> list[str]:
        with self._lock:
            return sorted(self._files) if self._root is None else self._disk_paths()

    def _disk_path(self, path: str) -> Path:
        assert self._root is not None
        return self._root / posixpath.normpath("/" + path).lstrip("/")  # never outside the root

    def _disk_paths(self) -> list[str]:
        assert self._root is not None
        return sorted("/" + p.relative_to(self._root).as_posix() for p in self._root.rglob("*") if p.is_file())

    def _write_disk(self, path: str, text: str) -> None:
        target = self._disk_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".twin-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)


def host_path_for(pod: dict, container: dict, container_path: str) -> str | None:
    """Map a path inside the container to its host path through a hostPath volume mount."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        mount_path = mount.get("mountPath", "").rstrip("/")
        host = (volumes.get(mount.get("name")) or {}).get("hostPath")
        if host and (container_path == mount_path or container_path.startswith(mount_path + "/")):
            return posixpath.join(host["path"], posixpath.relpath(container_path, mount_path))
    return None


class ManagedState:
    """In-memory managed indices + the persisted UUID set, loaded defensively."""

    def __init__(self, files: HostFiles, path: str | None) -> None:
        self._files = files if path else HostFiles()  # no hostPath → container-local, lost on exit
        self._path = path or posixpath.join(STATE_DIR, STATE_FILE)
        self.indices: set[int] = set()
        self.warnings: list[str] = []
        self.uuids: set[str] = self._load()

    def _load(self) -> set[str]:
        text = self._files.read(self._path)
        if text is None:
            return set()
        try:
            data = json.loads(text)
            listed = data["managed_uuids"] if isinstance(data, dict) else None
            if not isinstance(listed, list):
                raise TypeError("managed_uuids is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            self.warnings.append(f"ignoring unreadable {self._path}: {exc}")
            return set()
        return {u for u in listed if isinstance(u, str)}

    def add(self, index: int, uuid: str) -> None:
        self.indices.add(index)
        if uuid not in self.uuids:
            self.uuids.add(uuid)
            self.persist()

    def drop(self, index: int, uuid: str) -> None:
        self.indices.discard(index)
        self.uuids.discard(uuid)

    def persist(self) -> None:
        self._files.write(self._path, json.dumps({"managed_uuids": sorted(self.uuids)}))

"""What gating scenarios needs of a twin world — its capabilities, and whether its agent is a real
program — kept on disk once the world was validated, so that a later run of the same world with the
same options knows them without importing the world's model and the YAML parser to validate it again.

Kept facts are named by the world option, every target option, the working folder and the
interpreter; they hold the world file they were read from with a hash of its bytes, and the stamps
of every module the validating process had loaded (`keep_derived`). They are used only while that
file has the same bytes and those modules are unchanged: an edited world, another option, or a
change to the validating code validates again, and a world that does not validate is never kept,
so its error comes as ever. Worlds that name other files (an agent program folder) are never kept:
those files are not in the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stepgraph.dsl.cache_dir import cache_root, keep_derived, read_kept_derived


@dataclass(frozen=True)
class WorldFacts:
    capabilities: frozenset[str]
    program: bool  # the world's agent runs as a real program


def _kept_file(name: str, options: Mapping[str, str]) -> Path:
    key = json.dumps([name, sorted(options.items()), os.getcwd(), sys.version]).encode()
    return cache_root() / "twin-world-facts" / f"{hashlib.sha256(key).hexdigest()}.json"


def world_digest(path: Path) -> str | None:
    """The hash of the world file's bytes (None if it cannot be read): taken before it is validated,
    so that kept facts name the bytes that were validated even if the file changes meanwhile."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def kept_world_facts(name: str, options: Mapping[str, str]) -> WorldFacts | None:
    """The facts kept for world `name` under `options`, if still true; else None (validate it)."""
    if options.get("agent"):
        return None
    kept = read_kept_derived(_kept_file(name, options))
    if not (isinstance(kept, dict) and isinstance(kept.get("file"), str) and isinstance(kept.get("sha256"), str)):
        return None
    capabilities = kept.get("capabilities")
    if not (isinstance(capabilities, list) and all(isinstance(c, str) for c in capabilities)):
        return None
    if world_digest(Path(kept["file"])) != kept["sha256"]:
        return None
    return WorldFacts(frozenset(capabilities), program=False)


def keep_world_facts(name: str, options: Mapping[str, str], world_file: Path, digest: str | None, facts: WorldFacts) -> None:
    """Keep the facts of world `name`, just validated under `options` from `world_file`, whose
    bytes had the hash `digest` before it was read."""
    if options.get("agent") or facts.program or digest is None:
        return
    value = {"file": str(world_file.resolve()), "sha256": digest, "capabilities": sorted(facts.capabilities)}
    keep_derived(_kept_file(name, options), value)

"""Step parameters that name a file (a manifest, a world file): the file must exist when the
scenario is linted, not only once the run has reached the step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


def _no_folders() -> Sequence[Path]:
    return ()


@dataclass(frozen=True)
class NamesFile:
    """On a str field (`Annotated[str, NamesFile("manifest", folders, (".yaml",))]`): the value is
    a path relative to the folder the run starts in, or a name looked up in `folders` (with each of
    `suffixes` appended too), the way the step itself finds it."""

    what: str
    folders: Callable[[], Sequence[Path]] = _no_folders
    suffixes: tuple[str, ...] = ()
    folders_shown: str = ""  # how a message names `folders`, e.g. "examples/manifests/<variant>/"

    def candidates(self, name: str) -> list[Path]:
        found = [folder / f"{name}{suffix}" for folder in self.folders() for suffix in ("", *self.suffixes)]
        return [*found, Path(name)]

    def missing(self, name: str) -> tuple[str, str] | None:
        """(what is wrong, what to do) when no candidate is a file, else None."""
        if any(path.is_file() for path in self.candidates(name)):
            return None
        where = f", or the name of a file in {self.folders_shown}" if self.folders_shown else ""
        return (f"{self.what} {name!r} does not exist", f"give a path from the folder the run starts in ({Path.cwd()}){where}")

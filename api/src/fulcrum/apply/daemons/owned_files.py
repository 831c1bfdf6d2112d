"""The live files one managed daemon owns, taken through the crash-safe steps of fulcrum.apply.files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fulcrum.apply.files import discard_new, mark_failed, new_path, promote, restore_previous, write_new


class OwnedFiles:
    """Stage, promote and restore a daemon's files; remembers what the current apply promoted."""

    def __init__(self, *paths: Path) -> None:
        self.paths = paths
        self._promoted: dict[Path, bool] = {}  # live file -> had a previous version

    def stage(self, contents: Mapping[Path, str]) -> str:
        """Write every file as FILE.new (fsynced); the live files are not touched."""
        self._promoted = {}
        for path in self.paths:
            write_new(path, contents[path])
        return "; ".join(f"staged {new_path(path)} ({len(contents[path])} bytes)" for path in self.paths)

    def discard(self) -> None:
        for path in self.paths:
            discard_new(path)

    def reject(self) -> None:
        """Keep rejected candidates as FILE.failed for debugging."""
        for path in self.paths:
            if new_path(path).exists():
                mark_failed(path)

    def install(self) -> str:
        for path in self.paths:
            self._promoted[path] = promote(path)
        return "; ".join(
            f"promoted {path}" + (f" (previous kept as {path.name}.prev)" if kept else " (first version)")
            for path, kept in self._promoted.items()
        )

    def restore(self) -> tuple[dict[Path, bool], str]:
        """Undo `install` for the files it promoted: whether each had a previous version, and a summary."""
        restored: dict[Path, bool] = {}
        done = []
        for path in self._promoted:
            restored[path] = restore_previous(path)
            kept = f"rejected version kept as {path.name}.failed"
            if restored[path]:
                done.append(f"restored {path} from {path.name}.prev ({kept})")
            else:
                done.append(f"removed {path}: there was no previous version ({kept})")
        self._promoted = {}
        return restored, "; ".join(done)

"""Crash-safe handling of the live config files.

For a live file FILE the apply engine uses three siblings:

* FILE.new     the candidate, written and fsynced before any validator reads it;
* FILE.prev    the file that was live before the last promotion (absent: there was none);
* FILE.failed  a candidate that failed validation, or that was rolled back, kept for debugging.

Every rename is followed by an fsync of the directory, so after a crash FILE is always either the
old or the new complete file, never a partial one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CONFIG_MODE = 0o644  # rendered configs hold no secrets; operators may read them
STATE_MODE = 0o644  # the unprivileged API may read the applied revision


def sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def new_path(path: Path) -> Path:
    return sibling(path, ".new")


def prev_path(path: Path) -> Path:
    return sibling(path, ".prev")


def failed_path(path: Path) -> Path:
    return sibling(path, ".failed")


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, content: bytes, mode: int) -> None:
    """Write `content` to `path` (truncating it), with `mode`, and fsync the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # O_CREAT's mode is ignored for an existing file and masked by umask
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path, content: str, mode: int = CONFIG_MODE) -> Path:
    """Stage `content` as FILE.new; the live FILE is not touched."""
    staged = new_path(path)
    write_durably(staged, content.encode(), mode)
    fsync_dir(path.parent)
    return staged


def discard_new(path: Path) -> None:
    new_path(path).unlink(missing_ok=True)


def mark_failed(path: Path) -> Path:
    """Keep a rejected FILE.new as FILE.failed (replacing an older one)."""
    failed = failed_path(path)
    os.replace(new_path(path), failed)
    fsync_dir(path.parent)
    return failed


def promote(path: Path) -> bool:
    """Make FILE.new live, keeping the live file as FILE.prev. Returns whether there was one.

    The old file is hard-linked to FILE.prev first, so FILE exists at every instant and the final
    `os.replace` swaps it atomically. With no live file, a stale FILE.prev is removed so that
    `restore_previous` knows there is nothing to go back to.
    """
    staged = new_path(path)
    if not staged.exists():
        raise FileNotFoundError(f"{staged} does not exist: nothing to promote")
    previous = prev_path(path)
    had_previous = path.exists()
    if had_previous:
        link = sibling(path, ".prev.tmp")
        link.unlink(missing_ok=True)
        os.link(path, link)
        os.replace(link, previous)
    else:
        previous.unlink(missing_ok=True)
    os.replace(staged, path)
    fsync_dir(path.parent)
    return had_previous


def restore_previous(path: Path) -> bool:
    """Undo `promote`: FILE goes to FILE.failed and FILE.prev becomes FILE again.

    Returns False when there was no previous file; FILE is then absent afterwards, as it was
    before the promotion.
    """
    previous = prev_path(path)
    if path.exists():
        os.replace(path, failed_path(path))
    restored = previous.exists()
    if restored:
        os.replace(previous, path)
    fsync_dir(path.parent)
    return restored


def write_atomic(path: Path, content: bytes, mode: int) -> None:
    """Replace `path` with `content`, fsynced: readers and a crash see the old or the new file, not a mix."""
    temporary = sibling(path, ".tmp")
    write_durably(temporary, content, mode)
    os.replace(temporary, path)
    fsync_dir(path.parent)


def write_json_atomic(path: Path, data: Any, mode: int = STATE_MODE) -> None:
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), mode)

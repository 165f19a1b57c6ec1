"""Crash-safe files: every write is atomic and keeps the previous generation.

A write goes to a temporary file in the same directory, is fsynced, the current file
is hard-linked to ``<name>.prev`` (the previous good generation), the temporary file
replaces the current one with ``os.replace``, and the directory is fsynced. At every
instant the file holds a complete old or new version.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PREVIOUS_SUFFIX = ".prev"
TEMP_SUFFIX = ".tmp"


def previous_of(path: Path) -> Path:
    """Where the previous generation of ``path`` is kept."""
    return path.with_name(path.name + PREVIOUS_SUFFIX)


def write_atomic(path: Path, data: bytes, *, keep_previous: bool = True, sync_dir: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably (see module docstring).

    With ``sync_dir`` off the caller must call :func:`fsync_dir` before relying on it.
    """
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:  # a full disk or a size limit: leave no partial file behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if keep_previous and path.exists():
        prev_tmp = path.with_name(path.name + PREVIOUS_SUFFIX + TEMP_SUFFIX)
        with contextlib.suppress(FileNotFoundError):
            prev_tmp.unlink()
        os.link(path, prev_tmp)
        os.replace(prev_tmp, previous_of(path))
    os.replace(tmp, path)
    if sync_dir:
        fsync_dir(path.parent)


def remove_durably(path: Path, *, sync_dir: bool = True) -> None:
    """Delete ``path`` and its previous generation, if present (the previous one first:
    a previous generation without its file is never left by a deletion, so it always
    means damage)."""
    for victim in (previous_of(path), path):
        with contextlib.suppress(FileNotFoundError):
            victim.unlink()
    if sync_dir:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make renames and deletions in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

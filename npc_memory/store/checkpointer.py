"""The checkpoint process of a TinyDB store: folds sealed journal segments into the
document files for the process that owns the store, which then finishes the checkpoint
(metadata file, removing the segments). See ``TinyDBStore(checkpoint_process=True)``.

``python -m npc_memory.store.checkpointer STORE --owner PID:DEV:INODE --thresholds JSON
SEGMENT...`` prints a :class:`~npc_memory.store.tinydb_store.FoldResult` as JSON; a
non-zero exit status means nothing can be assumed folded (the owner folds the segments
itself). It holds the store's checkpoint lock while it folds, and folds only while the
store's owner is still the one that started it (``--owner``: its process id and the
identity of the lock file it holds): a process whose owner died before it began leaves
the store to the next owner.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec
from pydantic import TypeAdapter

from npc_memory.content.schema import Threshold
from npc_memory.store.migrations import MigrationContext
from npc_memory.store.tinydb_store import LOCK_FILE, OWNER_FILE, TinyDBStore, checkpoint_lock

NEW_OWNER = 4
"""Exit status when the store's owner is no longer the process that started this one."""


def still_owned_by(store: Path, owner: str) -> bool:
    """Whether ``owner`` (``PID:DEV:INODE``) still owns ``store``: its process id is in
    the owner file and the lock file is the one it locked."""
    try:
        pid = (store / OWNER_FILE).read_text("ascii").strip()
        stat = (store / LOCK_FILE).stat()
    except OSError:
        return False
    return f"{pid}:{stat.st_dev}:{stat.st_ino}" == owner


def main(argv: list[str] | None = None) -> int:
    """Fold the segments named in ``argv``; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m npc_memory.store.checkpointer")
    parser.add_argument("store", type=Path)
    parser.add_argument("--owner", required=True, help="PID:DEV:INODE of the owner and its lock file")
    parser.add_argument("--thresholds", required=True, help="the content pack's thresholds, as JSON")
    parser.add_argument("segments", nargs="+", type=int)
    args = parser.parse_args(argv)
    thresholds = TypeAdapter(tuple[Threshold, ...]).validate_json(args.thresholds)
    with checkpoint_lock(args.store):  # an owner opening the store waits for it
        # A successor writes the owner file before it waits for this lock: checked
        # after taking it, the owner is either the one that started this process or
        # a successor that sees it (and waits), never one folding beside it.
        if not still_owned_by(args.store, args.owner):
            print(f"{args.store} has a new owner; nothing folded", file=sys.stderr)
            return NEW_OWNER
        store = TinyDBStore(
            args.store, create=False, migration=MigrationContext(thresholds=thresholds), checkpointer=True
        )
        try:
            result = store.fold_sealed(args.segments)
        finally:
            store.close()
    sys.stdout.buffer.write(msgspec.json.encode(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The checkpoint process of a TinyDB store: folds sealed journal segments into the
document files for the process that owns the store, which then finishes the checkpoint
(metadata file, removing the segments). See ``TinyDBStore(checkpoint_process=True)``.

``python -m npc_memory.store.checkpointer STORE --thresholds JSON SEGMENT...`` prints
a :class:`~npc_memory.store.tinydb_store.FoldResult` as JSON; a non-zero exit status
means nothing can be assumed folded (the owner folds the segments itself).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

import msgspec
from pydantic import TypeAdapter

from npc_memory.content.schema import Threshold
from npc_memory.store.migrations import MigrationContext
from npc_memory.store.tinydb_store import TinyDBStore, checkpoint_lock


def _in_background() -> None:
    """Run below the game: normal scheduling (not a real-time class inherited from a
    server loop), lowest priority (best-effort: not every platform has these)."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    with contextlib.suppress(AttributeError, OSError):
        os.nice(19)


def main(argv: list[str] | None = None) -> int:
    """Fold the segments named in ``argv``; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m npc_memory.store.checkpointer")
    parser.add_argument("store")
    parser.add_argument("--thresholds", required=True, help="the content pack's thresholds, as JSON")
    parser.add_argument("segments", nargs="+", type=int)
    args = parser.parse_args(argv)
    _in_background()
    thresholds = TypeAdapter(tuple[Threshold, ...]).validate_json(args.thresholds)
    with checkpoint_lock(Path(args.store)):  # the owner's successor waits for it, should the owner die
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

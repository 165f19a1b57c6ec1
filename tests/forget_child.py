"""Child process of test_privacy_crash.py (arguments: ``KEY PATH`` or ``KEY URL WORLD``):
opens a store that holds the player ``KEY`` everywhere (a store directory, or a world
of a PostgreSQL database), says "go", forgets the player (``KEY`` "--end-game": ends
the current game instead), says "done", then waits to be killed. The store prints where it is ("recording", "pending", "purging", "purged",
"clearing", "cleared") so the parent knows where the kill landed."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from crash_child import say  # this directory is the script's first import path

import npc_memory
from npc_memory.store import PendingForget, PurgeReport, TinyDBStore


def marked(base: type[Any]) -> type[Any]:
    """``base`` (a store class) saying where the forgetting is."""

    class MarkedStore(base):  # type: ignore[misc, valid-type]
        def set_pending_forgets(self, pending: Sequence[PendingForget]) -> None:
            say("recording" if pending else "clearing")  # a kill from here may or may not find the record
            super().set_pending_forgets(pending)
            say("pending" if pending else "cleared")

        def purge(self, pattern, remove=()) -> PurgeReport:  # type: ignore[no-untyped-def]
            say("purging")
            report: PurgeReport = super().purge(pattern, remove)
            say("purged")
            return report

    return MarkedStore


def main(key: str, target: str, world: str | None = None) -> None:
    if world is None:
        store = marked(TinyDBStore)(target)
    else:
        from npc_memory.store.postgres import PostgresStore

        store = marked(PostgresStore)(target, world=world)
    plugin = npc_memory.install(world="forget", pack="village", store=store, seed=1)
    say("go")
    if key == "--end-game":
        plugin.privacy.end_game(actor="child")
    else:
        plugin.privacy.forget_player(key, actor="child")
    say("done")
    time.sleep(60)


if __name__ == "__main__":
    main(*sys.argv[1:])

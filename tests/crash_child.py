"""Child process of test_crash.py: runs a world that snapshots constantly until killed.

Every step, each NPC remembers "round n" (a world memory) and records one interaction
with alice, so in any complete version of an NPC's document
``bank.next_id - 1 == interaction_count == n`` and its newest memory reads "round n".
Steps alternate between SnapshotSystem ticks and explicit saves. The child prints the
promises the parent checks after the kill: "saved <n>" once ``save()`` returned (every
NPC's step n is on disk) and "round <n>" once a snapshot round that started when every
NPC was at step n or later is on disk. The store checkpoints every few kilobytes of
journal, so kills land in journal appends and in checkpoints alike. The second argument
says who captures round documents: the writer thread ("writer") or the tick ("tick").
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.services import persistence as persistence_module
from npc_memory.store import TinyDBStore
from npc_memory.store.records import Record

NPCS = 12
CHECKPOINT_BYTES = 16 * 1024
_lines = threading.Lock()


def say(line: str) -> None:
    """Print one whole line (the writer thread prints too)."""
    with _lines:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class MarkedStore(TinyDBStore):
    """Says when a journal append or a checkpoint slice is under way, so the parent can
    tell where the kill landed (the last marker before it)."""

    def append(self, records: Iterable[Record]) -> int:
        say("appending")
        written = super().append(records)
        say("appended")
        return written

    def maintain(self, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        say("folding")
        more = super().maintain(deadline, pause)
        say("folded")
        return more


def main(db: str, capture: str) -> None:
    if capture == "tick":
        persistence_module.writer_may_capture = lambda: False  # as on an interpreter without a GIL
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=1.0, snapshot_documents_per_tick=4, snapshot_tick_ms=1000.0)
    data["memory"].update(episodic_cap=5)
    store = MarkedStore(db, checkpoint_bytes=CHECKPOINT_BYTES)
    plugin = npc_memory.install(world="crash", pack=validate_pack(data), store=store, seed=1)
    say("ready")
    play(plugin, "crash")


def play(plugin: npc_memory.MemoryPlugin, world: str) -> None:
    """Add the NPCs and alice, then play steps until killed, printing the promises."""
    service = plugin._persistence
    for i in range(NPCS):
        plugin.add_npc(key=f"npc{i:02d}")
    plugin.add_player(key="alice")
    esper.switch_world(world)
    started: dict[int, int] = {}  # snapshot round -> the step every NPC had reached when it began
    step = 0
    while True:
        step += 1
        for i in range(NPCS):
            key = f"npc{i:02d}"
            n = plugin.relationship(key, "alice").interaction_count + 1
            plugin.remember(key, None, f"round {n}")
            plugin.record_interaction(key, "alice")
        done = min(plugin.relationship(f"npc{i:02d}", "alice").interaction_count for i in range(NPCS))
        if step % 4 == 0:
            plugin.save()
            say(f"saved {done}")
            continue
        before = service.snapshots
        esper.process(1.0)
        if service.snapshots != before:
            started[service.snapshots] = done
        assert service.writer is not None
        durable = service.writer.durable_round
        for number in [r for r in started if r <= durable]:
            say(f"round {started.pop(number)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

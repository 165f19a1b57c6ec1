"""Child process of test_crash.py: runs a world that snapshots constantly until killed.

Every round, each NPC remembers "round n" (a world memory) and records one interaction
with alice, so in any complete version of an NPC's document
``bank.next_id - 1 == interaction_count == n`` and its newest memory reads "round n".
Rounds alternate between SnapshotSystem ticks and explicit saves; after each save the
child prints "saved <n>", the promise that every NPC's round n is on disk (NPCs can be
a round apart after a kill cut a snapshot round short).
"""

from __future__ import annotations

import sys

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack

NPCS = 12


def main(db: str) -> None:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=1.0, snapshot_documents_per_tick=4, snapshot_tick_ms=1000.0)
    data["memory"].update(episodic_cap=5)
    plugin = npc_memory.install(world="crash", pack=validate_pack(data), store=db, seed=1)
    print("ready", flush=True)
    for i in range(NPCS):
        plugin.add_npc(key=f"npc{i:02d}")
    plugin.add_player(key="alice")
    esper.switch_world("crash")
    step = 0
    while True:
        step += 1
        for i in range(NPCS):
            key = f"npc{i:02d}"
            n = plugin.relationship(key, "alice").interaction_count + 1
            plugin.remember(key, None, f"round {n}")
            plugin.record_interaction(key, "alice")
        if step % 4 == 0:
            plugin.save()
            done = min(plugin.relationship(f"npc{i:02d}", "alice").interaction_count for i in range(NPCS))
            print(f"saved {done}", flush=True)
        else:
            esper.process(1.0)


if __name__ == "__main__":
    main(sys.argv[1])

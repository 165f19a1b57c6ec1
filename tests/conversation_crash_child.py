"""Child process of test_faults.py's conversation kill test: ends conversations and
applies their extractions continuously while snapshot rounds run, until killed.

The rules extract slowly (one result per tick), so results are applied while a round's
documents are being captured, before and after each NPC's capture. Prints "ended <id>"
for each conversation as ``end_conversation`` returns, and the promises the parent
checks: "saved <n>" once ``save()`` returned (the first n conversations are on disk)
and "round <n>" once a snapshot round that started after the first n ended is on disk.
The second argument says who captures round documents: the writer thread ("writer")
or the tick ("tick").
"""

from __future__ import annotations

import os
import sys
import time

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.services import persistence as persistence_module

NPCS = 6
LINE = "You saved my life, thank you friend"
"""A line the rules turn into exactly one memory (said with the process and step, so no
two conversations leave the same memory: an equal one would reinforce the first)."""


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(db: str, capture: str) -> None:
    if capture == "tick":
        persistence_module.writer_may_capture = lambda: False  # as on an interpreter without a GIL
    data = load_pack("village").model_dump()
    data["budgets"].update(
        snapshot_interval=1.0, snapshot_documents_per_tick=2, snapshot_tick_ms=1000.0,
        extraction_apply_per_tick=1, extraction_dispatch_per_tick=1, extraction_queue=10_000,
    )
    data["memory"].update(episodic_cap=100_000, decay_interval=10.0**9)
    plugin = npc_memory.install(world="talk", pack=validate_pack(data), store=db, seed=1)
    for i in range(NPCS):
        plugin.add_npc(key=f"npc{i}", archetype="blacksmith")
    plugin.add_player(key="alice", consent=True)
    service = plugin._persistence
    esper.switch_world("talk")
    say("ready")
    ended = 0
    started: dict[int, int] = {}  # snapshot round -> conversations ended when it began
    step = 0
    while True:
        step += 1
        time.sleep(0.002)  # a few hundred conversations a second: each NPC's extracted ids stay known
        npc = f"npc{step % NPCS}"
        plugin.say(npc, "alice", "alice", f"{LINE} ({os.getpid()}-{step})")
        result = plugin.end_conversation(npc, "alice")
        assert result is not None and result.status == "queued"
        ended += 1
        say(f"ended {result.conversation}")
        if step % 25 == 0:
            plugin.save()
            say(f"saved {ended}")
            continue
        before = service.snapshots
        esper.process(0.5)
        if service.snapshots != before:
            started[service.snapshots] = ended
        durable = service.writer.durable_round
        for number in [r for r in started if r <= durable]:
            say(f"round {started.pop(number)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

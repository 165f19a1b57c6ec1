"""Child process of test_postgres_processes.py: one game server on a shared PostgreSQL store.

``handover URL WORLD``: adds NPC hilda, gives her a memory, saves, then follows the
commands on standard input ("remember TEXT", "remove", "exit"), answering each with
"ok" once it is saved.

``crash URL WORLD``: like crash_child.py, a world that snapshots constantly until
killed; every step each NPC remembers "round n" and records one interaction with
alice. Prints "saved <n>" once ``save()`` returned and "round <n>" once a snapshot
round that started when every NPC was at step n or later is written.
"""

from __future__ import annotations

import sys

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.store.postgres import PostgresStore

NPCS = 12


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def handover(url: str, world: str) -> None:
    plugin = npc_memory.install(world=world, store=url, seed=1)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.remember("hilda", None, "the forge was cold at dawn")
    plugin.save()
    say("ok")
    for line in sys.stdin:
        command, _, text = line.strip().partition(" ")
        if command == "remember":
            plugin.remember("hilda", None, text)
        elif command == "remove":
            plugin.remove("hilda")
        elif command == "exit":
            break
        plugin.save()
        say("ok")
    npc_memory.uninstall(world)
    say("ok")


def crash(url: str, world: str) -> None:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=1.0)
    data["memory"].update(episodic_cap=5)
    store = PostgresStore(url, world=world)
    plugin = npc_memory.install(world=world, pack=validate_pack(data), store=store, seed=1)
    service = plugin._persistence
    for i in range(NPCS):
        plugin.add_npc(key=f"npc{i:02d}")
    plugin.add_player(key="alice")
    esper.switch_world(world)
    say("ready")
    started: dict[int, int] = {}
    step = 0
    while True:
        step += 1
        for i in range(NPCS):
            key = f"npc{i:02d}"
            n = plugin.relationship(key, "alice").interaction_count + 1
            plugin.remember(key, None, f"round {n}")
            plugin.record_interaction(key, "alice")
        done = min(plugin.relationship(f"npc{i:02d}", "alice").interaction_count for i in range(NPCS))
        if step % 3 == 0:
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
    {"handover": handover, "crash": crash}[sys.argv[1]](sys.argv[2], sys.argv[3])

"""Child process of test_postgres_processes.py: one game server on a shared PostgreSQL store.

``handover URL WORLD``: adds NPC hilda, gives her a memory, saves, then follows the
commands on standard input ("remember TEXT", "remove", "exit"), answering each with
"ok" once it is saved.

``crash URL WORLD``: the world of crash_child.py (snapshots constantly until killed;
every step each NPC remembers "round n" and records one interaction with alice;
prints "saved <n>" once ``save()`` returned and "round <n>" once a snapshot round that
started when every NPC was at step n or later is written) on the PostgreSQL store.
"""

from __future__ import annotations

import sys

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.store.postgres import PostgresStore
from tests.crash_child import play, say


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
    plugin = npc_memory.install(
        world=world, pack=validate_pack(data), store=PostgresStore(url, world=world), seed=1
    )
    say("ready")
    play(plugin, world)


if __name__ == "__main__":
    {"handover": handover, "crash": crash}[sys.argv[1]](sys.argv[2], sys.argv[3])

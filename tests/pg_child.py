"""Child process of test_postgres_processes.py: one game server on a shared PostgreSQL store.

``handover URL WORLD``: adds NPC hilda, gives her a memory, saves, then follows the
commands on standard input ("remember TEXT", "remove", "exit"), answering each with
"ok" once it is saved.

``holder URL WORLD NPCS``: adds the NPCs of the comma-separated NPCS (as stored), saves
and says "ok SESSION", then follows the commands on standard input: "step" (save, which
polls the store, ticks until the
server has done its part of any privacy operation it found: forgetting, withdrawn consent,
a game's end; save again), "remove KEY" (and save), "check KEY NAME" (says "clean" when nothing the
server holds, live or stored, names the player, else "holds"), "exit".

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


def holder(url: str, world: str, npcs: str) -> None:
    import esper
    import msgspec

    store = PostgresStore(url, world=world)
    plugin = npc_memory.install(world=world, store=store, seed=3)
    for key in npcs.split(","):
        plugin.add_npc(key=key)
    plugin.save()
    say(f"ok {store.session}")
    for line in sys.stdin:
        command, *args = line.split()
        if command == "step":
            plugin.save()
            esper.switch_world(world)
            esper.process(1.0)
            while plugin._privacy._work is not None or plugin._privacy._seen:
                esper.process(1.0)
            plugin.save()
            say("ok")
        elif command == "remove":
            plugin.remove(args[0])
            plugin.save()
            say("ok")
        elif command == "check":
            meta, documents = plugin._persistence.export()
            text = msgspec.json.encode([meta, documents]).decode().lower()
            say("holds" if any(needle.lower() in text for needle in args) else "clean")
        elif command == "exit":
            break
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
    {"handover": handover, "crash": crash, "holder": holder}[sys.argv[1]](*sys.argv[2:])

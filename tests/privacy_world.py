"""A small village in which one player leaves traces everywhere, for the privacy tests
and the kill -9 child: memories, relationships, facts and their gossip copies, open
conversations and summaries, queued extraction jobs, a consolidated habit, world
memories that name the player, and older generations of the store's files."""

from __future__ import annotations

from pathlib import Path

import npc_memory

from .conftest import tick

KEY = "zqxalice"
NAME = "Zorvanna"
OTHER = "bobkey"


def build(plugin: npc_memory.MemoryPlugin, npcs: int = 6, *, key: str = KEY, name: str = NAME) -> None:
    """Populate ``plugin``'s world; every NPC ends up holding something about ``key``."""
    plugin.add_player(key=key, name=name, faction="adventurers", room="square", consent=True)
    plugin.add_player(key=OTHER, name="Bob", faction="villagers", room="square", consent=True)
    for i in range(npcs):
        npc = plugin.add_npc(key=f"npc{i}", name=f"Npc {i}", archetype="bard", room="square")
        plugin.remember(npc, key, f"{name} helped me carry wood", tags=["helpful"], importance=0.8)
        plugin.remember(npc, key, f"{name} sold me a sword", tags=["trade"], importance=0.6, kind="semantic")
        plugin.remember(npc, None, f"The market is busy; {name} was there", importance=0.4)
        plugin.remember(npc, OTHER, f"Bob said {name} is brave", tags=["heroic"])
        plugin.remember(npc, OTHER, "Bob likes apples", tags=["gift"])
        plugin.adjust_relationship(npc, key, trust=0.3)
        plugin.say(npc, key, name, "Bandits are attacking! Help me fight!")
        plugin.say(npc, key, f"Npc {i}", "I'll get my hammer.")
        if i % 2 == 0:
            plugin.end_conversation(npc, key)  # a queued job, a summary
            plugin.say(npc, key, name, "Thanks for the help, friend.")  # and an open one
        plugin.say(npc, OTHER, "Bob", f"Have you seen {name} today?")
    plugin.observe(room="square", subject=key, content=f"{name} stole a loaf of bread", tags=["theft"], importance=0.9)
    plugin.learn_fact("npc0", f"{name} is a famous duellist", subject=key, tags=["combat"], importance=0.9)
    plugin.learn_fact("npc1", "The well is dry", tags=["village"], importance=0.9)


def fold(plugin: npc_memory.MemoryPlugin) -> None:
    """Fold the store's journal into its files now, on the store's writer thread (the
    thread that owns the store): the files get a new generation, the old one a .prev."""
    plugin._persistence.run_on_store(lambda store: store.checkpoint())  # type: ignore[attr-defined]


def run(world: str, ticks: int, dt: float = 60.0) -> None:
    """``ticks`` ticks of ``dt`` real seconds (a game minute each by default) in ``world``."""
    tick(world, ticks, dt)


def store_bytes(db: Path) -> dict[str, bytes]:
    """Every file of a store directory (lock files aside), by relative path."""
    return {
        str(p.relative_to(db)): p.read_bytes()
        for p in sorted(db.rglob("*"))
        if p.is_file() and p.name not in ("LOCK", "LOCK.owner")
    }


def traces(db: Path, *needles: str) -> list[str]:
    """Files of the store at ``db`` containing any of ``needles`` (case-insensitive)."""
    lowered = [n.lower().encode() for n in needles]
    return [path for path, data in store_bytes(db).items() if any(n in data.lower() for n in lowered)]

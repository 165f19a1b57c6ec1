"""A headless village: NPCs go about their day, three players act on their natures,
and the village forms opinions of them. Offline, no API key, deterministic per seed.

Each tick is one game hour (``esper.process(1.0)`` with one real second = one game
hour). NPCs keep to their workplace by day and the sociable ones drift to the tavern
in the evening; players wander between rooms and act on NPCs they find there. What
an NPC experiences (or witnesses happening to another NPC in the same room) becomes
a memory whose tags move its relationship with the player by the pack's rules.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from npc_memory.content import Pack
from npc_memory.demo.deeds import Deed, Witnessed, act, chat
from npc_memory.demo.simulation import DemoResult, Progress, run
from npc_memory.plugin import MemoryPlugin

ROOMS = ("forge", "tavern", "market", "barracks", "gate", "fields", "temple")

NPCS: tuple[tuple[str, str, str, str], ...] = (
    # key, name, archetype, workplace
    ("hilda", "Hilda", "blacksmith", "forge"),
    ("marta", "Marta", "innkeeper", "tavern"),
    ("oswin", "Oswin", "merchant", "market"),
    ("brandt", "Captain Brandt", "guard_captain", "barracks"),
    ("pell", "Pell", "guard", "gate"),
    ("edda", "Edda", "farmer", "fields"),
    ("aldric", "Father Aldric", "priest", "temple"),
    ("wren", "Wren", "bard", "tavern"),
)

PLAYERS: tuple[tuple[str, str, str, str], ...] = (
    # key, name, faction, nature
    ("alice", "Alice", "adventurers", "hero"),
    ("bram", "Bram", "thieves", "thief"),
    ("cora", "Cora", "adventurers", "trader"),
)


DEEDS: dict[str, tuple[Deed, ...]] = {
    "hero": (
        Deed(3, "{player} helped {npc} carry supplies", ("helpful",), 0.4, "positive", 0.3),
        Deed(2, "{player} drove off bandits threatening {npc}", ("heroic", "combat"), 0.8, "positive", 0.8,
             "{player} drove off bandits threatening {npc}"),
        Deed(1, "{player} gave {npc} a share of the loot", ("gift",), 0.5, "positive", 0.5),
        Deed(1, "{player} bought provisions from {npc}", ("trade",), 0.3, "neutral", 0.1),
        Deed(0.5, "{player} was curt and rude to {npc}", ("insult",), 0.3, "negative", 0.4),
        Deed(1, "{player} asked {npc} about the weather", ("smalltalk",), 0.055, "neutral", 0.0),
    ),
    "thief": (
        Deed(3, "{player} stole from {npc}", ("theft",), 0.7, "negative", 0.7,
             "{player} stole from {npc}"),
        Deed(1, "{player} threatened {npc}", ("threat",), 0.6, "negative", 0.8,
             "{player} threatened {npc}"),
        Deed(2, "{player} sold {npc} goods at a fair price", ("trade",), 0.3, "neutral", 0.1),
        Deed(1, "{player} mocked {npc}", ("insult",), 0.3, "negative", 0.3),
        Deed(1, "{player} bought {npc} a drink", ("gift",), 0.3, "positive", 0.3),
        Deed(1, "{player} asked {npc} when the watch changes", ("smalltalk",), 0.055, "neutral", 0.0),
    ),
    "trader": (
        Deed(5, "{player} traded fairly with {npc}", ("trade",), 0.4, "positive", 0.2),
        Deed(2, "{player} brought {npc} news and a small gift", ("gift",), 0.4, "positive", 0.3),
        Deed(1, "{player} lent {npc} a hand", ("helpful",), 0.4, "positive", 0.3),
        Deed(1, "{player} asked {npc} about the weather", ("smalltalk",), 0.055, "neutral", 0.0),
    ),
}


CHATS: dict[str, tuple[str, ...]] = {
    "hero": (
        "I cleared the wolves from the north road this morning.",
        "If the bandits come back, send for me. I'll protect the village.",
        "Take this, it's for you: a wolf pelt for the winter.",
        "Lovely evening, isn't it?",
    ),
    "thief": (
        "Nice purse you've got. Be a shame if it went missing.",
        "Keep this between us: the watch sleeps at the gate after midnight.",
        "How much for a room? I'll pay in silver.",
        "Evening. Quiet night.",
    ),
    "trader": (
        "How much for a sack of grain? I'll pay twelve silver.",
        "I brought you spices from the coast, a gift for you.",
        "Let me help you stack those crates.",
        "Good evening to you.",
    ),
}
"""What each kind of player says when they stop for a chat (extracted into memories)."""




class Village:
    """Eight NPCs and three players (a hero, a thief and a trader) in seven rooms."""

    name = "village"

    def __init__(self, act_chance: float = 0.35) -> None:
        self.act_chance = act_chance

    def pack(self, pack: str | Pack) -> str | Pack:
        return pack

    def headline(self) -> str:
        return f"npc-memory demo: village, {len(NPCS)} NPCs, {len(PLAYERS)} players"

    def styles(self) -> dict[str, str]:
        return {key: nature for key, _, _, nature in PLAYERS}

    def populate(self, plugin: MemoryPlugin, resumed: bool) -> None:
        for key, name, archetype, room in NPCS:
            plugin.add_npc(key=key, name=name, archetype=archetype, room=room)
        for key, name, faction, _ in PLAYERS:
            plugin.add_player(key=key, name=name, faction=faction, room=plugin.rng.choice(ROOMS))

    def hour(self, plugin: MemoryPlugin, hour: int, witnessed: Callable[[Witnessed], None]) -> None:
        rng = plugin.rng
        for key, _, _, workplace in NPCS:
            traits = plugin.npc(key).traits
            evening = 18 <= hour < 23 and rng.random() < traits.sociability
            plugin.move(key, "tavern" if evening else workplace)
        if hour == 20:
            self._evening_chats(plugin)
        if not 8 <= hour < 22:
            return
        for player_key, _, _, nature in PLAYERS:
            if rng.random() < 0.5:
                plugin.move(player_key, rng.choice(ROOMS))
            room = plugin.player(player_key).location.room
            present = [key for key, *_ in NPCS if plugin.npc(key).location.room == room]
            if room is None or not present or rng.random() >= self.act_chance:
                continue
            npc = rng.choice(present)
            deeds = DEEDS[nature]
            deed = rng.choices(deeds, weights=[d.weight for d in deeds])[0]
            seen = act(plugin, npc, player_key, room, deed)
            if seen is not None:
                witnessed(seen)

    def _evening_chats(self, plugin: MemoryPlugin) -> None:
        rng = plugin.rng
        for player_key, _, _, nature in PLAYERS:
            room = plugin.player(player_key).location.room
            present = [key for key, *_ in NPCS if plugin.npc(key).location.room == room]
            if not present or rng.random() >= 0.6:
                continue
            chat(plugin, rng.choice(present), player_key, rng.choice(CHATS[nature]))


def run_village(
    days: int = 7,
    seed: int = 7,
    pack: str | Pack = "village",
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = False,
    world: str = "npc-memory-demo",
    act_chance: float = 0.35,
    keep_installed: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Simulate ``days`` game days of the village and return its story.

    With ``store`` the village is persisted there (a TinyDB store directory): a fresh
    one unless ``resume`` continues the village saved there, memories, relationships,
    clock and random state included (a missing store is an error then). An existing
    store is only replaced if this demo wrote it (world ``world``) and no process has it
    open. The same ``seed`` (and starting store) gives the same run. The plugin is
    uninstalled (saving the store, deleting the esper world) afterwards unless
    ``keep_installed`` is set.
    """
    return run(
        Village(act_chance), days, seed, pack, store=store, resume=resume, world=world,
        keep_installed=keep_installed, progress=progress,
    )

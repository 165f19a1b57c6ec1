"""A headless village: NPCs go about their day, three players act on their natures,
and the village forms opinions of them. Offline, no API key, deterministic per seed.

Each tick is one game hour (``esper.process(1.0)`` with one real second = one game
hour). NPCs keep to their workplace by day and the sociable ones drift to the tavern
in the evening; players wander between rooms and act on NPCs they find there. What
an NPC experiences (or witnesses happening to another NPC in the same room) becomes
a memory whose tags move its relationship with the player by the pack's rules.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import esper

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import Stage, Valence
from npc_memory.events import Event, RelationshipStageChanged, RelationshipThresholdCrossed
from npc_memory.installation import install, uninstall
from npc_memory.plugin import MemoryPlugin
from npc_memory.store.tools import clear_store

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


@dataclass(frozen=True)
class Deed:
    """Something a player does to an NPC; ``{npc}``/``{player}`` fill the content."""

    weight: float
    content: str
    tags: tuple[str, ...]
    importance: float
    valence: Valence
    intensity: float
    witnessed_as: str | None = None  # done in public: what everyone present sees


DEEDS: dict[str, tuple[Deed, ...]] = {
    "hero": (
        Deed(3, "{player} helped {npc} carry supplies", ("helpful",), 0.4, "positive", 0.3),
        Deed(2, "{player} drove off bandits threatening {npc}", ("heroic", "combat"), 0.8, "positive", 0.8,
             "{player} drove off bandits threatening {npc}"),
        Deed(1, "{player} gave {npc} a share of the loot", ("gift",), 0.5, "positive", 0.5),
        Deed(1, "{player} bought provisions from {npc}", ("trade",), 0.3, "neutral", 0.1),
        Deed(0.5, "{player} was curt and rude to {npc}", ("insult",), 0.3, "negative", 0.4),
    ),
    "thief": (
        Deed(3, "{player} stole from {npc}", ("theft",), 0.7, "negative", 0.7,
             "{player} stole from {npc}"),
        Deed(1, "{player} threatened {npc}", ("threat",), 0.6, "negative", 0.8,
             "{player} threatened {npc}"),
        Deed(2, "{player} sold {npc} goods at a fair price", ("trade",), 0.3, "neutral", 0.1),
        Deed(1, "{player} mocked {npc}", ("insult",), 0.3, "negative", 0.3),
        Deed(1, "{player} bought {npc} a drink", ("gift",), 0.3, "positive", 0.3),
    ),
    "trader": (
        Deed(5, "{player} traded fairly with {npc}", ("trade",), 0.4, "positive", 0.2),
        Deed(2, "{player} brought {npc} news and a small gift", ("gift",), 0.4, "positive", 0.3),
        Deed(1, "{player} lent {npc} a hand", ("helpful",), 0.4, "positive", 0.3),
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


@dataclass
class DemoResult:
    """What a run produced: the plugin (still installed) and the printed report."""

    plugin: MemoryPlugin
    report: str
    log: list[str] = field(default_factory=list)


def run_village(
    days: int = 7,
    seed: int = 7,
    pack: str = "village",
    *,
    store: str | os.PathLike[str] | None = None,
    resume: bool = False,
    world: str = "npc-memory-demo",
    act_chance: float = 0.35,
    keep_installed: bool = False,
) -> DemoResult:
    """Simulate ``days`` game days of the village and return the report.

    With ``store`` the village is persisted there (a TinyDB store directory): a fresh
    one unless ``resume`` continues the village saved there, memories, relationships,
    clock and random state included. An existing store is only replaced if this demo
    wrote it (world ``world``) and no process has it open. The same ``seed`` (and
    starting store) gives the same run.
    The plugin is uninstalled (saving the store, deleting the esper world) afterwards
    unless ``keep_installed`` is set.
    """
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    if store is not None and not resume:
        clear_store(store, world)  # only a store this demo wrote, and never one in use
    previous_world = esper.current_world
    plugin = install(world=world, pack=pack, store=store, seed=seed, time_scale=3600.0, deterministic=True)
    try:
        log: list[str] = []
        plugin.on(RelationshipThresholdCrossed, _logger(plugin, log, _describe_threshold))
        plugin.on(RelationshipStageChanged, _logger(plugin, log, _describe_stage))
        for key, name, archetype, room in NPCS:
            plugin.add_npc(key=key, name=name, archetype=archetype, room=room)
        for key, name, faction, _ in PLAYERS:
            plugin.add_player(key=key, name=name, faction=faction, room=plugin.rng.choice(ROOMS))
        first_day = int(plugin.clock.day) + 1
        esper.switch_world(world)
        for _ in range(days * 24):
            _hour(plugin, act_chance)
            esper.process(1.0)
        report = _report(plugin, first_day, days, seed, log)
        if store is not None:
            plugin.save()
            report += (
                f"\nSaved to {store} ({len(plugin.npcs())} NPCs, {len(plugin.players())} players). "
                f"Look inside: npc-memory inspect --db {store} --npc hilda; "
                f"continue it: npc-memory demo --db {store} --resume\n"
            )
        return DemoResult(plugin=plugin, report=report, log=log)
    finally:
        esper.switch_world(previous_world)
        if not keep_installed:
            uninstall(world)
            if world != previous_world:
                esper.delete_world(world)


def _hour(plugin: MemoryPlugin, act_chance: float) -> None:
    rng = plugin.rng
    hour = int(plugin.clock.now // 3600) % 24
    for key, _, _, workplace in NPCS:
        traits = plugin.npc(key).traits
        evening = 18 <= hour < 23 and rng.random() < traits.sociability
        plugin.move(key, "tavern" if evening else workplace)
    if hour == 20:
        _evening_chats(plugin)
    if not 8 <= hour < 22:
        return
    for player_key, _, _, nature in PLAYERS:
        if rng.random() < 0.5:
            plugin.move(player_key, rng.choice(ROOMS))
        room = plugin.player(player_key).location.room
        present = [key for key, *_ in NPCS if plugin.npc(key).location.room == room]
        if not present or rng.random() >= act_chance:
            continue
        npc = rng.choice(present)
        deeds = DEEDS[nature]
        deed = rng.choices(deeds, weights=[d.weight for d in deeds])[0]
        if deed.witnessed_as is None:
            _experience(plugin, npc, player_key, deed)
        else:
            _witnessed(plugin, room, npc, player_key, deed)


def _evening_chats(plugin: MemoryPlugin) -> None:
    rng = plugin.rng
    for player_key, name, _, nature in PLAYERS:
        room = plugin.player(player_key).location.room
        present = [key for key, *_ in NPCS if plugin.npc(key).location.room == room]
        if not present or rng.random() >= 0.6:
            continue
        npc = rng.choice(present)
        plugin.say(npc, player_key, name, rng.choice(CHATS[nature]))
        plugin.say(npc, player_key, plugin.npc(npc).identity.name, "Is that so.")
        plugin.end_conversation(npc, player_key)


def _experience(plugin: MemoryPlugin, npc: str, player: str, deed: Deed) -> None:
    plugin.record_interaction(npc, player)
    plugin.remember(
        npc,
        player,
        deed.content.format(player=plugin.player(player).identity.name, npc="me"),
        tags=deed.tags,
        importance=deed.importance,
        valence=deed.valence,
        intensity=deed.intensity,
        affect_relationship=True,
    )


def _witnessed(plugin: MemoryPlugin, room: str | None, victim: str, player: str, deed: Deed) -> None:
    """A deed done in public: everyone in the room sees it (a fact each, which moves
    their opinion of the player and may travel as gossip); the victim also keeps it as
    a memory of their own."""
    assert deed.witnessed_as is not None and room is not None
    player_name = plugin.player(player).identity.name
    plugin.record_interaction(victim, player)
    plugin.observe(
        room=room,
        subject=player,
        content=deed.witnessed_as.format(player=player_name, npc=plugin.npc(victim).identity.name),
        tags=deed.tags,
        importance=deed.importance,
    )
    plugin.remember(
        victim,
        player,
        deed.content.format(player=player_name, npc="me"),
        tags=deed.tags,
        importance=deed.importance,
        valence=deed.valence,
        intensity=deed.intensity,
    )


def _logger(
    plugin: MemoryPlugin, log: list[str], describe: Callable[[MemoryPlugin, Event], str]
) -> Callable[[Event], None]:
    def record(event: Event) -> None:
        log.append(f"{_stamp(event.game_time)}  {describe(plugin, event)}")

    return record


def _describe_threshold(plugin: MemoryPlugin, event: Event) -> str:
    assert isinstance(event, RelationshipThresholdCrossed)
    npc, player = plugin.npc(event.npc).identity.name, plugin.player(event.player).identity.name
    return (
        f"{npc}: {event.dimension} of {player} went {event.direction} {event.limit:g} "
        f"({event.value:.2f}) -> {type(event).__name__}"
    )


def _describe_stage(plugin: MemoryPlugin, event: Event) -> str:
    assert isinstance(event, RelationshipStageChanged)
    npc, player = plugin.npc(event.npc).identity.name, plugin.player(event.player).identity.name
    return f"{npc} now sees {player} as {_stage_name(event.new)} (was {_stage_name(event.old)})"


def _stamp(game_time: float) -> str:
    day = int(game_time // SECONDS_PER_DAY) + 1
    hour = int(game_time % SECONDS_PER_DAY // 3600)
    return f"day {day} {hour:02d}:00"


def _stage_name(stage: Stage) -> str:
    return stage.value.replace("_", " ")


def _report(
    plugin: MemoryPlugin, first_day: int, days: int, seed: int, log: list[str], log_lines: int = 30
) -> str:
    out = io.StringIO()
    players = [key for key, *_ in PLAYERS]
    names = {key: plugin.player(key).identity.name for key in players}
    span = f"{days} game days" if first_day == 1 else f"game days {first_day}-{first_day + days - 1}"
    out.write(
        f"npc-memory demo: village, {len(NPCS)} NPCs, {len(players)} players, {span}, seed {seed}\n\n"
    )
    out.write(f"Relationship events ({len(log)}):\n")
    for line in log[:log_lines]:
        out.write(f"  {line}\n")
    if len(log) > log_lines:
        out.write(f"  ... {len(log) - log_lines} more\n")
    out.write("\nHow each NPC regards each player (stage, trust):\n")
    width = 26
    out.write(f"  {'':16}" + "".join(f"{names[p]:<{width}}" for p in players) + "\n")
    for key, name, *_ in NPCS:
        cells = []
        for player in players:
            rel = plugin.relationship(key, player)
            cells.append(f"{_stage_name(rel.stage) + f' ({rel.trust:.2f})':<{width}}")
        out.write(f"  {name:16}" + "".join(cells) + "\n")
    out.write("\nReputation (mean disposition in [-1, 1], memories held about them):\n")
    for player in players:
        dispositions = [plugin.query.disposition(key, player) for key, *_ in NPCS]
        memories = sum(len(plugin.memories(key, player)) for key, *_ in NPCS)
        out.write(
            f"  {names[player]:8} {sum(dispositions) / len(dispositions):+.2f}   {memories} memories\n"
        )
    out.write("\nRumours (facts about players passed on by gossip):\n")
    for player in players:
        heard = [
            (key, fact)
            for key, *_ in NPCS
            for fact in plugin.facts(key)
            if fact.subject == player and fact.source == "gossip"
        ]
        strangers = len({key for key, _ in heard if not plugin.query.has_met(key, player)})
        who = f", by {strangers} NPC{'s' if strangers > 1 else ''} who never met them" if strangers else ""
        out.write(f"  {names[player]:8} {len(heard)} heard second-hand{who}\n")
    farthest = max(
        ((key, fact) for key, *_ in NPCS for fact in plugin.facts(key) if fact.source == "gossip"),
        key=lambda item: (item[1].hops, item[1].created),
        default=None,
    )
    if farthest is not None:
        out.write(f"  Farthest travelled: {plugin.query.why(farthest[0], farthest[1].id)}\n")
    stats = plugin.extraction.stats
    out.write(
        f"\nEvening conversations: {stats.queued} held, {stats.applied} turned into memories "
        f"by the rule-based extractor\n"
    )
    out.write("\nWhat Hilda remembers best of each player:\n")
    for player in players:
        top = plugin.memories("hilda", player)[:2]
        recollection = "; ".join(m.content for m in top) or "nothing yet"
        out.write(f"  {names[player]:8} {recollection}\n")
    return out.getvalue()

"""What players do to NPCs in the simulations, and how the plugin hears of it.

A deed done in private becomes the NPC's own memory; a deed done in public is also
witnessed by everyone in the room (a fact each, which moves their opinion of the
player and may travel as gossip). Evening chats are conversations that the offline
extractor turns into memories.
"""

from __future__ import annotations

from dataclasses import dataclass

from npc_memory.components import Valence
from npc_memory.plugin import MemoryPlugin


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


@dataclass(frozen=True)
class Witnessed:
    """A public deed as it happened: who did it to whom, where, and who saw it."""

    player: str
    victim: str
    room: str
    content: str
    witnesses: tuple[str, ...]


def experience(plugin: MemoryPlugin, npc: str, player: str, deed: Deed) -> None:
    """``player`` does ``deed`` to ``npc`` with nobody else watching (the memory comes
    first, so the relationship events of meeting already find it)."""
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
    plugin.record_interaction(npc, player)


def witnessed(plugin: MemoryPlugin, room: str, victim: str, player: str, deed: Deed) -> Witnessed:
    """``player`` does ``deed`` to ``victim`` in public: everyone in ``room`` (the victim
    too) sees it, keeps a memory of it and learns it first-hand."""
    assert deed.witnessed_as is not None
    player_name = plugin.player(player).identity.name
    plugin.record_interaction(victim, player)
    content = deed.witnessed_as.format(player=player_name, npc=plugin.npc(victim).identity.name)
    witnesses = plugin.observe(
        room=room, subject=player, content=content, tags=deed.tags, importance=deed.importance
    )
    return Witnessed(player, victim, room, content, tuple(witnesses))


def act(plugin: MemoryPlugin, npc: str, player: str, room: str, deed: Deed) -> Witnessed | None:
    """``player`` does ``deed`` to ``npc`` in ``room``: privately or in public."""
    if deed.witnessed_as is None:
        experience(plugin, npc, player, deed)
        return None
    return witnessed(plugin, room, npc, player, deed)


def chat(plugin: MemoryPlugin, npc: str, player: str, line: str, answer: str = "Is that so.") -> None:
    """A short conversation, ended at once and queued for extraction."""
    plugin.say(npc, player, plugin.player(player).identity.name, line)
    plugin.say(npc, player, plugin.npc(npc).identity.name, answer)
    plugin.end_conversation(npc, player)

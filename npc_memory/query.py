"""Typed, in-memory questions game logic asks about NPCs and players.

Every answer reads components in memory: O(1), or O(memories of one pair) for the
memory questions and O(facts of one NPC) for the knowledge questions. Asking never
changes anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import DIMENSIONS, Fact, Memory, Stage
from npc_memory.components.relationship import Dimension, Relationship
from npc_memory.errors import InvalidArgumentError, UnknownEntityError

if TYPE_CHECKING:
    from npc_memory.plugin import MemoryPlugin, Ref


class MemoryQuery:
    """``plugin.query``: answers about one NPC and one player (entities or keys)."""

    __slots__ = ("_plugin",)

    def __init__(self, plugin: MemoryPlugin) -> None:
        self._plugin = plugin

    def trust(self, npc: Ref, player: Ref) -> float:
        """How much ``npc`` trusts ``player``, in [0, 1]."""
        return self._relationship(npc, player).trust

    def dimension(self, npc: Ref, player: Ref, dimension: Dimension) -> float:
        """One relationship dimension (trust, fear, respect, loyalty, friendliness,
        romantic_interest), in [0, 1]."""
        if dimension not in DIMENSIONS:
            raise InvalidArgumentError(
                f"unknown relationship dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)}"
            )
        return self._relationship(npc, player).value(dimension)

    def disposition(self, npc: Ref, player: Ref) -> float:
        """Overall regard of ``npc`` for ``player``, in [-1, 1]."""
        return self._relationship(npc, player).disposition

    def stage(self, npc: Ref, player: Ref) -> Stage:
        """The relationship stage (stranger, acquaintance, friend, …, rival, enemy)."""
        return self._relationship(npc, player).stage

    def has_met(self, npc: Ref, player: Ref) -> bool:
        """Whether ``npc`` has interacted with ``player`` at least once."""
        return self._relationship(npc, player).has_met

    def count_memories_by_tag(self, npc: Ref, player: Ref | None, tag: str) -> int:
        """How many memories ``npc`` holds about ``player`` (``None``: the world) tagged ``tag``."""
        tag = tag.lower()
        return sum(1 for m in self._memories(npc, player) if tag in m.tags)

    def has_memory_matching(
        self, npc: Ref, player: Ref | None, tags: Iterable[str], min_importance: float = 0.0
    ) -> bool:
        """Whether ``npc`` holds a memory about ``player`` carrying every tag in
        ``tags`` with importance ≥ ``min_importance``."""
        if isinstance(tags, str):
            raise InvalidArgumentError(f"tags must be a list of strings, not the string {tags!r}")
        wanted = {t.lower() for t in tags}
        return any(
            m.importance >= min_importance and wanted.issubset(m.tags)
            for m in self._memories(npc, player)
        )

    def knows(self, npc: Ref, tag: str) -> bool:
        """Whether ``npc`` believes any fact tagged ``tag`` (expired facts do not count)."""
        tag = tag.lower()
        return any(tag in f.tags for f in self._plugin.facts(npc))

    def beliefs_about(self, npc: Ref, subject: Ref) -> list[Fact]:
        """What ``npc`` believes about ``subject`` (an NPC or player, or a subject key):
        one held belief per topic, the competing ones left out."""
        plugin = self._plugin
        key = plugin._knowledge.subject_key(subject)
        return [f for f in plugin.facts(npc) if f.subject == key]

    def why(self, npc: Ref, fact_id: str) -> str:
        """How ``npc`` came to know fact ``fact_id``: its provenance chain as text, most
        recent step first, with game days and hours."""
        plugin = self._plugin
        handle = plugin._resolve_npc(npc)
        fact = next((f for f in handle.knowledge.facts if f.id == fact_id), None)
        if fact is None:
            raise UnknownEntityError(f"NPC {handle.identity.key!r} has no fact {fact_id!r}")
        steps = []
        for hop in reversed(fact.chain):
            where = f" in the {hop.room}" if hop.room else ""
            when = _when(hop.at)
            if hop.teller is None:
                how = {"observation": "saw it", "conversation": "heard it from the player",
                       "authored": "has always known it"}.get(hop.source, "learned it")
                steps.append(f"{_name(plugin, hop.listener)} {how}{where} ({when})")
            else:
                teller, listener = _name(plugin, hop.teller), _name(plugin, hop.listener)
                steps.append(f"{teller} told {listener}{where} ({when})")
        status = "believed"
        if not fact.believed:
            status = f"no longer believed since {_when(fact.disbelieved_at or 0.0)}"
        return f'"{fact.content}" (confidence {fact.confidence:.2f}, {status}): ' + " <- ".join(steps)

    def _relationship(self, npc: Ref, player: Ref) -> Relationship:
        plugin = self._plugin
        return plugin._peek_relationship(plugin._resolve_npc(npc), plugin._resolve_player(player))

    def _memories(self, npc: Ref, player: Ref | None) -> list[Memory]:
        plugin = self._plugin
        handle = plugin._resolve_npc(npc)
        key = None if player is None else plugin._resolve_player(player).identity.key
        pair = handle.bank.pair(key)
        return [] if pair is None else pair.all()


def _when(game_time: float) -> str:
    day = int(game_time // SECONDS_PER_DAY) + 1
    seconds = int(game_time % SECONDS_PER_DAY)
    return f"day {day} {seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def _name(plugin: MemoryPlugin, key: str) -> str:
    entity = plugin._entities_by_key.get(key)
    if entity is None:
        return key
    return plugin.npc(entity).identity.name if entity in plugin._npcs else plugin.player(entity).identity.name

"""The shared resources of one installed plugin (Bevy's "resources"): its world, pack,
clock and random generator, the registry of live NPCs and players, the documents of
stored ones, the set of keys whose documents changed, and the event queue.

Services receive a :class:`WorldState` and their collaborators; nothing here holds
behaviour beyond bookkeeping.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from npc_memory.clock import GameClock
from npc_memory.content import Pack
from npc_memory.events import Event
from npc_memory.state.bus import ErrorPolicy, EventBus, EventQueue, Subscription
from npc_memory.state.registry import Ref, Registry, RegistryListener
from npc_memory.state.tick import StepCosts, TickBudget, TickShare
from npc_memory.state.world import world_context
from npc_memory.store.documents import Document, Part


def gossip_rng(seed: int) -> random.Random:
    """Gossip's random generator for ``seed``: its own stream, not the game's."""
    return random.Random(f"gossip/{seed}")


@dataclass
class WorldState:
    """Everything the services of one plugin share.

    ``stored``: documents of NPCs and players the store holds that are not in the live
    world. ``dirty``: keys whose documents changed since they were last handed to the
    store (only tracked when ``persistent``); ``changed``: which parts of each dirty
    NPC's document changed (a :class:`~npc_memory.store.documents.Part` mask; a dirty key
    without an entry: all of them); ``relationship_players``: for an NPC whose
    relationships are marked changed, the players whose relationship was set since, in
    the order first set (``None`` or no entry: not known, compare them all).
    ``deleted``: keys to delete from the store.
    ``game``: the id of the game being played (memories and facts made now carry it).
    ``rng`` is the game's to draw from (``plugin.rng``); the plugin draws only from
    ``gossip_rng`` (:func:`gossip_rng`), so how much gossip a tick makes never changes
    what the game draws.
    """

    world: str
    pack: Pack
    clock: GameClock
    rng: random.Random
    seed: int
    registry: Registry
    events: EventQueue
    gossip_rng: random.Random = field(default_factory=random.Random)
    stored: dict[str, Document] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    changed: dict[str, int] = field(default_factory=dict)
    relationship_players: dict[str, dict[str, None] | None] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    persistent: bool = False
    game: str = "default"
    tick: TickBudget = field(default_factory=lambda: TickBudget(1.0))
    """The plugin's share of each tick (``budgets.tick_ms``) and whether one is running."""
    installed: bool = True
    """Whether the plugin is still installed (``uninstall`` ends it): the facade refuses
    calls that change state once it is not."""

    def mark(self, key: str, parts: int = Part.ALL) -> None:
        """The document of ``key`` changed (in ``parts``, a :class:`Part` mask; every
        part unless told): persist it with the next snapshot. A snapshot copies only
        the parts marked, so a change marked on the wrong part is lost."""
        if self.persistent:
            self.dirty.add(key)
            changed = self.changed
            changed[key] = changed.get(key, 0) | parts
            if parts & Part.RELATIONSHIPS:
                self.relationship_players[key] = None

    def mark_relationship(self, key: str, player: str) -> None:
        """NPC ``key``'s relationship with ``player`` is about to be set (mark it first:
        a snapshot that copies the new record then also sees the mark). A snapshot then
        writes that record rather than comparing every relationship of the NPC. Removing
        one takes :meth:`mark` (before the removal, likewise)."""
        if self.persistent:
            self.dirty.add(key)
            changed = self.changed
            had = changed.get(key, 0)
            changed[key] = had | Part.RELATIONSHIPS
            if not had & Part.RELATIONSHIPS:
                self.relationship_players[key] = {player: None}
            else:
                known = self.relationship_players.get(key)
                if known is not None:
                    known[player] = None

    def publish(self, event: Event) -> None:
        """Queue ``event``; it is delivered once the current change is complete."""
        self.events.push(event)


__all__ = [
    "ErrorPolicy",
    "EventBus",
    "EventQueue",
    "Part",
    "Ref",
    "Registry",
    "RegistryListener",
    "StepCosts",
    "Subscription",
    "TickBudget",
    "TickShare",
    "WorldState",
    "gossip_rng",
    "world_context",
]

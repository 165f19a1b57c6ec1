"""Handles: one NPC's or player's components, gathered (attached once, mutated in place).

A handle whose ``entity`` is ``None`` is *stored*: read from the store, not in the live
world. Stored handles can be read (memories, relationships, knowledge) but not changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npc_memory.components.identity import FactionMember, Identity, Location, NpcTraits, PlayerProfile
from npc_memory.components.knowledge import KnowledgeBase
from npc_memory.components.memory import MemoryBank
from npc_memory.components.relationship import Relationships
from npc_memory.components.working import WorkingMemory


@dataclass(slots=True)
class _Components:
    """What NPCs and players both carry: who they are, their faction, where they are."""

    entity: int | None
    identity: Identity
    faction: FactionMember
    location: Location

    @property
    def key(self) -> str:
        """The stable key."""
        return self.identity.key

    @property
    def live(self) -> bool:
        """Whether it is in the live world (else it was read from the store)."""
        return self.entity is not None


@dataclass(slots=True)
class NpcHandle(_Components):
    """The components of one NPC. Treat them as read-only but for ``location.room``:
    change them through the plugin's facade so invariants, versions and events hold."""

    traits: NpcTraits
    bank: MemoryBank
    relationships: Relationships
    working: WorkingMemory
    knowledge: KnowledgeBase

    def components(self) -> tuple[Any, ...]:
        """The components the plugin attaches to the NPC's entity."""
        return (
            self.identity,
            self.faction,
            self.location,
            self.traits,
            self.bank,
            self.relationships,
            self.working,
            self.knowledge,
        )


@dataclass(slots=True)
class PlayerHandle(_Components):
    """The components of one player."""

    profile: PlayerProfile

    def components(self) -> tuple[Any, ...]:
        """The components the plugin attaches to the player's entity."""
        return (self.identity, self.faction, self.location, self.profile)


Handle = NpcHandle | PlayerHandle
"""An NPC's or a player's handle."""

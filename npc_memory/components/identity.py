"""Who an entity is, where it is and what it belongs to."""

from __future__ import annotations

import msgspec


class Identity(msgspec.Struct, kw_only=True):
    """A stable identity: ``key`` names the NPC or player everywhere outside the live
    world (stores, logs, other NPCs' memories); esper entity ids never leave it."""

    key: str
    name: str


class FactionMember(msgspec.Struct, kw_only=True):
    """The faction an NPC or player belongs to, or ``None`` for none."""

    faction: str | None = None


class Location(msgspec.Struct, kw_only=True):
    """The room an NPC or player is in, or ``None`` when nowhere in particular."""

    room: str | None = None


class NpcTraits(msgspec.Struct, kw_only=True):
    """Personality of an NPC, from its archetype; each trait in [0, 1]."""

    archetype: str | None = None
    sociability: float = 0.5
    gossip_drive: float = 0.5
    credulity: float = 0.5
    faction_loyalty: float = 0.5


class PlayerProfile(msgspec.Struct, kw_only=True):
    """What the privacy model needs to know about a player.

    ``consent``: the player agreed to be remembered across sessions (``player`` scope).
    ``anonymous``: an unidentified participant; memories of them stay ``anon``-scoped.
    """

    consent: bool = False
    anonymous: bool = False

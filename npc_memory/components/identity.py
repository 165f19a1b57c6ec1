"""Who an entity is, where it is and what it belongs to.

Which fields a game may write: ``Location.room`` only (the plugin's room index follows
every write at once). Everything else here is frozen: read it freely, change it
through the plugin's facade.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from npc_memory.components.bounds import Unit


class Identity(msgspec.Struct, frozen=True, kw_only=True):
    """A stable identity: ``key`` names the NPC or player everywhere outside the live
    world (stores, logs, other NPCs' memories); esper entity ids never leave it."""

    key: str
    name: str


class FactionMember(msgspec.Struct, frozen=True, kw_only=True):
    """The faction an NPC or player belongs to, or ``None`` for none."""

    faction: str | None = None


RoomListener = Callable[[str | None, str | None], None]
"""Called with (old room, new room) after ``Location.room`` changed."""


class Location:
    """The room an NPC or player is in, or ``None`` when nowhere in particular.

    Writable by the game: a processor may set ``room`` directly (for instance while
    iterating ``esper.get_components(Identity, Location)``); the plugin's room index,
    which decides who witnesses what and who gossips with whom, follows at once.
    """

    __slots__ = ("_listener", "_room")

    def __init__(self, room: str | None = None) -> None:
        if room is not None and not isinstance(room, str):
            raise TypeError(f"room must be a string or None, got {room!r}")
        self._room = room
        self._listener: RoomListener | None = None

    @property
    def room(self) -> str | None:
        """The room's name, or ``None``."""
        return self._room

    @room.setter
    def room(self, room: str | None) -> None:
        if room is not None and (not isinstance(room, str) or not room.strip()):
            raise TypeError(f"room must be a non-empty string or None, got {room!r}")
        old, self._room = self._room, room
        if self._listener is not None and old != room:
            self._listener(old, room)

    def listen(self, listener: RoomListener | None) -> None:
        """Call ``listener(old, new)`` after each change of room (``None``: stop)."""
        self._listener = listener

    def __repr__(self) -> str:
        return f"Location(room={self._room!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and other._room == self._room

    __hash__ = None  # type: ignore[assignment]  # mutable: compared by room, not hashable


class NpcTraits(msgspec.Struct, frozen=True, kw_only=True):
    """Personality of an NPC, from its archetype; each trait in [0, 1]."""

    archetype: str | None = None
    sociability: Unit = 0.5
    gossip_drive: Unit = 0.5
    credulity: Unit = 0.5
    faction_loyalty: Unit = 0.5


class PlayerProfile(msgspec.Struct, frozen=True, kw_only=True):
    """What the privacy model needs to know about a player.

    ``consent``: the player agreed to be remembered across sessions (``player`` scope).
    ``anonymous``: an unidentified participant; memories of them stay ``anon``-scoped.
    """

    consent: bool = False
    anonymous: bool = False

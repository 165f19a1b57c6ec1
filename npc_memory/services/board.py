"""The gossip board: per room, who is there and who has something to tell, with
cumulative weights for a seeded weighted draw.

A room is rebuilt only when someone enters or leaves it or an occupant's knowledge
changes (cost: that room's size); a draw costs O(1) expected: a room (weighted by its
number of tellers), a teller (sociability × gossip drive), a listener (sociability).
"""

from __future__ import annotations

import bisect
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

T = Any


def weighted_choice(rng: random.Random, items: Sequence[T], cumulative: Sequence[float]) -> T:
    """One of ``items`` drawn with probability proportional to its weight."""
    point = rng.random() * cumulative[-1]
    return items[min(bisect.bisect_right(cumulative, point), len(items) - 1)]


def _cumulate(weights: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


@dataclass
class _Room:
    tellers: list[str] = field(default_factory=list)
    teller_weights: list[float] = field(default_factory=list)
    listeners: list[str] = field(default_factory=list)
    listener_weights: list[float] = field(default_factory=list)
    misses: dict[str, int] = field(default_factory=dict)
    teller_set: set[str] = field(default_factory=set)


@dataclass
class GossipBoard:
    """Rooms, their occupants and who can gossip there.

    ``teller_weight(npc)`` and ``listener_weight(npc)`` come from traits;
    ``has_news(npc)`` says whether an NPC has anything shareable. Active rooms (two or
    more occupants, at least one with news) sit in a list with an index map, so a room
    joins or leaves in O(1); a room is drawn with probability proportional to its
    number of tellers by rejection sampling, O(1) expected.
    """

    teller_weight: Callable[[str], float]
    listener_weight: Callable[[str], float]
    has_news: Callable[[str], bool]
    members: dict[str, set[str]] = field(default_factory=dict)
    dirty: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Rooms to rebuild, oldest change first (an ordered set: deterministic)."""
    rooms: dict[str, _Room] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)
    _position: dict[str, int] = field(default_factory=dict)
    _most_tellers: int = 1
    rebuilds: int = 0

    def enter(self, npc: str, room: str | None) -> None:
        """``npc`` is now in ``room``: added to the room's draws at once when the room is
        active (O(1)), else the room is checked at the next refresh."""
        if room is None:
            return
        self.members.setdefault(room, set()).add(npc)
        built = self.rooms.get(room)
        if built is None or room in self.dirty:
            self.dirty[room] = None
            return
        built.listeners.append(npc)
        built.listener_weights.append(built.listener_weights[-1] + self.listener_weight(npc))
        self.news(npc, room)

    def news(self, npc: str, room: str | None) -> None:
        """``npc`` in ``room`` learned something: it can tell in the room's draws at once
        (O(1) when the room is active), else the room is checked at the next refresh."""
        if room is None:
            return
        built = self.rooms.get(room)
        if built is None or room in self.dirty:
            self.dirty[room] = None
            return
        if npc not in built.teller_set and self.has_news(npc):
            built.tellers.append(npc)
            built.teller_set.add(npc)
            built.teller_weights.append(built.teller_weights[-1] + self.teller_weight(npc))
            self._most_tellers = max(self._most_tellers, len(built.tellers))

    def leave(self, npc: str, room: str | None) -> None:
        """``npc`` left ``room``: it is out of the room's draws at once (O(room)), even
        while the room waits to be rebuilt."""
        if room is None or room not in self.members:
            return
        self.members[room].discard(npc)
        built = self.rooms.get(room)
        if built is None:
            return
        if npc in built.listeners:
            built.listeners.remove(npc)
            built.listener_weights = _cumulate([self.listener_weight(n) for n in built.listeners])
        if npc in built.teller_set:
            built.tellers.remove(npc)
            built.teller_set.discard(npc)
            built.teller_weights = _cumulate([self.teller_weight(n) for n in built.tellers])
        if not built.tellers or len(built.listeners) < 2:
            self.rooms.pop(room, None)
            self._deactivate(room)

    def touch(self, room: str | None) -> None:
        """Something changed in ``room`` that needs a rebuild (an occupant forgot facts)."""
        if room is not None:
            self.dirty[room] = None

    def refresh(self, deadline: float | None = None) -> None:
        """Rebuild the rooms that changed, oldest change first, and only those; stop
        once ``time.perf_counter()`` passes ``deadline`` (after one room at least)."""
        rebuilt = 0
        while self.dirty:
            if rebuilt and deadline is not None and time.perf_counter() > deadline:
                return
            room, _ = self.dirty.popitem(last=False)
            rebuilt += 1
            self._rebuild(room)

    def _rebuild(self, room: str) -> None:
        occupants = sorted(self.members.get(room, ()))
        tellers = [n for n in occupants if self.has_news(n)] if len(occupants) >= 2 else []
        self.rebuilds += 1
        if not tellers:
            self.rooms.pop(room, None)
            self._deactivate(room)
            return
        self.rooms[room] = _Room(
            tellers=tellers,
            teller_weights=_cumulate([self.teller_weight(n) for n in tellers]),
            listeners=occupants,
            listener_weights=_cumulate([self.listener_weight(n) for n in occupants]),
            teller_set=set(tellers),
        )
        self._most_tellers = max(self._most_tellers, len(tellers))
        if room not in self._position:
            self._position[room] = len(self.active)
            self.active.append(room)

    def draw(self, rng: random.Random) -> tuple[str, str, str] | None:
        """A (room, teller, listener) to try, or ``None`` when no room has gossip."""
        if not self.active:
            return None
        for _ in range(8):
            room_name = self.active[int(rng.random() * len(self.active))]
            if rng.random() * self._most_tellers < len(self.rooms[room_name].tellers):
                break
        room = self.rooms[room_name]
        teller = weighted_choice(rng, room.tellers, room.teller_weights)
        for _ in range(3):
            listener = weighted_choice(rng, room.listeners, room.listener_weights)
            if listener != teller:
                return room_name, teller, listener
        return None

    def missed(self, room_name: str, teller: str, limit: int = 3) -> None:
        """``teller`` found nothing its listener did not know. After ``limit`` such misses
        in a row it stops telling in this room until the room changes (someone enters,
        leaves or learns something), so a room whose occupants all know the same news
        goes quiet instead of wasting the budget."""
        room = self.rooms.get(room_name)
        if room is None or teller not in room.tellers:
            return
        room.misses[teller] = room.misses.get(teller, 0) + 1
        if room.misses[teller] < limit:
            return
        room.tellers.remove(teller)
        room.teller_set.discard(teller)
        room.teller_weights = _cumulate([self.teller_weight(n) for n in room.tellers])
        if not room.tellers:
            self.rooms.pop(room_name, None)
            self._deactivate(room_name)

    def told(self, room_name: str, teller: str) -> None:
        """``teller`` passed something on: its run of misses ends."""
        room = self.rooms.get(room_name)
        if room is not None:
            room.misses.pop(teller, None)

    def _deactivate(self, room: str) -> None:
        position = self._position.pop(room, None)
        if position is None:
            return
        last = self.active.pop()
        if last != room:
            self.active[position] = last
            self._position[last] = position

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
from itertools import accumulate
from typing import Any

from npc_memory.state import StepCosts

T = Any

SURVEY_SLICE = 16
"""Occupants of a room surveyed in one step of its rebuild (about 8 µs each)."""


def weighted_choice(rng: random.Random, items: Sequence[T], cumulative: Sequence[float]) -> T:
    """One of ``items`` drawn with probability proportional to its weight."""
    point = rng.random() * cumulative[-1]
    return items[min(bisect.bisect_right(cumulative, point), len(items) - 1)]


@dataclass
class _Draw:
    """Names with their weights and the running sums a weighted draw bisects. Adding
    is O(1); removing re-sums the stored weights (O(n) in C, no weight recomputed)."""

    names: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    cumulative: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, names: list[str], weights: list[float]) -> _Draw:
        return cls(names, weights, list(accumulate(weights)))

    def add(self, name: str, weight: float) -> None:
        self.names.append(name)
        self.weights.append(weight)
        self.cumulative.append((self.cumulative[-1] if self.cumulative else 0.0) + weight)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.names)

    def remove(self, name: str) -> None:
        at = self.names.index(name)
        del self.names[at], self.weights[at]
        self.cumulative = list(accumulate(self.weights))


@dataclass
class _Room:
    tellers: _Draw = field(default_factory=_Draw)
    listeners: _Draw = field(default_factory=_Draw)
    misses: dict[str, int] = field(default_factory=dict)
    teller_set: set[str] = field(default_factory=set)


@dataclass
class _Survey:
    """A room being rebuilt a slice of occupants at a time: who is left to survey
    (``occupants[at:]``) and what the surveyed ones gave."""

    room: str
    occupants: list[str]
    at: int = 0
    listeners: list[str] = field(default_factory=list)
    listener_weights: list[float] = field(default_factory=list)
    tellers: list[str] = field(default_factory=list)
    teller_weights: list[float] = field(default_factory=list)

    def add(self, npc: str) -> None:
        """``npc`` entered the room: surveyed with the rest."""
        if npc not in self.listeners and npc not in self.occupants[self.at :]:
            self.occupants.append(npc)

    def remove(self, npc: str) -> None:
        """``npc`` left the room: out of the survey, surveyed or not."""
        if npc in self.listeners:
            at = self.listeners.index(npc)
            del self.listeners[at], self.listener_weights[at]
            if npc in self.tellers:
                at = self.tellers.index(npc)
                del self.tellers[at], self.teller_weights[at]
        elif npc in self.occupants[self.at :]:
            del self.occupants[self.occupants.index(npc, self.at)]


@dataclass
class GossipBoard:
    """Rooms, their occupants and who can gossip there.

    ``teller_weight(npc)`` and ``listener_weight(npc)`` come from traits;
    ``has_news(npc)`` says whether an NPC has anything shareable; ``survey(occupants)``
    answers all three for a whole room at once: ``(tellers, their teller weights, the
    occupants' listener weights)``. Active rooms (two or
    more occupants, at least one with news) sit in a list with an index map, so a room
    joins or leaves in O(1); a room is drawn with probability proportional to its
    number of tellers by rejection sampling, O(1) expected.
    """

    teller_weight: Callable[[str], float]
    listener_weight: Callable[[str], float]
    has_news: Callable[[str], bool]
    survey: Callable[[list[str]], tuple[list[str], list[float], list[float]]]
    members: dict[str, set[str]] = field(default_factory=dict)
    dirty: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Rooms to rebuild, oldest change first (an ordered set: deterministic)."""
    rooms: dict[str, _Room] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)
    _position: dict[str, int] = field(default_factory=dict)
    building: _Survey | None = None
    """The room being rebuilt, when its survey spans ticks."""
    _most_tellers: int = 1
    rebuilds: int = 0

    def enter(self, npc: str, room: str | None) -> None:
        """``npc`` is now in ``room``: added to the room's draws at once when the room is
        active (O(1)), else the room is checked at the next refresh."""
        if room is None:
            return
        self.members.setdefault(room, set()).add(npc)
        if self.building is not None and self.building.room == room:
            self.building.add(npc)
            return
        built = self.rooms.get(room)
        if built is None or room in self.dirty:
            self.dirty[room] = None
            return
        built.listeners.add(npc, self.listener_weight(npc))
        self.news(npc, room)

    def news(self, npc: str, room: str | None) -> None:
        """``npc`` in ``room`` learned something: it can tell in the room's draws at once
        (O(1) when the room is active), else the room is checked at the next refresh."""
        if room is None:
            return
        survey = self.building
        if survey is not None and survey.room == room:
            if npc in survey.listeners and npc not in survey.tellers and self.has_news(npc):
                survey.tellers.append(npc)
                survey.teller_weights.append(self.teller_weight(npc))
            return
        built = self.rooms.get(room)
        if built is None or room in self.dirty:
            self.dirty[room] = None
            return
        if npc not in built.teller_set and self.has_news(npc):
            built.tellers.add(npc, self.teller_weight(npc))
            built.teller_set.add(npc)
            self._most_tellers = max(self._most_tellers, len(built.tellers))

    def leave(self, npc: str, room: str | None) -> None:
        """``npc`` left ``room``: it is out of the room's draws at once (O(room) list
        work in C, no weight recomputed), even while the room waits to be rebuilt."""
        if room is None or room not in self.members:
            return
        self.members[room].discard(npc)
        if self.building is not None and self.building.room == room:
            self.building.remove(npc)
        built = self.rooms.get(room)
        if built is None:
            return
        if npc in built.listeners:
            built.listeners.remove(npc)
        if npc in built.teller_set:
            built.tellers.remove(npc)
            built.teller_set.discard(npc)
        if not built.tellers or len(built.listeners) < 2:
            self.rooms.pop(room, None)
            self._deactivate(room)

    def touch(self, room: str | None) -> None:
        """Something changed in ``room`` that needs a rebuild (an occupant forgot facts)."""
        if room is None:
            return
        if self.building is not None and self.building.room == room:
            self.building = _Survey(room, sorted(self.members.get(room, ())))  # surveyed again
        else:
            self.dirty[room] = None

    @property
    def stale(self) -> bool:
        """Whether a room waits to be rebuilt (see :meth:`refresh`)."""
        return self.building is not None or bool(self.dirty)

    def refresh(
        self, deadline: float | None = None, steps: StepCosts | None = None, *, begun: bool = False
    ) -> bool:
        """Rebuild the rooms that changed, oldest change first, and only those, surveying
        ``SURVEY_SLICE`` occupants at a time; stop before a slice that would likely end
        past ``deadline`` (``time.perf_counter()``; by what slices took lately,
        ``steps``), after one slice at least (unless ``begun``: other work came first
        this tick). A room stopped mid-survey keeps its last
        build (if any) for draws until the survey ends on a later tick; who enters,
        leaves or learns something meanwhile is taken into the survey. Returns whether
        it surveyed anyone."""
        steps = StepCosts() if steps is None else steps
        clock = time.perf_counter
        started, surveyed = clock(), False
        while self.building is not None or self.dirty:
            if (surveyed or begun) and not steps.fits("survey", started, deadline):
                return surveyed
            if self.building is None:
                room, _ = self.dirty.popitem(last=False)
                self.building = _Survey(room, sorted(self.members.get(room, ())))
            self._survey_slice(self.building)
            ended = clock()
            steps.took("survey", ended - started)
            started, surveyed = ended, True
        return surveyed

    def _survey_slice(self, survey: _Survey) -> None:
        """Survey the next slice of ``survey``'s occupants; the last one installs the room."""
        if len(survey.occupants) >= 2:
            chunk = survey.occupants[survey.at : survey.at + SURVEY_SLICE]
            survey.at += len(chunk)
            tellers, teller_weights, listener_weights = self.survey(chunk)
            survey.listeners.extend(chunk)
            survey.listener_weights.extend(listener_weights)
            survey.tellers.extend(tellers)
            survey.teller_weights.extend(teller_weights)
            if survey.at < len(survey.occupants):
                return
        self.building = None
        self.rebuilds += 1
        room = survey.room
        if not survey.tellers or len(survey.listeners) < 2:
            self.rooms.pop(room, None)
            self._deactivate(room)
            return
        self.rooms[room] = _Room(
            tellers=_Draw.of(survey.tellers, survey.teller_weights),
            listeners=_Draw.of(survey.listeners, survey.listener_weights),
            teller_set=set(survey.tellers),
        )
        self._most_tellers = max(self._most_tellers, len(survey.tellers))
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
        teller = weighted_choice(rng, room.tellers.names, room.tellers.cumulative)
        for _ in range(3):
            listener = weighted_choice(rng, room.listeners.names, room.listeners.cumulative)
            if listener != teller:
                return room_name, teller, listener
        return None

    def missed(self, room_name: str, teller: str, limit: int = 3) -> None:
        """``teller`` found nothing its listener did not know. After ``limit`` such misses
        in a row it stops telling in this room until the room changes (someone enters,
        leaves or learns something), so a room whose occupants all know the same news
        goes quiet instead of wasting the budget."""
        room = self.rooms.get(room_name)
        if room is None or teller not in room.teller_set:
            return
        room.misses[teller] = room.misses.get(teller, 0) + 1
        if room.misses[teller] < limit:
            return
        room.tellers.remove(teller)
        room.teller_set.discard(teller)
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

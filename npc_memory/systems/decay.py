"""DecaySystem and ConsolidationSystem: daily maintenance, spread over ticks.

Each walks every (NPC, player) pair — ``None`` standing for the NPC's world-scoped
memories and knowledge — once per cycle, at most ``budget`` pairs per tick from a
round-robin cursor, so no tick touches all memories. A cycle starts at most once per
``interval`` game seconds; a cycle that cannot finish within it simply runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import esper

from npc_memory.clock import GameClock

Pair = tuple[str, str | None]


@dataclass
class PairCursor:
    """Round-robin over every NPC's pairs. ``npcs()`` lists NPC keys (taken once per
    cycle), ``pairs_of(npc)`` the players an NPC has memories or relationships with."""

    npcs: Callable[[], list[str]]
    pairs_of: Callable[[str], list[str | None]]
    _queue: list[str] = field(default_factory=list)
    _npc_index: int = 0
    _pending: list[Pair] = field(default_factory=list)
    active: bool = False
    cycle_started: float = float("-inf")
    last_cycle_seconds: float | None = None
    """Game seconds the last complete cycle took."""
    cycles: int = 0

    def start(self, now: float) -> None:
        """Begin a cycle over the NPCs in the world now."""
        self._queue = self.npcs()
        self._npc_index = 0
        self._pending = []
        self.active = True
        self.cycle_started = now

    def take(self, budget: int, now: float) -> list[Pair]:
        """At most ``budget`` pairs; ends the cycle when every pair was handed out."""
        taken: list[Pair] = []
        while len(taken) < budget and self.active:
            if not self._pending:
                if self._npc_index >= len(self._queue):
                    self.active = False
                    self.cycles += 1
                    self.last_cycle_seconds = now - self.cycle_started
                    break
                npc = self._queue[self._npc_index]
                self._npc_index += 1
                self._pending = [(npc, player) for player in reversed(self.pairs_of(npc))]
                continue
            taken.append(self._pending.pop())
        return taken


class PairMaintenanceSystem(esper.Processor):
    """Hands ``budget`` pairs per tick to ``handle(npc, player)``, a cycle per interval;
    ``poll()``, if given, runs first every tick."""

    def __init__(
        self,
        cursor: PairCursor,
        clock: GameClock,
        budget: int,
        interval: float,
        handle: Callable[[str, str | None], None],
        poll: Callable[[], None] | None = None,
    ) -> None:
        self.cursor = cursor
        self.clock = clock
        self.budget = budget
        self.interval = interval
        self.handle = handle
        self.poll = poll

    def process(self, *args: Any, **kwargs: Any) -> None:
        if self.poll is not None:
            self.poll()  # e.g. apply finished LLM summaries: O(calls in flight), never waits
        now = self.clock.now
        if not self.cursor.active:
            if now - self.cursor.cycle_started < self.interval:
                return
            self.cursor.start(now)
        for npc, player in self.cursor.take(self.budget, now):
            self.handle(npc, player)


class DecaySystem(PairMaintenanceSystem):
    """Forgetting: faded episodes and caps per pair, relationship drift, expired facts."""


class ConsolidationSystem(PairMaintenanceSystem):
    """Clusters of old episodes become semantic memories and habits, per pair."""

"""DecaySystem and ConsolidationSystem: daily maintenance, spread over ticks.

Each walks the (NPC, player) pairs that have work — ``None`` standing for the NPC's
world-scoped memories and knowledge; for decay, the players an NPC has memories of or
a relationship whose drift is due — once per cycle from a round-robin cursor, at most ``budget``
pairs and ``budget_ms`` milliseconds per tick, so no tick touches all memories. A
cycle starts at most once per ``interval`` game seconds (in O(1): the cursor walks the
registry's live list of NPC keys); a cycle that cannot finish within it simply runs on.
An NPC that went past a cap has its world pair visited ahead of the cycle.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import esper

from npc_memory.clock import GameClock
from npc_memory.state import TickShare

Pair = tuple[str, str | None]


@dataclass
class PairCursor:
    """Round-robin over every NPC's pairs. ``npcs`` is the live sequence of NPC keys
    (an NPC added during a cycle may join it, one removed is skipped), ``pairs_of(npc)``
    the pairs of an NPC to visit."""

    npcs: Sequence[str]
    pairs_of: Callable[[str], list[str | None]]
    urgent: OrderedDict[str, None] | None = None
    """NPCs whose world pair (``None``) needs a visit before the cycle's next pair,
    cycle or not (e.g. an NPC past a cap), oldest first; taken from as visited."""
    _npc_index: int = 0
    _pending: list[Pair] = field(default_factory=list)
    active: bool = False
    cycle_started: float = float("-inf")
    last_cycle_seconds: float | None = None
    """Game seconds the last complete cycle took."""
    cycles: int = 0
    visits: int = 0
    """Pairs handed out since the cursor was made."""

    def start(self, now: float) -> None:
        """Begin a cycle over the NPCs in the world."""
        self._npc_index = 0
        self._pending = []
        self.active = True
        self.cycle_started = now

    @property
    def waiting(self) -> bool:
        """Whether an urgent visit waits."""
        return bool(self.urgent)

    def next(self, now: float) -> Pair | None:
        """An urgent world pair, else the next pair of the cycle (the cycle ends with
        its last pair), or ``None`` when neither waits."""
        if self.urgent:
            npc, _ = self.urgent.popitem(last=False)
            self.visits += 1
            return npc, None
        while self.active and not self._pending:
            if self._npc_index >= len(self.npcs):
                self._end(now)
                return None
            npc = self.npcs[self._npc_index]
            self._npc_index += 1
            self._pending = [(npc, player) for player in reversed(self.pairs_of(npc))]
        if not self.active:
            return None
        pair = self._pending.pop()
        self.visits += 1
        if not self._pending and self._npc_index >= len(self.npcs):
            self._end(now)
        return pair

    def _end(self, now: float) -> None:
        self.active = False
        self.cycles += 1
        self.last_cycle_seconds = now - self.cycle_started


class PairMaintenanceSystem(esper.Processor):
    """Hands at most ``budget`` pairs per tick (stopping early before a pair that would
    likely end past its share's deadline)
    to ``handle(npc, player)``: the cursor's urgent world pairs first, then a cycle per
    interval; ``poll()``, if given, runs first every tick. Urgent visits the budget
    cannot absorb wait in the cursor's queue (one entry per NPC)."""

    def __init__(
        self,
        cursor: PairCursor,
        clock: GameClock,
        budget: int,
        interval: float,
        handle: Callable[[str, str | None], None],
        share: TickShare,
        poll: Callable[[], None] | None = None,
    ) -> None:
        self.cursor = cursor
        self.clock = clock
        self.budget = budget
        self.share = share
        self.interval = interval
        self.handle = handle
        self.poll = poll

    def process(self, *args: Any, **kwargs: Any) -> None:
        if self.poll is not None:
            self.poll()  # e.g. apply finished LLM summaries: O(calls in flight), never waits
        now = self.clock.now
        if not self.cursor.active and now - self.cursor.cycle_started >= self.interval:
            self.cursor.start(now)
        if not self.cursor.active and not self.cursor.waiting:
            return
        deadline = self.share.deadline()
        if deadline is None:
            return
        share, clock = self.share, time.perf_counter
        steps, started = share.steps, clock()
        for done in range(self.budget):
            if not share.starts("pair", started, deadline, first=not done):
                return  # the next pair would likely end past the deadline: next tick
            pair = self.cursor.next(now)
            if pair is None:
                return
            self.handle(*pair)
            ended = clock()
            steps.took("pair", ended - started)
            started = ended


class DecaySystem(PairMaintenanceSystem):
    """Forgetting: faded episodes and caps per pair, relationship drift that is due,
    expired facts."""


class ConsolidationSystem(PairMaintenanceSystem):
    """Clusters of old episodes become semantic memories and habits, per pair."""

"""GossipSystem: NPCs in the same room pass facts on, a budgeted number per tick.

The board (:mod:`npc_memory.services.board`) rebuilds only the rooms that changed;
a tick then costs O(budget): it draws a room, a teller, a listener and a few
candidate facts, never scanning all NPCs or rooms.
"""

from __future__ import annotations

import time
from typing import Any

import esper

from npc_memory.services.knowledge import KnowledgeService
from npc_memory.state import TickShare


class GossipSystem(esper.Processor):
    """Each tick: refresh rooms that changed, then attempt at most ``budget`` exchanges
    (each a :meth:`KnowledgeService.gossip` call); both stop before a step that would
    likely end past its share's deadline (rooms left to refresh wait for the next tick;
    after a survey, exchanges wait at most ``starve_ticks`` ticks for room)."""

    def __init__(self, knowledge: KnowledgeService, budget: int, share: TickShare) -> None:
        self.knowledge = knowledge
        self.board = knowledge.board
        self.rng = knowledge.state.rng
        self.budget = budget
        self.share = share
        self.exchange = knowledge.gossip
        self.exchanges = 0
        """Exchanges made since install."""
        self.waited = 0
        """Ticks in a row a room's survey left no room for an exchange."""

    def process(self, *args: Any, **kwargs: Any) -> None:
        deadline = self.share.deadline()
        if deadline is None:
            return
        share, clock = self.share, time.perf_counter
        steps = share.steps
        surveyed = self.board.refresh(deadline, steps)
        made, started = 0, clock()
        for attempt in range(self.budget * 2):  # a failed draw costs an attempt, never more than 2×budget
            # After a survey, an exchange that does not fit waits (at most starve_ticks ticks).
            first = not attempt and (not surveyed or self.waited >= share.tick.starve_ticks)
            if made >= self.budget or not share.starts("exchange", started, deadline, first=first):
                if not attempt and surveyed:
                    self.waited += 1
                break
            self.waited = 0
            drawn = self.board.draw(self.rng)
            if drawn is None:
                break
            if self.exchange(*drawn):
                made += 1
                self.board.told(drawn[0], drawn[1])
            else:
                self.board.missed(drawn[0], drawn[1])
            ended = clock()
            steps.took("exchange", ended - started)
            started = ended
        self.exchanges += made

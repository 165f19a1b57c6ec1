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
    likely end past its share's deadline, and the tick's first step starts as
    :meth:`TickShare.starts` says (rooms left to refresh wait for the next tick;
    exchanges that surveys left no room for wait at most ``starve_ticks`` ticks, then
    go first)."""

    def __init__(self, knowledge: KnowledgeService, budget: int, share: TickShare) -> None:
        self.knowledge = knowledge
        self.board = knowledge.board
        self.rng = knowledge.state.gossip_rng
        self.budget = budget
        self.share = share
        self.exchange = knowledge.gossip
        self.exchanges = 0
        """Exchanges made since install."""
        self.waited = 0
        """Ticks in a row no exchange started (a room's survey left no room for one);
        after ``starve_ticks`` such ticks exchanges go first."""

    def process(self, *args: Any, **kwargs: Any) -> None:
        share = self.share
        deadline = share.deadline()
        if deadline is None:
            return
        board = self.board
        overdue = self.waited >= share.tick.starve_ticks  # exchanges first this tick
        if board.stale and not overdue:
            if not share.starts("survey", time.perf_counter(), deadline, first=True):
                return  # no room for a survey: at most starve_ticks ticks, then it runs
            board.refresh(deadline, share.steps)
            self._exchange(deadline, first=False)
            return
        self._exchange(deadline, first=True)
        if overdue:
            board.refresh(deadline, share.steps, begun=True)

    def _exchange(self, deadline: float, *, first: bool) -> None:
        """Attempt up to ``budget`` exchanges; the first starts anyway when ``first``
        (see :meth:`TickShare.starts`), else it waits for a tick with room."""
        share, board, clock = self.share, self.board, time.perf_counter
        made, started = 0, clock()
        for attempt in range(self.budget * 2):  # a failed draw costs an attempt, never more than 2×budget
            begins = share.starts("exchange", started, deadline, first=first and not attempt)
            if made >= self.budget or not begins:
                if not attempt:
                    self.waited += 1
                break
            self.waited = 0
            drawn = board.draw(self.rng)
            if drawn is None:
                break
            if self.exchange(*drawn):
                made += 1
                board.told(drawn[0], drawn[1])
            else:
                board.missed(drawn[0], drawn[1])
            ended = clock()
            share.steps.took("exchange", ended - started)
            started = ended
        self.exchanges += made

"""ExtractionSystem: turns finished conversations into memories, a budgeted slice per tick."""

from __future__ import annotations

import time
from typing import Any

import esper

from npc_memory.services.conversations import ConversationService
from npc_memory.state import TickShare


class ExtractionSystem(esper.Processor):
    """Each tick: collect finished LLM calls, dispatch at most N queued jobs (to the LLM
    worker or the rules), apply at most M results, stopping at its share's deadline
    (results not applied wait, first in line, for the next tick). Never waits on the
    network."""

    def __init__(self, conversations: ConversationService, share: TickShare) -> None:
        self.conversations = conversations
        self.pipeline = conversations.pipeline
        self.share = share

    def process(self, *args: Any, **kwargs: Any) -> None:
        deadline = self.share.deadline()
        if deadline is None:
            return
        results = self.pipeline.tick(deadline)
        for done, result in enumerate(results):
            if done and time.perf_counter() > deadline:
                self.pipeline.ready.extendleft(reversed(results[done:]))
                return
            self.conversations.apply(result)

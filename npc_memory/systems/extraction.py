"""ExtractionSystem: turns finished conversations into memories, a budgeted slice per tick."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.conversations import ConversationService
from npc_memory.state import TickShare


class ExtractionSystem(esper.Processor):
    """Each tick: collect finished LLM calls, apply the results ready (a memory per step,
    at most ``extraction_apply_per_tick`` results) and dispatch queued jobs (to the LLM
    worker, or the rules read a line per step; at most ``extraction_dispatch_per_tick``),
    stopping at its share's deadline; work stopped resumes next tick where it stopped.
    Never waits on the network."""

    def __init__(self, conversations: ConversationService, share: TickShare) -> None:
        self.conversations = conversations
        self.pipeline = conversations.pipeline
        self.share = share

    def process(self, *args: Any, **kwargs: Any) -> None:
        deadline = self.share.deadline()
        if deadline is None:
            return
        self.conversations.work(deadline, self.share)

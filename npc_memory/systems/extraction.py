"""ExtractionSystem: turns finished conversations into memories, a budgeted slice per tick."""

from __future__ import annotations

from typing import Any

import esper

from npc_memory.services.conversations import ConversationService


class ExtractionSystem(esper.Processor):
    """Each tick: collect finished LLM calls, dispatch at most N queued jobs (to the LLM
    worker or the rules), apply at most M results. Never waits on the network."""

    def __init__(self, conversations: ConversationService) -> None:
        self.conversations = conversations
        self.pipeline = conversations.pipeline

    def process(self, *args: Any, **kwargs: Any) -> None:
        for result in self.pipeline.tick():
            self.conversations.apply(result)

"""ExtractionSystem: turns finished conversations into memories, a budgeted slice per tick."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esper

from npc_memory.extraction.model import ExtractionResult
from npc_memory.extraction.pipeline import ExtractionPipeline


class ExtractionSystem(esper.Processor):
    """Each tick: collect finished LLM calls, dispatch at most N queued jobs (to the LLM
    worker or the rules), apply at most M results. Never waits on the network."""

    def __init__(self, pipeline: ExtractionPipeline, apply: Callable[[ExtractionResult], None]) -> None:
        self.pipeline = pipeline
        self.apply = apply

    def process(self, *args: Any, **kwargs: Any) -> None:
        for result in self.pipeline.tick():
            self.apply(result)

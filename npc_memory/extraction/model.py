"""What extraction works on and produces: jobs (a finished conversation), extracted
memories, token usage (those three in :mod:`npc_memory.components.jobs`, where the store
reads them) and results that record where they came from."""

from __future__ import annotations

from typing import Literal

import msgspec

from npc_memory.components.jobs import Actor, ExtractedMemory, ExtractionJob, PaidCall, TokenUsage
from npc_memory.components.working import Turn as Turn  # the transcript line lives with WorkingMemory
from npc_memory.llm.model import SummaryOutcome

__all__ = [
    "MAX_CONTENT",
    "MAX_MEMORIES",
    "Actor",
    "ExtractedMemory",
    "ExtractionJob",
    "ExtractionResult",
    "PaidCall",
    "Source",
    "SummaryOutcome",
    "TokenUsage",
    "Turn",
]

Source = Literal["llm", "rules"]

MAX_MEMORIES = 3
"""An extraction yields at most this many memories."""

MAX_CONTENT = 500
"""Extracted memory content is cut to this many characters."""


class ExtractionResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one job: the memories, which extractor made them (``llm`` or
    ``rules``) and why (``reason``: "llm", or why the rules were used instead), and
    what the call cost (USD) when an LLM was asked."""

    job: ExtractionJob
    memories: tuple[ExtractedMemory, ...]
    source: Source
    reason: str
    usage: TokenUsage | None = None
    cost_usd: float = 0.0

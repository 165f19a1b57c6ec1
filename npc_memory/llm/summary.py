"""Consolidation summaries: the prompt and the structured output asked of the LLM.

The output is the pydantic model :class:`SummaryOut`; its JSON schema is sent as
``output_config.format`` through the SDK's own ``transform_schema`` (what
``messages.parse(output_format=SummaryOut)`` sends), and the answer is validated by the
model on the worker thread.
"""

from __future__ import annotations

import functools
from typing import Any

from anthropic import transform_schema
from pydantic import BaseModel, ConfigDict, Field, field_validator

from npc_memory.llm.model import LLMRequest
from npc_memory.llm.output import text_of, validate_json
from npc_memory.safety import DATA_NOTICE, quote

SUMMARY_PROMPT = """You keep the long-term memory of a non-player character (NPC) in a fantasy
role-playing game. You are given several things the NPC remembers about one player that share
a theme. Write one short sentence of general knowledge the NPC draws from them, from the NPC's
point of view, naming the player (for example "Cora is a regular customer who buys supplies").
Never include real-world personal information. Answer with the JSON object only.
""" + DATA_NOTICE

MAX_SUMMARY = 300
"""A summary is cut to this many characters."""

SUMMARY_TOKENS = 200
"""Output tokens asked for a summary (at most the configured ``max_tokens``)."""


class SummaryOut(BaseModel):
    """The answer of a summarising call: ``{"summary": "..."}``, stripped and cut to 300
    characters; an empty summary is malformed."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(description="One short sentence from the NPC's point of view, naming the player.")

    @field_validator("summary")
    @classmethod
    def _clean(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("is empty")
        return value[:MAX_SUMMARY]


@functools.cache
def summary_schema() -> dict[str, Any]:
    """The JSON schema of :class:`SummaryOut` as the API wants it."""
    return transform_schema(SummaryOut)


def parse_summary(message: Any) -> str:
    """The summary sentence in a response."""
    out: SummaryOut = validate_json(SummaryOut, text_of(message))
    return out.summary


def summary_request(
    npc_name: str, player_name: str, theme: str, contents: list[str], max_tokens: int
) -> LLMRequest[str]:
    """The call summarising a cluster of memories (``contents``) sharing ``theme``."""
    lines = "\n".join(f"- {quote(content)}" for content in contents)
    prompt = f"NPC: {npc_name}. Player: {player_name}. Theme: {theme}.\nMemories:\n{lines}\nAnswer:"
    return LLMRequest(
        system=({"type": "text", "text": SUMMARY_PROMPT, "cache_control": {"type": "ephemeral"}},),
        messages=({"role": "user", "content": prompt},),
        max_tokens=min(max_tokens, SUMMARY_TOKENS),
        parse=parse_summary,
        options={"output_config": {"format": {"type": "json_schema", "schema": summary_schema()}}},
    )

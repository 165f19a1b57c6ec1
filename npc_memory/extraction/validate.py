"""Turning an LLM's JSON into memories that are safe to store: validated and clamped."""

from __future__ import annotations

import math
from typing import Any

from npc_memory.components.memory import MEMORY_KINDS, VALENCES, MemoryKind, Valence
from npc_memory.errors import NpcMemoryError
from npc_memory.extraction.model import MAX_CONTENT, MAX_MEMORIES, ExtractedMemory

MAX_TAGS = 8
MAX_TAG_CHARS = 32
GAME_ONLY = frozenset({"game-only", "game_only"})

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "importance": {"type": "number"},
                    "valence": {"type": "string", "enum": list(VALENCES)},
                    "intensity": {"type": "number"},
                },
                "required": ["content", "kind", "tags", "importance", "valence", "intensity"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}
"""JSON schema of the extractor's output: an object wrapping a list of memories."""


class MalformedOutputError(NpcMemoryError):
    """The LLM's output is not usable; the message says what is wrong."""


def parse_memories(payload: Any) -> tuple[ExtractedMemory, ...]:
    """Validate ``{"memories": [...]}`` and clamp what can be clamped: at most 3 memories
    (the most important), content cut to 500 characters, importance and intensity
    into [0, 1], unknown kinds to episodic and unknown valences to neutral, tags
    lower-cased (at most 8). Items without usable content, and game-only memories,
    are dropped. Anything structurally wrong raises :class:`MalformedOutputError`."""
    if not isinstance(payload, dict) or not isinstance(payload.get("memories"), list):
        raise MalformedOutputError("expected an object with a 'memories' list")
    memories = []
    for index, item in enumerate(payload["memories"]):
        if not isinstance(item, dict):
            raise MalformedOutputError(f"memories[{index}] is not an object")
        memory = _memory(item, index)
        if memory is not None:
            memories.append(memory)
    memories.sort(key=lambda m: -m.importance)
    return tuple(memories[:MAX_MEMORIES])


def _memory(item: dict[str, Any], index: int) -> ExtractedMemory | None:
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        return None
    raw_tags = item.get("tags", [])
    if not isinstance(raw_tags, list):
        raise MalformedOutputError(f"memories[{index}].tags is not a list")
    tags: dict[str, None] = {}
    for tag in raw_tags:
        if isinstance(tag, str) and tag.strip():
            tags[tag.strip().lower()[:MAX_TAG_CHARS]] = None
    if GAME_ONLY.intersection(tags):
        return None
    kind: MemoryKind = item.get("kind") if item.get("kind") in MEMORY_KINDS else "episodic"  # type: ignore[assignment]
    valence: Valence = item.get("valence") if item.get("valence") in VALENCES else "neutral"  # type: ignore[assignment]
    return ExtractedMemory(
        content=content.strip()[:MAX_CONTENT],
        kind=kind,
        tags=tuple(list(tags)[:MAX_TAGS]),
        importance=_unit(item.get("importance", 0.5), f"memories[{index}].importance"),
        valence=valence,
        intensity=_unit(item.get("intensity", 0.0), f"memories[{index}].intensity"),
    )


def _unit(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MalformedOutputError(f"{where} is not a finite number: {value!r}")
    return min(1.0, max(0.0, float(value)))

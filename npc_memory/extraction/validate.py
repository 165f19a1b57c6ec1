"""Turning an LLM's answer into memories that are safe to store: validated and clamped.

The answer's shape is the pydantic model :class:`MemoriesOut` (``{"memories": [...]}``
of :class:`MemoryOut`). Its JSON schema is what the API is asked for (see
``npc_memory.extraction.anthropic``); validating is lenient where clamping is safe and
strict where the answer is structurally wrong:

- at most 3 memories (the most important of the first 16 listed: a longer list is not an
  answer to "0 to 3 memories", and reading it whole would only cost time), content
  stripped and cut to 500 characters, importance and intensity clamped into [0, 1],
  unknown kinds → episodic, unknown valences → neutral, tags lower-cased, stripped,
  cut to 32 characters, at most 8;
- ``actor`` is "player", "npc" or the name of a third party (anything else: "player");
  ``evidence`` is the 1-based numbers of the transcript lines a memory rests on, kept as
  0-based line indexes; evidence that is not a list of whole numbers is kept as
  line 0, one that does not exist, so grounding drops that memory and names why
  (:mod:`npc_memory.extraction.grounding`), and a missing one as ``()`` (dropped as
  uncited);
- memories without usable content, and game-only memories, are dropped;
- anything structurally wrong (not an object, no ``memories`` list, an item that is not
  an object, tags that are not a list, a number that is not a finite number) raises
  :class:`MalformedOutputError`, whose message names the path (``memories[0].importance``).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from npc_memory.components.memory import MEMORY_KINDS, VALENCES
from npc_memory.extraction.model import MAX_CONTENT, MAX_MEMORIES, ExtractedMemory
from npc_memory.llm.errors import MalformedOutputError
from npc_memory.llm.output import validate_json, validate_python
from npc_memory.rules.validation import GAME_ONLY_TAGS, MAX_TAG_CHARS

__all__ = [
    "MAX_READ",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MalformedOutputError",
    "MemoriesOut",
    "MemoryOut",
    "parse_memories",
    "parse_memories_json",
]

MAX_TAGS = 8
MAX_EVIDENCE = 12
"""Cited lines kept per memory (a conversation has at most a few dozen)."""
MAX_READ = 16
"""Items of an answer's ``memories`` list that are read; the rest are ignored."""

_FILLED: dict[str, Any] = {"content": "", "tags": [], "importance": 0.5, "intensity": 0.0, "evidence": []}
MAX_ACTOR = 64
"""Characters of a third party's name kept from ``actor``."""


class MemoryOut(BaseModel):
    """One memory as the LLM states it (every field required in the schema sent; a
    missing one is filled with its default when reading)."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(description="One sentence from the NPC's point of view, naming the player.")
    kind: Literal["episodic", "semantic", "procedural"] = Field(
        description="episodic: a specific event; semantic: a fact about the player; procedural: a habit."
    )
    tags: list[str] = Field(description="Lower-case topic words.")
    importance: float = Field(description="0 to 1: how much this matters to the NPC.")
    valence: Literal["positive", "neutral", "negative"] = Field(description="How the NPC feels about it.")
    intensity: float = Field(description="0 to 1: how emotionally charged it was.")
    actor: str = Field(
        description='Whose doing or saying this records: "player", "npc", or the name of the third party.'
    )
    evidence: list[int] = Field(
        description="The numbers of the transcript lines this memory rests on (1 is the first line)."
    )

    @model_validator(mode="before")
    @classmethod
    def _object(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("is not an object")
        filled = {**_FILLED, **value}
        filled.setdefault("kind", "episodic")
        filled.setdefault("valence", "neutral")
        filled.setdefault("actor", "player")
        return filled

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> str:
        return value.strip()[:MAX_CONTENT] if isinstance(value, str) else ""

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return value if value in MEMORY_KINDS else "episodic"

    @field_validator("valence", mode="before")
    @classmethod
    def _valence(cls, value: Any) -> Any:
        return value if value in VALENCES else "neutral"

    @field_validator("actor", mode="before")
    @classmethod
    def _actor(cls, value: Any) -> str:
        return value.strip()[:MAX_ACTOR] or "player" if isinstance(value, str) else "player"

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> list[int]:
        if not isinstance(value, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in value
        ):
            return [0]  # line 0 does not exist: grounding drops the memory and counts why
        return value[:MAX_EVIDENCE]

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise ValueError("is not a list")
        tags: dict[str, None] = {}
        for tag in value:
            if isinstance(tag, str) and tag.strip():
                tags[tag.strip().lower()[:MAX_TAG_CHARS]] = None
        return list(tags)

    @field_validator("importance", "intensity", mode="before")
    @classmethod
    def _unit(cls, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"is not a finite number: {value!r}")
        return min(1.0, max(0.0, float(value)))

    def kept(self) -> bool:
        """Whether this memory may be stored: it says something and is no game clue."""
        return bool(self.content) and not GAME_ONLY_TAGS.intersection(self.tags)

    def extracted(self) -> ExtractedMemory:
        """As an :class:`ExtractedMemory` (tags cut to 8: game-only tags are seen first)."""
        return ExtractedMemory(
            content=self.content,
            kind=self.kind,
            tags=tuple(self.tags[:MAX_TAGS]),
            importance=self.importance,
            valence=self.valence,
            intensity=self.intensity,
            actor=self.actor,
            source="witnessed" if self.actor == "player" else "said" if self.actor == "npc" else "heard",
            evidence=tuple(n - 1 for n in self.evidence),
        )


class MemoriesOut(BaseModel):
    """The answer of an extraction call: ``{"memories": [...]}``, 0 to 3 memories."""

    model_config = ConfigDict(extra="ignore")

    memories: list[MemoryOut] = Field(description="0 to 3 things the NPC will remember about the player.")

    @model_validator(mode="before")
    @classmethod
    def _wrapper(cls, value: Any) -> Any:
        if not isinstance(value, dict) or not isinstance(value.get("memories"), list):
            raise ValueError("expected an object with a 'memories' list")
        return {**value, "memories": value["memories"][:MAX_READ]}

    def extracted(self) -> tuple[ExtractedMemory, ...]:
        """The memories to store: usable ones, most important first, at most 3."""
        kept = sorted((m for m in self.memories if m.kept()), key=lambda m: -m.importance)
        return tuple(m.extracted() for m in kept[:MAX_MEMORIES])


def parse_memories(payload: Any) -> tuple[ExtractedMemory, ...]:
    """Validate and clamp a decoded ``{"memories": [...]}`` (see the module docstring)."""
    out: MemoriesOut = validate_python(MemoriesOut, payload)
    return out.extracted()


def parse_memories_json(text: str) -> tuple[ExtractedMemory, ...]:
    """Validate and clamp the JSON text of an answer (see the module docstring)."""
    out: MemoriesOut = validate_json(MemoriesOut, text)
    return out.extracted()

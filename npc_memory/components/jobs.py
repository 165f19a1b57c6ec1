"""What the plugin keeps of a conversation on its way to memories: the job (a finished
conversation waiting to be read), the memories an extractor proposed, and an LLM call
already paid for it with what it used. Plain data, saved with the store's metadata, so
it sits with the components: the store reads it without the extraction or LLM layers."""

from __future__ import annotations

from typing import Literal

import msgspec

from npc_memory.components.memory import MemoryKind, MemorySource, Valence
from npc_memory.components.working import Turn

Actor = Literal["player", "npc"]
"""Whose doing or saying a memory records: the player's, or the NPC's own."""


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens one LLM call used, as the API reported them (or, when it could not report
    them, the reservation charged instead: see ``LLMResult.usage_estimated`` in
    :mod:`npc_memory.llm.model`)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0

    @property
    def total(self) -> int:
        """Every token counted against budgets: input, output and both cache kinds."""
        return self.input + self.output + self.cache_write + self.cache_read


class ExtractionJob(msgspec.Struct, frozen=True, kw_only=True):
    """A finished conversation waiting to become memories. ``ended_at`` in game seconds.
    ``paid``: an LLM call already made for it, kept over a restart so that it is never
    paid for twice."""

    conversation: str
    npc: str
    npc_name: str
    npc_role: str = ""
    player: str
    player_name: str
    room: str | None = None
    turns: tuple[Turn, ...] = ()
    ended_at: float = 0.0
    paid: PaidCall | None = None


class ExtractedMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A memory proposed by an extractor, already validated and clamped: ranges in
    [0, 1], content ≤ 500 characters, tags lower-case.

    ``actor`` is who did or said what it records: ``"player"`` (a memory about the
    player), ``"npc"`` (what the NPC itself said or did: its promises, prices, its
    own story; kept so it stays consistent, and never held against the player), or a
    third party's name as said ("Bob stole my hammer": ``"Bob"``). ``source`` is how the
    NPC knows it: ``witnessed`` (done in the conversation), ``said`` (what a speaker
    said, in their words), ``claimed`` (the player's own account of a deed: "I saved
    the village", which weighs less than a deed the NPC saw) or ``heard`` (what the
    player told of someone else). ``evidence``: the 0-based transcript lines it rests
    on (empty where not known)."""

    content: str
    kind: MemoryKind = "episodic"
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    valence: Valence = "neutral"
    intensity: float = 0.0
    actor: str = "player"
    source: MemorySource = "witnessed"
    evidence: tuple[int, ...] = ()

    @property
    def claim(self) -> bool:
        """Whether this is the player's own account of a deed the NPC did not see."""
        return self.source == "claimed"


class PaidCall(msgspec.Struct, frozen=True, kw_only=True):
    """An LLM call made for a job that was not applied before the plugin stopped: what
    it cost (``usage`` as counted, ``cost_usd``), and ``answer``, the memories it
    brought, or ``failure``, why there were none (e.g. ``"shut down"`` for a call in
    flight at uninstall). After a restart the answer is applied as it came; a job
    without one is extracted by the rules, never sent again."""

    usage: TokenUsage | None = None
    cost_usd: float = 0.0
    answer: tuple[ExtractedMemory, ...] | None = None
    failure: str | None = None


__all__ = ["Actor", "ExtractedMemory", "ExtractionJob", "PaidCall", "TokenUsage"]

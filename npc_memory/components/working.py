"""Working memory: what an NPC has just talked about, before extraction catches up."""

from __future__ import annotations

import msgspec

RECENT_CONVERSATIONS = 3
"""Summaries kept per NPC–player pair."""

EXTRACTED_IDS = 256
"""Recently extracted conversation ids kept per NPC (extraction is idempotent per id)."""


class Turn(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One line of a conversation: who spoke (display name) and what they said."""

    speaker: str
    text: str


class ConversationSummary(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A finished conversation in a line; ``ended_at`` in game seconds."""

    conversation: str
    summary: str
    turns: int
    ended_at: float


class WorkingMemory(msgspec.Struct, kw_only=True):
    """Per NPC: the conversations still open (their lines so far, by player), the last
    conversations with each player (newest last), how many conversations it has had
    with each (which numbers their ids), and the ids of conversations already turned
    into memories."""

    open: dict[str, list[Turn]] = msgspec.field(default_factory=dict)
    recent: dict[str, list[ConversationSummary]] = msgspec.field(default_factory=dict)
    conversations: dict[str, int] = msgspec.field(default_factory=dict)
    extracted: list[str] = msgspec.field(default_factory=list)

    def remember_conversation(self, player: str, summary: ConversationSummary) -> None:
        """Add ``summary``, keeping the last three for the pair."""
        recent = self.recent.setdefault(player, [])
        recent.append(summary)
        del recent[:-RECENT_CONVERSATIONS]

    def mark_extracted(self, conversation: str) -> bool:
        """Record that ``conversation`` was extracted; ``False`` if it already was."""
        if conversation in self.extracted:
            return False
        self.extracted.append(conversation)
        del self.extracted[:-EXTRACTED_IDS]
        return True

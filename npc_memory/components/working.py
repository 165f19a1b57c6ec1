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


class PendingConversation(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A finished conversation whose memories are not applied yet: what its extraction
    needs (the lines it extracts, ``ended_at`` in game seconds). It lives in the NPC's
    working memory from the moment the conversation ends until its memories are applied
    (or its extraction is dropped), so the NPC's document never shows a conversation
    ended without either its lines or what they gave."""

    conversation: str
    player: str
    player_name: str
    npc_name: str
    npc_role: str = ""
    room: str | None = None
    turns: tuple[Turn, ...] = ()
    ended_at: float = 0.0


class WorkingMemory(msgspec.Struct, kw_only=True):
    """Per NPC: the conversations still open (their lines so far, by player), the last
    conversations with each player (newest last), how many conversations it has had
    with each (which numbers their ids), the ids of conversations already turned into
    memories, and the finished conversations waiting to be (oldest first)."""

    open: dict[str, list[Turn]] = msgspec.field(default_factory=dict)
    recent: dict[str, list[ConversationSummary]] = msgspec.field(default_factory=dict)
    conversations: dict[str, int] = msgspec.field(default_factory=dict)
    extracted: list[str] = msgspec.field(default_factory=list)
    pending: list[PendingConversation] = msgspec.field(default_factory=list)

    def remember_conversation(self, player: str, summary: ConversationSummary) -> None:
        """Add ``summary``, keeping the last three for the pair."""
        recent = self.recent.setdefault(player, [])
        recent.append(summary)
        del recent[:-RECENT_CONVERSATIONS]

    def settle(self, conversation: str) -> bool:
        """``conversation`` no longer waits (its memories are applied, or its extraction
        was dropped); whether it did."""
        for at, pending in enumerate(self.pending):
            if pending.conversation == conversation:
                del self.pending[at]
                return True
        return False

    def mark_extracted(self, conversation: str) -> bool:
        """Record that ``conversation`` was extracted; ``False`` if it already was."""
        if conversation in self.extracted:
            return False
        self.extracted.append(conversation)
        del self.extracted[:-EXTRACTED_IDS]
        return True

"""Memory records and the per-NPC MemoryBank component.

Records are immutable msgspec Structs untracked by the garbage collector; an update
replaces a record. Times are game seconds, ranges are [0, 1] unless stated.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from npc_memory.components.bounds import Count, Serial, Unit

MemoryKind = Literal["episodic", "semantic", "procedural"]
Valence = Literal["positive", "neutral", "negative"]
Scope = Literal["session", "player", "social", "profile", "anon"]
SafetyFlag = Literal["clean", "suspect", "redacted"]
MemorySource = Literal["witnessed", "said", "claimed", "heard", "authored"]
"""How the NPC knows what a memory records: ``witnessed`` (seen, or done to or with the
NPC in a conversation), ``said`` (what was said, in the speaker's words), ``claimed``
(someone's own account of a deed the NPC did not see), ``heard`` (hearsay and gossip)
or ``authored`` (the game's own ``remember``)."""

Retraction = Literal["corrected", "changed"]
"""Why the NPC no longer holds what a memory of the player's own words or claim records
as so: ``corrected``, the player owned up that it was not so ("I said Dunmere. The truth
is…", "That was the ale talking"); ``changed``, they said it changed since ("I told you
I'd be gone by Thursday. Change of plan: …")."""

RETRACTIONS: tuple[Retraction, ...] = ("corrected", "changed")
MEMORY_KINDS: tuple[MemoryKind, ...] = ("episodic", "semantic", "procedural")
VALENCES: tuple[Valence, ...] = ("positive", "neutral", "negative")
SCOPES: tuple[Scope, ...] = ("session", "player", "social", "profile", "anon")
MEMORY_SOURCES: tuple[MemorySource, ...] = ("witnessed", "said", "claimed", "heard", "authored")

SELF = "self"
"""``actor`` of a memory that records the NPC's own deed or words (no entity may have
this key)."""

OWN_DEEDS: frozenset[MemorySource] = frozenset(("witnessed", "said", "authored"))
"""The sources that count as what a player really did or said: what the query API and
the relationship rules count by default (claims and hearsay only when asked)."""



class TriggerContext(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """When a procedural pattern applies (all optional)."""

    location_type: str | None = None
    interaction_type: str | None = None
    time_of_day: str | None = None
    present_entity_tags: tuple[str, ...] = ()


class MemoryRecord(
    msgspec.Struct, frozen=True, gc=False, kw_only=True, tag_field="kind"
):
    """Fields shared by every memory kind.

    ``importance``: author-assigned weight; ``confidence``: certainty; ``intensity``:
    emotional intensity; all in [0, 1]. ``created`` and ``last_accessed`` are game
    seconds. ``locked`` memories are never decayed or evicted (a pack's retention
    limits still apply). ``game`` is the id of the game the memory was made in
    (``None``: made before games had ids). A copy made by ``clone`` names the NPC it
    came from (``cloned_from``) and when (``cloned_at``, game seconds).

    ``actor`` is whose deed or words the memory records: a player's key, :data:`SELF`
    (the NPC that holds it), another NPC's key, or ``None`` when unknown. ``source`` is
    how the NPC knows it (:data:`MemorySource`); ``teller`` who told it, for what was
    heard or claimed (a key, :data:`SELF` or ``None``). Only a player's own deeds and
    words of the :data:`OWN_DEEDS` sources count for or against them by default.

    ``retracted`` is set when the player took back what the memory records of their
    words or claims (:data:`Retraction`), at ``retracted_at`` (game seconds): the memory
    is kept, as what they once said, and counts for no one.
    """

    id: str
    content: str
    tags: tuple[str, ...] = ()
    importance: Unit = 0.5
    confidence: Unit = 1.0
    valence: Valence = "neutral"
    intensity: Unit = 0.0
    created: float = 0.0
    last_accessed: float = 0.0
    access_count: Count = 0
    locked: bool = False
    safety: SafetyFlag = "clean"
    scope: Scope = "session"
    room: str | None = None
    source_conversation: str | None = None
    game: str | None = None
    cloned_from: str | None = None
    cloned_at: float | None = None
    actor: str | None = None
    source: MemorySource = "authored"
    teller: str | None = None
    retracted: Retraction | None = None
    retracted_at: float | None = None

    def counts_for(self, player: str, include: frozenset[MemorySource] = frozenset()) -> bool:
        """Whether this memory is ``player``'s own deed or words of a counted source:
        one of :data:`OWN_DEEDS`, or of ``include`` (``"claimed"``, ``"heard"``), and
        not taken back by them (``retracted``)."""
        return (
            self.actor == player
            and (self.source in OWN_DEEDS or self.source in include)
            and self.retracted is None
        )


class EpisodicMemory(MemoryRecord, frozen=True, gc=False, tag="episodic"):
    """A specific event with a time and place."""


class SemanticMemory(MemoryRecord, frozen=True, gc=False, tag="semantic"):
    """A general fact, often derived from several episodes (``source_episodes`` ids)."""

    source_episodes: tuple[str, ...] = ()


class ProceduralMemory(MemoryRecord, frozen=True, gc=False, tag="procedural"):
    """A behavioural pattern, strengthened each time it is seen again."""

    pattern: str = ""
    trigger: TriggerContext = TriggerContext()
    reinforcement: Count = 1


Memory = EpisodicMemory | SemanticMemory | ProceduralMemory
"""Any memory record (a tagged union on ``kind``)."""


def kind_of(memory: Memory) -> MemoryKind:
    """The kind of a memory record."""
    if isinstance(memory, EpisodicMemory):
        return "episodic"
    if isinstance(memory, SemanticMemory):
        return "semantic"
    return "procedural"


class PairMemories(msgspec.Struct, kw_only=True):
    """The memories an NPC holds about one player (or about the world), by kind."""

    episodic: list[EpisodicMemory] = msgspec.field(default_factory=list)
    semantic: list[SemanticMemory] = msgspec.field(default_factory=list)
    procedural: list[ProceduralMemory] = msgspec.field(default_factory=list)

    def all(self) -> list[Memory]:
        """Every memory of the pair, episodic first, each kind in insertion order."""
        return [*self.episodic, *self.semantic, *self.procedural]

    def __len__(self) -> int:
        return len(self.episodic) + len(self.semantic) + len(self.procedural)


class MemoryBank(msgspec.Struct, kw_only=True):
    """Every memory of one NPC: ``players`` by player key, ``world`` for world-scoped
    memories. ``next_id`` numbers new memories (ids are unique within the NPC);
    ``milestones`` holds the highest memory-count milestone reached per player."""

    world: PairMemories = msgspec.field(default_factory=PairMemories)
    players: dict[str, PairMemories] = msgspec.field(default_factory=dict)
    next_id: Serial = 1
    milestones: dict[str, int] = msgspec.field(default_factory=dict)

    def pair(self, player: str | None) -> PairMemories | None:
        """The memories about ``player`` (``None``: world-scoped), if any exist."""
        return self.world if player is None else self.players.get(player)

    def pair_for_write(self, player: str | None) -> PairMemories:
        """The memories about ``player``, created empty when missing."""
        if player is None:
            return self.world
        pair = self.players.get(player)
        if pair is None:
            pair = self.players[player] = PairMemories()
        return pair

    def count(self) -> int:
        """Number of memories in the bank."""
        return len(self.world) + sum(len(p) for p in self.players.values())

"""Typed, in-memory questions game logic asks about NPCs and players.

Every answer reads components in memory: O(1), or O(memories of one pair) for the
memory questions and O(facts of one NPC) for the knowledge questions. Asking never
changes anything. NPCs and players may be live, or (by key) only in the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import (
    DIMENSIONS,
    OWN_DEEDS,
    ConversationSummary,
    EpisodicMemory,
    Fact,
    Memory,
    MemorySource,
    ProceduralMemory,
    SemanticMemory,
    Stage,
)
from npc_memory.components.relationship import Dimension, Relationship
from npc_memory.errors import InvalidArgumentError, UnknownEntityError
from npc_memory.rules.denials import DENIAL_ORIGIN
from npc_memory.rules.validation import MAX_KEY_CHARS, check_include, check_tags, check_text, check_unit
from npc_memory.services import KnowledgeService, MemoryService, RelationshipService, Resolver
from npc_memory.state import Ref


class MemoryQuery:
    """``plugin.query``: answers about one NPC and one player (entities or keys)."""

    __slots__ = ("_knowledge", "_memory_service", "_relationships", "_resolve")

    def __init__(
        self,
        resolver: Resolver,
        relationships: RelationshipService,
        knowledge: KnowledgeService,
        memories: MemoryService,
    ):
        self._resolve = resolver
        self._relationships = relationships
        self._knowledge = knowledge
        self._memory_service = memories

    def salience(self, memory: Memory) -> float:
        """Salience of ``memory`` now, in [0, 1]."""
        if not isinstance(memory, (EpisodicMemory, SemanticMemory, ProceduralMemory)):
            raise InvalidArgumentError(f"expected a memory record, got {memory!r}")
        return self._memory_service.salience(memory)

    def working_memory(self, npc: Ref, player: Ref) -> list[ConversationSummary]:
        """The last conversations (up to three, oldest first) of ``npc`` with ``player``."""
        handle = self._resolve.npc(npc, stored=True)
        key = self._resolve.player(player, stored=True).identity.key
        return list(handle.working.recent.get(key, []))

    def standing(self, faction: str, player: Ref) -> float:
        """The standing of ``player`` with ``faction``: the average disposition of the
        faction's live NPCs towards them, in [-1, 1] (an NPC with no history counts
        with its starting disposition)."""
        if not isinstance(faction, str) or faction not in self._relationships.state.pack.factions:
            raise InvalidArgumentError(f"unknown faction {faction!r}")
        key = self._resolve.player(player, stored=True).identity.key
        return self._relationships.standing_of(faction, key)

    def trust(self, npc: Ref, player: Ref) -> float:
        """How much ``npc`` trusts ``player``, in [0, 1]."""
        return self._relationship(npc, player).trust

    def dimension(self, npc: Ref, player: Ref, dimension: Dimension) -> float:
        """One relationship dimension (trust, fear, respect, loyalty, friendliness,
        romantic_interest), in [0, 1]."""
        if dimension not in DIMENSIONS:
            raise InvalidArgumentError(
                f"unknown relationship dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)}"
            )
        return self._relationship(npc, player).value(dimension)

    def disposition(self, npc: Ref, player: Ref) -> float:
        """Overall regard of ``npc`` for ``player``, in [-1, 1]."""
        return self._relationship(npc, player).disposition

    def stage(self, npc: Ref, player: Ref) -> Stage:
        """The relationship stage (stranger, acquaintance, friend, …, rival, enemy)."""
        return self._relationship(npc, player).stage

    def has_met(self, npc: Ref, player: Ref) -> bool:
        """Whether ``npc`` has interacted with ``player`` at least once."""
        return self._relationship(npc, player).has_met

    def count_memories_by_tag(
        self, npc: Ref, player: Ref | None, tag: str, *, include: Iterable[MemorySource] = ()
    ) -> int:
        """How many memories ``npc`` holds about ``player`` tagged ``tag`` that are the
        player's own deeds and words (witnessed, said, or authored by the game): never the
        NPC's own stories nor a third party's deeds, nor what the player took back
        (``retracted``); the player's claims and hearsay about them too when ``include``
        names ``"claimed"`` or ``"heard"``. About the world (``player=None``), every memory."""
        tag = check_text("tag", tag, self._relationships.state.pack.limits.tag_chars).lower()
        return sum(1 for _ in self._counted(npc, player, include, (tag,)))

    def has_memory_matching(
        self,
        npc: Ref,
        player: Ref | None,
        tags: Iterable[str],
        min_importance: float = 0.0,
        *,
        include: Iterable[MemorySource] = (),
    ) -> bool:
        """Whether ``npc`` holds a memory about ``player`` carrying every tag in
        ``tags`` with importance ≥ ``min_importance``, counted as by
        :meth:`count_memories_by_tag` (``include``: ``"claimed"``, ``"heard"``)."""
        wanted = tuple(dict.fromkeys(check_tags(tags, self._relationships.state.pack.limits)))
        check_unit("min_importance", min_importance)
        return any(m.importance >= min_importance for m in self._counted(npc, player, include, wanted))

    def knows(self, npc: Ref, tag: str) -> bool:
        """Whether ``npc`` believes any fact tagged ``tag`` (expired facts do not count)."""
        tag = check_text("tag", tag, self._relationships.state.pack.limits.tag_chars).lower()
        return any(tag in f.tags for f in self._knowledge.facts(self._resolve.npc(npc, stored=True)))

    def beliefs_about(self, npc: Ref, subject: Ref) -> list[Fact]:
        """What ``npc`` believes about ``subject`` (an NPC or player, or a subject key):
        one held belief per topic, the competing ones left out."""
        key = self._resolve.subject(subject)
        return [f for f in self._knowledge.facts(self._resolve.npc(npc, stored=True)) if f.subject == key]

    def why(self, npc: Ref, fact_id: str) -> str:
        """How ``npc`` came to know fact ``fact_id``: its provenance chain as text, most
        recent step first, with game days and hours; for a fact no longer believed, since
        when, why, and the claim believed in its place (while the NPC holds it)."""
        handle = self._resolve.npc(npc, stored=True)
        fact_id = check_text("fact_id", fact_id, MAX_KEY_CHARS)
        fact = next((f for f in handle.knowledge.facts if f.id == fact_id), None)
        if fact is None:
            raise UnknownEntityError(f"NPC {handle.identity.key!r} has no fact {fact_id!r}")
        steps = []
        for hop in reversed(fact.chain):
            where = f" in the {hop.room}" if hop.room else ""
            when = _when(hop.at)
            if hop.teller is None:
                how = {"observation": "saw it", "conversation": "heard it from the player",
                       "authored": "has always known it"}.get(hop.source, "learned it")
                steps.append(f"{self._name(hop.listener)} {how}{where} ({when})")
            else:
                teller, listener = self._name(hop.teller), self._name(hop.listener)
                steps.append(f"{teller} told {listener}{where} ({when})")
        status = "believed"
        if not fact.believed:
            status = f"no longer believed since {_when(fact.disbelieved_at or 0.0)}"
            rival = next((f for f in handle.knowledge.facts if f.id == fact.displaced_by), None)
            against = f': "{rival.content}"' if rival is not None else ""  # (none: taken back)
            if fact.disbelief == "outweighed":
                about = f" about the same {fact.topic}" if fact.topic is not None else ""
                status += f", outweighed by a better-founded claim{about}{against.removeprefix(':')}"
            elif fact.disbelief == "denied":
                status += f", denied by {self._name(fact.subject or '')}{against}"
            elif fact.disbelief is not None:
                what = fact.attribute or fact.topic or "it"
                status += {
                    "corrected": f", corrected ({what}) when they owned up to it{against}",
                    "changed": f", changed ({what}), as they said{against}",
                    "contradicted": f", contradicted ({what}) later with no word about it{against}",
                }[fact.disbelief]
        return f'"{fact.content}" (confidence {fact.confidence:.2f}, {status}): ' + " <- ".join(steps)

    def inconsistencies(self, npc: Ref, player: Ref) -> list[tuple[Fact, Fact]]:
        """What ``player`` told ``npc`` about themselves and later contradicted without
        owning up to it, as (what they said first, what they said later) pairs, and what
        they denied that the NPC knows better, as (the claim it believes, their denial)
        pairs; oldest first: the inconsistencies the NPC noticed and may bring up.
        Corrections the player owned up to and changes they told of are not among them."""
        handle = self._resolve.npc(npc, stored=True)
        key = self._resolve.subject(player)
        by_id = {f.id: f for f in handle.knowledge.facts}
        pairs = []
        for fact in handle.knowledge.facts:
            other = by_id.get(fact.displaced_by or "")
            if fact.subject != key or other is None:
                continue
            if fact.disbelief == "contradicted":
                pairs.append((fact, other))
            elif fact.disbelief == "outweighed" and fact.origin.startswith(DENIAL_ORIGIN) and other.believed:
                pairs.append((other, fact))
        return pairs

    def _relationship(self, npc: Ref, player: Ref) -> Relationship:
        handle = self._resolve.npc(npc, stored=True)
        target = self._resolve.player(player, stored=True)
        return self._relationships.peek(handle, target.identity.key, target.faction.faction)

    def _counted(
        self, npc: Ref, player: Ref | None, include: Iterable[MemorySource], tags: tuple[str, ...]
    ) -> Iterator[Memory]:
        """The memories carrying every tag in ``tags`` that ``npc`` holds about the world
        (``player=None``), or that are the player's own deeds and words (with
        ``include``'s sources), not taken back, wherever they are filed."""
        allowed = OWN_DEEDS | check_include(include)
        first, rest = (tags[0], frozenset(tags[1:])) if tags else ("", frozenset())
        if player is None:
            return (m for m in self._memories(npc, None) if _tagged(m, first, rest))
        handle = self._resolve.npc(npc, stored=True)
        key = self._resolve.player(player, stored=True).identity.key
        pairs = (handle.bank.world, *handle.bank.players.values())
        return (
            m
            for pair in pairs
            for records in (pair.episodic, pair.semantic, pair.procedural)
            for m in records
            if (not first or first in m.tags)
            and m.actor == key
            and m.source in allowed
            and m.retracted is None
            and (not rest or rest <= set(m.tags))
        )

    def _memories(self, npc: Ref, player: Ref | None) -> list[Memory]:
        handle = self._resolve.npc(npc, stored=True)
        key = None if player is None else self._resolve.player(player, stored=True).identity.key
        pair = handle.bank.pair(key)
        return [] if pair is None else pair.all()

    def _name(self, key: str) -> str:
        try:
            return self._resolve.state.registry.handle(key).identity.name
        except UnknownEntityError:
            return key


def _tagged(memory: Memory, first: str, rest: frozenset[str]) -> bool:
    return (not first or first in memory.tags) and (not rest or rest <= set(memory.tags))


def _when(game_time: float) -> str:
    day = int(game_time // SECONDS_PER_DAY) + 1
    seconds = int(game_time % SECONDS_PER_DAY)
    return f"day {day} {seconds // 3600:02d}:{seconds % 3600 // 60:02d}"

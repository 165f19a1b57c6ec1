"""What NPCs remember: storing memories within the caps, reinforcing habits, listing
them by salience, and the memory-count milestones of each NPC–player pair."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from npc_memory.components import (
    MEMORY_KINDS,
    EpisodicMemory,
    Memory,
    MemoryKind,
    MemorySource,
    NpcHandle,
    PairMemories,
    ProceduralMemory,
    Retraction,
    Scope,
    SemanticMemory,
    TriggerContext,
    Valence,
)
from npc_memory.events import MemoryMilestone, TakenBack
from npc_memory.rules import decay as decay_rules
from npc_memory.rules import memory as memory_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.knowledge import FLAGGED
from npc_memory.safety import is_marked
from npc_memory.services.relationships import RelationshipService
from npc_memory.services.safety import SafetyService, marked
from npc_memory.state import Part, WorldState

NPC_CAP_CHECKS = 20
"""How often, per ``memories_per_npc`` memories an NPC makes, it is held to that cap
(so it holds at most 1/20 over it, besides its locked memories)."""


class MemoryService:
    """Memories of one plugin's NPCs (arguments arrive checked by the facade)."""

    def __init__(self, state: WorldState, relationships: RelationshipService, safety: SafetyService) -> None:
        self.state = state
        self.relationships = relationships
        self.safety = safety

    def remember(
        self,
        npc: NpcHandle,
        player: str | None,
        content: str,
        *,
        kind: MemoryKind = "episodic",
        tags: tuple[str, ...] = (),
        importance: float = 0.5,
        confidence: float = 1.0,
        valence: Valence = "neutral",
        intensity: float = 0.0,
        locked: bool = False,
        scope: Scope = "session",
        room: str | None = None,
        source_conversation: str | None = None,
        pattern: str | None = None,
        trigger: TriggerContext | None = None,
        source_episodes: tuple[str, ...] = (),
        affect_relationship: bool = False,
        reinforce_same: bool = False,
        actor: str | None,
        source: MemorySource,
        teller: str | None = None,
        screened: bool = False,
    ) -> Memory:
        """Store a memory of ``npc`` about ``player`` (``None``: the world) within the
        pair's caps, or reinforce the same habit; see ``MemoryPlugin.remember``. With
        ``reinforce_same`` (memories drawn from conversations) a memory that says what one
        already held says reinforces it instead of adding a copy (see :func:`same_memory`),
        whenever it was said: talk said again in the same words is one memory, its
        ``access_count`` the times it was said after the first.
        ``actor`` and ``source`` say whose deed it records and how the NPC knows it,
        ``teller`` who told it; only ``player``'s own deeds of a counted source move the
        relationship. ``screened``: ``content`` already went through the safety screen
        (as kept: redacted, or marked when flagged)."""
        result = None if screened else self.safety.check(content, "remember", npc.identity.key)
        if is_marked(content) or (result is not None and result.flagged):  # a quoted utterance: moves nothing
            content = content if result is None or is_marked(content) else marked(result)
            pattern, affect_relationship = None, False
            tags = (*tags, FLAGGED) if FLAGGED not in tags else tags
        elif result is not None:
            content = result.text
        now = self.state.clock.now
        key = player
        pair = self._pair_for_write(npc, key)
        memory_id = f"m{npc.bank.next_id}"
        common = {
            "content": content,
            "tags": tags,
            "importance": float(importance),
            "confidence": float(confidence),
            "valence": valence,
            "intensity": float(intensity),
            "created": now,
            "last_accessed": now,
            "locked": bool(locked),
            "scope": scope,
            "room": npc.location.room if room is None else room,
            "source_conversation": source_conversation,
            "game": self.state.game,
            "actor": actor,
            "source": source,
            "teller": teller,
        }
        memory: Memory
        if kind == "episodic":
            memory = EpisodicMemory(id=memory_id, **common)  # type: ignore[arg-type]
        elif kind == "semantic":
            memory = SemanticMemory(id=memory_id, source_episodes=source_episodes, **common)  # type: ignore[arg-type]
        else:
            memory = ProceduralMemory(
                id=memory_id,
                pattern=content if pattern is None else pattern,
                trigger=trigger or TriggerContext(),
                **common,  # type: ignore[arg-type]
            )
        habit = same_habit(pair, memory) if isinstance(memory, ProceduralMemory) else None
        held = same_memory(pair, memory) if reinforce_same else None
        if habit is not None:
            memory = msgspec.structs.replace(
                habit,
                reinforcement=habit.reinforcement + 1,
                last_accessed=now,
                importance=max(habit.importance, memory.importance),
                locked=habit.locked or memory.locked,
            )
            pair.procedural[pair.procedural.index(habit)] = memory
        elif held is not None:  # already remembered: reinforced, not copied (said again: not taken back)
            memory = msgspec.structs.replace(
                held,
                access_count=held.access_count + 1,
                last_accessed=now,
                importance=max(held.importance, memory.importance),
                confidence=max(held.confidence, memory.confidence),
                locked=held.locked or memory.locked,
                retracted=None,
                retracted_at=None,
            )
            records: list[Memory] = getattr(pair, kind)
            records[records.index(held)] = memory
        else:
            self._insert(npc, pair, memory)
        self.state.mark(npc.identity.key, Part.BANK)
        if key is not None and habit is None and held is None:
            self._check_milestone(npc, key, len(pair))
        weight = self.weight(memory, key) if affect_relationship and key is not None else 0.0
        if weight > 0.0 and key is not None:
            deltas = rel_rules.memory_deltas(
                tags, importance, intensity, valence, self.state.pack.relationships, weight
            )
            if deltas:
                self.relationships.change(npc, key, deltas)
        return memory

    def episode(
        self,
        content: str,
        *,
        tags: tuple[str, ...],
        importance: float,
        confidence: float,
        scope: Scope,
        room: str,
        actor: str | None,
        source: MemorySource,
    ) -> EpisodicMemory:
        """An episode made now from ``content`` as screened (flagged when marked), not yet
        held by anyone (its id is empty): the template :meth:`remember_copy` files."""
        if is_marked(content) and FLAGGED not in tags:
            tags = (*tags, FLAGGED)
        now = self.state.clock.now
        return EpisodicMemory(
            id="", content=content, tags=tags, importance=float(importance), confidence=float(confidence),
            created=now, last_accessed=now, scope=scope, room=room, game=self.state.game,
            actor=actor, source=source,
        )

    def remember_copy(self, npc: NpcHandle, player: str | None, template: EpisodicMemory) -> EpisodicMemory:
        """Store for ``npc`` a copy of ``template`` (an episode built once for many NPCs,
        its content already screened: what every witness of one ``observe`` saw) about
        ``player`` (``None``: the world), numbered from ``npc``'s bank and within the
        pair's caps; it moves nothing. Raises as :meth:`remember` does."""
        pair = self._pair_for_write(npc, player)
        memory = msgspec.structs.replace(template, id=f"m{npc.bank.next_id}")
        self._insert(npc, pair, memory)
        self.state.mark(npc.identity.key, Part.BANK)
        if player is not None:
            self._check_milestone(npc, player, len(pair))
        return memory

    def _pair_for_write(self, npc: NpcHandle, player: str | None) -> PairMemories:
        if player is not None and not (player in npc.bank.players or player in npc.relationships.by_player):
            self.relationships.new_player(npc, player)  # (may let other players go first)
        return npc.bank.pair_for_write(player)

    def _insert(self, npc: NpcHandle, pair: PairMemories, memory: Memory) -> None:
        rules = self.state.pack.memory
        memory_rules.insert_numbered(npc.bank, pair, memory, rules, self.state.clock.now)
        if npc.bank.next_id % max(1, rules.memories_per_npc // NPC_CAP_CHECKS) == 0:
            decay_rules.over_npc_cap(npc.bank, rules, self.state.clock.now)

    def weight(self, memory: Memory, player: str) -> float:
        """How much ``memory`` moves the NPC's relationship with ``player``, as a share of
        a deed it saw: 1 for the player's own deeds and words, the pack's
        ``relationships.claim_weight`` for their claims and ``knowledge.hearsay_factor``
        for hearsay about them, 0 for anyone else's (the NPC's own stories included)."""
        if memory.actor != player:
            return 0.0
        if memory.source == "claimed":
            return self.state.pack.relationships.claim_weight
        if memory.source == "heard":
            return self.state.pack.knowledge.hearsay_factor
        return 1.0

    def retract(self, npc: NpcHandle, player: str, memory_id: str, reason: Retraction) -> Memory | None:
        """Mark memory ``memory_id`` (one ``npc`` holds about ``player``) as taken back by
        the player for ``reason``, now, and announce it (:class:`TakenBack`); it moves
        nothing. The memory as marked, or ``None`` when the NPC no longer holds it or it
        was taken back already."""
        pair = npc.bank.pair(player)
        if pair is None:
            return None
        now = self.state.clock.now
        for kind in MEMORY_KINDS:
            records: list[Memory] = getattr(pair, kind)
            at = next((i for i, m in enumerate(records) if m.id == memory_id), None)
            if at is not None and records[at].retracted is None:
                marked = msgspec.structs.replace(records[at], retracted=reason, retracted_at=now)
                records[at] = marked
                key = npc.identity.key
                self.state.mark(key, Part.BANK)
                event = TakenBack(game_time=now, npc=key, player=player, memory=memory_id, reason=reason)
                self.state.publish(event)
                return marked
        return None

    def held_from(self, npc: NpcHandle, player: str, conversation: str, content: str) -> Memory | None:
        """The memory ``npc`` holds about ``player`` from ``conversation`` that says
        ``content``, if any (a result applied in part before a restart)."""
        pair = npc.bank.pair(player)
        if pair is None:
            return None
        for held in pair.all():
            if held.source_conversation == conversation and held.content == content:
                return held
        return None

    def memories(self, npc: NpcHandle, player: str | None, kind: MemoryKind | None = None) -> list[Memory]:
        """The memories ``npc`` holds about ``player`` (``None``: the world), highest
        salience first; only those of ``kind`` if given."""
        pair = npc.bank.pair(player)
        if pair is None:
            return []
        records: Sequence[Memory] = pair.all() if kind is None else getattr(pair, kind)
        rules = self.state.pack.memory
        return memory_rules.rank_by_salience(
            list(records), self.state.clock.now, rules.recency_days, rules.intensity_retention
        )

    def salience(self, memory: Memory) -> float:
        """Salience of ``memory`` now, in [0, 1]."""
        rules = self.state.pack.memory
        return memory_rules.salience(
            memory, self.state.clock.now, rules.recency_days, rules.intensity_retention
        )

    def _check_milestone(self, npc: NpcHandle, player: str, count: int) -> None:
        reached = npc.bank.milestones.get(player, 0)
        passed = [m for m in self.state.pack.knowledge.memory_milestones if reached < m <= count]
        if passed:
            npc.bank.milestones[player] = passed[-1]
            self.state.publish(
                MemoryMilestone(
                    game_time=self.state.clock.now,
                    npc=npc.identity.key,
                    player=player,
                    milestone=passed[-1],
                    count=count,
                )
            )


def same_memory(pair: PairMemories, memory: Memory) -> Memory | None:
    """The memory of ``pair`` that says what ``memory`` says (same kind, content equal
    but for case and spacing, same tags, scope, actor and source), if any: a line said
    again, on any day, in the same words, is the same memory."""
    if isinstance(memory, ProceduralMemory):
        return None
    records: Sequence[Memory] = pair.episodic if isinstance(memory, EpisodicMemory) else pair.semantic
    folded = " ".join(memory.content.split()).casefold()
    for held in records:
        if (
            held.tags == memory.tags
            and held.scope == memory.scope
            and held.actor == memory.actor
            and held.source == memory.source
            and len(held.content) == len(memory.content)
            and " ".join(held.content.split()).casefold() == folded
        ):
            return held
    return None


def same_habit(pair: PairMemories, memory: ProceduralMemory) -> ProceduralMemory | None:
    """The habit ``memory`` reinforces: same trigger and first tag (or same pattern,
    untagged), if the pair holds one."""
    for held in pair.procedural:
        if held.trigger != memory.trigger or held.actor != memory.actor:
            continue
        same_tag = bool(memory.tags) and held.tags[:1] == memory.tags[:1]
        if same_tag or (not memory.tags and held.pattern == memory.pattern):
            return held
    return None

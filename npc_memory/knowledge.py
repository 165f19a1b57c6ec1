"""What NPCs come to know: learning facts first-hand, from content and from each other,
and what hearing about a player does to their opinion. The facade's ``observe`` and
``learn_fact`` and GossipSystem's exchanges come through here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npc_memory.components.knowledge import Fact, FactCategory, FactSource, Hop
from npc_memory.events import FactLearned, SecretLearned
from npc_memory.rules import knowledge as knowledge_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.validation import MAX_KEY_CHARS, check_text

if TYPE_CHECKING:
    from npc_memory.plugin import MemoryPlugin, NpcHandle, Ref


class Knowledge:
    """Learning and gossip for one plugin (the facts live in each NPC's KnowledgeBase)."""

    def __init__(self, plugin: MemoryPlugin) -> None:
        self.plugin = plugin

    def subject_key(self, subject: Ref) -> str:
        """The key a fact about ``subject`` is filed under (an NPC, a player, or any name)."""
        if isinstance(subject, str) and subject not in self.plugin._entities_by_key:
            return check_text("subject", subject, MAX_KEY_CHARS)  # a stored or absent player, or a name
        return self.plugin.key(subject)

    def category_of(self, subject: str | None) -> FactCategory:
        """The default category of a fact about ``subject``."""
        if subject is None:
            return "world_event"
        entity = self.plugin._entities_by_key.get(subject)
        if entity in self.plugin._npcs:
            return "npc_gossip"
        return "player_trait"

    def learn(
        self,
        handle: NpcHandle,
        *,
        content: str,
        category: FactCategory,
        subject: str | None,
        topic: str,
        tags: tuple[str, ...],
        confidence: float,
        importance: float,
        source: FactSource,
        room: str | None,
        origin: str | None = None,
        source_memory: str | None = None,
        hops: int = 0,
        chain: tuple[Hop, ...] = (),
        teller: str | None = None,
        locked: bool = False,
        expires_in: float | None = None,
    ) -> Fact | None:
        """File a fact in ``handle``'s knowledge (see :func:`npc_memory.rules.knowledge.learn`),
        announce it, and return it; ``None`` if the NPC already knew its origin."""
        key = handle.identity.key
        index = self.plugin._facts[key]
        if origin is not None and origin in index.origins:
            return None
        now = self.plugin.clock.now
        fact_id = f"f{handle.knowledge.next_id}"
        fact = Fact(
            id=fact_id,
            origin=origin or f"{key}#{fact_id}",
            content=content,
            category=category,
            subject=subject,
            topic=topic,
            tags=tags,
            confidence=confidence,
            importance=importance,
            source=source,
            source_memory=source_memory,
            hops=hops,
            chain=(*chain, Hop(teller=teller, listener=key, room=room, at=now, source=source)),
            created=now,
            expires=None if expires_in is None else now + expires_in,
            locked=locked,
        )
        outcome = knowledge_rules.learn(handle.knowledge, fact, self.plugin.pack.knowledge, now)
        if outcome.stored is None:
            return None
        handle.knowledge.next_id += 1
        index.record(outcome, self.plugin.pack.knowledge, now)
        self.plugin._board.touch(handle.location.room)
        self.plugin._mark(key)
        stored = outcome.stored
        event_type = SecretLearned if "secret" in stored.tags else FactLearned
        self.plugin._publish(
            event_type(
                game_time=now,
                npc=key,
                fact=stored.id,
                origin=stored.origin,
                subject=stored.subject,
                topic=stored.topic,
                source=stored.source,
                teller=teller,
                room=room,
                confidence=stored.confidence,
                believed=stored.believed,
            )
        )
        return stored

    def learn_authored(self, handle: NpcHandle) -> None:
        """Teach a newly added NPC the pack's authored facts meant for it."""
        traits, faction = handle.traits, handle.faction.faction
        for number, authored in enumerate(self.plugin.pack.knowledge.facts):
            selectors = (authored.npcs, authored.archetypes, authored.factions)
            if any(selectors) and not (
                handle.identity.key in authored.npcs
                or traits.archetype in authored.archetypes
                or faction in authored.factions
            ):
                continue
            self.learn(
                handle,
                content=authored.content,
                category=authored.category,
                subject=authored.subject,
                topic=authored.topic or (authored.tags[0] if authored.tags else "general"),
                tags=tuple(authored.tags),
                confidence=authored.confidence,
                importance=authored.importance,
                source="authored",
                room=handle.location.room,
                locked=authored.locked,
                origin=f"pack:{self.plugin.pack.pack.name}:{number}",
            )

    def hearsay(self, handle: NpcHandle, fact: Fact, factor: float) -> None:
        """Reputation: a fact about a player moves the NPC's relationship with them."""
        if fact.subject is None or self.category_of(fact.subject) != "player_trait":
            return
        scale = factor * fact.confidence
        rules = self.plugin.pack.relationships
        deltas = rel_rules.memory_deltas(fact.tags, fact.importance, 0.5, "neutral", rules, scale)
        if deltas:
            self.plugin._change_relationship_of(handle, fact.subject, deltas)

    def teller_weight(self, key: str) -> float:
        """How likely an NPC is to tell: sociability × gossip drive (a little at least)."""
        traits = self.plugin._npcs[self.plugin._entities_by_key[key]].traits
        return traits.sociability * traits.gossip_drive + 0.01

    def listener_weight(self, key: str) -> float:
        """How likely an NPC is to be told: sociability (a little at least)."""
        return self.plugin._npcs[self.plugin._entities_by_key[key]].traits.sociability + 0.01

    def has_news(self, key: str) -> bool:
        """Whether an NPC has anything it would pass on."""
        return self.plugin._facts[key].has_news(self.plugin.pack.knowledge, self.plugin.clock.now)

    def gossip(self, room: str, teller_key: str, listener_key: str) -> bool:
        """One exchange: ``teller`` tells ``listener`` a fact it does not know yet."""
        rules = self.plugin.pack.knowledge
        teller = self.plugin._npcs[self.plugin._entities_by_key[teller_key]]
        listener = self.plugin._npcs[self.plugin._entities_by_key[listener_key]]
        index, heard = self.plugin._facts[teller_key], self.plugin._facts[listener_key]
        if not index.shareable:
            return False
        now = self.plugin.clock.now
        for _ in range(4):
            fact = index.by_id.get(index.shareable[int(self.plugin.rng.random() * len(index.shareable))])
            if fact is None or not knowledge_rules.is_shareable(fact, rules, now):
                continue
            if fact.origin in heard.origins or any(
                listener_key in (hop.teller, hop.listener) for hop in fact.chain
            ):
                continue
            if fact.category == "faction_intel" and self.plugin.rng.random() > teller.traits.faction_loyalty:
                continue
            attitude = self.plugin.pack.attitude(listener.faction.faction, teller.faction.faction)
            modifier = self.plugin.pack.relationships.attitude_modifiers[attitude]
            trust = rel_rules.clamp(0.5 + 0.5 * listener.traits.credulity + modifier)
            learned = self.learn(
                listener,
                content=fact.content,
                category=fact.category,
                subject=fact.subject,
                topic=fact.topic,
                tags=fact.tags,
                confidence=max(0.0, fact.confidence - rules.hop_decay) * trust,
                importance=fact.importance,
                source="gossip",
                room=room,
                origin=fact.origin,
                hops=fact.hops + 1,
                chain=fact.chain,
                teller=teller_key,
                expires_in=None if fact.expires is None else fact.expires - now,
            )
            if learned is None:
                continue
            if learned.believed:
                self.hearsay(listener, learned, rules.hearsay_factor)
            return True
        return False

"""What NPCs come to know: learning facts first-hand, from content and from each other,
what hearing about a player does to their opinion, and the derived indexes (facts by
NPC, the gossip board by room) that follow the components."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import msgspec

from npc_memory.components import (
    RETRACTIONS,
    SELF,
    Disbelief,
    EpisodicMemory,
    Fact,
    FactCategory,
    FactSource,
    Hop,
    Memory,
    NpcHandle,
    Retraction,
    Scope,
    Turn,
)
from npc_memory.components.relationship import Dimension
from npc_memory.content.schema import KnowledgeRules, Pack
from npc_memory.errors import MemoryCapacityError, PrivacyError
from npc_memory.events import FactLearned, InconsistencyNoticed, LieNoticed, SecretLearned
from npc_memory.rules import knowledge as knowledge_rules
from npc_memory.rules import privacy as privacy_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.attributes import AttributeReader
from npc_memory.rules.denials import DENIAL_ORIGIN, DenialReader
from npc_memory.rules.knowledge import FLAGGED
from npc_memory.rules.retractions import RetractionReader
from npc_memory.safety import is_marked
from npc_memory.services.board import GossipBoard
from npc_memory.services.memories import MemoryService
from npc_memory.services.relationships import RelationshipService
from npc_memory.services.safety import SafetyService
from npc_memory.state import Part, WorldState
from npc_memory.store import PlayerDocument

DENIAL_QUOTE_CHARS = 200
QUOTE_OPENING = 60
"""How many characters of a line tell that a memory quotes it (a long quote is cut)."""
"""Characters of the player's line a denial quotes at most."""
CORRECTIONS_PER_EXCHANGE = 8
"""Rumours a teller no longer believes that one exchange looks at for a correction."""


class KnowledgeService:
    """Learning and gossip for one plugin (the facts live in each NPC's KnowledgeBase).

    Keeps, per live NPC, a :class:`~npc_memory.rules.knowledge.FactIndex`, and the
    gossip board's room membership; both follow the registry (NPCs added, removed or
    moved — also by a game writing ``Location.room``).
    """

    def __init__(
        self,
        state: WorldState,
        relationships: RelationshipService,
        safety: SafetyService,
        memories: MemoryService,
    ) -> None:
        self.state = state
        self.relationships = relationships
        self.safety = safety
        self.memories = memories
        self.indexes: dict[str, knowledge_rules.FactIndex] = {}
        self._attributes: tuple[KnowledgeRules, AttributeReader] | None = None
        self._denials: tuple[Pack, DenialReader] | None = None
        self._retractions: tuple[KnowledgeRules, RetractionReader] | None = None
        self.weight_floor = state.pack.knowledge.gossip_weight_floor
        self.board = GossipBoard(
            teller_weight=self.teller_weight,
            listener_weight=self.listener_weight,
            has_news=self.has_news,
            survey=self.survey,
        )
        state.registry.listeners.append(self)

    # ------------------------------------------------------------------ registry listener

    def npc_added(self, npc: NpcHandle) -> None:
        key = npc.identity.key
        self.indexes[key] = self._index(npc)
        self.board.enter(key, npc.location.room)

    def _index(self, npc: NpcHandle) -> knowledge_rules.FactIndex:
        """A fresh index of a live NPC's facts, its first eviction placed by its key."""
        phase = knowledge_rules.eviction_phase(npc.identity.key)
        state = self.state
        return knowledge_rules.FactIndex(npc.knowledge, state.pack.knowledge, state.clock.now, phase)

    def npc_removed(self, npc: NpcHandle) -> None:
        self.board.leave(npc.identity.key, npc.location.room)
        self.indexes.pop(npc.identity.key, None)

    def npc_moved(self, npc: NpcHandle, old: str | None, new: str | None) -> None:
        self.board.leave(npc.identity.key, old)
        self.board.enter(npc.identity.key, new)

    # ------------------------------------------------------------------ reads

    def witnesses(self, room: str) -> list[str]:
        """Keys of the live NPCs in ``room``, sorted."""
        return sorted(self.board.members.get(room, ()))

    def is_player(self, key: str | None) -> bool:
        """Whether ``key`` names a player the plugin knows, live or stored."""
        if key is None:
            return False
        return self.state.registry.live_player(key) is not None or isinstance(
            self.state.stored.get(key), PlayerDocument
        )

    def category_of(self, subject: str | None) -> FactCategory:
        """The default category of a fact about ``subject``."""
        if subject is None:
            return "world_event"
        return "npc_gossip" if self.state.registry.live_npc(subject) is not None else "player_trait"

    def facts(self, npc: NpcHandle, *, include_disbelieved: bool = False) -> list[Fact]:
        """What ``npc`` believes (and, if asked, no longer believes), oldest first;
        expired facts left out."""
        now = self.state.clock.now
        return [
            f
            for f in npc.knowledge.facts
            if not knowledge_rules.is_expired(f, now) and (include_disbelieved or f.believed)
        ]

    # ------------------------------------------------------------------ learning

    def learn(
        self,
        npc: NpcHandle,
        *,
        content: str,
        category: FactCategory,
        subject: str | None,
        topic: str | None,
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
        scope: Scope | None = None,
        game: str | None = None,
        attribute: str | None = None,
        private: bool = False,
        supersede: Disbelief | None = None,
        replaces: str | None = None,
        denial: bool = False,
    ) -> Fact | None:
        """File a fact in ``npc``'s knowledge (see :func:`npc_memory.rules.knowledge.learn`,
        which also says what ``supersede``, ``replaces`` and ``denial`` do), announce it, and return
        it; ``None`` if the NPC already knew its origin. ``scope`` defaults to
        :meth:`scope_of_subject`; ``game`` to the current game."""
        key = npc.identity.key
        index = self.indexes.get(key)
        if index is None:  # an NPC only in the store (operator tools): indexed for this call
            index = knowledge_rules.FactIndex(npc.knowledge, self.state.pack.knowledge, self.state.clock.now)
        if source == "authored":
            screened = self.safety.check(content, "learn_fact", key)
            kept = self.safety.kept(screened)
            if kept is None:
                return None
            if origin is not None and kept != content:
                origin = origin.replace(content, kept)
            if screened.flagged:
                tags = (*tags, knowledge_rules.FLAGGED)
            content = kept
        if origin is not None and origin in index.origins:
            return None
        now = self.state.clock.now
        fact_id = f"f{npc.knowledge.next_id}"
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
            scope=self.scope_of_subject(subject) if scope is None else scope,
            game=self.state.game if game is None else game,
            attribute=attribute,
            private=private,
        )
        rules = self.state.pack.knowledge
        # The id is taken before the fact is held: the store's writer may copy the facts
        # between any two statements, and a copy holding the fact beside the old counter
        # would hand its id out again (a store that refuses to load).
        # (Should learning raise, the id stays taken: a gap, never a reuse.)
        npc.knowledge.next_id += 1
        outcome = knowledge_rules.learn(
            npc.knowledge, fact, rules, now, npc.relationships.by_player, index, supersede, replaces, denial
        )
        taken_back = outcome.displaced
        if npc.live and taken_back is not None and taken_back.source == "gossip" and (
            taken_back.disbelief in knowledge_rules.TOLD_ON
        ):  # what believing the rumour did to the NPC's opinion, taken back with it
            self.hearsay(npc, taken_back, -rules.hearsay_factor)
        if outcome.stored is None and not outcome.removed:  # never held, nothing left: handed out again
            npc.knowledge.next_id -= 1  # (ids of facts that left stay taken: see FactIndex)
        if outcome.merged is not None:  # the same claim again: reinforced, not copied
            if npc.live and outcome.newly_shareable:
                self.board.news(key, npc.location.room)
            self.state.mark(key, Part.KNOWLEDGE)
            return None
        if outcome.stored is None:  # the new fact was evicted at once, maybe with others
            if outcome.removed or outcome.displaced is not None:
                self.state.mark(key, Part.KNOWLEDGE)
            return None
        if npc.live:
            self.board.news(key, npc.location.room)
        self.state.mark(key, Part.KNOWLEDGE)
        stored = outcome.stored
        event_type = SecretLearned if "secret" in stored.tags else FactLearned
        self.state.publish(
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

    def scope_of_subject(self, subject: str | None) -> Scope:
        """The scope of a fact about ``subject``: by the player's consent and anonymity
        (see :func:`npc_memory.rules.privacy.scope_for_player`), ``social`` for the
        world or an NPC, ``session`` (the narrowest) for anyone the plugin does not know."""
        if subject is None:
            return "social"
        player = self.state.registry.live_player(subject)
        if player is not None:
            return privacy_rules.scope_for_player(player.profile)
        stored = self.state.stored.get(subject)
        profile = getattr(stored, "profile", None)
        if profile is not None:
            return privacy_rules.scope_for_player(profile)
        live_npc = self.state.registry.live_npc(subject) is not None
        return "social" if live_npc or stored is not None else "session"

    def replace_facts(self, npc: NpcHandle, facts: list[Fact]) -> None:
        """``npc`` now knows ``facts`` (some left): its index and its room's gossip follow."""
        npc.knowledge.facts = facts
        if npc.live and npc.identity.key in self.indexes:
            self.indexes[npc.identity.key] = self._index(npc)
            self.board.touch(npc.location.room)
        self.state.mark(npc.identity.key, Part.KNOWLEDGE)

    def learn_statement(
        self,
        npc: NpcHandle,
        player: str,
        player_name: str,
        content: str,
        *,
        tags: tuple[str, ...],
        confidence: float,
        importance: float,
        source_memory: str,
        room: str | None,
    ) -> Fact | None:
        """File what ``player`` said about themselves (``content``, a memory of it)
        under the attribute it states (see :class:`~npc_memory.content.schema.PlayerAttribute`)
        as a private fact; ``None`` when it states none, or says again what the NPC
        believes of that attribute. A statement that says otherwise than the believed one
        of a single attribute takes its place: ``corrected`` when the player owns up to it,
        ``changed`` when they say it changed, else ``contradicted``; of an attribute of
        several values it is added beside, and takes the latest one's place only when
        corrected or changed and its sentence that states the attribute names a word of
        it again ("I told you I'd two brothers. It's three." after "I've two brothers")."""
        reader = self.attribute_reader()
        statement = reader.read(content, player_name)
        if statement is None:
            return None
        rival = next(
            (f for f in reversed(npc.knowledge.facts)
             if f.believed and f.subject == player and f.attribute == statement.attribute),
            None,
        )
        supersede: Disbelief | None = None
        if rival is not None:
            before = reader.read(rival.content, player_name)
            if not statement.value or (before is not None and statement.value & before.value):
                return None  # nothing new: said again, or no value to tell apart
            # (of several values, one that names nothing of the latest is another beside it)
            replacing = statement.single or reader.names_again(
                content, rival.content, player_name, statement.attribute
            )
            if replacing and statement.corrects:
                supersede = "corrected"
            elif replacing and statement.changes:
                supersede = "changed"
            elif statement.single:
                supersede = "contradicted"
        fact = self.learn(
            npc,
            content=content,
            category="player_trait",
            subject=player,
            topic=statement.attribute if statement.single else None,
            tags=tags,
            confidence=confidence,
            importance=importance,
            source="conversation",
            source_memory=source_memory,
            room=room,
            attribute=statement.attribute,
            private=True,
            supersede=supersede,
            replaces=None if rival is None or supersede is None else rival.id,
        )
        if fact is not None and rival is not None and rival.source_memory and supersede in RETRACTIONS:
            reason: Retraction = "corrected" if supersede == "corrected" else "changed"
            self.memories.retract(npc, player, rival.source_memory, reason)  # owned up to, or changed
        if fact is not None and rival is not None and supersede == "contradicted":
            self.state.publish(
                InconsistencyNoticed(
                    game_time=self.state.clock.now,
                    npc=npc.identity.key,
                    player=player,
                    attribute=statement.attribute,
                    earlier=rival.id,
                    later=fact.id,
                )
            )
        return fact

    def attribute_reader(self) -> AttributeReader:
        """The reader of the installed pack's attributes (made again if the pack changed)."""
        rules = self.state.pack.knowledge
        if self._attributes is None or self._attributes[0] is not rules:
            self._attributes = (rules, AttributeReader(rules))
        return self._attributes[1]

    def denial_reader(self) -> DenialReader:
        """The reader of the installed pack's denials (made again if the pack changed)."""
        pack = self.state.pack
        if self._denials is None or self._denials[0] is not pack:
            self._denials = (pack, DenialReader(pack.knowledge, pack.extraction.tags))
        return self._denials[1]

    def learn_denials(
        self, npc: NpcHandle, player: str, player_name: str, conversation: str, turns: Sequence[Turn],
        room: str | None,
    ) -> list[Fact]:  # fmt: skip
        """What ``player`` denied in ``conversation`` (its ``turns``) of the claims ``npc``
        believes about them (see :mod:`npc_memory.rules.denials`), each learned as a rival
        of the claim it answers, with the pack's ``denial_confidence``: the better founded
        is believed, the claim kept as ``denied`` or the denial as ``outweighed``; a denial
        outweighed is a lie the NPC noticed (:class:`LieNoticed`, after the relationship
        moved by the pack's ``lie_noticed``). Lines the safety screen marked deny nothing.
        Returns the denials learned."""
        def claims() -> list[Fact]:
            return [
                f for f in npc.knowledge.facts
                if f.believed and f.subject == player and f.attribute is None and not f.locked
            ]  # fmt: skip

        spoken = [Turn(t.speaker, "" if is_marked(t.text) else t.text) for t in turns]
        names = (player_name, player, npc.identity.name, npc.identity.key)
        confidence = self.state.pack.knowledge.denial_confidence
        learned = []
        for denial in self.denial_reader().read(spoken, (player_name, player), names, claims):
            claim, said = denial.claim, denial.text
            if len(said) > DENIAL_QUOTE_CHARS:
                said = said[: DENIAL_QUOTE_CHARS - 3] + "..."
            fact = self.learn(
                npc,
                content=f'{player_name} denied it ("{claim.content}"): "{said}"',
                category="player_trait",
                subject=player,
                topic=claim.topic,
                tags=(),
                confidence=confidence,
                importance=claim.importance,
                source="conversation",
                room=room,
                origin=f"{DENIAL_ORIGIN}{npc.identity.key}:{conversation}:{denial.line}",
                replaces=claim.id,
                denial=True,
            )
            if fact is None:
                continue
            learned.append(fact)
            if not fact.believed and fact.displaced_by == claim.id:  # denied to its face
                lie = self.state.pack.relationships.lie_noticed
                if lie:
                    self.relationships.change(npc, player, dict(lie))
                self.state.publish(
                    LieNoticed(
                        game_time=self.state.clock.now,
                        npc=npc.identity.key,
                        player=player,
                        claim=claim.id,
                        denial=fact.id,
                    )
                )
        return learned

    def retraction_reader(self) -> RetractionReader:
        """The reader of the installed pack's back-references (made again if the pack changed)."""
        rules = self.state.pack.knowledge
        if self._retractions is None or self._retractions[0] is not rules:
            self._retractions = (rules, RetractionReader(rules))
        return self._retractions[1]

    def learn_retractions(
        self, npc: NpcHandle, player: str, player_name: str, conversation: str, turns: Sequence[Turn]
    ) -> list[Memory]:
        """What ``player`` took back in ``conversation`` (its ``turns``) of what they told
        ``npc`` before (see :mod:`npc_memory.rules.retractions`): each memory of their
        earlier words or claims taken back is marked ``retracted``, the facts it gave the
        NPC to believe stop being believed for the same reason (``corrected`` or
        ``changed``), and what a claim moved in the relationship is taken back (words
        said stay said). A line takes back only what was said before it, in an earlier
        conversation or earlier in this one. Lines the safety screen marked take nothing
        back. Returns the memories marked."""

        def held() -> list[tuple[Memory, int]]:
            pair = npc.bank.pair(player)
            if pair is None:
                return []
            earlier = sorted(
                (m for m in pair.all()
                 if m.actor == player and m.source in ("said", "claimed") and m.retracted is None
                 and FLAGGED not in m.tags),
                key=lambda m: m.created,
            )  # fmt: skip
            return [(m, _said_at(m, conversation, turns)) for m in earlier]

        spoken = [Turn(t.speaker, "" if is_marked(t.text) else t.text) for t in turns]
        names = (player_name, player, npc.identity.name, npc.identity.key)
        key, now = npc.identity.key, self.state.clock.now
        marked = []
        for taken in self.retraction_reader().read(spoken, (player_name, player), names, held):
            memory = self.memories.retract(npc, player, taken.memory.id, taken.reason)
            if memory is None:
                continue
            marked.append(memory)
            backed = [f for f in npc.knowledge.facts if f.source_memory == memory.id and f.believed]
            if backed:
                index = self.indexes.get(key)
                if index is None:  # an NPC only in the store: indexed for this call
                    index = knowledge_rules.FactIndex(npc.knowledge, self.state.pack.knowledge, now)
                for fact in backed:
                    knowledge_rules.withdraw(npc.knowledge, index, fact, taken.reason, now)
                self.state.mark(key, Part.KNOWLEDGE)
            if memory.source == "claimed":
                rules = self.state.pack.relationships
                deltas = rel_rules.memory_deltas(
                    memory.tags, memory.importance, memory.intensity, memory.valence, rules,
                    -self.memories.weight(taken.memory, player),
                )  # fmt: skip
                if deltas:
                    self.relationships.change(npc, player, dict(deltas))
        return marked

    def learn_authored(self, npc: NpcHandle) -> None:
        """Teach a newly added NPC the pack's authored facts meant for it."""
        traits, faction = npc.traits, npc.faction.faction
        pack = self.state.pack
        for number, authored in enumerate(pack.knowledge.facts):
            selectors = (authored.npcs, authored.archetypes, authored.factions)
            if any(selectors) and not (
                npc.identity.key in authored.npcs
                or traits.archetype in authored.archetypes
                or faction in authored.factions
            ):
                continue
            self.learn(
                npc,
                content=authored.content,
                category=authored.category,
                subject=authored.subject,
                topic=authored.topic,
                tags=tuple(authored.tags),
                confidence=authored.confidence,
                importance=authored.importance,
                source="authored",
                room=npc.location.room,
                locked=authored.locked,
                origin=f"pack:{pack.pack.name}:{number}",
                scope="profile",
            )

    def observe(
        self,
        room: str,
        content: str,
        *,
        subject: str | None,
        tags: tuple[str, ...],
        importance: float,
        confidence: float,
        category: FactCategory | None,
        topic: str | None,
        expires_in: float | None,
        scope: Scope | None = None,
    ) -> list[str]:
        """Every live NPC in ``room`` learns ``content`` first-hand; a fact about a player
        moves each witness's opinion. Returns the witnesses' keys, sorted."""
        screened = self.safety.check(content, "observe", room)
        kept = self.safety.kept(screened)
        if kept is None:
            return []
        if screened.flagged:
            tags = (*tags, knowledge_rules.FLAGGED)
        content = kept
        witnesses = self.witnesses(room)
        now = self.state.clock.now
        # Worked out once for every witness: each learns the same fact, so a witness
        # that stores it believed stores exactly these tags, importance and confidence.
        origin = f"seen:{room}:{now!r}:{content}"
        kind = category or self.category_of(subject)
        scope = self.scope_of_subject(subject) if scope is None else scope
        deltas = None if screened.flagged else self.hearsay_deltas(subject, tags, importance, confidence, 1.0)
        about = subject if self.is_player(subject) else None  # whose pair the witnesses' memory joins
        known = subject in self.state.registry.by_key or subject in self.state.stored
        episode = self.memories.episode(  # what each witness saw, built once
            content, tags=tags, importance=importance, confidence=confidence, scope=scope, room=room,
            actor=subject if known else None, source="witnessed",
        )
        live_npc = self.state.registry.live_npc
        for key in witnesses:
            npc = live_npc(key)
            assert npc is not None
            seen = self._witnessed(npc, about, episode)
            fact = self.learn(
                npc,
                content=content,
                category=kind,
                subject=subject,
                topic=topic,
                tags=tags,
                confidence=confidence,
                importance=importance,
                source="observation",
                room=room,
                expires_in=expires_in,
                origin=origin,
                scope=scope,
                source_memory=seen,
            )
            if deltas and subject is not None and fact is not None and fact.believed:
                self.relationships.change(npc, subject, deltas)  # once: the memory moves nothing
        return witnesses

    def _heard(self, listener: NpcHandle, fact: Fact, teller: str) -> None:
        """The episodic memory ``listener`` keeps of a rumour about a player: ``heard``,
        from ``teller``, the player its actor (it moves nothing: the fact does)."""
        subject = fact.subject
        assert subject is not None
        with contextlib.suppress(MemoryCapacityError, PrivacyError):
            self.memories.remember(
                listener, subject, fact.content, tags=fact.tags, importance=fact.importance,
                confidence=fact.confidence, scope=privacy_rules.fact_scope(fact), room=listener.location.room,
                actor=subject, source="heard", teller=teller, screened=True,
            )

    def _witnessed(self, npc: NpcHandle, about: str | None, episode: EpisodicMemory) -> str | None:
        """``npc`` keeps ``episode``, what it saw, filed about the player ``about`` or the
        world; its actor is the subject, or :data:`SELF` when the subject is ``npc``
        (``None``: one the plugin does not know). The memory's id, or ``None`` when it
        could not be kept."""
        if episode.actor == npc.identity.key:
            episode = msgspec.structs.replace(episode, actor=SELF)
        try:
            return self.memories.remember_copy(npc, about, episode).id
        except MemoryCapacityError:
            return None

    def forget_expired(self, npc: NpcHandle) -> bool:
        """Remove ``npc``'s expired facts; whether any went."""
        now = self.state.clock.now
        kept = [f for f in npc.knowledge.facts if not knowledge_rules.is_expired(f, now)]
        if len(kept) == len(npc.knowledge.facts):
            return False
        self.replace_facts(npc, kept)
        return True

    def hearsay(self, npc: NpcHandle, fact: Fact, factor: float) -> None:
        """Reputation: a fact about a player moves the NPC's relationship with them."""
        deltas = self.hearsay_deltas(fact.subject, fact.tags, fact.importance, fact.confidence, factor)
        if deltas and fact.subject is not None:
            self.relationships.change(npc, fact.subject, deltas)

    def hearsay_deltas(
        self, subject: str | None, tags: tuple[str, ...], importance: float, confidence: float, factor: float
    ) -> dict[Dimension, float] | None:
        """What learning a fact (``tags``, ``importance``, ``confidence``) about ``subject``
        does to the learner's relationship with them, ``factor`` times: the pack's tag
        rules as for a memory of ``hearsay_intensity``. ``None`` without a subject or
        when it is a live NPC (a fact about the world or an NPC moves no relationship);
        any other key counts as a player's, present or not (see :meth:`category_of`)."""
        if subject is None or self.category_of(subject) != "player_trait":
            return None
        rules = self.state.pack.relationships
        intensity = self.state.pack.knowledge.hearsay_intensity
        return rel_rules.memory_deltas(tags, importance, intensity, "neutral", rules, factor * confidence)

    # ------------------------------------------------------------------ gossip

    def _npc(self, key: str) -> NpcHandle:
        npc = self.state.registry.live_npc(key)
        assert npc is not None, key
        return npc

    def teller_weight(self, key: str) -> float:
        """How likely an NPC is to tell: sociability × gossip drive, plus the pack's floor."""
        traits = self._npc(key).traits
        return traits.sociability * traits.gossip_drive + self.weight_floor

    def listener_weight(self, key: str) -> float:
        """How likely an NPC is to be told: sociability, plus the pack's floor."""
        return self._npc(key).traits.sociability + self.weight_floor

    def survey(self, occupants: list[str]) -> tuple[list[str], list[float], list[float]]:
        """For a room's live occupants: who has news, their teller weights, and every
        occupant's listener weight (the three functions around this one, in one pass)."""
        registry, floor, indexes = self.state.registry, self.weight_floor, self.indexes
        rules, now = self.state.pack.knowledge, self.state.clock.now
        tellers: list[str] = []
        teller_weights: list[float] = []
        listener_weights: list[float] = []
        for key in occupants:
            npc = registry.live_npc(key)
            assert npc is not None, key
            traits = npc.traits
            listener_weights.append(traits.sociability + floor)
            if indexes[key].has_news(rules, now):
                tellers.append(key)
                teller_weights.append(traits.sociability * traits.gossip_drive + floor)
        return tellers, teller_weights, listener_weights

    def has_news(self, key: str) -> bool:
        """Whether an NPC has anything it would pass on."""
        return self.indexes[key].has_news(self.state.pack.knowledge, self.state.clock.now)

    def gossip(self, room: str, teller_key: str, listener_key: str) -> bool:
        """One exchange: ``teller`` tells ``listener`` a fact it does not know yet, or
        first, if the listener still believes a rumour the teller has stopped believing
        (:attr:`~npc_memory.rules.knowledge.FactIndex.corrections`), what the teller
        believes in its place, which then takes the rumour's place in the listener's mind
        whatever the evidence (kept, ``outweighed``)."""
        state = self.state
        rules = state.pack.knowledge
        registry = state.registry
        teller, listener = registry.live_npc(teller_key), registry.live_npc(listener_key)
        if teller is None or listener is None:  # defensive: the board drops leavers at once
            return False
        index, heard = self.indexes[teller_key], self.indexes[listener_key]
        if index.corrections and self._correct(room, teller, listener, index, heard):
            return True
        if not index.shareable:
            return False
        now = state.clock.now
        for _ in range(rules.gossip_candidates_per_exchange):
            if not index.shareable:
                return False
            fact_id = index.shareable[int(state.gossip_rng.random() * len(index.shareable))]
            fact = index.by_id.get(fact_id)
            if fact is None or not knowledge_rules.is_shareable(fact, rules, now):
                index.drop(fact_id)
                continue
            if fact.origin in heard.origins or any(
                listener_key in (hop.teller, hop.listener) for hop in fact.chain
            ):
                continue
            if fact.category == "faction_intel" and state.gossip_rng.random() > teller.traits.faction_loyalty:
                continue
            if self._tell(room, teller, listener, fact):
                return True
        return False

    def _correct(
        self,
        room: str,
        teller: NpcHandle,
        listener: NpcHandle,
        index: knowledge_rules.FactIndex,
        heard: knowledge_rules.FactIndex,
    ) -> bool:
        """Tell ``listener`` the correction of a rumour it still believes and ``teller``
        no longer does (the newest such first, at most :data:`CORRECTIONS_PER_EXCHANGE`
        looked at); whether one was told."""
        rules, now = self.state.pack.knowledge, self.state.clock.now
        for old_origin, new_id in list(reversed(index.corrections.items()))[:CORRECTIONS_PER_EXCHANGE]:
            new = index.by_id.get(new_id)
            if new is None or not knowledge_rules.is_shareable(new, rules, now):
                del index.corrections[old_origin]
                continue
            if old_origin not in heard.origins or new.origin in heard.origins:
                continue
            facts = listener.knowledge.facts
            rumour = next((f for f in facts if old_origin == f.origin or old_origin in f.aliases), None)
            if rumour is None or not rumour.believed:
                continue
            if self._tell(room, teller, listener, new, replaces=rumour.id):
                return True
        return False

    def _tell(
        self, room: str, teller: NpcHandle, listener: NpcHandle, fact: Fact, replaces: str | None = None
    ) -> bool:
        """``teller`` tells ``listener`` ``fact`` in ``room`` (confidence decayed by the hop
        and scaled by the listener's trust in the teller); with ``replaces``, the fact takes
        the place of the listener's belief of that id. Whether the listener learned it."""
        state = self.state
        rules, now = state.pack.knowledge, state.clock.now
        teller_key = teller.identity.key
        attitude = state.pack.attitude(listener.faction.faction, teller.faction.faction)
        modifier = state.pack.relationships.attitude_modifiers[attitude]
        trust = rules.gossip_trust_base + rules.gossip_trust_credulity * listener.traits.credulity
        trust = rel_rules.clamp(trust + modifier)
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
            scope=privacy_rules.fact_scope(fact),
            game=fact.game,
            supersede=None if replaces is None else "outweighed",
            replaces=replaces,
        )
        if learned is None:
            return False
        if self.is_player(learned.subject):
            self._heard(listener, learned, teller_key)
        if learned.believed:
            self.hearsay(listener, learned, rules.hearsay_factor)
        return True


def _said_at(memory: Memory, conversation: str, turns: Sequence[Turn]) -> int:
    """The last line of ``conversation`` (its ``turns``) that ``memory`` quotes (by its
    opening words: a long quote is cut), -1 for a memory of an earlier conversation;
    past the last line for one that quotes none (nothing of the talk takes it back)."""
    if memory.source_conversation != conversation:
        return -1
    quoted = [n for n, turn in enumerate(turns) if turn.text and turn.text[:QUOTE_OPENING] in memory.content]
    return max(quoted, default=len(turns))

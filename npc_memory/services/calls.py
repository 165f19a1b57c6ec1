"""The facade's writing calls with many options, checked before anything changes: a
call's keyword arguments arrive as one typed dict (``RememberOptions``, ``FactOptions``,
``LearnOptions``), are checked as a whole, and go to one service. An unknown keyword is
an :class:`InvalidArgumentError` naming it, as Python's own ``TypeError`` would."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple, TypedDict

from npc_memory.components import (
    DIMENSIONS,
    MEMORY_KINDS,
    SELF,
    VALENCES,
    Fact,
    FactCategory,
    Memory,
    MemoryKind,
    MemorySource,
    Relationship,
    Scope,
    TriggerContext,
    Valence,
)
from npc_memory.components.relationship import Dimension
from npc_memory.content.schema import Limits
from npc_memory.errors import DuplicateKeyError, InvalidArgumentError, PrivacyError, VersionConflictError
from npc_memory.rules.validation import (
    GAME_ONLY_TAGS,
    MAX_KEY_CHARS,
    check_category,
    check_flag,
    check_game_seconds,
    check_int,
    check_keys,
    check_room,
    check_scope,
    check_source,
    check_tags,
    check_text,
    check_trigger,
    check_unit,
)
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.memories import MemoryService
from npc_memory.services.population import PopulationService
from npc_memory.services.privacy import PrivacyService
from npc_memory.services.relationships import RelationshipService
from npc_memory.services.resolver import Resolver
from npc_memory.state import Ref, WorldState


class RememberOptions(TypedDict, total=False):
    """Keyword arguments of ``MemoryPlugin.remember``; each left out takes its default."""

    kind: MemoryKind  # "episodic"
    tags: Iterable[str]  # ()
    importance: float  # 0.5, in [0, 1]
    confidence: float  # 1.0, in [0, 1]
    valence: Valence  # "neutral"
    intensity: float  # 0.0, in [0, 1]
    locked: bool  # False
    scope: Scope | None  # the narrowest that fits
    room: str | None  # the NPC's room
    source_conversation: str | None
    pattern: str | None  # procedural only; default: the content
    trigger: TriggerContext | None  # procedural only
    source_episodes: Iterable[str]  # semantic only
    affect_relationship: bool  # False
    actor: Ref | None  # the player (None for a world memory)
    source: MemorySource  # "authored"
    teller: Ref | None


class FactOptions(TypedDict, total=False):
    """Keyword arguments of ``MemoryPlugin.observe`` besides ``room`` and ``content``."""

    subject: Ref | None
    tags: Iterable[str]  # ()
    importance: float  # 0.5, in [0, 1]
    confidence: float  # 1.0, in [0, 1]
    category: FactCategory | None  # from the subject
    topic: str | None  # none: the fact competes with no other
    expires_in: float | None  # game seconds; never


class LearnOptions(FactOptions, total=False):
    """Keyword arguments of ``MemoryPlugin.learn_fact``."""

    locked: bool  # False


def _refuse_unknown(call: str, given: Mapping[str, object], expected: type) -> None:
    if unknown := sorted(set(given) - set(expected.__annotations__)):
        raise InvalidArgumentError(
            f"{call}() got unknown keyword arguments {', '.join(unknown)}; expected some of "
            f"{', '.join(expected.__annotations__)}"
        )


def checked_tags(tags: Iterable[str], what: str, limits: Limits) -> tuple[str, ...]:
    """Tags as :func:`check_tags` makes them; ``game-only`` is a game's clue, never stored."""
    tag_tuple = check_tags(tags, limits)
    if GAME_ONLY_TAGS.intersection(tag_tuple):
        raise PrivacyError(f"{what} tagged 'game-only' are game clues and are never stored")
    return tag_tuple


class CheckedCalls:
    """Checks the arguments of the facade's writing calls, resolves who they name and
    calls one service; nothing changes when a check fails."""

    def __init__(
        self,
        state: WorldState,
        resolve: Resolver,
        memories: MemoryService,
        knowledge: KnowledgeService,
        relationships: RelationshipService,
        population: PopulationService,
        privacy: PrivacyService,
    ) -> None:
        self.state = state
        self.resolve = resolve
        self.memories = memories
        self.knowledge = knowledge
        self.relationships = relationships
        self.population = population
        self.privacy = privacy

    def remember(self, npc: Ref, player: Ref | None, content: str, options: RememberOptions) -> Memory:
        """See ``MemoryPlugin.remember``."""
        _refuse_unknown("remember", options, RememberOptions)
        handle = self.resolve.npc(npc)
        target = None if player is None else self.resolve.player(player)
        limits = self.state.pack.limits
        text = check_text("content", content, limits.content_chars)
        tags = checked_tags(options.get("tags", ()), "memories", limits)
        kind = options.get("kind", "episodic")
        if kind not in MEMORY_KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}")
        valence = options.get("valence", "neutral")
        if valence not in VALENCES:
            raise InvalidArgumentError(f"valence must be one of {', '.join(VALENCES)}, got {valence!r}")
        importance = check_unit("importance", options.get("importance", 0.5))
        confidence = check_unit("confidence", options.get("confidence", 1.0))
        intensity = check_unit("intensity", options.get("intensity", 0.0))
        locked = check_flag("locked", options.get("locked", False))
        affect = check_flag("affect_relationship", options.get("affect_relationship", False))
        scope = check_scope(options.get("scope"), target)
        if target is None:
            self.privacy.check_world_memory(text, scope)
        if affect and target is None:
            raise InvalidArgumentError("affect_relationship needs a player, not a world-scoped memory")
        pattern, trigger = options.get("pattern"), options.get("trigger")
        if kind != "procedural" and (pattern is not None or trigger is not None):
            raise InvalidArgumentError("pattern and trigger apply to procedural memories only")
        trigger = check_trigger(trigger, limits)
        conversation = options.get("source_conversation")
        if conversation is not None:
            conversation = check_text("source_conversation", conversation, MAX_KEY_CHARS)
        episodes = check_keys(
            "source_episodes", options.get("source_episodes", ()), self.state.pack.memory.episodic_cap
        )
        if episodes and kind != "semantic":
            raise InvalidArgumentError("source_episodes apply to semantic memories only")
        key = None if target is None else target.identity.key
        actor = self.resolve.actor(options["actor"]) if "actor" in options else key
        teller = self.resolve.actor(options.get("teller"), "teller")
        source = check_source(options.get("source", "authored"))
        held = handle.bank.pair(key)
        known = {m.id for m in held.all()} if held is not None else set()
        if unknown := [e for e in episodes if e not in known]:
            raise InvalidArgumentError(f"source_episodes not held for this pair: {', '.join(unknown)}")
        return self.memories.remember(
            handle,
            key,
            text,
            kind=kind,
            tags=tags,
            importance=importance,
            confidence=confidence,
            valence=valence,
            intensity=intensity,
            locked=locked,
            scope=scope,
            room=check_room(options.get("room")),
            source_conversation=conversation,
            pattern=None if pattern is None else check_text("pattern", pattern, limits.content_chars),
            trigger=trigger,
            source_episodes=episodes,
            affect_relationship=affect,
            actor=actor,
            source=source,
            teller=teller,
        )

    def observe(self, room: str, content: str, options: FactOptions) -> list[str]:
        """See ``MemoryPlugin.observe``."""
        _refuse_unknown("observe", options, FactOptions)
        room_name = check_text("room", room, MAX_KEY_CHARS)
        fact = self._fact(content, options)
        return self.knowledge.observe(
            room_name,
            fact.content,
            scope=self.privacy.world_fact_scope(fact.content) if fact.subject is None else None,
            subject=fact.subject,
            tags=fact.tags,
            importance=fact.importance,
            confidence=fact.confidence,
            category=fact.category,
            topic=fact.topic,
            expires_in=fact.expires_in,
        )

    def learn_fact(self, npc: Ref, content: str, options: LearnOptions) -> Fact | None:
        """See ``MemoryPlugin.learn_fact``."""
        _refuse_unknown("learn_fact", options, LearnOptions)
        handle = self.resolve.npc(npc)
        fact = self._fact(content, options)
        locked = check_flag("locked", options.get("locked", False))
        return self.knowledge.learn(
            handle,
            content=fact.content,
            category=fact.category or self.knowledge.category_of(fact.subject),
            subject=fact.subject,
            topic=fact.topic,
            tags=fact.tags,
            confidence=fact.confidence,
            importance=fact.importance,
            source="authored",
            room=handle.location.room,
            locked=locked,
            expires_in=fact.expires_in,
            origin=f"authored:{handle.identity.key}:{fact.content}",
            scope=self.privacy.world_fact_scope(fact.content) if fact.subject is None else None,
        )

    def adjust_relationship(
        self, npc: Ref, player: Ref, expected_version: int | None, deltas: Mapping[str, float]
    ) -> Relationship:
        """See ``MemoryPlugin.adjust_relationship``."""
        handle, target = self.resolve.npc(npc), self.resolve.player(player)
        checked: dict[Dimension, float] = {}
        for name, delta in deltas.items():
            if name not in DIMENSIONS:
                raise InvalidArgumentError(
                    f"unknown relationship dimension {name!r}; expected one of {', '.join(DIMENSIONS)}"
                )
            if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta):
                raise InvalidArgumentError(f"delta for {name!r} must be a finite number, got {delta!r}")
            checked[name] = float(delta)
        if expected_version is not None:
            check_int("expected_version", expected_version, 0, 2**62)
            current = self.relationships.peek(handle, target.identity.key, target.faction.faction).version
            if current != expected_version:
                raise VersionConflictError(
                    f"relationship {handle.identity.key!r}→{target.identity.key!r} is at version "
                    f"{current}, not {expected_version}"
                )
        return self.relationships.change(handle, target.identity.key, checked)

    def spawn_arguments(
        self, key: str, name: str | None, room: str | None
    ) -> tuple[str, str | None, str | None]:
        """The checked key, name and room of an NPC or player to add; the key must be free."""
        key = check_text("key", key, MAX_KEY_CHARS)
        if key == SELF:
            raise InvalidArgumentError(f"key {SELF!r} is reserved: a memory's actor {SELF!r} is its NPC")
        self.population.free_stale_key(key)
        if key in self.state.registry.by_key:
            raise DuplicateKeyError(
                f"key {key!r} is already used by entity {self.state.registry.by_key[key]}"
            )
        return key, None if name is None else check_text("name", name, MAX_KEY_CHARS), check_room(room)

    def _fact(self, content: str, options: FactOptions) -> _CheckedFact:
        limits = self.state.pack.limits
        expires_in = options.get("expires_in")
        if expires_in is not None:
            check_game_seconds("expires_in", expires_in)
        topic, subject, category = options.get("topic"), options.get("subject"), options.get("category")
        check_category(category)
        return _CheckedFact(
            content=check_text("content", content, limits.content_chars),
            subject=None if subject is None else self.resolve.subject(subject),
            tags=checked_tags(options.get("tags", ()), "facts", limits),
            importance=check_unit("importance", options.get("importance", 0.5)),
            confidence=check_unit("confidence", options.get("confidence", 1.0)),
            category=category,
            topic=None if topic is None else check_text("topic", topic, MAX_KEY_CHARS),
            expires_in=expires_in,
        )


class _CheckedFact(NamedTuple):
    content: str
    subject: str | None
    tags: tuple[str, ...]
    importance: float
    confidence: float
    category: FactCategory | None
    topic: str | None
    expires_in: float | None

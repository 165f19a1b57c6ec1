"""Typed events the plugin emits; subscribe with ``plugin.on(EventType, handler)``.

A handler subscribed to a base class (for instance :class:`RelationshipThresholdCrossed`)
receives every subclass too. NPCs and players are named by their stable keys; the
entity ids are for convenience within the live world.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from npc_memory.components.relationship import Dimension, Stage


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every plugin event; ``game_time`` in game seconds."""

    game_time: float


class RelationshipEvent(Event, frozen=True, kw_only=True):
    """Something happened to how NPC ``npc`` regards player ``player``."""

    npc: str
    player: str
    npc_entity: int
    player_entity: int | None


class RelationshipThresholdCrossed(RelationshipEvent, frozen=True, kw_only=True):
    """A dimension crossed a threshold of the pack (fired once per crossing).

    ``threshold`` is the threshold's name, ``limit`` its level, ``value`` the new value.
    """

    threshold: str
    dimension: Dimension
    direction: Literal["above", "below"]
    limit: float
    value: float


class Hostile(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Trust fell below the hostile threshold (0.2 by default)."""


class TrustedAlly(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Trust rose above the trusted-ally threshold (0.8 by default)."""


class Cowed(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Fear rose above the cowed threshold (0.7 by default)."""


class Respected(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Respect rose above the respected threshold (0.8 by default)."""


class BestFriend(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Friendliness rose above the best-friend threshold (0.9 by default)."""


class Despised(RelationshipThresholdCrossed, frozen=True, kw_only=True):
    """Friendliness fell below the despise threshold (0.1 by default)."""


class RelationshipStageChanged(RelationshipEvent, frozen=True, kw_only=True):
    """The relationship moved from stage ``old`` to stage ``new``."""

    old: Stage
    new: Stage


class StoreOwnershipLost(Event, frozen=True, kw_only=True):
    """This process lost the lock of its store (the lock file was removed or replaced,
    so another process may own it now): the plugin stopped writing to it and keeps
    everything in memory. Export the world (``plugin.storage.export(PATH)``) and restart on a
    store of its own. ``store`` names the store, ``error`` what was found."""

    store: str
    error: str


class HealthChanged(Event, frozen=True, kw_only=True):
    """The plugin's health changed from ``previous`` to ``status`` (``ok``,
    ``degraded`` or ``failing``); ``reasons`` says why (see ``plugin.health()``)."""

    status: Literal["ok", "degraded", "failing"]
    previous: Literal["ok", "degraded", "failing"]
    reasons: tuple[str, ...]


class SnapshotFailed(Event, frozen=True, kw_only=True):
    """Writing a snapshot to the store failed; the changes stay queued and are retried
    with the next snapshot round. ``error`` describes the failure."""

    error: str


class MemoriesExtracted(Event, frozen=True, kw_only=True):
    """A finished conversation became memories (possibly none). ``source`` is "llm" or
    "rules"; ``reason`` says why the rules were used when they were; ``memories`` are
    the ids of the new memories of ``npc`` about ``player``."""

    npc: str
    player: str
    conversation: str
    source: str
    reason: str
    memories: tuple[str, ...]


class ExtractionDropped(Event, frozen=True, kw_only=True):
    """The extraction queue was full and the pack says to drop: this conversation will
    not become memories (its working-memory summary stays)."""

    npc: str
    player: str
    conversation: str


class FactLearned(Event, frozen=True, kw_only=True):
    """NPC ``npc`` learned a fact: first-hand (``teller`` is ``None``), from a
    conversation, authored content, or gossip from ``teller`` in ``room``. ``topic`` is
    what the fact is a rival claim about (``None``: it competes with none)."""

    npc: str
    fact: str
    origin: str
    subject: str | None
    topic: str | None
    source: str
    teller: str | None
    room: str | None
    confidence: float
    believed: bool


class InconsistencyNoticed(Event, frozen=True, kw_only=True):
    """Player ``player`` told NPC ``npc`` something about themselves (``attribute``) that
    says otherwise than what they told before, without owning up to it or saying it
    changed: ``earlier`` (no longer believed) and ``later`` are the facts' ids. The NPC
    may bring it up (``plugin.query.inconsistencies``)."""

    npc: str
    player: str
    attribute: str
    earlier: str
    later: str


class LieNoticed(Event, frozen=True, kw_only=True):
    """Player ``player`` denied to NPC ``npc`` a claim about them that the NPC holds on
    better grounds (it saw it, say): ``claim`` stays believed, ``denial`` is kept, not
    believed. The NPC's relationship moved by the pack's ``[relationships] lie_noticed``
    first; it may call the lie (``plugin.query.inconsistencies``)."""

    npc: str
    player: str
    claim: str
    denial: str


class TakenBack(Event, frozen=True, kw_only=True):
    """Player ``player`` took back what NPC ``npc`` remembered of their words or claim
    (memory ``memory``, now marked ``retracted``): ``reason`` ``"corrected"`` (they owned
    up that it was not so) or ``"changed"`` (it changed since, they said). What it gave
    the NPC to believe was withdrawn first."""

    npc: str
    player: str
    memory: str
    reason: str


class SecretLearned(FactLearned, frozen=True, kw_only=True):
    """A fact tagged ``secret`` reached an NPC who did not know it."""


class MemoryMilestone(Event, frozen=True, kw_only=True):
    """NPC ``npc`` now holds ``count`` memories of ``player``, reaching ``milestone``
    (the pack's ``[knowledge] memory_milestones``; each fires once per pair)."""

    npc: str
    player: str
    milestone: int
    count: int


class FactionReputationShift(Event, frozen=True, kw_only=True):
    """The average disposition of ``faction``'s NPCs towards ``player`` moved into
    another band (``[knowledge] reputation_bands``; band 0 is the lowest)."""

    faction: str
    player: str
    old_band: int
    new_band: int
    average: float


THRESHOLD_EVENTS: dict[str, type[RelationshipThresholdCrossed]] = {
    cls.__name__: cls for cls in (Hostile, TrustedAlly, Cowed, Respected, BestFriend, Despised)
}
"""Event classes a pack threshold can name in its ``event`` field."""

__all__ = [
    "THRESHOLD_EVENTS",
    "BestFriend",
    "Cowed",
    "Despised",
    "Event",
    "ExtractionDropped",
    "FactLearned",
    "FactionReputationShift",
    "HealthChanged",
    "Hostile",
    "InconsistencyNoticed",
    "LieNoticed",
    "MemoriesExtracted",
    "MemoryMilestone",
    "RelationshipEvent",
    "RelationshipStageChanged",
    "RelationshipThresholdCrossed",
    "Respected",
    "SecretLearned",
    "SnapshotFailed",
    "StoreOwnershipLost",
    "TakenBack",
    "TrustedAlly",
]

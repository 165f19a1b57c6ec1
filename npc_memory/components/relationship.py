"""NPC → player relationships, the Relationships component."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import msgspec

from npc_memory.components.bounds import Count, Signed, Unit

Dimension = Literal["trust", "fear", "respect", "loyalty", "friendliness", "romantic_interest"]
DIMENSIONS: tuple[Dimension, ...] = (
    "trust",
    "fear",
    "respect",
    "loyalty",
    "friendliness",
    "romantic_interest",
)


class Stage(StrEnum):
    """Where a relationship stands, declared from worst to best. The positive ladder
    needs a meeting; the negative side (rival, enemy) can be reached by reputation alone."""

    ENEMY = "enemy"
    RIVAL = "rival"
    STRANGER = "stranger"
    ACQUAINTANCE = "acquaintance"
    FRIEND = "friend"
    CLOSE_FRIEND = "close_friend"
    TRUSTED_ALLY = "trusted_ally"


class Relationship(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How one NPC regards one player (frozen: a change replaces the record).

    Dimensions are in [0, 1]; ``disposition`` in [-1, 1] summarises them. Times are
    game seconds (``None`` before the first interaction). ``version`` grows by one
    on every change (optimistic concurrency). ``active_thresholds`` names the
    thresholds currently crossed, so a crossing fires its event once, also after a
    restart. ``drifted_at`` is when the record was written (game seconds): its values
    are as of then, and drift towards the faction baseline since is computed when it is
    read (``MemoryPlugin.relationship``) and applied before it next changes.
    """

    trust: Unit = 0.5
    fear: Unit = 0.0
    respect: Unit = 0.5
    loyalty: Unit = 0.5
    friendliness: Unit = 0.5
    romantic_interest: Unit = 0.0
    disposition: Signed = 0.0
    stage: Stage = Stage.STRANGER
    interaction_count: Count = 0
    first_met: float | None = None
    last_interaction: float | None = None
    version: Count = 0
    active_thresholds: tuple[str, ...] = ()
    drifted_at: float = 0.0

    def value(self, dimension: Dimension) -> float:
        """The value of one dimension."""
        value: float = getattr(self, dimension)
        return value

    @property
    def has_met(self) -> bool:
        """Whether the NPC has interacted with the player at least once."""
        return self.interaction_count > 0


class Relationships(msgspec.Struct, kw_only=True):
    """Every relationship of one NPC, by player key (read-only for the game: change
    relationships through the facade, which keeps stages, thresholds, events, faction
    standing and snapshots in step). Each record is as written, at its ``drifted_at``;
    ``MemoryPlugin.relationship`` gives it as it stands now, drift applied. The
    ``by_player`` dict of a live or stored NPC is changed in place, never replaced: a
    snapshot copies it from another thread."""

    by_player: dict[str, Relationship] = msgspec.field(default_factory=dict)

"""How NPCs regard players: changes, interactions, drift, threshold and stage events,
and each faction's standing with each player (kept incrementally, O(1) a change)."""

from __future__ import annotations

from typing import Any

from npc_memory.components import NpcHandle, PlayerHandle, Relationship
from npc_memory.components.relationship import Dimension
from npc_memory.events import (
    THRESHOLD_EVENTS,
    Event,
    FactionReputationShift,
    RelationshipStageChanged,
    RelationshipThresholdCrossed,
)
from npc_memory.rules import decay as decay_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.reputation import FactionStanding
from npc_memory.state import Part, WorldState
from npc_memory.store.documents import PlayerDocument


class RelationshipService:
    """Every write to a relationship goes through here, so the version, stage,
    thresholds, events, faction standing and the NPC's dirty mark stay in step."""

    def __init__(self, state: WorldState) -> None:
        self.state = state
        self.standing = FactionStanding(bands=list(state.pack.knowledge.reputation_bands))
        self._initial: dict[tuple[str | None, str | None], Relationship] = {}
        state.registry.listeners.append(self)

    # ------------------------------------------------------------------ registry listener

    def npc_added(self, npc: NpcHandle) -> None:
        if npc.faction.faction is not None:
            self.standing.join(npc.faction.faction, self._dispositions(npc))

    def npc_removed(self, npc: NpcHandle) -> None:
        if npc.faction.faction is not None:
            self.standing.leave(npc.faction.faction, self._dispositions(npc))

    def npc_moved(self, npc: NpcHandle, old: str | None, new: str | None) -> None:
        pass

    @staticmethod
    def _dispositions(npc: NpcHandle) -> dict[str, float]:
        return {p: r.disposition for p, r in npc.relationships.by_player.items()}

    # ------------------------------------------------------------------ reads

    def player_faction(self, player: str) -> tuple[str | None, int | None]:
        """Faction and entity of a player known live or from the store (else neither)."""
        live = self.state.registry.live_player(player)
        if live is not None:
            return live.faction.faction, live.entity
        saved = self.state.stored.get(player)
        return (saved.faction if isinstance(saved, PlayerDocument) else None), None

    def initial(self, npc_faction: str | None, player_faction: str | None) -> Relationship:
        """The starting relationship of the factions' members (cached: records are frozen)."""
        key = (npc_faction, player_faction)
        rel = self._initial.get(key)
        if rel is None:
            rel = rel_rules.initial_relationship(self.state.pack, npc_faction, player_faction)
            self._initial[key] = rel
        return rel

    def peek(self, npc: NpcHandle, player: str, player_faction: str | None) -> Relationship:
        """How ``npc`` regards ``player`` (the faction-based start without history)."""
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            rel = self.initial(npc.faction.faction, player_faction)
        return rel

    def standing_of(self, faction: str, player: str) -> float:
        """The average disposition of ``faction``'s live NPCs towards ``player``."""
        player_faction, _ = self.player_faction(player)
        initial = self.initial(faction, player_faction).disposition
        return self.standing.average(faction, player, initial)

    # ------------------------------------------------------------------ writes

    def change(self, npc: NpcHandle, player: str, deltas: dict[Dimension, float]) -> Relationship:
        """Add ``deltas`` to how ``npc`` regards ``player``; returns the new record."""
        return self._write(npc, player, deltas)

    def record_interaction(self, npc: NpcHandle, player: PlayerHandle) -> Relationship:
        """Count one interaction of ``npc`` with ``player`` (they have now met)."""
        now = self.state.clock.now
        rel = npc.relationships.by_player.get(player.identity.key)
        count = (rel.interaction_count if rel is not None else 0) + 1
        first = rel.first_met if rel is not None and rel.first_met is not None else now
        return self._write(
            npc, player.identity.key, {}, interaction_count=count, first_met=first, last_interaction=now
        )

    def forget(self, npc: NpcHandle, player: str) -> None:
        """``npc`` no longer has a relationship with ``player`` (faction standing follows)."""
        rel = npc.relationships.by_player.pop(player, None)
        if rel is None:
            return
        self.state.mark(npc.identity.key, Part.RELATIONSHIPS)
        if npc.faction.faction is not None and npc.live:
            self.standing.leave_pair(npc.faction.faction, player, rel.disposition)

    def drift(self, npc: NpcHandle, player: str) -> bool:
        """Let an idle relationship drift towards its faction baseline; whether it moved."""
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            return False
        faction, entity = self.player_faction(player)
        baseline = self.initial(npc.faction.faction, faction)
        half_life = self.state.pack.memory.relationship_half_life_days
        drifted = decay_rules.drift(rel, baseline, half_life, self.state.clock.now)
        if drifted is None:
            return False
        new, change = rel_rules.refresh(drifted, self.state.pack.relationships)
        self._store(npc, player, faction, entity, rel, new, change)
        return True

    def _write(
        self, npc: NpcHandle, player: str, deltas: dict[Dimension, float], **changes: Any
    ) -> Relationship:
        faction, entity = self.player_faction(player)
        old = npc.relationships.by_player.get(player)
        if old is None:
            start = self.initial(npc.faction.faction, faction)
            changes.setdefault("drifted_at", self.state.clock.now)
        else:
            start = old
        new, change = rel_rules.apply_deltas(start, deltas, self.state.pack.relationships, **changes)
        self._store(npc, player, faction, entity, old, new, change)
        return new

    def _store(
        self,
        npc: NpcHandle,
        player: str,
        faction: str | None,
        entity: int | None,
        old: Relationship | None,
        new: Relationship,
        change: rel_rules.RelationshipChange,
    ) -> None:
        npc.relationships.by_player[player] = new
        self.state.mark(npc.identity.key, Part.RELATIONSHIPS)
        self._announce(npc, player, entity, new, change)
        self._standing_changed(
            npc, player, faction, None if old is None else old.disposition, new.disposition
        )

    def _standing_changed(
        self, npc: NpcHandle, player: str, player_faction: str | None, old: float | None, new: float
    ) -> None:
        faction = npc.faction.faction
        if faction is None or not npc.live:
            return
        initial = self.initial(faction, player_faction).disposition
        shift = self.standing.update(faction, player, old, new, initial)
        if shift is not None:
            old_band, new_band, average = shift
            self.state.publish(
                FactionReputationShift(
                    game_time=self.state.clock.now,
                    faction=faction,
                    player=player,
                    old_band=old_band,
                    new_band=new_band,
                    average=average,
                )
            )

    def _announce(
        self,
        npc: NpcHandle,
        player: str,
        player_entity: int | None,
        rel: Relationship,
        change: rel_rules.RelationshipChange,
    ) -> None:
        assert npc.entity is not None
        common: dict[str, Any] = {
            "game_time": self.state.clock.now,
            "npc": npc.identity.key,
            "player": player,
            "npc_entity": npc.entity,
            "player_entity": player_entity,
        }
        events: list[Event] = [
            THRESHOLD_EVENTS.get(t.event or "", RelationshipThresholdCrossed)(
                threshold=t.name,
                dimension=t.dimension,
                direction=t.direction,
                limit=t.value,
                value=rel.value(t.dimension),
                **common,
            )
            for t in change.crossed
        ]
        if change.old_stage != change.new_stage:
            events.append(RelationshipStageChanged(old=change.old_stage, new=change.new_stage, **common))
        for event in events:
            self.state.publish(event)

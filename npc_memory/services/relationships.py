"""How NPCs regard players: changes, interactions, drift, threshold and stage events,
and each faction's standing with each player (kept incrementally, O(1) a change).

Drift is lazy. A stored relationship holds its values as of ``drifted_at`` (game
seconds); every read sees them drifted towards the faction baseline for the game time
since (:func:`npc_memory.rules.decay.drifted`, half-life in game days), and every
write first applies that drift, then the change. What drift alone makes happen — a
threshold crossed or rearmed, a stage left or entered, faction standing moving — is
applied (written, with its events) by DecaySystem's first visit of the NPC after the
game time it happens at (scheduled in closed form, so idle pairs are not visited in
between), or by the pair's next write, whichever comes first; reads never write. A
faction's standing follows the written dispositions, which drift keeps within
:data:`STANDING_TOLERANCE` of the drifted ones as of the last visit.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec

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

STANDING_TOLERANCE = 0.01
"""How far (in disposition) drift may take a pair from the disposition its faction's
standing counts before the pair is written again."""



class RelationshipService:
    """Every write to a relationship goes through here, so the version, stage,
    thresholds, events, faction standing and the NPC's dirty mark stay in step."""

    def __init__(self, state: WorldState) -> None:
        self.state = state
        self.standing = FactionStanding(bands=list(state.pack.knowledge.reputation_bands))
        self._initial: dict[tuple[str | None, str | None], Relationship] = {}
        self._marks = rel_rules.drift_marks(state.pack.relationships)
        self._half_life = state.pack.memory.relationship_half_life_days
        self._dues: dict[str, dict[str, float]] = {}
        """Per NPC (once known), the game time each pair's drift next needs applying."""
        self._next_due: dict[str, float] = {}
        self.crowded: OrderedDict[str, None] = OrderedDict()
        """NPCs that took on a player beyond ``players_per_npc`` (by a cheap upper
        bound), oldest first: DecaySystem visits their world pair, which holds them to
        the bound, ahead of its daily cycle and within its budget."""
        self.overfull: Callable[[NpcHandle], object] | None = None
        """Holds an NPC to ``players_per_npc`` at once (set by the service that lets
        players go): called when an NPC reaches :func:`~npc_memory.rules.decay.hard_player_bound` because more
        NPCs take on new players than DecaySystem's budget can visit."""
        state.registry.listeners.append(self)

    # ------------------------------------------------------------------ registry listener

    def npc_added(self, npc: NpcHandle) -> None:
        if npc.faction.faction is not None:
            self.standing.join(npc.faction.faction, self._dispositions(npc))
        key = npc.identity.key
        if npc.relationships.by_player:  # loaded: each pair is due once, then scheduled
            self._dues[key] = dict.fromkeys(npc.relationships.by_player, -math.inf)
            self._next_due[key] = -math.inf
        else:
            self._dues[key] = {}
            self._next_due[key] = math.inf

    def npc_removed(self, npc: NpcHandle) -> None:
        if npc.faction.faction is not None:
            self.standing.leave(npc.faction.faction, self._dispositions(npc))
        self._dues.pop(npc.identity.key, None)
        self._next_due.pop(npc.identity.key, None)
        self.crowded.pop(npc.identity.key, None)

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
        """The starting relationship of the factions' members, which is also the
        baseline drift leads back to. Cached per (NPC faction, player faction): records
        are frozen, the pack is fixed for the plugin's life, and a player or NPC of
        another faction simply finds another entry."""
        key = (npc_faction, player_faction)
        rel = self._initial.get(key)
        if rel is None:
            rel = rel_rules.initial_relationship(self.state.pack, npc_faction, player_faction)
            self._initial[key] = rel
        return rel

    def peek(self, npc: NpcHandle, player: str, player_faction: str | None) -> Relationship:
        """How ``npc`` regards ``player`` now (the faction-based start without history)."""
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            return self.initial(npc.faction.faction, player_faction)
        return self._view(npc, rel, player_faction)

    def current(self, npc: NpcHandle, player: str) -> Relationship | None:
        """How ``npc`` regards ``player`` now, drift applied (``None`` without history).
        Same ``version`` as the stored record: a read changes nothing."""
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            return None
        return self._view(npc, rel, self.player_faction(player)[0])

    def new_player(self, npc: NpcHandle, player: str) -> None:
        """``npc`` is about to take on ``player``, of whom it holds neither memories nor a
        relationship: noted in :attr:`crowded` when it may then hold more than
        ``players_per_npc``; held to it at once (:attr:`overfull`) when it would pass
        the hard bound."""
        cap = self.state.pack.memory.players_per_npc
        held = len(npc.bank.players) + len(npc.relationships.by_player) + 1
        if held <= cap:
            return
        hard = decay_rules.hard_player_bound(cap)
        if (
            self.overfull is not None
            and held > hard  # an upper bound (a player may be in both): count when it says maybe
            and len(npc.bank.players.keys() | npc.relationships.by_player.keys() | {player}) > hard
        ):
            self.overfull(npc)  # shed now: the queue is not keeping up with this NPC
            return
        self.crowded[npc.identity.key] = None

    def _view(self, npc: NpcHandle, rel: Relationship, player_faction: str | None) -> Relationship:
        now = self.state.clock.now
        if now <= decay_rules.drift_start(rel):
            return rel
        baseline = self.initial(npc.faction.faction, player_faction)
        moved = decay_rules.drifted(rel, baseline, self._half_life, now)
        if moved is rel:
            return rel
        shown, _ = rel_rules.refresh(moved, self.state.pack.relationships)
        return msgspec.structs.replace(shown, version=rel.version)

    def due(self, npc: NpcHandle) -> list[str]:
        """The players whose drift on ``npc`` is due to be applied (see :meth:`settle`):
        O(1) while none is, else O(``npc``'s scheduled pairs)."""
        key = npc.identity.key
        now = self.state.clock.now
        if self._next_due.get(key, math.inf) > now:
            return []
        dues = self._dues[key]
        ready = [player for player, at in dues.items() if at <= now]
        self._next_due[key] = min((at for at in dues.values() if at > now), default=math.inf)
        return ready

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
        self._dues.get(npc.identity.key, {}).pop(player, None)
        if player not in npc.relationships.by_player:
            return
        self.state.mark(npc.identity.key, Part.RELATIONSHIPS)  # first: see mark_relationship
        rel = npc.relationships.by_player.pop(player)
        if npc.faction.faction is not None and npc.live:
            self.standing.leave_pair(npc.faction.faction, player, rel.disposition)

    def settle(self, npc: NpcHandle, player: str) -> bool:
        """Apply the drift due on how ``npc`` regards ``player``, if due (see
        :meth:`due`): written, with its events, when it crossed or rearmed a threshold,
        changed the stage or moved disposition :data:`STANDING_TOLERANCE` from the
        written one (faction members); then the next due time is scheduled. Whether
        it wrote."""
        key = npc.identity.key
        dues = self._dues.get(key)
        now = self.state.clock.now
        if dues is None or dues.get(player, math.inf) > now:
            return False
        rel = npc.relationships.by_player.get(player)
        if rel is None:
            del dues[player]
            return False
        faction, entity = self.player_faction(player)
        baseline = self.initial(npc.faction.faction, faction)
        moved = decay_rules.drifted(rel, baseline, self._half_life, now)
        new, change = rel_rules.refresh(moved, self.state.pack.relationships)
        standing = npc.faction.faction is not None
        if (
            change.crossed
            or change.old_stage != change.new_stage
            or new.active_thresholds != rel.active_thresholds
            or (standing and abs(new.disposition - rel.disposition) >= STANDING_TOLERANCE)
        ):
            self._store(npc, player, entity, rel, new, change, baseline)
            return True
        self._schedule(npc, player, moved, baseline, rel.disposition if standing else None)
        return False

    def _schedule(
        self, npc: NpcHandle, player: str, rel: Relationship, baseline: Relationship, anchor: float | None
    ) -> None:
        """Note when ``rel``'s drift next needs applying (nothing when it never does, or
        while the NPC's pairs are not yet known)."""
        key = npc.identity.key
        dues = self._dues.get(key)
        if dues is None:
            return
        at = decay_rules.next_drift_mark(
            rel, baseline, self._half_life, self._marks, anchor, STANDING_TOLERANCE
        )
        if at == math.inf:
            dues.pop(player, None)
            return
        dues[player] = at
        if at < self._next_due.get(key, math.inf):
            self._next_due[key] = at

    def _write(
        self, npc: NpcHandle, player: str, deltas: dict[Dimension, float], **changes: Any
    ) -> Relationship:
        faction, entity = self.player_faction(player)
        old = npc.relationships.by_player.get(player)
        now = self.state.clock.now
        baseline = self.initial(npc.faction.faction, faction)
        if old is None:
            start = baseline
            if player not in npc.bank.players:  # (one it holds memories of is no new player)
                self.new_player(npc, player)
        else:  # the drift since the last write first, then the change
            start = decay_rules.drifted(old, baseline, self._half_life, now)
        changes["drifted_at"] = now
        new, change = rel_rules.apply_deltas(start, deltas, self.state.pack.relationships, **changes)
        self._store(npc, player, entity, old, new, change, baseline)
        return new

    def _store(
        self,
        npc: NpcHandle,
        player: str,
        entity: int | None,
        old: Relationship | None,
        new: Relationship,
        change: rel_rules.RelationshipChange,
        baseline: Relationship,
    ) -> None:
        """Write ``new`` (``baseline``: the pair's :meth:`initial`) with everything that
        follows it: the dirty mark, the next drift due, events, faction standing."""
        self.state.mark_relationship(npc.identity.key, player)  # first: see mark_relationship
        npc.relationships.by_player[player] = new
        standing = npc.faction.faction is not None
        self._schedule(npc, player, new, baseline, new.disposition if standing else None)
        self._announce(npc, player, entity, new, change)
        self._standing_changed(
            npc, player, None if old is None else old.disposition, new.disposition, baseline.disposition
        )

    def _standing_changed(
        self, npc: NpcHandle, player: str, old: float | None, new: float, initial: float
    ) -> None:
        faction = npc.faction.faction
        if faction is None or not npc.live:
            return
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
        if not change.crossed and change.old_stage == change.new_stage:
            return
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

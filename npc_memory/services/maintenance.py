"""Daily maintenance of NPC memory: what DecaySystem and ConsolidationSystem do to each
NPC–player pair, and the LLM summaries consolidation waits for.

The systems (``npc_memory.systems.decay``) decide when and how many pairs; this service
does the work on one pair, on the NPC's components through the other services.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import operator
from collections import Counter

from npc_memory.components import MEMORY_KINDS, NpcHandle, Scope, TriggerContext
from npc_memory.errors import MemoryCapacityError, PrivacyError
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.llm import Refusal, SummaryOutcome
from npc_memory.rules import consolidation as consolidation_rules
from npc_memory.rules import decay as decay_rules
from npc_memory.rules import privacy as privacy_rules
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.memories import MemoryService
from npc_memory.services.relationships import RelationshipService
from npc_memory.state import WorldState
from npc_memory.store import PlayerDocument

PendingSummary = tuple[str, str, consolidation_rules.Cluster, "concurrent.futures.Future[SummaryOutcome]"]
"""(NPC, player, cluster, the call in flight)."""


class MaintenanceService:
    """Decay and consolidation for one plugin. Clusters waiting for an LLM summary keep
    their episodes reserved, so later cycles neither re-cluster nor re-ask."""

    def __init__(
        self,
        state: WorldState,
        pipeline: ExtractionPipeline,
        memories: MemoryService,
        relationships: RelationshipService,
        knowledge: KnowledgeService,
    ) -> None:
        self.state = state
        self.pipeline = pipeline
        self.memories = memories
        self.relationships = relationships
        self.knowledge = knowledge
        self.templates = state.pack.memory.consolidation
        self._reserved: dict[str, set[str]] = {}
        self._summaries: list[PendingSummary] = []
        relationships.overfull = self.hold_to_player_cap

    def close(self) -> None:
        """Abandon summaries in flight (their clusters are found again next time)."""
        for *_, future in self._summaries:
            future.cancel()
        self._summaries.clear()

    def drop_player(self, player: str) -> None:
        """Abandon the summaries in flight about ``player`` (being forgotten)."""
        for npc, about, cluster, future in self._summaries:
            if about == player:
                future.cancel()
                self._release(npc, cluster)
        self._summaries = [entry for entry in self._summaries if entry[1] != player]

    def pairs_of(self, npc: str) -> list[str | None]:
        """The pairs of ``npc`` ConsolidationSystem visits: ``None`` (its world-scoped
        memories), then every player it has memories of."""
        handle = self.state.registry.live_npc(npc)
        if handle is None:
            return []
        return [None, *sorted(handle.bank.players)]

    def decay_pairs_of(self, npc: str) -> list[str | None]:
        """The pairs of ``npc`` DecaySystem visits: ``None`` (its world-scoped memories
        and knowledge), then every player it has memories of or whose relationship's
        drift is due (idle relationships are not visited: their drift is applied when
        read or written, see :class:`RelationshipService`)."""
        handle = self.state.registry.live_npc(npc)
        if handle is None:
            return []
        return [None, *sorted(set(handle.bank.players).union(self.relationships.due(handle)))]

    def decay_pair(self, npc: str, player: str | None) -> None:
        """DecaySystem's work on one pair: forget faded episodes, enforce the caps, apply
        the relationship drift that is due (player pairs), clean out expired facts and
        hold the NPC to its caps (world pair)."""
        handle = self.state.registry.live_npc(npc)
        if handle is None:
            return
        now, rules = self.state.clock.now, self.state.pack.memory
        changed = False
        pair = handle.bank.pair(player)
        retention = self.state.pack.privacy.retention_days
        if retention:
            changed |= self._enforce_retention(handle, player, retention, now)
        if pair is not None:
            changed |= bool(decay_rules.forget_faded(pair, rules, now))
            changed |= bool(decay_rules.enforce_caps(pair, rules, now))
        if player is None:
            self.knowledge.forget_expired(handle)
            changed |= bool(decay_rules.over_npc_cap(handle.bank, rules, now))
            changed |= self.hold_to_player_cap(handle)
        else:
            self.relationships.settle(handle, player)
        if changed:
            self.state.mark(npc)

    def _enforce_retention(
        self, handle: NpcHandle, player: str | None, retention: dict[Scope, float], now: float
    ) -> bool:
        """Remove the pair's memories (and, for the world pair, the NPC's facts) older
        than their scope's retention; whether any went."""
        changed = False
        cutoffs = privacy_rules.retention_cutoffs(retention, now)
        latest = max(cutoffs.values())  # nothing made at or after it is past any limit
        never = float("-inf")
        created = operator.attrgetter("created")
        pair = handle.bank.pair(player)
        if pair is not None:
            for kind in MEMORY_KINDS:
                records = getattr(pair, kind)
                if records and min(map(created, records)) < latest and any(
                    m.created < cutoffs.get(m.scope, never) for m in records
                ):
                    setattr(pair, kind, [m for m in records if m.created >= cutoffs.get(m.scope, never)])
                    changed = True
        if player is None:
            facts = handle.knowledge.facts
            scope = privacy_rules.fact_scope
            if facts and min(map(created, facts)) < latest and any(
                f.created < cutoffs.get(scope(f), never) for f in facts
            ):
                kept = [f for f in facts if f.created >= cutoffs.get(scope(f), never)]
                self.knowledge.replace_facts(handle, kept)
                changed = True
        return changed

    def hold_to_player_cap(self, npc: NpcHandle) -> bool:
        """Past ``players_per_npc``, ``npc`` lets go of the players it dealt with
        longest ago, down to 90 % of it; whether any went."""
        gone = decay_rules.players_to_forget(npc.bank, npc.relationships, self.state.pack.memory)
        for player in gone:
            self.forget_player_of(npc, player)
        return bool(gone)

    def forget_player_of(self, npc: NpcHandle, player: str) -> None:
        """``npc`` lets go of ``player``: the relationship, unlocked memories, the
        conversation summaries and the count of conversations (an open conversation
        stays until it ends, and its count with it)."""
        self.relationships.forget(npc, player)
        pair = npc.bank.players.get(player)
        if pair is not None:
            pair.episodic[:] = [m for m in pair.episodic if m.locked]
            pair.semantic[:] = [m for m in pair.semantic if m.locked]
            pair.procedural[:] = [m for m in pair.procedural if m.locked]
            if not len(pair):
                del npc.bank.players[player]
        npc.bank.milestones.pop(player, None)
        npc.working.recent.pop(player, None)
        if player not in npc.working.open:
            npc.working.conversations.pop(player, None)
        self.state.mark(npc.identity.key)

    def consolidate_pair(self, npc: str, player: str | None) -> None:
        """ConsolidationSystem's work on one pair: each cluster of old episodes sharing
        a tag becomes a semantic memory (and a habit when they keep to one time of day);
        unlocked source episodes are removed, locked ones kept. With an LLM configured
        the summary is asked of it (same budgets and breaker as extraction) and applied
        when it arrives; the rules summarise otherwise and on any failure."""
        handle = self.state.registry.live_npc(npc) if player is not None else None
        if handle is None or player is None:
            return
        pair = handle.bank.pair(player)
        if pair is None:
            return
        reserved = self._reserved.get(npc, set())
        name = self.player_name(player)
        ready = consolidation_rules.clusters(
            pair, self.state.pack.memory, self.state.clock.now, exclude=reserved, player=player
        )
        for cluster in ready:
            if not self._ask_for_summary(handle, player, cluster):
                summary = consolidation_rules.summary(cluster, name, self.templates)
                self._apply_cluster(handle, player, cluster, summary)

    def player_name(self, player: str) -> str:
        """The display name of a live or stored player (else its key)."""
        live = self.state.registry.live_player(player)
        if live is not None:
            return live.identity.name
        saved = self.state.stored.get(player)
        return saved.name if isinstance(saved, PlayerDocument) else player

    def _ask_for_summary(self, handle: NpcHandle, player: str, cluster: consolidation_rules.Cluster) -> bool:
        gateway = self.pipeline.gateway
        if gateway is None:
            return False
        npc = handle.identity.key
        contents = [m.content for m in cluster.episodes]
        submitted = gateway.submit_summary(
            npc, handle.identity.name, self.player_name(player), cluster.tag, contents
        )
        if isinstance(submitted, Refusal):
            self._count_fallback(submitted.reason)
            return False
        self._reserved.setdefault(npc, set()).update(m.id for m in cluster.episodes)
        self._summaries.append((npc, player, cluster, submitted))
        return True

    def _release(self, npc: str, cluster: consolidation_rules.Cluster) -> None:
        """The episodes of ``cluster`` are no longer waiting for a summary (an NPC with
        none waiting has no entry: the table holds only what is in flight)."""
        reserved = self._reserved.get(npc)
        if reserved is not None:
            reserved.difference_update(m.id for m in cluster.episodes)
            if not reserved:
                del self._reserved[npc]

    def _count_fallback(self, reason: str | None) -> None:
        fallbacks = self.pipeline.stats.fallbacks
        key = f"consolidation fallback: {reason}"
        fallbacks[key] = fallbacks.get(key, 0) + 1

    def poll_summaries(self) -> None:
        """Apply the LLM summaries that arrived (the gateway has settled their cost);
        a failed one is worded by the rules."""
        if not self._summaries:
            return
        waiting = []
        for npc, player, cluster, future in self._summaries:
            if not future.done():
                waiting.append((npc, player, cluster, future))
                continue
            try:
                outcome = future.result()
            except BaseException as exc:  # a cancelled or crashed call is a failed call
                outcome = SummaryOutcome(None, None, f"llm error: {type(exc).__name__}")
            text = outcome.text
            if text is None:
                self._count_fallback(outcome.failure)
                text = consolidation_rules.summary(cluster, self.player_name(player), self.templates)
            self._release(npc, cluster)
            live = self.state.registry.live_npc(npc)
            if live is not None:
                self._apply_cluster(live, player, cluster, text)
        self._summaries = waiting

    def _apply_cluster(
        self, handle: NpcHandle, player: str, cluster: consolidation_rules.Cluster, content: str
    ) -> None:
        pair = handle.bank.pair(player)
        held = {m.id for m in pair.episodic} if pair is not None else set()
        episodes = [m for m in cluster.episodes if m.id in held]
        if pair is None or len(episodes) < self.state.pack.memory.consolidate_min:
            return  # forgotten or evicted while the summary was being written
        importance = max(m.importance for m in episodes)
        scope = episodes[0].scope
        actor = Counter(m.actor for m in episodes).most_common(1)[0][0]
        source = Counter(m.source for m in episodes).most_common(1)[0][0]
        try:
            self.memories.remember(
                handle,
                player,
                content,
                kind="semantic",
                tags=(cluster.tag,),
                importance=importance,
                confidence=consolidation_rules.confidence(cluster),
                valence=Counter(m.valence for m in episodes).most_common(1)[0][0],
                source_episodes=tuple(m.id for m in episodes),
                scope=scope,
                actor=actor,
                source=source,
            )
        except (MemoryCapacityError, PrivacyError):
            return  # nothing stored: the episodes stay for a later cycle
        pattern = consolidation_rules.habit(cluster, self.player_name(player), self.templates)
        if pattern is not None:
            # The summary is stored: the episodes are consolidated whether or not the habit fits.
            with contextlib.suppress(MemoryCapacityError, PrivacyError):
                self.memories.remember(
                    handle,
                    player,
                    pattern,
                    kind="procedural",
                    tags=(cluster.tag,),
                    importance=importance,
                    trigger=TriggerContext(time_of_day=cluster.habit_time),
                    scope=scope,
                    actor=actor,
                    source=source,
                )
        consolidated = {m.id for m in episodes if not m.locked}
        pair.episodic[:] = [m for m in pair.episodic if m.id not in consolidated]

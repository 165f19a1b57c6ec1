"""Daily maintenance of NPC memory: what DecaySystem and ConsolidationSystem do to each
NPC–player pair, and the LLM summaries consolidation waits for.

The systems (``npc_memory.systems.decay``) decide when and how many pairs; this service
does the work on one pair, through the plugin's facade and components.
"""

from __future__ import annotations

import concurrent.futures
from collections import Counter
from typing import TYPE_CHECKING

from npc_memory.components import TriggerContext
from npc_memory.errors import MemoryCapacityError, PrivacyError, UnknownEntityError
from npc_memory.extraction.model import SummaryOutcome
from npc_memory.rules import consolidation as consolidation_rules
from npc_memory.rules import decay as decay_rules
from npc_memory.rules import knowledge as knowledge_rules
from npc_memory.rules import relationships as rel_rules

if TYPE_CHECKING:
    from npc_memory.plugin import MemoryPlugin, NpcHandle

PendingSummary = tuple[
    str, str, consolidation_rules.Cluster, int, "concurrent.futures.Future[SummaryOutcome]"
]
"""(NPC, player, cluster, reserved tokens, the call in flight)."""


class Maintenance:
    """Decay and consolidation for one plugin. Clusters waiting for an LLM summary keep
    their episodes reserved, so later cycles neither re-cluster nor re-ask."""

    def __init__(self, plugin: MemoryPlugin) -> None:
        self.plugin = plugin
        self._reserved: dict[str, set[str]] = {}
        self._summaries: list[PendingSummary] = []

    def close(self) -> None:
        """Abandon summaries in flight (their clusters are found again next time)."""
        for *_, future in self._summaries:
            future.cancel()
        self._summaries.clear()

    def pairs_of(self, npc: str) -> list[str | None]:
        """The pairs of ``npc`` maintenance visits: ``None`` (its world-scoped memories and
        knowledge), then every player it has memories of or a relationship with."""
        entity = self.plugin._entities_by_key.get(npc)
        if entity not in self.plugin._npcs:
            return []
        handle = self.plugin._npcs[entity]
        players = set(handle.bank.players) | set(handle.relationships.by_player)
        return [None, *sorted(players)]

    def decay_pair(self, npc: str, player: str | None) -> None:
        """DecaySystem's work on one pair: forget faded episodes, enforce the caps, let
        the relationship drift (player pairs), clean out expired facts (world pair)."""
        entity = self.plugin._entities_by_key.get(npc)
        if entity not in self.plugin._npcs:
            return
        handle = self.plugin._npcs[entity]
        now, rules = self.plugin.clock.now, self.plugin.pack.memory
        changed = False
        pair = handle.bank.pair(player)
        if pair is not None:
            changed |= bool(decay_rules.forget_faded(pair, rules, now))
            changed |= bool(decay_rules.enforce_caps(pair, rules, now))
        if player is None:
            kept = [f for f in handle.knowledge.facts if not knowledge_rules.is_expired(f, now)]
            if len(kept) != len(handle.knowledge.facts):
                handle.knowledge.facts[:] = kept
                index = knowledge_rules.FactIndex(handle.knowledge, self.plugin.pack.knowledge, now)
                self.plugin._facts[npc] = index
                self.plugin._board.touch(handle.location.room)
                changed = True
        else:
            rel = handle.relationships.by_player.get(player)
            if rel is not None:
                faction, entity_of_player = self.plugin._player_ref(player)
                baseline = rel_rules.initial_relationship(self.plugin.pack, handle.faction.faction, faction)
                before = rel.disposition
                if decay_rules.drift(rel, baseline, rules.relationship_half_life_days, now):
                    change = rel_rules.refresh(rel, self.plugin.pack.relationships)
                    self.plugin._publish_change(handle, player, entity_of_player, rel, change)
                    self.plugin._standing_changed(handle, player, faction, before, rel.disposition)
                changed = True
        if changed:
            self.plugin._mark(npc)

    def consolidate_pair(self, npc: str, player: str | None) -> None:
        """ConsolidationSystem's work on one pair: each cluster of old episodes sharing
        a tag becomes a semantic memory (and a habit when they keep to one time of day);
        unlocked source episodes are removed, locked ones kept. With an LLM configured
        the summary is asked of it (same budgets and breaker as extraction) and applied
        when it arrives; the rules summarise otherwise and on any failure."""
        entity = self.plugin._entities_by_key.get(npc)
        if player is None or entity not in self.plugin._npcs:
            return
        handle = self.plugin._npcs[entity]
        pair = handle.bank.pair(player)
        if pair is None:
            return
        reserved = self._reserved.setdefault(npc, set())
        plugin = self.plugin
        name = plugin._player_name(player)
        ready = consolidation_rules.clusters(pair, plugin.pack.memory, plugin.clock.now, exclude=reserved)
        for cluster in ready:
            if not self._ask_for_summary(handle, player, cluster):
                self._apply_cluster(handle, player, cluster, consolidation_rules.summary(cluster, name))

    def _ask_for_summary(self, handle: NpcHandle, player: str, cluster: consolidation_rules.Cluster) -> bool:
        pipeline = self.plugin.extraction
        worker = pipeline.worker
        if worker is None:
            return False
        contents = [m.content for m in cluster.episodes]
        request = worker.extractor.summary_request(
            handle.identity.name, self.plugin._player_name(player), cluster.tag, contents, worker.max_tokens
        )
        estimate = len(str(request["messages"][0]["content"])) // 3 + 400
        npc = handle.identity.key
        refusal = pipeline.limiter.check(npc, estimate)
        if refusal is None and not pipeline.breaker.allow():
            refusal = "circuit open"
        if refusal is not None:
            reason = f"consolidation fallback: {refusal}"
            pipeline.stats.fallbacks[reason] = pipeline.stats.fallbacks.get(reason, 0) + 1
            return False
        pipeline.limiter.reserve(npc, estimate)
        pipeline.stats.llm_calls += 1
        self._reserved.setdefault(npc, set()).update(m.id for m in cluster.episodes)
        self._summaries.append((npc, player, cluster, estimate, worker.submit_summary(request)))
        return True

    def poll_summaries(self) -> None:
        if not self._summaries:
            return
        pipeline = self.plugin.extraction
        waiting = []
        for npc, player, cluster, estimate, future in self._summaries:
            if not future.done():
                waiting.append((npc, player, cluster, estimate, future))
                continue
            try:
                outcome = future.result()
            except BaseException as exc:  # a cancelled or crashed call is a failed call
                outcome = SummaryOutcome(None, None, f"llm error: {type(exc).__name__}")
            assert pipeline.worker is not None
            cost = pipeline.worker.extractor.price.cost(outcome.usage) if outcome.usage else 0.0
            pipeline.limiter.settle(npc, estimate, outcome.usage, cost)
            pipeline.stats.tokens += outcome.usage.total if outcome.usage else 0
            pipeline.stats.cost_usd += cost
            text = outcome.text
            if text is not None:
                pipeline.breaker.record_success()
            else:
                pipeline.breaker.record_failure()
                pipeline.stats.llm_failures += 1
                reason = f"consolidation fallback: {outcome.failure}"
                pipeline.stats.fallbacks[reason] = pipeline.stats.fallbacks.get(reason, 0) + 1
                text = consolidation_rules.summary(cluster, self.plugin._player_name(player))
            self._reserved.get(npc, set()).difference_update(m.id for m in cluster.episodes)
            entity = self.plugin._entities_by_key.get(npc)
            if entity in self.plugin._npcs:
                self._apply_cluster(self.plugin._npcs[entity], player, cluster, text)
        self._summaries = waiting

    def _apply_cluster(
        self, handle: NpcHandle, player: str, cluster: consolidation_rules.Cluster, content: str
    ) -> None:
        pair = handle.bank.pair(player)
        held = {m.id for m in pair.episodic} if pair is not None else set()
        episodes = [m for m in cluster.episodes if m.id in held]
        if pair is None or len(episodes) < self.plugin.pack.memory.consolidate_min:
            return  # forgotten or evicted while the summary was being written
        importance = max(m.importance for m in episodes)
        try:
            self.plugin.remember(
                handle.entity,
                player,
                content,
                kind="semantic",
                tags=(cluster.tag,),
                importance=importance,
                confidence=consolidation_rules.confidence(cluster),
                valence=Counter(m.valence for m in episodes).most_common(1)[0][0],
                source_episodes=[m.id for m in episodes],
                scope=episodes[0].scope,
            )
            pattern = consolidation_rules.habit(cluster, self.plugin._player_name(player))
            if pattern is not None:
                self.plugin.remember(
                    handle.entity,
                    player,
                    pattern,
                    kind="procedural",
                    tags=(cluster.tag,),
                    importance=importance,
                    trigger=TriggerContext(time_of_day=cluster.habit_time),
                    scope=episodes[0].scope,
                )
        except (MemoryCapacityError, UnknownEntityError, PrivacyError):
            return
        consolidated = {m.id for m in episodes if not m.locked}
        pair.episodic[:] = [m for m in pair.episodic if m.id not in consolidated]

"""Hot paths of the memory bank, relationships and queries, on a pair at the caps."""

from __future__ import annotations

import itertools

import npc_memory
from npc_memory.rules.memory import rank_by_salience


def test_remember_at_the_cap_with_eviction(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    counter = itertools.count()

    def remember() -> None:
        plugin.remember("hilda", "alice", f"new event {next(counter)}", tags=["trade"], importance=0.7)

    benchmark(remember)
    assert len(plugin.memories("hilda", "alice", kind="episodic")) == plugin.pack.memory.episodic_cap


def test_rank_a_full_pair_by_salience(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    records = plugin.npc("hilda").bank.players["alice"].all()
    ranked = benchmark(rank_by_salience, records, plugin.clock.now)
    caps = plugin.pack.memory
    assert len(ranked) == caps.episodic_cap + caps.semantic_cap + caps.procedural_cap


def test_adjust_relationship(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    signs = itertools.cycle([1.0, -1.0])

    def adjust() -> None:
        plugin.adjust_relationship("hilda", "alice", trust=0.01 * next(signs), friendliness=0.005)

    benchmark(adjust)


def test_query_trust(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    plugin.record_interaction("hilda", "alice")
    assert 0.0 <= benchmark(plugin.query.trust, "hilda", "alice") <= 1.0


def test_query_has_memory_matching(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    benchmark(plugin.query.has_memory_matching, "hilda", "alice", ["quest", "family"], 0.99)


def test_query_count_memories_by_tag(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    assert benchmark(plugin.query.count_memories_by_tag, "hilda", "alice", "trade") > 0

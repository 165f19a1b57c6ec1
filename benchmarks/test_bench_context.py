"""The read path at the caps: recall and context for a pair holding as many memories as
the bundled pack's caps allow (300 episodic, 100 semantic, 20 procedural), with 500
facts; p50 and p99 per call."""

from __future__ import annotations

import statistics
from typing import Any

import npc_memory


def percentiles(benchmark: Any) -> None:
    if not benchmark.disabled:
        data = sorted(t * 1e6 for t in benchmark.stats.stats.data)
        benchmark.extra_info["p50_us"] = round(statistics.median(data), 1)
        benchmark.extra_info["p99_us"] = round(data[max(0, int(len(data) * 0.99) - 1)], 1)


def with_facts(plugin: npc_memory.MemoryPlugin) -> npc_memory.MemoryPlugin:
    for i in range(500):
        plugin.learn_fact("hilda", f"rumour {i} about the {['mill', 'forge', 'road', 'tower'][i % 4]} and bandits",
                          topic=f"t{i}", subject="alice" if i % 5 == 0 else None,
                          importance=(i % 10) / 10, confidence=0.3 + (i % 7) / 10)
    return plugin


def test_recall_at_the_caps(benchmark: Any, full_pair: npc_memory.MemoryPlugin) -> None:
    plugin = with_facts(full_pair)
    result = benchmark.pedantic(
        plugin.recall, args=("hilda", "alice", "the trade at the market with the family"),
        kwargs={"k": 8}, rounds=500 if not benchmark.disabled else 2, iterations=1,
    )
    assert len(result) == 8
    percentiles(benchmark)


def test_context_at_the_caps(benchmark: Any, full_pair: npc_memory.MemoryPlugin) -> None:
    plugin = with_facts(full_pair)
    context = benchmark.pedantic(
        plugin.context, args=("hilda", "alice", "Do you remember the quest with the bandits?"),
        kwargs={"max_tokens": 1000}, rounds=500 if not benchmark.disabled else 2, iterations=1,
    )
    assert 0 < context.tokens <= 1000
    percentiles(benchmark)

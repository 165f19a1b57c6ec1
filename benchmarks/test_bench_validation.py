"""The largest calls the pack's [limits] let through, on a pair at the caps: what the
limits bound (a memory with a million tags or a 10 MB query is refused before any work)."""

from __future__ import annotations

import contextlib
import itertools

import npc_memory


def test_remember_with_the_most_tags_and_content_allowed(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    limits = plugin.pack.limits
    tags = [f"{i:02d}" + "t" * (limits.tag_chars - 2) for i in range(limits.tags_per_memory)]
    counter = itertools.count()

    def remember() -> None:
        text = f"{next(counter)} " + "x" * (limits.content_chars - 10)
        plugin.remember("hilda", "alice", text, tags=tags, importance=0.7)

    benchmark(remember)
    assert len(plugin.memories("hilda", "alice", kind="episodic")) == plugin.pack.memory.episodic_cap


def test_recall_with_the_longest_query_allowed(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    words = itertools.cycle(["trade", "sword", "bandits", "family", "gift", "quest", "the", "weapons"])
    query = ""
    while len(query) < plugin.pack.limits.query_chars - 10:
        query += next(words) + " "
    recalled = benchmark(plugin.recall, "hilda", "alice", query, k=8, strengthen=False)
    assert len(recalled) == 8


def test_a_refused_call_costs_no_more_than_its_check(benchmark, full_pair: npc_memory.MemoryPlugin) -> None:  # type: ignore[no-untyped-def]
    plugin = full_pair
    huge = "x" * 10_000_000

    def refused() -> None:
        with contextlib.suppress(npc_memory.InvalidArgumentError):
            plugin.recall("hilda", "alice", huge)

    benchmark(refused)

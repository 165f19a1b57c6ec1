"""Health and metrics: what timing every system costs a tick, what ``metrics()`` costs
at 1,000 NPCs, and what the load-time value checks add to a cold load of 1M memories."""

from __future__ import annotations

from typing import Any

import pytest

import npc_memory
from npc_memory.services.health import HealthService
from npc_memory.store.checks import document_problems
from npc_memory.store.documents import NpcDocument
from npc_memory.window import SampleWindow

from .test_bench_store import npc_document


def test_sample_window_add(benchmark: Any) -> None:
    """One tick-time sample into a full 600-sample window."""
    window = SampleWindow(600, limit=0.0003)
    for i in range(600):
        window.add(i * 1e-6)
    benchmark(window.add, 0.0002)
    assert window.count == 600


@pytest.mark.parametrize("timed", [False, True])
def test_a_system_call_with_and_without_timing(benchmark: Any, timed: bool, cleanup: None) -> None:
    """A near-empty system's process call, bare and wrapped by the health timer: the
    difference is what timing costs each system each tick."""
    plugin = npc_memory.install(world="bench")

    def process(*args: Any) -> None:
        return None

    health: HealthService = plugin._health
    call = health.timed("bench", process, 0.1) if timed else process
    benchmark(call, 1.0)


def test_metrics_at_1000_npcs(benchmark: Any, cleanup: None) -> None:
    """``plugin.metrics()`` on a world of 1,000 NPCs (10 memories and a relationship each)
    and 100 players: the on-demand walk that counts memories, facts and relationships."""
    plugin = npc_memory.install(world="bench", seed=1)
    for p in range(100):
        plugin.add_player(key=f"p{p}")
    for n in range(1000):
        plugin.add_npc(key=f"n{n}")
        for m in range(10):
            plugin.remember(f"n{n}", f"p{(n + m) % 100}", f"memory {m}")
    metrics = benchmark(plugin.metrics)
    assert metrics["counts"]["npcs"] == 1000 and metrics["counts"]["memories"] == 10_000


def test_value_checks_of_1m_memories(benchmark: Any, million: list[NpcDocument]) -> None:
    """The id checks a load runs over every document after decoding (ranges are checked
    by the decode itself), for 1,000 NPCs × 1,000 memories."""
    problems = benchmark.pedantic(lambda: [document_problems(d) for d in million], rounds=3, iterations=1)
    assert not any(problems)


@pytest.fixture(scope="module")
def million(request: pytest.FixtureRequest) -> list[NpcDocument]:
    disabled = request.config.getoption("benchmark_disable")
    return [npc_document(i, players=20, memories=50) for i in range(20 if disabled else 1_000)]

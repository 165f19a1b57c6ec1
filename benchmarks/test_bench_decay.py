"""DecaySystem: the tick cost must not grow with the number of memories in the world
(each tick handles ``decay_pairs_per_tick`` pairs); and how long a full cycle takes."""

from __future__ import annotations

from typing import Any

import esper
import pytest

import npc_memory
from npc_memory.components import EpisodicMemory, PairMemories
from npc_memory.systems.decay import DecaySystem


def world(npcs: int, players: int = 20, memories: int = 50) -> npc_memory.MemoryPlugin:
    """``npcs`` NPCs, each holding ``memories`` episodes about each of ``players`` players."""
    plugin = npc_memory.install(world="bench", time_scale=60.0)
    for i in range(npcs):
        handle = plugin.npc(plugin.add_npc(key=f"n{i:05d}"))
        for p in range(players):
            handle.bank.players[f"p{p:02d}"] = PairMemories(episodic=[
                EpisodicMemory(id=f"m{p}-{m}", content=f"memory {m}", tags=("trade",),
                               importance=0.2 + (m % 8) / 10, created=0.0, last_accessed=-m * 3600.0)
                for m in range(memories)
            ])
    plugin.clock.advance(3 * 86_400)
    return plugin


def decay_system() -> DecaySystem:
    esper.switch_world("bench")
    processor = esper.get_processor(DecaySystem)
    assert isinstance(processor, DecaySystem)
    return processor


@pytest.mark.parametrize("npcs", [100, 1_000])
def test_decay_tick(benchmark: Any, npcs: int, cleanup: None) -> None:
    """One tick: 50 pairs of 50 memories each, in a world of 100,000 or 1,000,000 memories."""
    plugin = world(npcs if not benchmark.disabled else 10)
    system = decay_system()

    def ensure_cycle() -> None:
        if not system.cursor.active:
            system.cursor.start(plugin.clock.now)

    benchmark.pedantic(system.process, setup=ensure_cycle, rounds=300 if not benchmark.disabled else 3, iterations=1)
    total = sum(len(p) for key in plugin.npcs() for p in plugin.npc(key).bank.players.values())
    assert total > 0


def test_full_decay_cycle_in_ticks(benchmark: Any, cleanup: None) -> None:
    """Ticks (and wall time) for one whole cycle over 1,000 NPCs × 21 pairs at the
    default budgets: at most 50 pairs and 0.15 ms per tick (at least one pair)."""
    plugin = world(1_000 if not benchmark.disabled else 10)
    system = decay_system()

    def cycle() -> int:
        system.cursor.start(plugin.clock.now)
        ticks = 0
        while system.cursor.active:
            system.process()
            ticks += 1
        return ticks

    ticks = benchmark.pedantic(cycle, rounds=1 if benchmark.disabled else 3, iterations=1)
    pairs = len(plugin.npcs()) * 21
    assert pairs // plugin.pack.budgets.decay_pairs_per_tick <= ticks <= pairs  # the time budget decides
    benchmark.extra_info["ticks_per_cycle"] = ticks

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


def related_world(npcs: int, players: int = 20) -> npc_memory.MemoryPlugin:
    """``npcs`` NPCs, each with a relationship (and no memories) with each of ``players``
    players: half of them warm friends drifting back, half barely changed and idle."""
    plugin = npc_memory.install(world="bench", time_scale=60.0, deterministic=True)
    for p in range(players):
        plugin.add_player(key=f"p{p:02d}", faction="adventurers")
    for i in range(npcs):
        npc = plugin.add_npc(key=f"n{i:05d}", archetype="blacksmith")
        for p in range(players):
            if p % 2:
                plugin.adjust_relationship(npc, f"p{p:02d}", trust=0.004)
            else:
                plugin.adjust_relationship(npc, f"p{p:02d}", trust=0.25, friendliness=0.25)
    return plugin


def test_decay_cycles_visit_only_pairs_with_drift_due(benchmark: Any, cleanup: None) -> None:
    """Pairs DecaySystem visits per daily cycle over 60 game days for 1,000 NPCs × 20
    relationship-only pairs (the daily stepwise drift visited all 21,000 every cycle)."""
    npcs = 1_000 if not benchmark.disabled else 20
    plugin = related_world(npcs)
    system = decay_system()

    def sixty_days() -> list[int]:
        visits = []
        for _ in range(60):
            plugin.clock.advance(86_400.0)
            before = system.cursor.visits
            system.cursor.start(plugin.clock.now)
            while system.cursor.active:
                system.process()
            visits.append(system.cursor.visits - before)
        return visits

    visits = benchmark.pedantic(sixty_days, rounds=1, iterations=1)
    assert all(v >= npcs for v in visits)  # the world pairs, at least
    assert sum(visits) < 60 * npcs * 21 / 3
    benchmark.extra_info["visits_per_cycle"] = visits

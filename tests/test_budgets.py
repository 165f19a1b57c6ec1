"""Per-tick budgets: each system stops at its count cap or its time budget (ms),
whichever comes first, always makes progress, and resumes where it stopped;
``deterministic=True`` keeps the count caps only."""

from __future__ import annotations

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.systems.decay import DecaySystem
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick

HOUR = 3600.0


def pack_with(**budgets: float) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(budgets)
    return validate_pack(data)


def decay_of(plugin: npc_memory.MemoryPlugin) -> DecaySystem:
    return next(p for p in plugin.processors if isinstance(p, DecaySystem))


def test_a_time_budget_smaller_than_one_pair_still_does_one_pair_per_tick() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(decay_tick_ms=0.000001), time_scale=HOUR)
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 1)  # the cycle starts and visits one pair: the budget is spent at once
    assert decay_of(plugin).cursor.active
    tick("b", 3)  # four world pairs, one a tick
    assert decay_of(plugin).cursor.cycles == 1


def test_deterministic_keeps_the_count_caps_only() -> None:
    plugin = npc_memory.install(
        world="b", pack=pack_with(decay_tick_ms=0.000001), time_scale=HOUR, deterministic=True
    )
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 1)  # 50 pairs allowed by count: the whole cycle in one tick, time budget ignored
    assert decay_of(plugin).cursor.cycles == 1
    assert next(p for p in plugin.processors if isinstance(p, GossipSystem)).budget_ms == float("inf")


def test_rooms_left_by_the_gossip_time_budget_are_rebuilt_on_later_ticks() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(gossip_tick_ms=0.000001))
    for i in range(6):
        plugin.add_npc(key=f"n{i}", room=f"room{i // 2}")
        plugin.learn_fact(f"n{i}", f"news {i}", topic=f"t{i}", importance=0.9)
    board = next(p for p in plugin.processors if isinstance(p, GossipSystem)).board
    assert len(board.dirty) == 3 and board.rebuilds == 0
    tick("b", 1)
    assert board.rebuilds == 1  # one room a tick within a budget smaller than one room
    tick("b", 2)
    assert board.rebuilds == 3 and len(board.active) == 3  # the others on later ticks

"""Per-tick budgets: each system stops at its count cap or its time budget (ms),
whichever comes first, always makes progress, and resumes where it stopped;
``deterministic=True`` keeps the count caps only."""

from __future__ import annotations

import time

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.state import world_context
from npc_memory.systems.decay import DecaySystem
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick

HOUR = 3600.0


def pack_with(**budgets: float) -> npc_memory.Pack:
    """The village pack with ``budgets``; the tick's shared budget is generous unless
    given, so a slow tick on a busy machine never skips the system under test."""
    data = load_pack("village").model_dump()
    data["budgets"].update({"tick_ms": 1000.0, **budgets})
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
    assert next(p for p in plugin.processors if isinstance(p, GossipSystem)).share.own_ms == float("inf")
    assert plugin._state.tick.total_ms == float("inf")


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


def test_a_spent_tick_budget_skips_a_system_at_most_four_ticks_in_a_row() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(tick_ms=0.000001), time_scale=HOUR)
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 19)  # the tick's budget is spent before any system starts: one pair every 5th tick
    assert decay_of(plugin).cursor.active and decay_of(plugin).cursor.cycles == 0
    tick("b", 1)  # the fourth pair, on the 20th tick
    assert decay_of(plugin).cursor.cycles == 1


def test_the_tick_is_marked_running_from_the_clock_to_the_event_system() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(tick_ms=0.5), priority=0)
    seen: list[tuple[bool, float]] = []

    class Probe(esper.Processor):
        def process(self, *args: object, **kwargs: object) -> None:
            budget = plugin._state.tick
            seen.append((budget.idle.is_set(), budget.left - (time.perf_counter() - budget.charged_to)))

    with world_context("b"):
        esper.add_processor(Probe(), priority=40)  # between extraction and gossip
    assert plugin._state.tick.idle.is_set()  # no tick yet: the store's writer may work
    tick("b", 1)
    assert len(seen) == 1 and seen[0][0] is False  # inside the plugin's tick
    assert 0.0 < seen[0][1] < 0.0005  # what is left of the tick's 0.5 ms after extraction
    assert plugin._state.tick.idle.is_set()  # closed again by EventSystem

"""Gossip: the tick cost must not grow with the world (O(budget)); the board rebuild
is the only part proportional to what changed."""

from __future__ import annotations

from typing import Any

import esper
import pytest

import npc_memory
from npc_memory.content import validate_pack
from npc_memory.systems.gossip import GossipSystem

ARCHETYPES = ["innkeeper", "bard", "guard", "merchant", "farmer", "priest", "blacksmith", "healer"]



def gossiping_world(npcs: int) -> npc_memory.MemoryPlugin:
    """``npcs`` NPCs, ten to a room, each with a piece of news of its own to spread."""
    plugin = npc_memory.install(world="bench", seed=5)
    for i in range(npcs):
        key = f"n{i:05d}"
        plugin.add_npc(key=key, archetype=ARCHETYPES[i % len(ARCHETYPES)], room=f"room{i // 10}")
        plugin.learn_fact(key, f"news of {key}", topic=key, importance=0.8)
    return plugin


def gossip_system() -> GossipSystem:
    processor = esper.get_processor(GossipSystem)
    assert isinstance(processor, GossipSystem)
    return processor


@pytest.mark.parametrize("npcs", [100, 1_000, 10_000])
def test_gossip_tick(benchmark: Any, npcs: int, cleanup: None) -> None:
    gossiping_world(npcs if not benchmark.disabled else 100)
    esper.switch_world("bench")
    system = gossip_system()
    system.board.refresh()
    benchmark.pedantic(system.process, rounds=500 if not benchmark.disabled else 3, iterations=1)
    assert system.exchanges > 0


def test_board_rebuild_10k(benchmark: Any, cleanup: None) -> None:
    gossiping_world(10_000 if not benchmark.disabled else 100)
    esper.switch_world("bench")
    board = gossip_system().board

    def rebuild_everything() -> None:
        board.dirty.update(dict.fromkeys(board.members))
        board.refresh()

    benchmark.pedantic(rebuild_everything, rounds=10 if not benchmark.disabled else 1, iterations=1)
    assert len(board.active) == len(board.members)


@pytest.mark.parametrize("fact_cap", [20, 500])
def test_observe_in_a_crowded_room_at_the_caps(benchmark: Any, fact_cap: int, cleanup: None) -> None:
    """One ``observe`` about a player (and the tick after it) with 100 witnesses, each at
    its fact cap and its player cap (20), so every call evicts facts and lets players go."""
    data = npc_memory.load_pack("village").model_dump()
    data["knowledge"].update(cap=fact_cap, cap_slack=0.1)
    data["memory"]["players_per_npc"] = 20
    plugin = npc_memory.install(world="bench", pack=validate_pack(data), seed=1, time_scale=60.0)
    for i in range(100):
        plugin.add_npc(key=f"n{i}", room="square")
    for j in range(1000):
        plugin.add_player(key=f"p{j}", room="elsewhere")
    seen = [("stole a loaf from a stall", "theft", 0.7), ("helped put out a fire", "helpful", 0.6)]
    calls = iter(range(10**9))

    def observe() -> None:
        k = next(calls)
        what, tag, importance = seen[k % 2]
        plugin.observe(room="square", subject=f"p{k * 7 % 1000}", content=f"P{k} {what} ({k})",
                       tags=[tag], importance=importance)
        esper.process(1 / 60)

    for _ in range(fact_cap * 3):  # past both caps
        observe()
    benchmark(observe)
    facts = [len(plugin.npc(f"n{i}").knowledge.facts) for i in range(100)]
    assert max(facts) <= fact_cap and min(facts) >= fact_cap * 0.9 - 1
    assert max(len(plugin.npc(f"n{i}").relationships.by_player) for i in range(100)) <= 25

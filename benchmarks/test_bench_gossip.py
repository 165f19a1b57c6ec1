"""Gossip: the tick cost must not grow with the world (O(budget)); the board rebuild
is the only part proportional to what changed."""

from __future__ import annotations

from typing import Any

import esper
import pytest

import npc_memory
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

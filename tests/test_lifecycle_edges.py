"""Edges of esper's lifecycle: ids esper hands out again after clear_database, and NPCs
leaving rooms whose gossip lists wait to be rebuilt."""

from __future__ import annotations

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick


def test_after_clear_database_a_new_key_can_take_a_reused_id_at_once() -> None:
    plugin = npc_memory.install(world="w")
    plugin.add_npc(key="hilda")
    plugin.add_npc(key="oswin")
    plugin.remember("hilda", None, "The well is dry")
    esper.switch_world("w")
    esper.clear_database()
    esper.switch_world("default")
    wren = plugin.add_npc(key="wren")  # esper reuses entity 1: Hilda's old id
    assert plugin.key(wren) == "wren" and "hilda" in plugin.storage.stored_npcs()
    assert [m.content for m in plugin.memories("hilda")] == ["The well is dry"]  # kept
    tick("w", 1)
    assert sorted(plugin.npcs()) == ["wren"] and sorted(plugin.storage.stored_npcs()) == ["hilda", "oswin"]


def test_an_npc_leaving_a_room_that_waits_for_its_rebuild_is_never_drawn() -> None:
    data = load_pack("village").model_dump()
    data["budgets"]["gossip_tick_ms"] = 1e-6  # one room rebuilt per tick
    for seed in range(12):
        plugin = npc_memory.install(world=f"g{seed}", pack=validate_pack(data), seed=seed)
        for r in range(6):
            for j in range(2):
                plugin.add_npc(key=f"n{r}{j}", room=f"r{r}")
                plugin.learn_fact(f"n{r}{j}", f"news {r}{j}", topic=f"t{r}{j}", importance=0.9)
        tick(f"g{seed}", 3)
        board = next(p for p in plugin.processors if isinstance(p, GossipSystem)).board
        for r in range(1, 6):
            board.touch(f"r{r}")  # rooms r1-r5 wait to be rebuilt
        plugin.remove("n00")
        plugin.remove("n01")  # r0 is empty now, whatever its rebuild order
        plugin.move("n10", "elsewhere")
        tick(f"g{seed}", 5)  # never draws a removed or moved NPC
        assert all("n00" not in room.listeners and "n10" not in room.listeners for room in board.rooms.values())
        npc_memory.uninstall(f"g{seed}")


def test_a_forgotten_npc_added_again_starts_afresh() -> None:
    plugin = npc_memory.install(world="f")
    plugin.add_npc(key="hilda", room="forge")
    plugin.add_player(key="bram", room="forge")
    plugin.remember("hilda", None, "The sword of kings lies in the lake")
    assert plugin.recall("hilda", None, "sword")
    plugin.say("hilda", "bram", "Bram", "I stole your hammer, you fool!")
    plugin.end_conversation("hilda", "bram")  # queued, not yet extracted
    plugin.remove("hilda", forget=True)
    hilda = plugin.add_npc(key="hilda", room="forge")
    plugin.remember(hilda, None, "Bread is cheap today", importance=0.1)
    plugin.remember(hilda, None, "The mayor wears a hat", importance=1.0)
    assert [m.content for m in plugin.recall(hilda, None, "lake", k=1)] == ["The mayor wears a hat"]  # no stale terms
    tick("f", 3)
    assert plugin.memories(hilda, "bram") == [] and plugin.extraction.pending() == []  # the old job went with her

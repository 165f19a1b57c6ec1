"""Same install, same results: the game's random generator is the game's (gossip draws
from its own, saved and resumed with the world), and no machine-speed rule decides what
a tick does (extraction's bound: tests/test_extraction_steps.py)."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec

import npc_memory
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick

WORLD = "same"


def village(store: Path | None = None, seed: int = 5) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world=WORLD, store=store, seed=seed, time_scale=600.0)
    for key, archetype in [("oswin", "merchant"), ("marta", "innkeeper"), ("wren", "bard")]:
        plugin.add_npc(key=key, name=key.title(), archetype=archetype, room="market")
    plugin.add_player(key="bram", name="Bram", faction="thieves")
    return plugin


def gossip(plugin: npc_memory.MemoryPlugin) -> GossipSystem:
    return next(p for p in plugin.processors if isinstance(p, GossipSystem))


def test_gossip_never_draws_from_the_games_generator() -> None:
    plugin = village()
    plugin.observe(room="market", subject="bram", content="Bram stole a loaf", tags=["theft"], importance=0.7)
    for number in range(8):
        plugin.learn_fact("oswin", f"The {number}th cart came late", importance=0.6)
    tick(WORLD, 40)
    assert gossip(plugin).exchanges > 0 and plugin.query.knows("wren", "theft")
    assert plugin.rng.random() == random.Random(5).random()  # as the game left it: untouched
    npc_memory.uninstall(WORLD)


def test_gossips_generator_is_saved_and_resumed(tmp_path: Path) -> None:
    store = tmp_path / "w.db"
    plugin = village(store)
    for number in range(8):
        plugin.learn_fact("oswin", f"The {number}th cart came late", importance=0.6)
    tick(WORLD, 20)
    plugin.rng.random()  # the game drew once
    saved_gossip, saved_game = gossip(plugin).rng.getstate(), plugin.rng.getstate()
    assert saved_gossip != random.Random("gossip/5").getstate()  # gossip drew
    npc_memory.uninstall(WORLD)

    plugin = village(store)
    assert gossip(plugin).rng.getstate() == saved_gossip and plugin.rng.getstate() == saved_game
    npc_memory.uninstall(WORLD)


def test_a_store_saved_before_gossip_had_its_own_generator_starts_it_from_the_seed(tmp_path: Path) -> None:
    store = tmp_path / "w.db"
    plugin = village(store)
    tick(WORLD, 5)
    plugin.rng.random()
    game_state = plugin.rng.getstate()
    npc_memory.uninstall(WORLD)
    tables = msgspec.json.decode((store / "meta.json").read_bytes())
    [meta] = tables["meta"].values()
    del meta["gossip_rng_state"], meta["gossip_rng_gauss"]  # as an older release wrote it
    (store / "meta.json").write_bytes(msgspec.json.encode(tables))

    plugin = village(store)
    assert gossip(plugin).rng.getstate() == random.Random("gossip/5").getstate()
    assert plugin.rng.getstate() == game_state
    npc_memory.uninstall(WORLD)

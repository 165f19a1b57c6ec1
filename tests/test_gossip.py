"""Gossip: the theft that reaches the guard captain, and the properties of spreading."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.components import Fact
from npc_memory.events import FactLearned, Hostile, SecretLearned
from npc_memory.systems.gossip import GossipSystem

from .conftest import reset_esper, tick

ROOMS = ["market", "tavern", "barracks", "temple"]


def village(seed: int = 3) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world="g", seed=seed, time_scale=600.0)  # one tick = 10 game minutes
    for key, name, archetype, room in [
        ("oswin", "Oswin", "merchant", "market"), ("marta", "Marta", "innkeeper", "market"),
        ("pell", "Pell", "guard", "tavern"), ("brandt", "Brandt", "guard_captain", "barracks"),
        ("wren", "Wren", "bard", "tavern"),
    ]:
        plugin.add_npc(key=key, name=name, archetype=archetype, room=room)
    plugin.add_player(key="bram", name="Bram", faction="thieves")
    return plugin


def test_a_theft_in_the_market_reaches_the_guard_captain(seed: int = 3) -> None:
    plugin = village(seed)
    hostile: list[Hostile] = []
    plugin.on(Hostile, hostile.append)
    witnesses = plugin.observe(room="market", subject="bram", content="Bram stole a loaf of bread",
                               tags=["theft"], importance=0.7)
    assert witnesses == ["marta", "oswin"] and not plugin.query.knows("brandt", "theft")
    trust_before = plugin.query.trust("brandt", "bram")
    walks = {"marta": ["market", "tavern"], "pell": ["tavern", "barracks"], "wren": ["tavern", "market"]}
    hours = 0.0
    for step in range(12 * 6):  # at most 12 game hours
        if step % 6 == 0:  # every game hour the walkers change rooms
            for npc, rooms in walks.items():
                plugin.move(npc, rooms[(step // 6) % 2])
        tick("g")
        if plugin.query.knows("brandt", "theft"):
            hours = plugin.clock.now / 3600
            break
    assert 0 < hours <= 12, "the rumour never reached the barracks"
    [belief] = plugin.query.beliefs_about("brandt", "bram")
    assert belief.source == "gossip" and belief.hops >= 2 and belief.confidence < 1.0
    assert plugin.query.trust("brandt", "bram") < trust_before  # he never met Bram
    assert not plugin.query.has_met("brandt", "bram")
    why = plugin.query.why("brandt", belief.id)
    assert why.endswith("saw it in the market (day 1 00:00)") and "told Brandt in the barracks" in why
    assert any(e.npc == "brandt" for e in hostile) or plugin.query.trust("brandt", "bram") >= 0.2


def test_secrets_announce_themselves() -> None:
    plugin = village()
    secrets: list[SecretLearned] = []
    plugin.on(SecretLearned, secrets.append)
    plugin.move("wren", "market")
    plugin.learn_fact("oswin", "The mayor owes the Quiet Hand money", tags=["secret"], importance=0.9)
    tick("g", 30)
    assert secrets[0].npc == "oswin" and secrets[0].source == "authored"
    assert {e.npc for e in secrets[1:]} == {"marta", "wren"} and all(e.source == "gossip" for e in secrets[1:])


def test_rooms_are_rebuilt_only_when_something_changes() -> None:
    plugin = village()
    plugin.observe(room="tavern", content="A storm is coming", importance=0.8)
    tick("g")
    board = next(p for p in plugin.processors if isinstance(p, GossipSystem)).board
    rebuilds = board.rebuilds
    plugin.learn_fact("brandt", "Quiet night", importance=0.1)  # alone in the barracks: nothing to rebuild
    tick("g", 20)
    assert board.rebuilds <= rebuilds + 2  # only the tavern, when its occupants learned something


world_ops = st.lists(
    st.one_of(
        st.tuples(st.just("move"), st.integers(0, 7), st.sampled_from(ROOMS)),
        st.tuples(st.just("observe"), st.sampled_from(ROOMS), st.floats(0.5, 1.0), st.booleans()),
        st.tuples(st.just("tick"), st.integers(1, 5)),
    ),
    min_size=5,
    max_size=40,
)


def run_world(seed: int, ops: list[tuple[Any, ...]]) -> tuple[npc_memory.MemoryPlugin, list[int]]:
    reset_esper()
    plugin = npc_memory.install(world="g", seed=seed, deterministic=True)  # same seed, same world
    archetypes = ["innkeeper", "bard", "guard", "merchant", "farmer", "priest", "blacksmith", "guard_captain"]
    for i, archetype in enumerate(archetypes):
        plugin.add_npc(key=f"n{i}", archetype=archetype, room=ROOMS[i % len(ROOMS)])
    plugin.add_player(key="pc")
    per_tick: list[int] = []
    for op in ops:
        if op[0] == "move":
            plugin.move(f"n{op[1]}", op[2])
        elif op[0] == "observe":
            plugin.observe(room=op[1], content=f"news {len(per_tick)} in {op[1]}", importance=op[2],
                           subject="pc" if op[3] else None, tags=["theft"] if op[3] else ["news"])
        else:
            for _ in range(op[1]):
                heard: list[FactLearned] = []
                subscription = plugin.on(FactLearned, heard.append)
                tick("g")
                subscription.cancel()
                per_tick.append(sum(1 for e in heard if e.source == "gossip"))
    return plugin, per_tick


def knowledge(plugin: npc_memory.MemoryPlugin) -> dict[str, list[Fact]]:
    return {key: list(plugin.npc(key).knowledge.facts) for key in plugin.npcs()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), world_ops)
def test_gossip_properties(seed: int, ops: list[tuple[Any, ...]]) -> None:
    plugin, per_tick = run_world(seed, ops)
    rules = plugin.pack.knowledge
    budget = plugin.pack.budgets.gossip_exchanges_per_tick
    assert all(count <= budget for count in per_tick)  # never more exchanges than the budget
    for npc, facts in knowledge(plugin).items():
        for fact in facts:
            assert fact.hops <= rules.max_hops  # no fact beyond the hop limit
            assert fact.hops == len(fact.chain) - 1
            people = [fact.chain[0].listener] + [hop.listener for hop in fact.chain[1:]]
            assert len(people) == len(set(people))  # no cycles: nobody hears it twice along a chain
            assert fact.chain[-1].listener == npc
            assert all(hop.teller == prev.listener for prev, hop in zip(fact.chain, fact.chain[1:], strict=False))
            # confidence never rises through gossip: each hop costs at least hop_decay
            assert fact.confidence <= max(0.0, 1.0 - rules.hop_decay * fact.hops) + 1e-9
    again, _ = run_world(seed, ops)
    assert knowledge(again) == knowledge(plugin)  # same seed, same world

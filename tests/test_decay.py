"""Forgetting and consolidation over 60 game days, budgets, and cap properties."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory import SECONDS_PER_DAY
from npc_memory.components import EpisodicMemory, ProceduralMemory, SemanticMemory
from npc_memory.content import load_pack, validate_pack
from npc_memory.rules.memory import salience
from npc_memory.systems.decay import PairCursor

from .conftest import reset_esper, tick

HOUR = 3600.0


def sixty_days() -> npc_memory.MemoryPlugin:
    """Hilda the blacksmith over 60 game days, one tick per game hour, with scripted players:
    Cora trades three mornings running, Alice leaves a locked quest memory and small talk,
    Dan haggles whenever he comes, Bram's misdeed is witnessed once."""
    plugin = npc_memory.install(world="d", seed=1, time_scale=HOUR)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    for key, name, faction in [("cora", "Cora", "merchants"), ("alice", "Alice", "adventurers"),
                               ("dan", "Dan", "adventurers"), ("bram", "Bram", "thieves")]:
        plugin.add_player(key=key, name=name, faction=faction, room="forge")
    for day in range(60):
        for hour in range(24):
            if day < 3 and hour == 9:
                plugin.remember("hilda", "cora", f"Cora bought {day + 2} horseshoes", tags=["trade"], importance=0.4)
            if day == 0 and hour == 10:
                plugin.remember("hilda", "alice", "Alice swore to find my stolen hammer", tags=["quest"],
                                importance=0.9, locked=True)
                plugin.remember("hilda", "alice", "Alice said good morning", tags=["greeting"], importance=0.1)
                plugin.adjust_relationship("hilda", "alice", trust=0.3)
                plugin.observe(room="forge", content="A merchant caravan camps by the river tonight",
                               tags=["caravan"], importance=0.6, expires_in=SECONDS_PER_DAY)
            if day % 10 == 5 and hour == 15:
                plugin.say("hilda", "dan", "Hilda", "You always haggle, Dan. Fine, twelve silver.")
                plugin.say("hilda", "dan", "Dan", "Twelve silver for the nails, as usual.")
                plugin.end_conversation("hilda", "dan")
            tick("d")
    return plugin


def test_sixty_days_of_forgetting_and_consolidation() -> None:
    plugin = sixty_days()
    assert plugin.clock.day == 60.0
    alice = plugin.memories("hilda", "alice")
    assert [m.content for m in alice] == ["Alice swore to find my stolen hammer"]  # the trivial one faded
    [semantic] = plugin.memories("hilda", "cora", kind="semantic")
    assert isinstance(semantic, SemanticMemory)
    assert semantic.content == "Cora is a regular customer (3 times)" and len(semantic.source_episodes) == 3
    assert semantic.importance == 0.4 and semantic.tags == ("trade",)
    assert plugin.memories("hilda", "cora", kind="episodic") == []  # the three trades became one
    [habit] = plugin.memories("hilda", "cora", kind="procedural")
    assert habit.content == "Cora usually comes to trade in the morning"
    assert isinstance(habit, ProceduralMemory) and habit.trigger.time_of_day == "morning"
    [haggling] = plugin.memories("hilda", "dan", kind="procedural")
    assert isinstance(haggling, ProceduralMemory) and haggling.tags[0] == "trade" and haggling.reinforcement == 6
    # The caravan fact expired after a day and was cleaned out of the knowledge base.
    facts = plugin.npc("hilda").knowledge.facts
    assert facts and not any("caravan" in f.tags for f in facts)
    # Without interaction, trust drifted back towards the faction baseline (half-life 60 days).
    baseline = 0.5 + 0.1  # smiths regard adventurers as friendly
    assert plugin.query.trust("hilda", "alice") == pytest.approx(baseline + 0.3 * 0.5, rel=0.02)


def test_an_episode_is_consolidated_only_once() -> None:
    plugin = npc_memory.install(world="d", time_scale=HOUR)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="cora")
    kept = plugin.remember("hilda", "cora", "Cora bought the first sword I ever made", tags=["trade"], locked=True)
    for i in range(2):
        plugin.remember("hilda", "cora", f"Cora bought nails {i}", tags=["trade"])
    plugin.clock.advance(8 * SECONDS_PER_DAY)
    tick("d", 48)
    assert len(plugin.memories("hilda", "cora", kind="semantic")) == 1
    assert plugin.memories("hilda", "cora", kind="episodic") == [kept]  # locked: kept
    plugin.remember("hilda", "cora", "Cora bought a lantern", tags=["trade"])
    plugin.clock.advance(8 * SECONDS_PER_DAY)
    tick("d", 48)
    assert len(plugin.memories("hilda", "cora", kind="semantic")) == 1  # 1 new + locked old: not 3 fresh


def test_intense_memories_are_kept_longer_but_at_most_ten_percent() -> None:
    calm = EpisodicMemory(id="a", content="x", importance=0.5, intensity=0.0)
    vivid = EpisodicMemory(id="b", content="x", importance=0.5, intensity=1.0)
    now = 30 * SECONDS_PER_DAY
    assert salience(calm, now, 30.0, 0.1) == 0.5 * math.exp(-1)
    assert salience(vivid, now, 30.0, 0.1) == 0.5 * math.exp(-1 / 1.1)


def test_the_cursor_visits_every_pair_once_per_cycle_within_the_budget() -> None:
    pairs = {f"n{i}": [None, "a", "b"] for i in range(5)}
    cursor = PairCursor(sorted(pairs), lambda npc: pairs[npc])
    cursor.start(0.0)
    seen = []
    while cursor.active and (pair := cursor.next(10.0)) is not None:
        seen.append(pair)
    assert len(seen) == 15 == len(set(seen)) and not cursor.active
    assert cursor.cycles == 1 and cursor.last_cycle_seconds == 10.0


def test_decay_runs_once_per_game_day_within_its_budget() -> None:
    data = load_pack("village").model_dump()
    data["budgets"].update(decay_pairs_per_tick=2)
    plugin = npc_memory.install(world="d", pack=validate_pack(data), time_scale=HOUR)
    for i in range(3):
        plugin.add_npc(key=f"n{i}")
    decay = next(p for p in plugin.processors if type(p).__name__ == "DecaySystem")
    tick("d", 20)
    assert decay.cursor.cycles == 1  # 3 world pairs at 2 per tick: done in 2 ticks, then it waits a day
    assert decay.cursor.last_cycle_seconds == HOUR  # the cycle took one tick after the start, 1 game hour
    tick("d", 10)  # the next cycle starts a game day after the first (game hour 25)
    assert decay.cursor.cycles == 2


op = st.one_of(
    st.tuples(st.just("remember"), st.sampled_from(["episodic", "semantic", "procedural"]),
              st.sampled_from(["trade", "gift", "theft"]), st.floats(0, 1), st.booleans()),
    st.tuples(st.just("wait"), st.integers(1, 72)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=40))
def test_caps_are_never_exceeded_whatever_happens(ops: list[tuple[Any, ...]]) -> None:
    reset_esper()
    data = load_pack("village").model_dump()
    data["memory"].update(episodic_cap=4, semantic_cap=2, procedural_cap=2, consolidate_after_days=0.0)
    plugin = npc_memory.install(world="d", pack=validate_pack(data), time_scale=HOUR)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="cora")
    caps = {"episodic": 4, "semantic": 2, "procedural": 2}
    for operation in ops:
        if operation[0] == "remember":
            _, kind, tag, importance, locked = operation
            with contextlib.suppress(npc_memory.MemoryCapacityError):  # a kind full of locked memories
                plugin.remember("hilda", "cora", f"{kind} {tag}", kind=kind, tags=[tag], importance=importance,
                                locked=locked and kind != "procedural")
        else:
            tick("d", operation[1])
        for kind, cap in caps.items():
            held = plugin.memories("hilda", "cora", kind=kind)  # type: ignore[arg-type]
            assert len([m for m in held if not m.locked]) <= cap and len(held) <= cap

"""The memory bank: records, scopes, salience, ranking, caps and eviction."""

from __future__ import annotations

import math

import pytest

import npc_memory
from npc_memory import SECONDS_PER_DAY
from npc_memory.components import EpisodicMemory, ProceduralMemory, SemanticMemory, TriggerContext
from npc_memory.rules.memory import access_boost, salience

from .conftest import Village


def test_remember_stores_a_complete_record(village: Village) -> None:
    p = village.plugin
    p.clock.advance(500.0)
    memory = p.remember(
        "hilda", "alice", "  Alice bought a sword  ", tags=["Trade", "trade", "weapons"],
        importance=0.6, valence="positive", intensity=0.3, source_conversation="c1",
    )
    assert isinstance(memory, EpisodicMemory)
    assert memory.content == "Alice bought a sword"
    assert memory.tags == ("trade", "weapons")  # lower-cased, de-duplicated, in order
    assert (memory.importance, memory.confidence, memory.valence, memory.intensity) == (0.6, 1.0, "positive", 0.3)
    assert (memory.created, memory.last_accessed, memory.access_count) == (500.0, 500.0, 0)
    assert (memory.room, memory.scope, memory.locked, memory.safety) == ("forge", "session", False, "clean")
    assert memory.source_conversation == "c1"
    assert p.memories("hilda", "alice") == [memory]
    assert p.memories("hilda") == []  # world-scoped memories are separate


def test_memory_ids_are_unique_per_npc_and_deterministic(village: Village) -> None:
    p = village.plugin
    ids = [p.remember("hilda", None, f"event {i}").id for i in range(3)]
    ids.append(p.remember("hilda", "alice", "met alice").id)
    assert ids == ["m1", "m2", "m3", "m4"]
    assert p.remember("brandt", None, "first").id == "m1"


def test_semantic_and_procedural_kinds(village: Village) -> None:
    p = village.plugin
    episodes = [p.remember("hilda", "alice", f"Alice bought rope {i}", tags=["trade"]).id for i in range(3)]
    semantic = p.remember("hilda", "alice", "Alice is a regular customer", kind="semantic",
                          source_episodes=episodes, confidence=0.8)
    procedural = p.remember("hilda", "alice", "Alice always haggles", kind="procedural",
                            trigger=TriggerContext(interaction_type="trade"))
    assert isinstance(semantic, SemanticMemory) and semantic.source_episodes == tuple(episodes)
    assert isinstance(procedural, ProceduralMemory)
    assert (procedural.pattern, procedural.reinforcement) == ("Alice always haggles", 1)
    assert p.memories("hilda", "alice", kind="semantic") == [semantic]
    assert len(p.memories("hilda", "alice")) == 5


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"importance": 1.5}, npc_memory.InvalidArgumentError, "importance must be a number in"),
        ({"confidence": float("nan")}, npc_memory.InvalidArgumentError, "confidence"),
        ({"intensity": -0.1}, npc_memory.InvalidArgumentError, "intensity"),
        ({"kind": "dream"}, npc_memory.InvalidArgumentError, "kind must be one of"),
        ({"valence": "happy"}, npc_memory.InvalidArgumentError, "valence must be one of"),
        ({"tags": "trade"}, npc_memory.InvalidArgumentError, "not the string"),
        ({"tags": ["ok", ""]}, npc_memory.InvalidArgumentError, "tag must not be empty"),
        ({"tags": ["clue", "game-only"]}, npc_memory.PrivacyError, "never stored"),
        ({"scope": "galaxy"}, npc_memory.InvalidArgumentError, "scope must be one of"),
        ({"scope": "player"}, npc_memory.PrivacyError, "not consented"),
        ({"scope": "anon"}, npc_memory.PrivacyError, "anonymous participants"),
        ({"scope": "profile"}, npc_memory.PrivacyError, "authored traits"),
        ({"pattern": "x"}, npc_memory.InvalidArgumentError, "procedural memories only"),
        ({"source_episodes": ["m1"]}, npc_memory.InvalidArgumentError, "semantic memories only"),
        ({"kind": "semantic", "source_episodes": ["m99"]}, npc_memory.InvalidArgumentError, "m99"),
        ({"kind": "procedural", "trigger": {"x": 1}}, npc_memory.InvalidArgumentError, "TriggerContext"),
    ],
)
def test_bad_memories_are_refused_and_nothing_changes(
    village: Village, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    p = village.plugin
    bank = p.npc("hilda").bank
    before = (bank.count(), bank.next_id, dict(bank.players))
    with pytest.raises(error, match=message):
        p.remember("hilda", "alice", "something happened", **kwargs)  # type: ignore[arg-type]
    assert (bank.count(), bank.next_id, dict(bank.players)) == before


def test_content_must_be_nonempty_and_bounded(village: Village) -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match="content must not be empty"):
        village.plugin.remember("hilda", None, "   ")
    with pytest.raises(npc_memory.InvalidArgumentError, match="limit is 2000"):
        village.plugin.remember("hilda", None, "x" * 2001)


def test_scopes_default_to_the_narrowest_that_fits(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.add_npc(key="hilda")
    plugin.add_player(key="known", consent=True)
    plugin.add_player(key="guest")
    plugin.add_player(key="masked", anonymous=True)
    assert plugin.remember("hilda", "guest", "x").scope == "session"
    assert plugin.remember("hilda", "known", "x").scope == "player"
    assert plugin.remember("hilda", "masked", "x").scope == "anon"
    assert plugin.remember("hilda", None, "x").scope == "session"
    assert plugin.remember("hilda", None, "x", scope="profile").scope == "profile"
    assert plugin.remember("hilda", "known", "x", scope="social").scope == "social"
    with pytest.raises(npc_memory.PrivacyError, match="only 'anon'"):
        plugin.remember("hilda", "masked", "x", scope="session")
    with pytest.raises(npc_memory.PrivacyError, match="world-scoped"):
        plugin.remember("hilda", None, "x", scope="player")


def test_salience_formula() -> None:
    memory = EpisodicMemory(id="m1", content="x", importance=0.8, last_accessed=0.0, access_count=3)
    now = 15 * SECONDS_PER_DAY
    expected = 0.8 * math.exp(-15 / 30) * (1 + 0.1 * math.log(4))
    assert salience(memory, now) == pytest.approx(expected)
    assert access_boost(10**9) == 1.5
    assert salience(EpisodicMemory(id="m2", content="x", importance=1.0, access_count=10**6), 0.0) == 1.0
    locked = EpisodicMemory(id="m3", content="x", importance=0.1, locked=True)
    assert salience(locked, 1e9) == 1.0


def test_memories_are_ranked_by_salience_in_game_time(village: Village) -> None:
    p = village.plugin
    old_important = p.remember("hilda", "alice", "Alice fought off wolves", importance=0.9)
    p.clock.advance(60 * SECONDS_PER_DAY)  # two months: recency exp(-2) ~ 0.135
    fresh_trivial = p.remember("hilda", "alice", "Alice said good morning", importance=0.2)
    locked = p.remember("hilda", "alice", "Alice is the chosen one", importance=0.05, locked=True)
    assert p.memories("hilda", "alice") == [locked, fresh_trivial, old_important]
    assert p.query.salience(old_important) == pytest.approx(0.9 * math.exp(-2))


def test_episodic_cap_evicts_lowest_salience_and_keeps_locked(village: Village) -> None:
    p = village.plugin
    cap = p.pack.memory.episodic_cap
    locked = p.remember("hilda", "alice", "quest: the stolen hammer", importance=0.01, locked=True)
    weakest = p.remember("hilda", "alice", "Alice waved", importance=0.02)
    for i in range(cap - 2):
        p.remember("hilda", "alice", f"ordinary day {i}", importance=0.5)
    assert len(p.memories("hilda", "alice")) == cap
    newcomer = p.remember("hilda", "alice", "Alice slew the troll", importance=0.9)
    held = p.memories("hilda", "alice")
    assert len(held) == cap and newcomer in held and locked in held and weakest not in held
    # A memory weaker than everything unlocked at the cap is not kept.
    trivial = p.remember("hilda", "alice", "Alice sneezed", importance=0.01)
    assert trivial not in p.memories("hilda", "alice") and len(p.memories("hilda", "alice")) == cap


def test_semantic_cap_evicts_lowest_confidence(village: Village) -> None:
    p = village.plugin
    for i in range(p.pack.memory.semantic_cap):
        p.remember("hilda", "alice", f"fact {i}", kind="semantic", confidence=0.5 + (i % 5) / 10)
    shaky = [m for m in p.npc("hilda").bank.players["alice"].semantic if m.confidence == 0.5]  # oldest first
    p.remember("hilda", "alice", "Alice is a smith's friend", kind="semantic", confidence=0.95)
    held = p.memories("hilda", "alice", kind="semantic")
    assert len(held) == p.pack.memory.semantic_cap
    assert shaky[0] not in held and all(m in held for m in shaky[1:])  # oldest of the ties goes


def test_procedural_cap_evicts_lowest_reinforcement(village: Village) -> None:
    p = village.plugin
    for i in range(p.pack.memory.procedural_cap):
        p.remember("hilda", "alice", f"pattern {i}", kind="procedural")
    first = p.memories("hilda", "alice", kind="procedural")
    p.remember("hilda", "alice", "Alice always comes at night", kind="procedural")
    held = p.memories("hilda", "alice", kind="procedural")
    assert len(held) == p.pack.memory.procedural_cap
    evicted = [m for m in first if m not in held]
    assert [m.content for m in evicted] == ["pattern 0"]


def test_a_kind_full_of_locked_memories_refuses_more(village: Village) -> None:
    p = village.plugin
    for i in range(p.pack.memory.procedural_cap):
        p.remember("hilda", "alice", f"sacred pattern {i}", kind="procedural", locked=True)
    bank = p.npc("hilda").bank
    before = (bank.next_id, len(p.memories("hilda", "alice")))
    for locked in (True, False):
        with pytest.raises(npc_memory.MemoryCapacityError, match="locked"):
            p.remember("hilda", "alice", "one more", kind="procedural", locked=locked)
    assert (bank.next_id, len(p.memories("hilda", "alice"))) == before
    # Other kinds are unaffected.
    p.remember("hilda", "alice", "a normal day")

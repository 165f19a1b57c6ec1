"""Knowledge: observing, competing beliefs, the cap, expiry, authored facts, queries."""

from __future__ import annotations

from typing import Any

import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.events import Event, FactionReputationShift, FactLearned, MemoryMilestone

from .conftest import Village


def pack_with(**sections: dict[str, Any]) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    for name, values in sections.items():
        data[name].update(values)
    return validate_pack(data)


def test_observe_teaches_every_npc_in_the_room_and_moves_their_opinion(village: Village) -> None:
    p = village.plugin
    p.move("brandt", "forge")
    learned: list[FactLearned] = []
    p.on(FactLearned, learned.append)
    before = p.query.trust("hilda", "bram")
    witnesses = p.observe(room="forge", subject="bram", content="Bram pocketed a dagger", tags=["theft"], importance=0.8)
    assert witnesses == ["brandt", "hilda"] and [e.npc for e in learned] == ["brandt", "hilda"]
    [fact] = p.facts("hilda")
    assert (fact.category, fact.subject, fact.topic, fact.source, fact.hops, fact.confidence) == (
        "player_trait", "bram", None, "observation", 0, 1.0)
    assert fact.chain[0].teller is None and fact.chain[0].source == "observation"
    assert p.query.trust("hilda", "bram") == pytest.approx(before - 0.10 * 0.8 * 0.75)
    assert p.query.knows("hilda", "theft") and not p.query.knows("hilda", "heroic")
    assert p.observe(room="empty hall", content="nobody saw this") == []


def test_observe_validates(village: Village) -> None:
    p = village.plugin
    with pytest.raises(npc_memory.PrivacyError):
        p.observe(room="forge", content="the vault code", tags=["game-only"])
    with pytest.raises(npc_memory.InvalidArgumentError, match="category must be one of"):
        p.observe(room="forge", content="x", category="rumour")  # type: ignore[arg-type]
    with pytest.raises(npc_memory.InvalidArgumentError, match="expires_in"):
        p.observe(room="forge", content="x", expires_in=-5)
    assert p.facts("hilda") == []


def test_stronger_evidence_wins_and_the_loser_is_kept(village: Village) -> None:
    p = village.plugin
    p.learn_fact("hilda", "Bram is a thief", subject="bram", topic="honesty", confidence=0.5)
    p.clock.advance(600)
    p.observe(room="forge", subject="bram", content="Bram paid for everything", topic="honesty", importance=0.6)
    [held] = p.query.beliefs_about("hilda", "bram")
    assert held.content == "Bram paid for everything"
    every = p.facts("hilda", include_disbelieved=True)
    old = next(f for f in every if f.content == "Bram is a thief")
    assert (old.believed, old.disbelieved_at) == (False, 600.0)
    assert "no longer believed since day 1 00:10" in p.query.why("hilda", old.id)
    # Weaker evidence arriving later does not displace the belief; it is stored disbelieved.
    p.learn_fact("hilda", "Bram cheats at dice", subject="bram", topic="honesty", confidence=0.4)
    assert [f.content for f in p.query.beliefs_about("hilda", "bram")] == ["Bram paid for everything"]


def test_the_cap_evicts_the_least_important_but_never_locked_or_authored() -> None:
    plugin = npc_memory.install(world="k", pack=pack_with(knowledge={"cap": 5}))
    plugin.add_npc(key="hilda", room="forge")
    plugin.learn_fact("hilda", "The forge was built by dwarves", importance=0.1, locked=True)
    for i in range(6):
        plugin.observe(room="forge", content=f"event {i}", topic=f"t{i}", importance=0.2 + i / 10)
    contents = [f.content for f in plugin.facts("hilda")]
    # cap 5, slack 0.1: batches leave 4 (hilda's first came at 5 facts: eviction_phase)
    assert contents == ["The forge was built by dwarves", "event 3", "event 4", "event 5"]


def test_expired_facts_are_ignored_and_cleaned(village: Village) -> None:
    p = village.plugin
    p.observe(room="forge", content="A caravan arrives today", tags=["caravan"], expires_in=3600)
    assert p.query.knows("hilda", "caravan")
    p.clock.advance(3600)
    assert not p.query.knows("hilda", "caravan") and p.facts("hilda") == []
    p.observe(room="forge", content="Rain tomorrow")
    assert [f.content for f in p.npc("hilda").knowledge.facts] == ["Rain tomorrow"]


def test_why_for_first_hand_and_unknown_facts(village: Village) -> None:
    p = village.plugin
    p.clock.advance(3 * 3600 + 60 * 5)
    p.observe(room="forge", subject="alice", content="Alice mended the bellows", tags=["helpful"])
    [fact] = p.facts("hilda")
    assert p.query.why("hilda", fact.id) == (
        '"Alice mended the bellows" (confidence 1.00, believed): Hilda saw it in the forge (day 1 03:05)')
    with pytest.raises(npc_memory.UnknownEntityError, match="no fact 'f99'"):
        p.query.why("hilda", "f99")


def test_authored_facts_from_the_pack() -> None:
    pack = pack_with(knowledge={"facts": [
        {"archetypes": ["guard", "guard_captain"], "content": "The north gate lock is broken", "tags": ["secret"],
         "category": "faction_intel", "importance": 0.8},
        {"content": "The harvest festival is in a week", "tags": ["festival"]},
    ]})
    plugin = npc_memory.install(world="k", pack=pack)
    plugin.add_npc(key="brandt", archetype="guard_captain")
    plugin.add_npc(key="hilda", archetype="blacksmith")
    assert plugin.query.knows("brandt", "secret") and plugin.query.knows("brandt", "festival")
    assert not plugin.query.knows("hilda", "secret") and plugin.query.knows("hilda", "festival")
    assert {f.source for f in plugin.facts("brandt")} == {"authored"}
    with pytest.raises(npc_memory.PackError, match=r"knowledge\.facts\.0\.archetypes: unknown archetype 'wizard'"):
        pack_with(knowledge={"facts": [{"archetypes": ["wizard"], "content": "x"}]})


def test_memory_milestones_fire_once_per_pair(village: Village) -> None:
    p = village.plugin
    seen: list[MemoryMilestone] = []
    p.on(MemoryMilestone, seen.append)
    for i in range(26):
        p.remember("hilda", "alice", f"memory {i}")
    assert [(e.milestone, e.count) for e in seen] == [(10, 10), (25, 25)]


def test_faction_reputation_shifts_when_the_average_crosses_a_band() -> None:
    plugin = npc_memory.install(world="k")
    for i in range(3):
        plugin.add_npc(key=f"guard{i}", archetype="guard")
    plugin.add_player(key="alice", faction="adventurers")
    shifts: list[Event] = []
    plugin.on(FactionReputationShift, shifts.append)
    plugin.adjust_relationship("guard0", "alice", trust=0.2, friendliness=0.2)  # 1 of 3 guards warms: +0.28
    assert shifts == []  # the average moved, but stayed in the neutral band
    plugin.adjust_relationship("guard1", "alice", trust=0.2, friendliness=0.2)
    [shift] = shifts
    assert isinstance(shift, FactionReputationShift)
    assert (shift.faction, shift.player, shift.old_band, shift.new_band) == ("guards", "alice", 2, 3)
    assert shift.average == pytest.approx((0.28 + 0.28 + 0.0) / 3)

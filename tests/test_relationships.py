"""Relationships: faction start, clamping, versions, stages, thresholds and events."""

from __future__ import annotations

import pytest

import npc_memory
from npc_memory import Stage
from npc_memory.events import (
    BestFriend,
    Event,
    Hostile,
    RelationshipStageChanged,
    RelationshipThresholdCrossed,
    TrustedAlly,
)

from .conftest import Village


@pytest.mark.parametrize(
    ("npc_faction", "player_faction", "shift"),
    [
        ("smiths", "guards", 0.3),  # allied
        ("smiths", "adventurers", 0.1),  # friendly
        ("clergy", "thieves", 0.0),  # not listed: neutral
        ("smiths", "thieves", -0.1),  # unfriendly
        ("guards", "thieves", -0.3),  # hostile
        ("smiths", "smiths", 0.1),  # own faction, not listed: friendly
        (None, "thieves", 0.0),  # no faction: neutral
    ],
)
def test_initial_values_follow_faction_attitude(
    plugin: npc_memory.MemoryPlugin, npc_faction: str | None, player_faction: str, shift: float
) -> None:
    plugin.add_npc(key="npc", faction=npc_faction)
    plugin.add_player(key="pc", faction=player_faction)
    rel = plugin.relationship("npc", "pc")
    for dim in ("trust", "friendliness", "respect", "loyalty"):
        assert rel.value(dim) == pytest.approx(0.5 + shift)  # type: ignore[arg-type]
    assert (rel.fear, rel.romantic_interest) == (0.0, 0.0)
    assert rel.disposition == pytest.approx(2 * shift)
    assert (rel.version, rel.interaction_count, rel.has_met) == (0, 0, False)


def test_hostile_faction_starts_as_rival_without_an_event(village: Village) -> None:
    seen: list[Event] = []
    village.plugin.on(Event, seen.append)
    assert village.plugin.query.stage("brandt", "bram") == Stage.RIVAL  # guards vs thieves: -0.6
    village.plugin.record_interaction("brandt", "bram")
    assert village.plugin.query.stage("brandt", "bram") == Stage.RIVAL
    assert seen == []


def test_reading_does_not_create_a_relationship(village: Village) -> None:
    p = village.plugin
    p.query.trust("hilda", "alice")
    p.relationship("hilda", "alice")
    assert p.npc("hilda").relationships.by_player == {}


def test_adjust_clamps_and_bumps_the_version(village: Village) -> None:
    p = village.plugin
    rel = p.adjust_relationship("hilda", "alice", trust=5.0, fear=-2.0, romantic_interest=0.25)
    assert (rel.trust, rel.fear, rel.romantic_interest, rel.version) == (1.0, 0.0, 0.25, 1)
    with pytest.raises(AttributeError):
        rel.trust = 0.0  # type: ignore[misc]  # relationships are read-only: change them through the facade
    assert p.query.trust("hilda", "alice") == 1.0
    assert p.adjust_relationship("hilda", "alice", expected_version=1, trust=-0.5).version == 2


def test_bad_adjustments_change_nothing(village: Village) -> None:
    p = village.plugin
    p.adjust_relationship("hilda", "alice", trust=0.1)
    with pytest.raises(npc_memory.InvalidArgumentError, match="unknown relationship dimension 'charm'"):
        p.adjust_relationship("hilda", "alice", trust=0.1, charm=0.2)
    with pytest.raises(npc_memory.InvalidArgumentError, match="finite number"):
        p.adjust_relationship("hilda", "alice", trust=float("inf"))
    with pytest.raises(npc_memory.VersionConflictError, match="version 1, not 0"):
        p.adjust_relationship("hilda", "alice", expected_version=0, trust=0.1)
    rel = p.relationship("hilda", "alice")
    assert (rel.trust, rel.version) == (pytest.approx(0.7), 1)


def test_interactions_make_them_acquainted(village: Village) -> None:
    p = village.plugin
    assert not p.query.has_met("hilda", "alice")
    assert p.query.stage("hilda", "alice") == Stage.STRANGER
    p.clock.advance(10.0)
    p.record_interaction("hilda", "alice")
    p.clock.advance(10.0)
    rel = p.record_interaction("hilda", "alice")
    assert (rel.interaction_count, rel.first_met, rel.last_interaction) == (2, 10.0, 20.0)
    assert p.query.has_met("hilda", "alice")
    assert p.query.stage("hilda", "alice") == Stage.ACQUAINTANCE


def test_positive_stages_need_a_meeting(village: Village) -> None:
    p = village.plugin
    p.adjust_relationship("hilda", "alice", trust=0.4, friendliness=0.4, respect=0.4, loyalty=0.4)
    assert p.query.stage("hilda", "alice") == Stage.STRANGER
    p.record_interaction("hilda", "alice")
    assert p.query.stage("hilda", "alice") == Stage.TRUSTED_ALLY


def test_stage_ladder_with_hysteresis(village: Village) -> None:
    p = village.plugin
    p.record_interaction("hilda", "alice")  # disposition 0.2 (friendly faction)
    stages: list[tuple[Stage, Stage]] = []
    p.on(RelationshipStageChanged, lambda e: stages.append((e.old, e.new)))

    def set_disposition(target: float) -> None:
        # Equal trust/friendliness/respect/loyalty v give disposition 2v - 1.
        v = (target + 1) / 2
        rel = p.relationship("hilda", "alice")
        p.adjust_relationship("hilda", "alice", trust=v - rel.trust, friendliness=v - rel.friendliness,
                              respect=v - rel.respect, loyalty=v - rel.loyalty)

    set_disposition(0.31)
    assert p.query.stage("hilda", "alice") == Stage.FRIEND
    set_disposition(0.26)  # below 0.3 but within the 0.05 hysteresis: still a friend
    assert p.query.stage("hilda", "alice") == Stage.FRIEND
    set_disposition(0.24)
    assert p.query.stage("hilda", "alice") == Stage.ACQUAINTANCE
    set_disposition(0.75)  # straight up two stages
    assert p.query.stage("hilda", "alice") == Stage.TRUSTED_ALLY
    set_disposition(-0.3)
    assert p.query.stage("hilda", "alice") == Stage.RIVAL
    set_disposition(-0.27)
    assert p.query.stage("hilda", "alice") == Stage.RIVAL
    set_disposition(-0.75)
    assert p.query.stage("hilda", "alice") == Stage.ENEMY
    assert stages == [
        (Stage.ACQUAINTANCE, Stage.FRIEND),
        (Stage.FRIEND, Stage.ACQUAINTANCE),
        (Stage.ACQUAINTANCE, Stage.TRUSTED_ALLY),
        (Stage.TRUSTED_ALLY, Stage.RIVAL),
        (Stage.RIVAL, Stage.ENEMY),
    ]


def test_threshold_fires_once_per_crossing_and_rearms(village: Village) -> None:
    p = village.plugin
    hostile: list[Hostile] = []
    p.on(Hostile, hostile.append)
    p.adjust_relationship("hilda", "bram", trust=-0.25)  # 0.4 -> 0.15: crossed
    p.adjust_relationship("hilda", "bram", trust=-0.05)  # still below: no new event
    p.adjust_relationship("hilda", "bram", trust=+0.07)  # 0.17 < 0.2 + rearm 0.05: stays crossed
    p.adjust_relationship("hilda", "bram", trust=-0.05)
    assert len(hostile) == 1
    p.adjust_relationship("hilda", "bram", trust=+0.2)  # 0.32: re-armed
    p.adjust_relationship("hilda", "bram", trust=-0.2)  # 0.12: crossed again
    assert len(hostile) == 2
    event = hostile[0]
    assert (event.npc, event.player, event.npc_entity, event.player_entity) == (
        "hilda", "bram", village.hilda, village.bram)
    assert (event.threshold, event.dimension, event.direction, event.limit) == ("hostile", "trust", "below", 0.2)
    assert event.value == pytest.approx(0.15)


def test_crossing_state_lives_in_the_relationship(village: Village) -> None:
    p = village.plugin
    p.adjust_relationship("hilda", "alice", trust=0.25)  # 0.6 -> 0.85
    assert p.relationship("hilda", "alice").active_thresholds == ("trusted_ally",)


def test_subscribers_get_subclasses_in_subscription_order(village: Village) -> None:
    p = village.plugin
    log: list[str] = []
    p.on(RelationshipThresholdCrossed, lambda e: log.append(f"any:{e.threshold}"))
    p.on(TrustedAlly, lambda e: log.append("ally"))
    sub = p.on(BestFriend, lambda e: log.append("best"))
    p.on(Event, lambda e: log.append(type(e).__name__))
    p.record_interaction("hilda", "alice")
    log.clear()
    sub.cancel()
    sub.cancel()  # idempotent
    p.adjust_relationship("hilda", "alice", trust=0.3, friendliness=0.35)
    assert log == [
        "any:trusted_ally", "ally", "TrustedAlly",
        "any:best_friend", "BestFriend",
        "RelationshipStageChanged",
        "FactionReputationShift",  # Hilda is the only smith: Alice's standing with the smiths jumps
    ]


def test_a_failing_handler_does_not_stop_the_others_nor_undo_the_change(village: Village) -> None:
    p = village.plugin
    later: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError("handler bug")

    p.on(Hostile, broken)
    p.on(Hostile, later.append)
    with pytest.raises(npc_memory.EventHandlerError, match="handler bug") as info:
        p.adjust_relationship("hilda", "bram", trust=-0.3)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert len(later) == 1
    assert p.query.trust("hilda", "bram") == pytest.approx(0.1)


def test_subscribe_rejects_non_events(plugin: npc_memory.MemoryPlugin) -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match=r"subclass of npc_memory\.events\.Event"):
        plugin.on(int, print)  # type: ignore[type-var]


def test_memory_tags_move_the_relationship_by_the_pack_rules(village: Village) -> None:
    p = village.plugin
    before = p.relationship("hilda", "alice")
    p.remember("hilda", "alice", "Alice fought the bandits with me", tags=["heroic", "combat"],
               importance=0.8, intensity=0.6, valence="positive", affect_relationship=True)
    after = p.relationship("hilda", "alice")
    factor = 0.8 * (0.5 + 0.5 * 0.6)
    assert after.trust - before.trust == pytest.approx(0.06 * factor + 0.01)
    assert after.respect - before.respect == pytest.approx((0.05 + 0.04) * factor)
    assert after.fear == pytest.approx(0.0)  # -0.02 * factor clamped at 0
    assert after.friendliness - before.friendliness == pytest.approx(0.02)
    assert after.version == 1  # one update for the whole memory
    untouched = p.remember("hilda", "alice", "Alice chatted about the weather", tags=["smalltalk"],
                           affect_relationship=True)
    assert untouched and p.relationship("hilda", "alice").version == 1


def test_pack_tag_rules_extend_the_defaults(village: Village) -> None:
    p = village.plugin
    p.remember("brandt", "bram", "Bram stole a purse", tags=["theft"], importance=1.0, intensity=1.0,
               affect_relationship=True)
    assert p.query.trust("brandt", "bram") == pytest.approx(0.2 - 0.10)
    with pytest.raises(npc_memory.InvalidArgumentError, match="needs a player"):
        p.remember("brandt", None, "a theft", tags=["theft"], affect_relationship=True)


def test_thresholds_stand_crossed_until_rearmed_on_any_record() -> None:
    """Thresholds after a change, against the rule: one not standing crossed is crossed
    once beyond its level, one standing crossed stays so until its dimension is back
    ``threshold_rearm`` on the near side; on random records (values on and around every
    level, any thresholds standing crossed before)."""
    import random

    from npc_memory.components.relationship import DIMENSIONS, Relationship
    from npc_memory.rules import relationships as rel_rules

    rules = npc_memory.load_pack("village").relationships
    thresholds, rearm = rules.thresholds, rules.threshold_rearm
    levels = sorted({v for t in thresholds for v in (t.value, t.value + rearm, t.value - rearm)} | {0.0, 1.0})

    def expected(rel: Relationship) -> tuple[tuple[str, ...], tuple[str, ...]]:
        active, crossed = [], []
        for t in thresholds:
            value = rel.value(t.dimension)
            rearmed = value >= t.value + rearm if t.direction == "below" else value <= t.value - rearm
            if t.name in rel.active_thresholds:
                if not rearmed:
                    active.append(t.name)
            elif rel_rules.is_beyond(t, rel):
                active.append(t.name)
                crossed.append(t.name)
        return tuple(active), tuple(crossed)

    rng = random.Random(7)
    names = [t.name for t in thresholds]
    for _ in range(5000):
        values = {d: rng.choice([rng.random(), rng.choice(levels)]) for d in DIMENSIONS}
        standing = tuple(n for n in names if rng.random() < 0.3)
        rel = Relationship(**values, active_thresholds=standing)
        refreshed, change = rel_rules.refresh(rel, rules)
        assert (refreshed.active_thresholds, tuple(t.name for t in change.crossed)) == expected(rel)

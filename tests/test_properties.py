"""Hypothesis properties: clamping, caps, locked memories, stage hysteresis, and
threshold events once per crossing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory import Stage
from npc_memory.components import DIMENSIONS
from npc_memory.content import parse_pack
from npc_memory.content.schema import StageLadder
from npc_memory.events import Hostile
from npc_memory.rules.relationships import _LEVEL, next_stage

from .conftest import reset_esper

SMALL_CAPS = parse_pack('[pack]\nname = "small"\n[memory]\nepisodic_cap = 5\nsemantic_cap = 3\nprocedural_cap = 2\n')

deltas = st.dictionaries(st.sampled_from(DIMENSIONS), st.floats(-3.0, 3.0, allow_nan=False), min_size=1)


def fresh_plugin(pack: Any = "village") -> npc_memory.MemoryPlugin:
    reset_esper()
    plugin = npc_memory.install(world="prop", pack=pack)
    plugin.add_npc(key="npc", archetype=None)
    plugin.add_player(key="pc")
    return plugin


@settings(max_examples=60, deadline=None)
@given(st.lists(deltas, min_size=1, max_size=30))
def test_dimensions_stay_clamped(changes: list[dict[str, float]]) -> None:
    plugin = fresh_plugin()
    for change in changes:
        rel = plugin.adjust_relationship("npc", "pc", **change)
        assert all(0.0 <= rel.value(d) <= 1.0 for d in DIMENSIONS)
        assert -1.0 <= rel.disposition <= 1.0
    assert plugin.relationship("npc", "pc").version == len(changes)


memory_op = st.tuples(
    st.sampled_from(["episodic", "semantic", "procedural"]),
    st.floats(0.0, 1.0),  # importance
    st.floats(0.0, 1.0),  # confidence
    st.booleans(),  # locked
    st.floats(0.0, 5 * 86_400.0),  # game time passing before it
)


@settings(max_examples=80, deadline=None)
@given(st.lists(memory_op, min_size=1, max_size=40))
def test_caps_hold_and_locked_memories_are_never_evicted(ops: list[tuple[str, float, float, bool, float]]) -> None:
    plugin = fresh_plugin(SMALL_CAPS)
    caps = {"episodic": 5, "semantic": 3, "procedural": 2}
    locked_ids: set[str] = set()
    for i, (kind, importance, confidence, locked, wait) in enumerate(ops):
        plugin.clock.advance(wait)
        held = plugin.memories("npc", "pc", kind=kind)  # type: ignore[arg-type]
        all_locked = len(held) == caps[kind] and all(m.locked for m in held)
        try:
            memory = plugin.remember("npc", "pc", f"memory {i}", kind=kind, importance=importance,  # type: ignore[arg-type]
                                     confidence=confidence, locked=locked)
        except npc_memory.MemoryCapacityError:
            assert all_locked
            continue
        assert not all_locked
        if locked:
            locked_ids.add(memory.id)
        for k, cap in caps.items():
            assert len(plugin.memories("npc", "pc", kind=k)) <= cap  # type: ignore[arg-type]
        assert locked_ids <= {m.id for m in plugin.memories("npc", "pc")}


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(list(Stage)),
    st.floats(-1.0, 1.0),
    st.floats(0.0, 0.0499),
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=20),
    st.booleans(),
)
def test_stage_never_flickers_within_the_hysteresis_band(
    start: Stage, low: float, width: float, positions: list[float], met: bool
) -> None:
    ladder = StageLadder()  # hysteresis 0.05
    stage = start
    levels = []
    for position in positions:
        stage = next_stage(stage, low + width * position, met, ladder)
        levels.append(_LEVEL[stage])
    rest = levels[1:]
    # After the first step settles, scores that move less than the hysteresis never reverse
    # a transition: the level sequence is monotonic.
    assert rest == sorted(rest) or rest == sorted(rest, reverse=True)
    assert next_stage(stage, low + width * positions[-1], met, ladder) == stage  # idempotent


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(Stage)), st.floats(-1.0, 1.0), st.booleans())
def test_stage_matches_the_score(start: Stage, score: float, met: bool) -> None:
    ladder = StageLadder()
    stage = next_stage(start, score, met, ladder)
    level, h = _LEVEL[stage], ladder.hysteresis
    enter = {1: ladder.friend, 2: ladder.close_friend, 3: ladder.trusted_ally, -1: ladder.rival, -2: ladder.enemy}
    if level > 0:
        assert met and score >= enter[level] - h
    if 0 < level < 3 or (level == 0 and met):
        assert score < enter[level + 1]
    if level < 0:
        assert score <= enter[level] + h
    if level > -2 and level <= 0:
        assert score > enter[level - 1]
    if level == 0:
        assert stage == (Stage.ACQUAINTANCE if met else Stage.STRANGER)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_hostile_fires_exactly_once_per_crossing(trust_values: list[float]) -> None:
    plugin = fresh_plugin()
    fired: list[Hostile] = []
    plugin.on(Hostile, fired.append)
    limit, rearm = 0.2, plugin.pack.relationships.threshold_rearm
    armed, expected = True, 0  # trust starts at 0.5
    for value in trust_values:
        current = plugin.query.trust("npc", "pc")
        plugin.adjust_relationship("npc", "pc", trust=value - current)
        value = plugin.query.trust("npc", "pc")
        if armed and value < limit:
            armed, expected = False, expected + 1
        elif not armed and value >= limit + rearm:
            armed = True
    assert len(fired) == expected
    assert all(event.value < limit for event in fired)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(-1e7, 1e7), st.integers(0, 1000), st.booleans()),
        max_size=20,
    ),
    st.floats(0, 1e8),
)
def test_batch_salience_equals_salience(records: list[tuple[float, float, float, int, bool]], now: float) -> None:
    from npc_memory.components import EpisodicMemory
    from npc_memory.rules.memory import salience, saliences

    memories = [
        EpisodicMemory(id=f"m{i}", content="x", importance=imp, intensity=inten, last_accessed=last,
                       access_count=count, locked=locked)
        for i, (imp, inten, last, count, locked) in enumerate(records)
    ]
    assert saliences(memories, now, 30.0, 0.1) == [salience(m, now, 30.0, 0.1) for m in memories]

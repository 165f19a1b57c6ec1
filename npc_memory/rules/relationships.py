"""How relationships start, change, move between stages and cross thresholds.

All functions here are pure rules over a :class:`Relationship` (frozen: a change
returns a new record) and the pack's :class:`RelationshipRules`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from npc_memory.components.memory import Valence
from npc_memory.components.relationship import DIMENSIONS, Dimension, Relationship, Stage
from npc_memory.content.schema import (
    DispositionWeights,
    Pack,
    RelationshipRules,
    StageLadder,
    Threshold,
)

DISPOSITION_DIMENSIONS: tuple[Dimension, ...] = ("trust", "friendliness", "respect", "loyalty")
"""The dimensions that faction attitude shifts and disposition is built from."""

_LEVEL: dict[Stage, int] = {
    Stage.ENEMY: -2,
    Stage.RIVAL: -1,
    Stage.STRANGER: 0,
    Stage.ACQUAINTANCE: 0,
    Stage.FRIEND: 1,
    Stage.CLOSE_FRIEND: 2,
    Stage.TRUSTED_ALLY: 3,
}
_POSITIVE = (Stage.FRIEND, Stage.CLOSE_FRIEND, Stage.TRUSTED_ALLY)


class RelationshipChange(msgspec.Struct, frozen=True, kw_only=True):
    """What one update did: the thresholds newly crossed and the stage before/after."""

    crossed: tuple[Threshold, ...]
    old_stage: Stage
    new_stage: Stage


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    """``value`` limited to [low, high]."""
    return low if value < low else high if value > high else value


def score(rel: Relationship, weights: DispositionWeights) -> float:
    """Disposition before clamping: linear in the dimensions, so while every dimension
    drifts towards a baseline by the same factor, so does the score."""
    return (
        weights.trust * (2.0 * rel.trust - 1.0)
        + weights.friendliness * (2.0 * rel.friendliness - 1.0)
        + weights.respect * (2.0 * rel.respect - 1.0)
        + weights.loyalty * (2.0 * rel.loyalty - 1.0)
        - weights.fear * rel.fear
    )


def disposition(rel: Relationship, weights: DispositionWeights) -> float:
    """Overall regard in [-1, 1]: 0 for a neutral stranger, 1 adoring, -1 hating."""
    return clamp(score(rel, weights), -1.0, 1.0)


class DriftMarks(msgspec.Struct, frozen=True, kw_only=True):
    """Where drift can change something, from the pack's rules: per dimension, the
    levels (ascending) at which a threshold is crossed or rearmed; the disposition
    levels (ascending) at which a stage may be entered or left (entry levels and
    ``hysteresis`` either side)."""

    levels: tuple[tuple[Dimension, tuple[float, ...]], ...]
    stages: tuple[float, ...]
    weights: DispositionWeights


def drift_marks(rules: RelationshipRules) -> DriftMarks:
    """The :class:`DriftMarks` of ``rules``."""
    rearm, ladder = rules.threshold_rearm, rules.stages
    levels: dict[Dimension, set[float]] = {}
    for t in rules.thresholds:
        levels.setdefault(t.dimension, set()).update(
            (t.value, t.value + rearm if t.direction == "below" else t.value - rearm)
        )
    entries = (ladder.enemy, ladder.rival, ladder.friend, ladder.close_friend, ladder.trusted_ally)
    h = ladder.hysteresis
    stages = tuple(sorted({level + offset for level in entries for offset in (-h, 0.0, h)}))
    return DriftMarks(
        levels=tuple((dim, tuple(sorted(at))) for dim, at in levels.items()),
        stages=stages,
        weights=rules.disposition_weights,
    )


def next_stage(current: Stage, score: float, met: bool, ladder: StageLadder) -> Stage:
    """The stage after ``current`` given disposition ``score``, with hysteresis.

    A stage is entered when disposition reaches its entry level and left only once
    disposition is ``ladder.hysteresis`` past it. Friend and above need a meeting.
    """
    enter = {
        1: ladder.friend,
        2: ladder.close_friend,
        3: ladder.trusted_ally,
        -1: ladder.rival,
        -2: ladder.enemy,
    }
    h = ladder.hysteresis
    level = _LEVEL[current]
    if level > 0 and not met:
        level = 0
    while True:
        rises = (0 <= level < 3 and met and score >= enter[level + 1]) or (
            level < 0 and score > enter[level] + h
        )
        falls = (level > 0 and score < enter[level] - h) or (
            -2 < level <= 0 and score <= enter[level - 1]
        )
        if rises:
            level += 1
        elif falls:
            level -= 1
        else:
            break
    if level == 0:
        return Stage.ACQUAINTANCE if met else Stage.STRANGER
    return {-2: Stage.ENEMY, -1: Stage.RIVAL}.get(level) or _POSITIVE[level - 1]


def initial_relationship(
    pack: Pack, npc_faction: str | None, player_faction: str | None
) -> Relationship:
    """A new relationship: the pack's baseline shifted by faction attitude on the
    disposition dimensions. Thresholds already beyond are marked crossed silently."""
    rules = pack.relationships
    shift = rules.attitude_modifiers[pack.attitude(npc_faction, player_faction)]
    values: dict[str, Any] = {
        dim: clamp(float(getattr(rules.baseline, dim)) + shift)
        if dim in DISPOSITION_DIMENSIONS
        else float(getattr(rules.baseline, dim))
        for dim in DIMENSIONS
    }
    rel = Relationship(**values)
    score = disposition(rel, rules.disposition_weights)
    rel = msgspec.structs.replace(
        rel, disposition=score, stage=next_stage(Stage.STRANGER, score, False, rules.stages)
    )
    return msgspec.structs.replace(
        rel, active_thresholds=tuple(t.name for t in rules.thresholds if is_beyond(t, rel))
    )


def apply_deltas(
    rel: Relationship, deltas: Mapping[Dimension, float], rules: RelationshipRules, **changes: Any
) -> tuple[Relationship, RelationshipChange]:
    """``rel`` with ``deltas`` added (each dimension clamped to [0, 1]) and any other
    field ``changes``, its disposition, stage and thresholds updated and its version
    bumped; and what changed."""
    for dim, delta in deltas.items():
        changes[dim] = clamp(getattr(rel, dim) + delta)
    return refresh(msgspec.structs.replace(rel, **changes) if changes else rel, rules)


def refresh(rel: Relationship, rules: RelationshipRules) -> tuple[Relationship, RelationshipChange]:
    """``rel`` with disposition, stage and thresholds recomputed after a change and its
    version bumped; and what changed."""
    old_stage = rel.stage
    score = disposition(rel, rules.disposition_weights)
    stage = next_stage(old_stage, score, rel.has_met, rules.stages)
    active, crossed = _update_thresholds(rel, rules.thresholds, rules.threshold_rearm)
    rel = msgspec.structs.replace(
        rel, version=rel.version + 1, disposition=score, stage=stage, active_thresholds=active
    )
    return rel, RelationshipChange(crossed=crossed, old_stage=old_stage, new_stage=stage)


def memory_deltas(
    tags: Iterable[str],
    importance: float,
    intensity: float,
    valence: Valence,
    rules: RelationshipRules,
    scale: float = 1.0,
) -> dict[Dimension, float]:
    """Dimension deltas a memory causes: Σ tag rule × importance × (0.5 + 0.5 ×
    intensity), plus the valence adjustment; everything multiplied by ``scale``."""
    factor = importance * (0.5 + 0.5 * intensity)
    deltas: dict[Dimension, float] = {}
    for tag in tags:
        for dim, base in rules.tag_rules.get(tag, {}).items():
            deltas[dim] = deltas.get(dim, 0.0) + base * factor
    for dim, base in rules.valence_adjustments.get(valence, {}).items():
        deltas[dim] = deltas.get(dim, 0.0) + base
    return {dim: d * scale for dim, d in deltas.items() if d != 0.0 and math.isfinite(d)}


def talk_deltas(
    deltas: Mapping[Dimension, float],
    rel: Relationship,
    spent: Mapping[Dimension, float],
    repeats: int,
    claim: bool,
    rules: RelationshipRules,
) -> dict[Dimension, float]:
    """What ``deltas`` from a conversation may do to ``rel``: scaled by
    ``talk_repeat_factor`` ** ``repeats``, within what is left of ``talk_daily_cap``
    once ``spent`` (|change| so far today, per dimension). A claim's gains (a boast)
    count ``claim_weight`` and never lift a dimension above ``claim_ceiling``; its
    losses (a confession) count in full."""
    scale = rules.talk_repeat_factor**repeats
    out: dict[Dimension, float] = {}
    for dim, delta in deltas.items():
        room = max(0.0, rules.talk_daily_cap - spent.get(dim, 0.0))
        boast = claim and delta > 0.0
        value = clamp(delta * scale * (rules.claim_weight if boast else 1.0), -room, room)
        if boast:
            value = min(value, max(0.0, rules.claim_ceiling - rel.value(dim)))
        if value != 0.0:
            out[dim] = value
    return out


def is_beyond(threshold: Threshold, rel: Relationship) -> bool:
    """Whether ``rel`` is past ``threshold`` (below or above its level)."""
    value = rel.value(threshold.dimension)
    return value < threshold.value if threshold.direction == "below" else value > threshold.value


def _update_thresholds(
    rel: Relationship, thresholds: tuple[Threshold, ...], rearm: float
) -> tuple[tuple[str, ...], tuple[Threshold, ...]]:
    """The names of the thresholds standing crossed for ``rel`` (in ``thresholds``
    order), and those newly crossed. One that did not stand crossed is crossed once
    ``rel`` is beyond it (:func:`is_beyond`, inlined: this runs on every write); one
    that stood crossed stays so until its dimension is back ``rearm`` or more on the
    near side of its level."""
    was_active = rel.active_thresholds
    active: list[str] = []
    crossed: list[Threshold] = []
    for threshold in thresholds:
        name, level = threshold.name, threshold.value
        value = getattr(rel, threshold.dimension)
        below = threshold.direction == "below"
        if name in was_active:
            if not (value >= level + rearm if below else value <= level - rearm):
                active.append(name)
        elif value < level if below else value > level:
            active.append(name)
            crossed.append(threshold)
    return tuple(active), tuple(crossed)

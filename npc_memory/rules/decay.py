"""Forgetting: faded episodes, caps, and relationships drifting back to their baseline."""

from __future__ import annotations

import bisect
import math
from typing import TypeVar

import msgspec

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components.memory import (
    EpisodicMemory,
    Memory,
    MemoryBank,
    MemoryKind,
    PairMemories,
    ProceduralMemory,
    SemanticMemory,
)
from npc_memory.components.relationship import DIMENSIONS, Relationship, Relationships
from npc_memory.content.schema import MemoryRules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.memory import cap_for, eviction_key, salience, saliences


def forget_faded(pair: PairMemories, rules: MemoryRules, now: float) -> list[Memory]:
    """Remove the unlocked episodic memories whose salience fell below ``forget_below``."""
    span, retention, floor = rules.recency_days, rules.intensity_retention, rules.forget_below
    faded: list[Memory] = [
        m for m in pair.episodic if not m.locked and salience(m, now, span, retention) < floor
    ]
    if faded:
        gone = {m.id for m in faded}
        pair.episodic[:] = [m for m in pair.episodic if m.id not in gone]
    return faded


def enforce_caps(pair: PairMemories, rules: MemoryRules, now: float) -> list[Memory]:
    """Evict until every kind is within its cap (locked memories stay, even over it)."""
    return [
        *_evict(pair.episodic, "episodic", rules, now),
        *_evict(pair.semantic, "semantic", rules, now),
        *_evict(pair.procedural, "procedural", rules, now),
    ]


_M = TypeVar("_M", EpisodicMemory, SemanticMemory, ProceduralMemory)


def _evict(memories: list[_M], kind: MemoryKind, rules: MemoryRules, now: float) -> list[_M]:
    key = eviction_key(kind, now, rules)
    evicted: list[_M] = []
    while len(memories) > cap_for(kind, rules):
        unlocked = [m for m in memories if not m.locked]
        if not unlocked:
            break
        victim = min(unlocked, key=key)
        memories.remove(victim)
        evicted.append(victim)
    return evicted


def over_npc_cap(bank: MemoryBank, rules: MemoryRules, now: float) -> list[Memory]:
    """Evict the least salient unlocked episodic memories of an NPC holding more than
    ``memories_per_npc`` in all, down to 90 % of it; returns them."""
    total = bank.count()
    if total <= rules.memories_per_npc:
        return []
    pairs = [bank.world, *bank.players.values()]
    episodes = [(m, pair) for pair in pairs for m in pair.episodic if not m.locked]
    scores = saliences([m for m, _ in episodes], now, rules.recency_days, rules.intensity_retention)
    excess = total - int(rules.memories_per_npc * 0.9)
    ranked = sorted(range(len(episodes)), key=lambda i: (scores[i], episodes[i][0].created))[:excess]
    victims = {id(episodes[i][0]) for i in ranked}
    for pair in pairs:
        pair.episodic[:] = [m for m in pair.episodic if id(m) not in victims]
    return [episodes[i][0] for i in ranked]


def players_to_forget(
    bank: MemoryBank, relationships: Relationships, rules: MemoryRules
) -> list[str]:
    """The players an NPC dealt with longest ago, beyond ``players_per_npc`` (down to
    90 % of it): last interaction, else the newest memory of them."""
    players = set(bank.players) | set(relationships.by_player)
    if len(players) <= rules.players_per_npc:
        return []

    def last_dealt(player: str) -> tuple[float, str]:
        rel = relationships.by_player.get(player)
        pair = bank.players.get(player)
        newest = max((m.created for m in pair.all()), default=0.0) if pair is not None else 0.0
        return (max(newest, (rel.last_interaction or 0.0) if rel is not None else 0.0), player)

    keep = int(rules.players_per_npc * 0.9)
    return sorted(players, key=last_dealt)[: len(players) - keep]


def hard_player_bound(players_per_npc: int) -> int:
    """The most players an NPC holds (relationships or memories) between DecaySystem's
    visits: ``players_per_npc`` plus a quarter. Past it the NPC is held to the cap when
    it takes on the next player, wherever that happens (a facade call or a tick)."""
    return players_per_npc + max(1, players_per_npc // 4)


def drift_start(rel: Relationship) -> float:
    """When ``rel``'s stored values were last set (game seconds): its last drift or
    interaction, whichever is later."""
    return max(rel.drifted_at, rel.last_interaction or 0.0)


def drifted(rel: Relationship, baseline: Relationship, half_life_days: float, now: float) -> Relationship:
    """``rel`` as it stands at ``now``, every dimension moved towards ``baseline`` for
    the game time since :func:`drift_start`: value = base + (value − base) ×
    0.5^(elapsed days / half-life), with ``drifted_at`` set to ``now`` (disposition,
    stage and thresholds are left for the caller to refresh). ``rel`` itself when no
    time passed or nothing moved.

    The rule is a closed form in elapsed time, so drifting over a span in one step or
    in several steps gives the same values (up to floating-point rounding).
    """
    elapsed = now - drift_start(rel)
    if elapsed <= 0.0:
        return rel
    factor = 0.5 ** (elapsed / (half_life_days * SECONDS_PER_DAY))
    moved: dict[str, float] = {}
    for dim in DIMENSIONS:
        value, base = getattr(rel, dim), getattr(baseline, dim)
        new = base + (value - base) * factor
        if new != value:
            moved[dim] = new
    return msgspec.structs.replace(rel, drifted_at=now, **moved) if moved else rel


def time_to_reach(value: float, base: float, level: float, half_life_days: float) -> float:
    """Game seconds of drift after which a value drifting from ``value`` towards
    ``base`` reaches ``level`` (0 when it starts on it); infinite when it never does."""
    if not (value <= level < base or base < level <= value):
        return math.inf
    return half_life_days * SECONDS_PER_DAY * math.log2((value - base) / (level - base))


DRIFT_MARGIN = 1.0
"""Game seconds added to a computed crossing time, so the value is past the level
(not on it, give or take rounding) when the crossing is applied."""


def first_level(levels: tuple[float, ...], value: float, base: float) -> float | None:
    """Of ``levels`` (ascending), the first a value moving from ``value`` towards
    ``base`` reaches (it may start on it), if any."""
    if base > value:
        at = bisect.bisect_left(levels, value)
        return levels[at] if at < len(levels) and levels[at] < base else None
    at = bisect.bisect_right(levels, value) - 1
    return levels[at] if at >= 0 and levels[at] > base else None


def next_drift_mark(
    rel: Relationship,
    baseline: Relationship,
    half_life_days: float,
    marks: rel_rules.DriftMarks,
    anchor: float | None = None,
    tolerance: float = 0.0,
) -> float:
    """The game time at which ``rel``, left alone, first drifts onto one of ``marks``
    (a threshold crossed or rearmed, a stage boundary) or, with an ``anchor``, to
    disposition ``tolerance`` away from it; infinite when it never does. Conservative:
    at that time something may, not must, have changed."""
    soonest = math.inf
    for dim, levels in marks.levels:
        value, base = getattr(rel, dim), getattr(baseline, dim)
        level = first_level(levels, value, base)
        if level is not None:
            soonest = min(soonest, time_to_reach(value, base, level, half_life_days))
    now_score, base_score = rel_rules.score(rel, marks.weights), rel_rules.score(baseline, marks.weights)
    level = first_level(marks.stages, now_score, base_score)
    if level is not None:
        soonest = min(soonest, time_to_reach(now_score, base_score, level, half_life_days))
    if anchor is not None:
        level = anchor - tolerance if base_score < anchor else anchor + tolerance
        soonest = min(soonest, time_to_reach(now_score, base_score, level, half_life_days))
    return drift_start(rel) + soonest + DRIFT_MARGIN

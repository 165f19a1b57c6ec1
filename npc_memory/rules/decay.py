"""Forgetting: faded episodes, caps, and relationships drifting back to their baseline."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components.memory import (
    EpisodicMemory,
    Memory,
    MemoryKind,
    PairMemories,
    ProceduralMemory,
    SemanticMemory,
)
from npc_memory.components.relationship import DIMENSIONS, Relationship
from npc_memory.content.schema import MemoryRules
from npc_memory.rules.memory import cap_for, eviction_key, salience


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


def drift(
    rel: Relationship, baseline: Relationship, half_life_days: float, now: float
) -> Relationship | None:
    """``rel`` moved towards ``baseline`` for the game time since the last interaction or
    drift: value = base + (value − base) × 0.5^(days / half-life), with ``drifted_at``
    set to ``now``; ``None`` when nothing moved (then nothing needs writing)."""
    start = max(rel.drifted_at, rel.last_interaction or 0.0)
    elapsed = now - start
    if elapsed <= 0.0:
        return None
    factor = 0.5 ** (elapsed / (half_life_days * SECONDS_PER_DAY))
    moved: dict[str, float] = {}
    for dim in DIMENSIONS:
        value, base = rel.value(dim), baseline.value(dim)
        new = base + (value - base) * factor
        if abs(new - value) > 1e-12:
            moved[dim] = new
    return msgspec.structs.replace(rel, drifted_at=now, **moved) if moved else None

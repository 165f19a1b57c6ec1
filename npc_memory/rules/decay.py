"""Forgetting: faded episodes, caps, and relationships drifting back to their baseline."""

from __future__ import annotations

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

"""Salience, ranking and caps of memories.

salience = importance × recency × access_boost, where recency = exp(−age_days / R')
with age measured from the last access in game days, R' = R × (1 + k × intensity)
(R = ``recency_days``, 30 by default; k = ``intensity_retention``, at most 0.1) and
access_boost = min(1 + 0.1·ln(1 + access_count), 1.5); locked memories always have
salience 1.0. Salience is in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

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
from npc_memory.content.schema import MemoryRules
from npc_memory.errors import MemoryCapacityError

ACCESS_BOOST_CAP = 1.5

_M = TypeVar("_M", EpisodicMemory, SemanticMemory, ProceduralMemory)


def access_boost(access_count: int) -> float:
    """How much repeated recall strengthens a memory: in [1, 1.5]."""
    return min(1.0 + 0.1 * math.log1p(access_count), ACCESS_BOOST_CAP)


def salience(
    memory: Memory, now: float, recency_days: float = 30.0, intensity_retention: float = 0.0
) -> float:
    """Salience of ``memory`` at game time ``now`` (game seconds), in [0, 1]."""
    if memory.locked:
        return 1.0
    value = memory.importance
    age = now - memory.last_accessed
    if age > 0.0:
        span = recency_days * (1.0 + intensity_retention * memory.intensity)
        value *= math.exp(age / (-SECONDS_PER_DAY * span))
    if memory.access_count:
        value *= access_boost(memory.access_count)
    return value if value < 1.0 else 1.0


def saliences(
    memories: Sequence[Memory], now: float, recency_days: float = 30.0, intensity_retention: float = 0.0
) -> list[float]:
    """:func:`salience` of each of ``memories`` (the same numbers, computed in one pass)."""
    exp, log1p = math.exp, math.log1p
    out = []
    for m in memories:
        if m.locked:
            out.append(1.0)
            continue
        value = m.importance
        age = now - m.last_accessed
        if age > 0.0:  # the very expression of salience(), so the numbers are identical
            span = recency_days * (1.0 + intensity_retention * m.intensity)
            value *= exp(age / (-SECONDS_PER_DAY * span))
        if m.access_count:
            value *= min(1.0 + 0.1 * log1p(m.access_count), ACCESS_BOOST_CAP)
        out.append(value if value < 1.0 else 1.0)
    return out


def rank_by_salience(
    memories: Sequence[Memory], now: float, recency_days: float = 30.0, intensity_retention: float = 0.0
) -> list[Memory]:
    """``memories`` ordered by salience, highest first (ties: newest first)."""
    values = saliences(memories, now, recency_days, intensity_retention)
    scored = [(value, m.created, i) for i, (value, m) in enumerate(zip(values, memories, strict=True))]
    scored.sort(reverse=True)
    return [memories[i] for _, _, i in scored]


def cap_for(kind: MemoryKind, rules: MemoryRules) -> int:
    """The per-pair cap of ``kind``."""
    if kind == "episodic":
        return rules.episodic_cap
    if kind == "semantic":
        return rules.semantic_cap
    return rules.procedural_cap


def insert(
    pair: PairMemories, memory: Memory, rules: MemoryRules, now: float
) -> list[Memory]:
    """Add ``memory`` to ``pair``, evicting to keep the kind within its cap.

    Eviction takes the lowest unlocked memory of the kind: lowest salience for
    episodic, lowest confidence for semantic, lowest reinforcement for procedural
    (ties: the oldest). The new memory competes too, so a memory weaker than every
    unlocked one at the cap is not kept. Returns the evicted memories (possibly
    ``[memory]`` itself). Raises :class:`MemoryCapacityError`, changing nothing, when
    every memory of the kind at the cap is locked.
    """
    if isinstance(memory, EpisodicMemory):
        return _insert(pair.episodic, memory, rules.episodic_cap, _salience_key(now, rules))
    if isinstance(memory, SemanticMemory):
        return _insert(pair.semantic, memory, rules.semantic_cap, _confidence_key)
    return _insert(pair.procedural, memory, rules.procedural_cap, _reinforcement_key)


def insert_numbered(
    bank: MemoryBank, pair: PairMemories, memory: Memory, rules: MemoryRules, now: float
) -> list[Memory]:
    """:func:`insert` a memory numbered ``bank.next_id``, counting the id as used
    first: the store's writer may copy the bank between any two statements of the game
    thread, and a copy that held the memory beside the old counter would hand its id
    out again (a store refuses such a document). Changes nothing when :func:`insert`
    refuses the memory (:class:`MemoryCapacityError`, raised before anything changes)."""
    bank.next_id += 1
    try:
        return insert(pair, memory, rules, now)
    except MemoryCapacityError:
        bank.next_id -= 1
        raise


def _insert(
    memories: list[_M], memory: _M, cap: int, key: Callable[[Memory], tuple[float, float]]
) -> list[Memory]:
    if len(memories) < cap:
        memories.append(memory)
        return []
    candidates = [m for m in memories if not m.locked]
    if not candidates:
        raise MemoryCapacityError(
            f"all {len(memories)} slots for {type(memory).__name__} of this pair hold "
            "locked memories; unlock one or raise the cap in the content pack"
        )
    if not memory.locked:
        candidates.append(memory)
    victim = min(candidates, key=key)
    if victim is memory:
        return [memory]
    memories.remove(victim)
    memories.append(memory)
    return [victim]


def eviction_key(kind: MemoryKind, now: float, rules: MemoryRules) -> Callable[[Memory], tuple[float, float]]:
    """The ordering eviction uses for ``kind`` (lowest goes first)."""
    if kind == "episodic":
        return _salience_key(now, rules)
    return _confidence_key if kind == "semantic" else _reinforcement_key


def _salience_key(now: float, rules: MemoryRules) -> Callable[[Memory], tuple[float, float]]:
    recency_days, retention = rules.recency_days, rules.intensity_retention
    return lambda m: (salience(m, now, recency_days, retention), m.created)


def _confidence_key(memory: Memory) -> tuple[float, float]:
    return (memory.confidence, memory.created)


def _reinforcement_key(memory: Memory) -> tuple[float, float]:
    reinforcement = memory.reinforcement if isinstance(memory, ProceduralMemory) else 0
    return (float(reinforcement), memory.created)

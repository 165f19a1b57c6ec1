"""plugin.query: typed answers for game logic."""

from __future__ import annotations

import pytest

import npc_memory
from npc_memory import Stage

from .conftest import Village


def test_relationship_questions(village: Village) -> None:
    q = village.plugin.query
    village.plugin.adjust_relationship("hilda", "alice", fear=0.4, trust=0.1)
    assert q.trust("hilda", "alice") == pytest.approx(0.7)
    assert q.dimension(village.hilda, village.alice, "fear") == pytest.approx(0.4)
    assert q.disposition("hilda", "alice") == pytest.approx(
        0.35 * 0.4 + 0.35 * 0.2 + 0.15 * 0.2 + 0.15 * 0.2 - 0.25 * 0.4
    )
    assert q.stage("hilda", "alice") == Stage.STRANGER
    assert q.has_met("hilda", "alice") is False
    with pytest.raises(npc_memory.InvalidArgumentError, match="charm"):
        q.dimension("hilda", "alice", "charm")  # type: ignore[arg-type]


def test_memory_questions(village: Village) -> None:
    p = village.plugin
    q = p.query
    p.remember("hilda", "alice", "Alice fought bandits", tags=["combat", "heroic", "bandits"], importance=0.8)
    p.remember("hilda", "alice", "Alice sparred in the yard", tags=["combat"], importance=0.3)
    p.remember("hilda", None, "Bandits burned the mill", tags=["bandits"], importance=0.9)
    assert q.count_memories_by_tag("hilda", "alice", "combat") == 2
    assert q.count_memories_by_tag("hilda", "alice", "COMBAT") == 2
    assert q.count_memories_by_tag("hilda", None, "bandits") == 1
    assert q.count_memories_by_tag("brandt", "alice", "combat") == 0
    assert q.has_memory_matching("hilda", "alice", ["combat", "heroic"], min_importance=0.6)
    assert not q.has_memory_matching("hilda", "alice", ["combat", "heroic"], min_importance=0.9)
    assert not q.has_memory_matching("hilda", "alice", ["combat", "gift"])
    assert q.has_memory_matching("hilda", "alice", [])  # no tags: any memory at all
    assert not q.has_memory_matching("hilda", "bram", [])
    with pytest.raises(npc_memory.InvalidArgumentError, match="not the string"):
        q.has_memory_matching("hilda", "alice", "combat")

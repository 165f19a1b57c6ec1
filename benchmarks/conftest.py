"""Benchmark fixtures: a pair of one NPC and one player filled to the memory caps."""

from __future__ import annotations

from collections.abc import Iterator

import esper
import pytest

import npc_memory
from npc_memory import SECONDS_PER_DAY
from npc_memory.installation import _INSTALLED


def uninstall_all() -> None:
    for name in list(_INSTALLED):
        npc_memory.uninstall(name)
    esper.switch_world("default")


@pytest.fixture
def cleanup() -> Iterator[None]:
    """Uninstall every plugin a benchmark installed and return to the default world."""
    yield
    uninstall_all()


@pytest.fixture
def full_pair() -> Iterator[npc_memory.MemoryPlugin]:
    """Hilda holds as many episodic, semantic and procedural memories of Alice as the
    bundled pack's caps allow (300, 100 and 20), spread over 60 game days, a tenth of
    them locked."""
    plugin = npc_memory.install(world="bench", pack="village", seed=3)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="alice", faction="adventurers")
    rng = plugin.rng
    tags = ["trade", "helpful", "combat", "gift", "quest", "bandits", "weapons", "family"]
    limits = plugin.pack.memory
    caps = {"episodic": limits.episodic_cap, "semantic": limits.semantic_cap, "procedural": limits.procedural_cap}
    for kind, count in caps.items():
        for i in range(count):
            plugin.clock.advance(rng.random() * 60 * SECONDS_PER_DAY / sum(caps.values()))
            memory_tags = [f"habit{i}"] if kind == "procedural" else rng.sample(tags, 2)  # distinct habits
            plugin.remember(
                "hilda", "alice", f"{kind} memory {i} about {rng.choice(tags)}",
                kind=kind,  # type: ignore[arg-type]
                tags=memory_tags, importance=rng.random(), confidence=rng.random(),
                locked=i % 10 == 0,
            )
    yield plugin
    uninstall_all()
    esper.delete_world("bench")

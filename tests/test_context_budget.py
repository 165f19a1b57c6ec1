"""The prompt context spends its budget on what matters and never contradicts itself:
unused shares flow to the memories, the relationship line agrees with what is
remembered, world-scoped memories and knowledge have their own headings, and hearsay
reads as hearsay with names keeping their case."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.context import estimate_tokens


@pytest.fixture
def plugin() -> npc_memory.MemoryPlugin:
    p = npc_memory.install(world="ctx", pack="village")
    p.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    p.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
    return p


def fill(p: npc_memory.MemoryPlugin, n: int = 120) -> None:
    for i in range(n):
        p.remember("hilda", "alice", f"Alice asked about the sword number {i} and the price of steel in the market",
                   tags=["trade"], importance=0.5)


@pytest.mark.parametrize("budget", [200, 400, 1000, 2000])
def test_the_budget_is_used_when_there_is_more_to_say(plugin: npc_memory.MemoryPlugin, budget: int) -> None:
    fill(plugin)
    context = plugin.context("hilda", "alice", "What did I ask about the sword?", max_tokens=budget)
    assert 0.9 * budget <= context.tokens <= budget, context.tokens
    assert estimate_tokens(context.text) == context.tokens


@settings(max_examples=30, deadline=None)
@given(budget=st.integers(min_value=1, max_value=3000), memories=st.integers(min_value=0, max_value=60))
def test_the_context_never_exceeds_the_budget(budget: int, memories: int) -> None:
    p = npc_memory.install(world="ctx-prop", pack="village")
    try:
        p.add_npc(key="hilda", name="Hilda")
        p.add_player(key="alice", name="Alice")
        fill(p, memories)
        p.learn_fact("hilda", "The well is dry", confidence=0.4, importance=0.9)
        assert p.context("hilda", "alice", "sword price", max_tokens=budget).tokens <= budget
    finally:
        npc_memory.uninstall("ctx-prop")


def test_only_shown_memories_are_strengthened(plugin: npc_memory.MemoryPlugin) -> None:
    fill(plugin, 80)
    context = plugin.context("hilda", "alice", "sword", max_tokens=300)
    touched = [m for m in plugin.memories("hilda", "alice") if m.access_count]
    assert touched and all(m.content in context.text for m in touched)
    assert len(touched) < 80


def test_the_relationship_line_agrees_with_the_memories(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", "alice", "Alice saved my daughter from the wolves", tags=["heroic"], importance=0.9)
    context = plugin.context("hilda", "alice", "Do you remember me?", max_tokens=600)
    assert "never dealt with" not in context.text
    assert "Alice saved my daughter" in context.sections["memories"]


def test_world_memories_and_knowledge_have_their_own_headings(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.remember("hilda", None, "The well is dry since the summer", importance=0.9)
    plugin.remember("hilda", "alice", "Alice asked where to find water", importance=0.5)
    plugin.learn_fact("hilda", "The bandit chief hides in the old tower", importance=0.9)
    context = plugin.context("hilda", "alice", "Where can I find water? Is the well dry?", max_tokens=800)
    memories = context.sections["memories"]
    about, _, world = memories.partition("What you remember of the world around you:")
    assert "What you saw of Alice:" in about and "Alice asked where" in about
    assert "The well is dry" in world and "The well is dry" not in about
    assert "What you know of the world:\n- «The bandit chief" in context.sections["knowledge"]


def test_hearsay_reads_as_hearsay_and_keeps_names(plugin: npc_memory.MemoryPlugin) -> None:
    plugin.add_player(key="bram", name="Bram")
    plugin.learn_fact("hilda", "Bram stood up for us at the gate", subject="bram", confidence=0.3, importance=0.9)
    plugin.learn_fact("hilda", "The mill burned down", confidence=0.3, importance=0.8)
    knowledge = plugin.context("hilda", "alice", "news?", max_tokens=800).sections["knowledge"]
    assert "- I heard that «Bram stood up for us at the gate», but I'm not sure." in knowledge
    assert "- I heard that «the mill burned down», but I'm not sure." in knowledge
